import type { StatusCause } from "../errors/kube-api-error.js";
import { isJsonObject, type JsonObject, type KubeObject } from "./kube-object.js";

export type Verb = "create" | "delete" | "get" | "list" | "patch" | "update" | "watch";

/** Strategic merge patch metadata of list fields, by path (`[]` marks list items): the merge key, or `merge` for primitive lists merged as sets. */
export type PatchStrategies = Readonly<Record<string, string>>;

/** One resource of one API group version the simulator serves. */
export interface ResourceDef {
  /** "" for the core group (`/api/v1`). */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly singular: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly verbs: readonly Verb[];
  /** The stored resource: core and events.k8s.io Events share `events`. */
  readonly storage: string;
  /** A CustomResourceDefinition's resource: list items keep apiVersion/kind, no strategic merge patch, resourceVersion required on update, generation kept. */
  readonly custom: boolean;
  /** Fields a fieldSelector may name besides metadata.name and metadata.namespace, computed from the stored object. */
  readonly fields: (stored: KubeObject) => Record<string, string>;
  /** Whether a PUT without metadata.resourceVersion overwrites (true for built-in types, false for custom resources). */
  readonly allowUnconditionalUpdate: boolean;
  /** Whether a PUT of a missing object creates it (core Events only). */
  readonly allowCreateOnUpdate: boolean;
  /** Whether DELETE answers with the deleted object (Pods) rather than a Success Status. */
  readonly returnDeletedObject: boolean;
  /** Stored form to this API's form, and back; identity except for events.k8s.io/v1. */
  readonly toView: (stored: KubeObject) => KubeObject;
  readonly fromView: (view: KubeObject) => KubeObject;
  /** Field problems that make a create or update 422 Invalid; checked on the API's form. */
  readonly validate: (object: KubeObject) => StatusCause[];
  /** What the API server sets on a new object before it is stored (API form, changed in place): a pod's status. */
  readonly prepareForCreate: (object: KubeObject) => void;
  readonly patchStrategies: PatchStrategies;
}

export const readWrite: readonly Verb[] = ["create", "delete", "get", "list", "patch", "update", "watch"];

export function str(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : String(value);
}

export function at(object: JsonObject, path: string): unknown {
  let value: unknown = object;
  for (const part of path.split(".")) value = isJsonObject(value) ? value[part] : undefined;
  return value;
}

export function pick(
  object: KubeObject,
  paths: readonly string[],
  rename: Readonly<Record<string, string>> = {},
) {
  const out: Record<string, string> = {};
  for (const path of paths) out[rename[path] ?? path] = str(at(object, path));
  return out;
}

const identity = (object: KubeObject): KubeObject => object;
const noProblems = (): StatusCause[] => [];

export const metadataStrategies: PatchStrategies = {
  "metadata.finalizers": "merge",
  "metadata.ownerReferences": "uid",
};

/** A resource with the defaults of a built-in kind (or a custom one with `custom: true`) under `partial`. */
export function def(
  partial: Pick<ResourceDef, "group" | "version" | "plural" | "singular" | "kind" | "namespaced"> &
    Partial<ResourceDef>,
): ResourceDef {
  return {
    shortNames: [],
    categories: [],
    verbs: readWrite,
    storage: partial.plural,
    custom: false,
    fields: () => ({}),
    allowUnconditionalUpdate: !(partial.custom ?? false),
    allowCreateOnUpdate: false,
    returnDeletedObject: false,
    toView: identity,
    fromView: identity,
    validate: noProblems,
    prepareForCreate: () => undefined,
    patchStrategies: metadataStrategies,
    ...partial,
  };
}

/** The strategic merge keys of a pod spec at `at` (`spec` in a Pod, `spec.template.spec` in a workload). */
export function podSpecStrategies(at: string): PatchStrategies {
  const out: Record<string, string> = {};
  for (const list of ["containers", "initContainers"]) {
    out[`${at}.${list}`] = "name";
    out[`${at}.${list}[].env`] = "name";
    out[`${at}.${list}[].ports`] = "containerPort";
    out[`${at}.${list}[].volumeMounts`] = "mountPath";
  }
  out[`${at}.ephemeralContainers`] = "name";
  out[`${at}.volumes`] = "name";
  out[`${at}.imagePullSecrets`] = "name";
  out[`${at}.hostAliases`] = "ip";
  return out;
}
