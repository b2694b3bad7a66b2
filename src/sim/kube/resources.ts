import type { StatusCause } from "../errors/kube-api-error.js";
import { eventFromEventsV1, eventToEventsV1 } from "./events-conversion.js";
import { isJsonObject, type JsonObject, type KubeObject } from "./kube-object.js";
import {
  validateCoreEvent,
  validateEventsV1,
  validateLease,
  validatePod,
  validateWhereabouts,
} from "./validation.js";

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

const readWrite: readonly Verb[] = ["create", "delete", "get", "list", "patch", "update", "watch"];

function str(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : String(value);
}

function at(object: JsonObject, path: string): unknown {
  let value: unknown = object;
  for (const part of path.split(".")) value = isJsonObject(value) ? value[part] : undefined;
  return value;
}

function pick(object: KubeObject, paths: readonly string[], rename: Readonly<Record<string, string>> = {}) {
  const out: Record<string, string> = {};
  for (const path of paths) out[rename[path] ?? path] = str(at(object, path));
  return out;
}

const identity = (object: KubeObject): KubeObject => object;
const noProblems = (): StatusCause[] => [];

const metadataStrategies: PatchStrategies = {
  "metadata.finalizers": "merge",
  "metadata.ownerReferences": "uid",
};

function def(
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

const podFields = [
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.schedulerName",
  "spec.serviceAccountName",
  "spec.hostNetwork",
  "status.phase",
  "status.podIP",
  "status.nominatedNodeName",
];

const eventFields = [
  "involvedObject.kind",
  "involvedObject.namespace",
  "involvedObject.name",
  "involvedObject.uid",
  "involvedObject.apiVersion",
  "involvedObject.resourceVersion",
  "involvedObject.fieldPath",
  "reason",
  "reportingComponent",
  "source",
  "type",
];

function eventSelectableFields(stored: KubeObject): Record<string, string> {
  const fields = pick(stored, eventFields);
  // `source` selects on the legacy source component, or the reporting controller when that is unset.
  fields.source = str(at(stored, "source.component")) || str(stored.reportingComponent);
  return fields;
}

/** A container's resources.requests or resources.limits, as a map of quantities. */
function quantities(container: unknown, field: "requests" | "limits"): JsonObject {
  const resources = isJsonObject(container) ? container.resources : undefined;
  const map = isJsonObject(resources) ? resources[field] : undefined;
  return isJsonObject(map) ? map : {};
}

/**
 * The pod's QoS class: BestEffort without any cpu or memory request or limit, Guaranteed when every
 * container limits cpu and memory with requests equal to the limits (or unset), Burstable otherwise.
 */
export function qosClassOf(pod: KubeObject): "BestEffort" | "Burstable" | "Guaranteed" {
  const spec = isJsonObject(pod.spec) ? pod.spec : {};
  const containers = [
    ...(Array.isArray(spec.containers) ? spec.containers : []),
    ...(Array.isArray(spec.initContainers) ? spec.initContainers : []),
  ];
  const named = ["cpu", "memory"];
  const any = containers.some((c) =>
    named.some((r) => quantities(c, "requests")[r] !== undefined || quantities(c, "limits")[r] !== undefined),
  );
  if (!any) return "BestEffort";
  const guaranteed = containers.every((c) => {
    const limits = quantities(c, "limits");
    const requests = quantities(c, "requests");
    return named.every(
      (r) =>
        limits[r] !== undefined && (requests[r] === undefined || String(requests[r]) === String(limits[r])),
    );
  });
  return guaranteed ? "Guaranteed" : "Burstable";
}

/** Every resource the simulator serves, in discovery order. */
export const resources: readonly ResourceDef[] = [
  def({
    group: "",
    version: "v1",
    plural: "namespaces",
    singular: "namespace",
    kind: "Namespace",
    namespaced: false,
    shortNames: ["ns"],
    verbs: ["create", "get", "list", "patch", "update", "watch"],
    fields: (o) => pick(o, ["status.phase"]),
  }),
  def({
    group: "",
    version: "v1",
    plural: "nodes",
    singular: "node",
    kind: "Node",
    namespaced: false,
    shortNames: ["no"],
    verbs: ["get", "list", "watch"],
    fields: (o) => ({ "spec.unschedulable": at(o, "spec.unschedulable") === true ? "true" : "false" }),
  }),
  def({
    group: "",
    version: "v1",
    plural: "pods",
    singular: "pod",
    kind: "Pod",
    namespaced: true,
    shortNames: ["po"],
    categories: ["all"],
    returnDeletedObject: true,
    fields: (o) => {
      const fields = pick(o, podFields);
      fields["spec.hostNetwork"] = at(o, "spec.hostNetwork") === true ? "true" : "false";
      return fields;
    },
    validate: validatePod,
    prepareForCreate: (pod) => {
      // kube-apiserver's pod strategy: a new pod's status is only its phase and QoS class.
      pod.status = { phase: "Pending", qosClass: qosClassOf(pod) };
    },
    patchStrategies: {
      ...metadataStrategies,
      "spec.containers": "name",
      "spec.initContainers": "name",
      "spec.ephemeralContainers": "name",
      "spec.containers[].env": "name",
      "spec.containers[].ports": "containerPort",
      "spec.containers[].volumeMounts": "mountPath",
      "spec.initContainers[].env": "name",
      "spec.initContainers[].ports": "containerPort",
      "spec.initContainers[].volumeMounts": "mountPath",
      "spec.volumes": "name",
      "spec.imagePullSecrets": "name",
      "spec.hostAliases": "ip",
      "status.conditions": "type",
      "status.podIPs": "ip",
    },
  }),
  def({
    group: "",
    version: "v1",
    plural: "events",
    singular: "event",
    kind: "Event",
    namespaced: true,
    shortNames: ["ev"],
    allowCreateOnUpdate: true,
    fields: eventSelectableFields,
    validate: validateCoreEvent,
  }),
  def({
    group: "coordination.k8s.io",
    version: "v1",
    plural: "leases",
    singular: "lease",
    kind: "Lease",
    namespaced: true,
    validate: validateLease,
  }),
  def({
    group: "events.k8s.io",
    version: "v1",
    plural: "events",
    singular: "event",
    kind: "Event",
    namespaced: true,
    shortNames: ["ev"],
    storage: "events",
    allowCreateOnUpdate: true,
    fields: (o) => ({
      ...eventSelectableFields(o),
      ...pick(
        o,
        [
          "involvedObject.kind",
          "involvedObject.namespace",
          "involvedObject.name",
          "involvedObject.uid",
          "involvedObject.apiVersion",
          "involvedObject.resourceVersion",
          "involvedObject.fieldPath",
          "reportingComponent",
        ],
        {
          "involvedObject.kind": "regarding.kind",
          "involvedObject.namespace": "regarding.namespace",
          "involvedObject.name": "regarding.name",
          "involvedObject.uid": "regarding.uid",
          "involvedObject.apiVersion": "regarding.apiVersion",
          "involvedObject.resourceVersion": "regarding.resourceVersion",
          "involvedObject.fieldPath": "regarding.fieldPath",
          reportingComponent: "reportingController",
        },
      ),
    }),
    toView: eventToEventsV1,
    fromView: eventFromEventsV1,
    validate: validateEventsV1,
  }),
  def({
    group: "k8s.cni.cncf.io",
    version: "v1",
    plural: "network-attachment-definitions",
    singular: "network-attachment-definition",
    kind: "NetworkAttachmentDefinition",
    namespaced: true,
    shortNames: ["net-attach-def"],
    custom: true,
    validate: validateWhereabouts.networkAttachmentDefinition,
  }),
  def({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    plural: "ippools",
    singular: "ippool",
    kind: "IPPool",
    namespaced: true,
    custom: true,
    validate: validateWhereabouts.ipPool,
  }),
  def({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    plural: "overlappingrangeipreservations",
    singular: "overlappingrangeipreservation",
    kind: "OverlappingRangeIPReservation",
    namespaced: true,
    custom: true,
    validate: validateWhereabouts.overlappingRangeIpReservation,
  }),
  // whereabouts' CRD (doc/crds/whereabouts.cni.cncf.io_nodeslicepools.yaml) has no status subresource:
  // the node-slice controller writes status.allocations with a plain update, as clients here do.
  def({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    plural: "nodeslicepools",
    singular: "nodeslicepool",
    kind: "NodeSlicePool",
    namespaced: true,
    custom: true,
    validate: validateWhereabouts.nodeSlicePool,
  }),
];

/** `v1` or `group/version`. */
export function apiVersionOf(resource: Pick<ResourceDef, "group" | "version">): string {
  return resource.group === "" ? resource.version : `${resource.group}/${resource.version}`;
}

/** `pods` or `leases.coordination.k8s.io`: how the API server names a resource in messages. */
export function qualifiedName(resource: Pick<ResourceDef, "group" | "plural">): string {
  return resource.group === "" ? resource.plural : `${resource.plural}.${resource.group}`;
}

/** The resource served at group/version/plural, or undefined. */
export function findResource(group: string, version: string, plural: string): ResourceDef | undefined {
  return resources.find((r) => r.group === group && r.version === version && r.plural === plural);
}

/** The resource whose stored objects are served in the core form, by storage name (e.g. `events` -> core Events). */
export function primaryResource(storage: string): ResourceDef {
  const found = resources.find((r) => r.storage === storage);
  if (found === undefined) throw new Error(`no resource stores ${storage}`);
  return found;
}

/** Group versions, in discovery order: `[{group, version, resources}]`. */
export function groupVersions(): { group: string; version: string; resources: ResourceDef[] }[] {
  const out: { group: string; version: string; resources: ResourceDef[] }[] = [];
  for (const r of resources) {
    let entry = out.find((e) => e.group === r.group && e.version === r.version);
    if (entry === undefined) {
      entry = { group: r.group, version: r.version, resources: [] };
      out.push(entry);
    }
    entry.resources.push(r);
  }
  return out;
}
