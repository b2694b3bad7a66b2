import { randomUUID } from "node:crypto";
import type { Clock } from "../../eni/process/clock.js";
import { KubeApiError, type KubeStatus, type StatusCause } from "../errors/kube-api-error.js";
import { decodeContinue, encodeContinue } from "./continue-token.js";
import { isJsonObject, type JsonObject, jsonEqual, type KubeObject, kubeTime } from "./kube-object.js";
import type { KubeStore } from "./kube-store.js";
import { type ListQuery, matchesQuery } from "./list-query.js";
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from "./patch.js";
import { apiVersionOf, primaryResource, qualifiedName, type ResourceDef } from "./resources.js";
import { ApplyConflictError, serverSideApply } from "./server-side-apply.js";
import { invalidMessage, metadataProblems, nameProblems, required } from "./validation.js";

export interface ListOptions extends ListQuery {
  readonly limit: number | undefined;
  readonly continueToken: string | undefined;
  readonly resourceVersion: string | undefined;
  readonly resourceVersionMatch: string | undefined;
}

export interface ListResult {
  readonly items: KubeObject[];
  readonly resourceVersion: string;
  readonly continueToken: string | undefined;
  readonly remainingItemCount: number | undefined;
}

export interface WriteOptions {
  /** `?dryRun=All`: validate and answer, commit nothing. */
  readonly dryRun: boolean;
  /**
   * An object written outside the API's rules (the world file, the control API): it keeps the uid and the
   * status it carries, where the API assigns a uid and resets a new object's status (a pod's to Pending).
   */
  readonly asGiven?: boolean;
}

export interface DeleteOptions extends WriteOptions {
  readonly preconditions: { readonly uid?: string; readonly resourceVersion?: string };
  /** Pods only: a bound pod with a grace period above 0 is marked terminating before it goes. */
  readonly gracePeriodSeconds: number | undefined;
}

export type PatchType = "merge" | "strategic" | "json";

/** Server-side apply's content type (server-side-apply.ts). */
export const applyContentType = "application/apply-patch+yaml";

export const patchContentTypes: Readonly<Record<string, PatchType>> = {
  "application/merge-patch+json": "merge",
  "application/strategic-merge-patch+json": "strategic",
  "application/json-patch+json": "json",
};

const generateNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";

function badRequest(message: string): KubeApiError {
  return new KubeApiError(400, "BadRequest", message);
}

/**
 * The semantics of the Kubernetes API over the store: metadata the server owns (uid, creationTimestamp,
 * resourceVersion, generation), validation, optimistic concurrency, finalizers and graceful pod deletion,
 * list paging and the views (events.k8s.io/v1 over core Events). Callers pass and get objects in the form
 * of the API they use; errors are KubeApiError with the API server's status, reason and wording.
 */
export class KubeApi {
  readonly store: KubeStore;
  readonly #clock: Clock;

  constructor(store: KubeStore, clock: Clock) {
    this.store = store;
    this.#clock = clock;
  }

  #notFound(resource: ResourceDef, name: string): KubeApiError {
    return new KubeApiError(404, "NotFound", `${qualifiedName(resource)} "${name}" not found`, {
      name,
      ...(resource.group === "" ? {} : { group: resource.group }),
      kind: resource.plural,
    });
  }

  #conflict(resource: ResourceDef, name: string, why: string): KubeApiError {
    return new KubeApiError(
      409,
      "Conflict",
      `Operation cannot be fulfilled on ${qualifiedName(resource)} "${name}": ${why}`,
      {
        name,
        ...(resource.group === "" ? {} : { group: resource.group }),
        kind: resource.plural,
      },
    );
  }

  #invalid(resource: ResourceDef, name: string, causes: StatusCause[]): KubeApiError {
    return new KubeApiError(422, "Invalid", invalidMessage(resource.kind, name, causes), {
      name,
      ...(resource.group === "" ? {} : { group: resource.group }),
      kind: resource.kind,
      causes,
    });
  }

  /** The object as `resource`'s API shows it: its apiVersion and kind, its field names. */
  view(resource: ResourceDef, stored: KubeObject): KubeObject {
    const out = resource.toView(structuredClone(stored));
    return { apiVersion: apiVersionOf(resource), kind: resource.kind, ...out } as KubeObject;
  }

  #stored(resource: ResourceDef, namespace: string, name: string): KubeObject {
    const stored = this.store.get(resource.storage, resource.namespaced ? namespace : "", name);
    if (stored === undefined) throw this.#notFound(resource, name);
    return stored;
  }

  namespaceExists(namespace: string): boolean {
    return this.store.get("namespaces", "", namespace) !== undefined;
  }

  get(resource: ResourceDef, namespace: string, name: string): KubeObject {
    return this.view(resource, this.#stored(resource, namespace, name));
  }

  list(resource: ResourceDef, options: ListOptions): ListResult {
    const current = this.store.resourceVersion;
    let snapshot = current;
    let startAfter = "";
    if (options.resourceVersionMatch !== undefined && options.resourceVersionMatch !== "") {
      if (options.resourceVersion === undefined || options.resourceVersion === "") {
        throw this.#invalidList(
          "resourceVersionMatch",
          "resourceVersionMatch is forbidden unless resourceVersion is provided",
        );
      }
      if (!["Exact", "NotOlderThan"].includes(options.resourceVersionMatch)) {
        throw this.#invalidList(
          "resourceVersionMatch",
          `Unsupported value: "${options.resourceVersionMatch}"`,
        );
      }
    }
    if (options.continueToken !== undefined && options.continueToken !== "") {
      if (options.resourceVersion !== undefined && options.resourceVersion !== "") {
        throw this.#invalidList(
          "resourceVersion",
          "specifying resource version is not allowed when using continue",
        );
      }
      const token = decodeContinue(options.continueToken);
      snapshot = token.resourceVersion === 0 ? current : token.resourceVersion;
      startAfter = token.startAfter;
    } else if (
      options.resourceVersion !== undefined &&
      options.resourceVersion !== "" &&
      options.resourceVersion !== "0"
    ) {
      const wanted = parseResourceVersion(options.resourceVersion);
      if (wanted > current) throw tooLargeResourceVersion(wanted, current);
      if (options.resourceVersionMatch === "Exact") snapshot = wanted;
    }
    let all: KubeObject[];
    try {
      all = this.store.list(resource.storage, snapshot);
    } catch (error) {
      if (error instanceof KubeApiError && error.code === 410 && startAfter !== "") {
        throw new KubeApiError(
          410,
          "Expired",
          "The provided continue parameter is too old to display a consistent list result. You can start a new " +
            "list without the continue parameter, or use the continue token in this response to retrieve the " +
            "remainder of the results. Continuing with the provided token results in an inconsistent list - " +
            "objects that were created, modified, or deleted between the time the first chunk was returned and " +
            "now may show up in the list.",
          undefined,
          encodeContinue(0, startAfter),
        );
      }
      throw error;
    }
    const matching = all.filter((o) => {
      const key = `${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`;
      return key > startAfter && matchesQuery(resource, options, o);
    });
    const limit = options.limit !== undefined && options.limit > 0 ? options.limit : undefined;
    const page = limit === undefined ? matching : matching.slice(0, limit);
    const more = page.length < matching.length;
    const last = page.at(-1);
    const unfiltered = options.labelSelector.length === 0 && options.fieldSelector.length === 0;
    return {
      items: page.map((o) => this.view(resource, o)),
      resourceVersion: String(snapshot),
      continueToken:
        more && last !== undefined
          ? encodeContinue(snapshot, `${last.metadata.namespace ?? ""}/${last.metadata.name ?? ""}`)
          : undefined,
      remainingItemCount: more && unfiltered ? matching.length - page.length : undefined,
    };
  }

  #invalidList(field: string, detail: string): KubeApiError {
    return new KubeApiError(
      422,
      "Invalid",
      `ListOptions.meta.k8s.io "" is invalid: ${field}: Forbidden: ${detail}`,
      {
        group: "meta.k8s.io",
        kind: "ListOptions",
        causes: [{ reason: "FieldValueForbidden", message: `Forbidden: ${detail}`, field }],
      },
    );
  }

  /** Checks the body's apiVersion, kind, metadata and namespace against the request. Returns a working copy in view form. */
  #decode(resource: ResourceDef, namespace: string, body: unknown, name?: string): KubeObject {
    if (!isJsonObject(body)) throw badRequest("the body of the request must be a JSON object");
    const object = structuredClone(body) as JsonObject;
    const apiVersion = apiVersionOf(resource);
    if (object.apiVersion !== undefined && object.apiVersion !== apiVersion) {
      throw badRequest(
        `the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${apiVersion})`,
      );
    }
    if (object.kind !== undefined && object.kind !== resource.kind) {
      throw badRequest(
        `the kind in the data (${String(object.kind)}) does not match the expected kind (${resource.kind})`,
      );
    }
    object.apiVersion = apiVersion;
    object.kind = resource.kind;
    if (object.metadata === undefined || object.metadata === null) object.metadata = {};
    if (!isJsonObject(object.metadata)) throw badRequest("metadata must be an object");
    const metadata = object.metadata;
    for (const field of ["labels", "annotations"] as const) {
      const map = metadata[field];
      if (map === undefined || map === null) {
        delete metadata[field];
        continue;
      }
      if (!isJsonObject(map) || Object.values(map).some((v) => typeof v !== "string")) {
        throw badRequest(
          `metadata.${field} must be a map of strings (json: cannot unmarshal into map[string]string)`,
        );
      }
    }
    if (
      metadata.finalizers !== undefined &&
      !(Array.isArray(metadata.finalizers) && metadata.finalizers.every((f) => typeof f === "string"))
    ) {
      throw badRequest("metadata.finalizers must be a list of strings");
    }
    if (resource.namespaced) {
      if (metadata.namespace !== undefined && metadata.namespace !== "" && metadata.namespace !== namespace) {
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
      metadata.namespace = namespace;
    } else {
      delete metadata.namespace;
    }
    if (name !== undefined) {
      if (metadata.name === undefined || metadata.name === "") metadata.name = name;
      if (metadata.name !== name) {
        throw badRequest(
          `the name of the object (${String(metadata.name)}) does not match the name on the URL (${name})`,
        );
      }
    }
    return object as KubeObject;
  }

  #validate(resource: ResourceDef, object: KubeObject): void {
    const name = object.metadata.name ?? "";
    const causes = [
      ...nameProblems(name, resource.kind),
      ...metadataProblems(object),
      ...resource.validate(object),
    ];
    if (causes.length > 0) throw this.#invalid(resource, name, causes);
  }

  create(resource: ResourceDef, namespace: string, body: unknown, options: WriteOptions): KubeObject {
    const object = this.#decode(resource, namespace, body);
    const metadata = object.metadata;
    if (
      (metadata.name === undefined || metadata.name === "") &&
      typeof metadata.generateName === "string" &&
      metadata.generateName !== ""
    ) {
      let suffix = "";
      for (let i = 0; i < 5; i++)
        suffix += generateNameAlphabet[Math.floor(Math.random() * generateNameAlphabet.length)];
      metadata.name = `${metadata.generateName}${suffix}`;
    }
    if (typeof metadata.name !== "string" || metadata.name === "") {
      throw this.#invalid(resource, "", [
        { ...required("metadata.name"), message: "Required value: name or generateName is required" },
      ]);
    }
    if (resource.namespaced && !this.namespaceExists(namespace)) {
      throw new KubeApiError(404, "NotFound", `namespaces "${namespace}" not found`, {
        name: namespace,
        kind: "namespaces",
      });
    }
    this.#validate(resource, object);
    const existing = this.store.get(resource.storage, resource.namespaced ? namespace : "", metadata.name);
    if (existing !== undefined) {
      throw new KubeApiError(
        409,
        "AlreadyExists",
        `${qualifiedName(resource)} "${metadata.name}" already exists`,
        {
          name: metadata.name,
          ...(resource.group === "" ? {} : { group: resource.group }),
          kind: resource.plural,
        },
      );
    }
    metadata.uid =
      options.asGiven === true && typeof metadata.uid === "string" && metadata.uid !== ""
        ? metadata.uid
        : randomUUID();
    metadata.creationTimestamp = kubeTime(this.#clock.now());
    delete metadata.resourceVersion;
    delete metadata.deletionTimestamp;
    delete metadata.deletionGracePeriodSeconds;
    if (resource.custom) metadata.generation = 1;
    if (options.asGiven !== true) resource.prepareForCreate(object);
    const stored = resource.fromView(object);
    if (options.dryRun) return this.view(resource, stored);
    return this.view(resource, this.store.commit("ADDED", resource.storage, stored));
  }

  update(
    resource: ResourceDef,
    namespace: string,
    name: string,
    body: unknown,
    options: WriteOptions,
  ): KubeObject {
    const object = this.#decode(resource, namespace, body, name);
    const existing = this.store.get(resource.storage, resource.namespaced ? namespace : "", name);
    if (existing === undefined) {
      if (!resource.allowCreateOnUpdate) throw this.#notFound(resource, name);
      return this.create(resource, namespace, object, options);
    }
    const given = object.metadata.resourceVersion;
    if (given === undefined || given === "") {
      if (!resource.allowUnconditionalUpdate) {
        throw this.#invalid(resource, name, [
          {
            reason: "FieldValueInvalid",
            message: "Invalid value: 0x0: must be specified for an update",
            field: "metadata.resourceVersion",
          },
        ]);
      }
    } else if (given !== existing.metadata.resourceVersion) {
      throw this.#conflict(
        resource,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    }
    return this.#replace(resource, existing, object, options);
  }

  patch(
    resource: ResourceDef,
    namespace: string,
    name: string,
    type: PatchType,
    patch: unknown,
    options: WriteOptions,
  ): KubeObject {
    const existing = this.#stored(resource, namespace, name);
    const current = this.view(resource, existing);
    if (type === "strategic" && resource.custom) {
      throw new KubeApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json",
      );
    }
    let patched: unknown;
    try {
      if (type === "json") patched = jsonPatch(current, patch);
      else if (!isJsonObject(patch)) throw new PatchError("a merge patch must be a JSON object", 400);
      else if (type === "merge") patched = mergePatch(current, patch);
      else patched = strategicMergePatch(current, patch, resource.patchStrategies);
    } catch (error) {
      if (error instanceof PatchError) {
        throw error.status === 400
          ? badRequest(error.message)
          : new KubeApiError(422, "Invalid", error.message, { name, kind: resource.kind });
      }
      throw error;
    }
    const object = this.#decode(resource, namespace, patched, name);
    const given = object.metadata.resourceVersion;
    if (given !== undefined && given !== "" && given !== existing.metadata.resourceVersion) {
      throw this.#conflict(
        resource,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    }
    return this.#replace(resource, existing, object, options);
  }

  /**
   * Server-side apply (server-side-apply.ts) of `body` by `fieldManager`: creates the object when it does
   * not exist, as kube-apiserver does. Returns the object and whether it was created.
   */
  apply(
    resource: ResourceDef,
    namespace: string,
    name: string,
    body: unknown,
    options: WriteOptions & { readonly fieldManager: string | undefined; readonly force: boolean },
  ): { object: KubeObject; created: boolean } {
    if (options.fieldManager === undefined || options.fieldManager === "") {
      throw new KubeApiError(
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        { group: "meta.k8s.io", kind: "PatchOptions", causes: [required("fieldManager")] },
      );
    }
    if (!isJsonObject(body) || typeof body.apiVersion !== "string" || typeof body.kind !== "string") {
      throw badRequest("apiVersion and kind must be set in the applied configuration");
    }
    const applied = this.#decode(resource, namespace, body, name);
    const existing = this.store.get(resource.storage, resource.namespaced ? namespace : "", name);
    let result: KubeObject;
    try {
      result = serverSideApply(existing === undefined ? undefined : this.view(resource, existing), applied, {
        manager: options.fieldManager,
        force: options.force,
        apiVersion: apiVersionOf(resource),
        time: kubeTime(this.#clock.now()),
        strategies: resource.patchStrategies,
      });
    } catch (error) {
      if (!(error instanceof ApplyConflictError)) throw error;
      throw new KubeApiError(409, "Conflict", error.message, {
        causes: error.conflicts.map((c) => ({
          reason: "FieldManagerConflict",
          message: `conflict with "${c.manager}" using ${c.apiVersion}`,
          field: c.field,
        })),
      });
    }
    if (existing === undefined) {
      return { object: this.create(resource, namespace, result, options), created: true };
    }
    return { object: this.#replace(resource, existing, result, options), created: false };
  }

  /** Commits `object` (view form) over `existing`, keeping what clients cannot change. */
  #replace(
    resource: ResourceDef,
    existing: KubeObject,
    object: KubeObject,
    options: WriteOptions,
  ): KubeObject {
    const metadata = object.metadata;
    const name = existing.metadata.name ?? "";
    if (metadata.uid !== undefined && metadata.uid !== "" && metadata.uid !== existing.metadata.uid) {
      throw this.#conflict(
        resource,
        name,
        `Precondition failed: UID in precondition: ${String(metadata.uid)}, UID in object meta: ${existing.metadata.uid ?? ""}`,
      );
    }
    for (const field of [
      "uid",
      "creationTimestamp",
      "deletionTimestamp",
      "deletionGracePeriodSeconds",
      "generation",
    ] as const) {
      if (existing.metadata[field] === undefined) delete metadata[field];
      else metadata[field] = existing.metadata[field] as never;
    }
    metadata.resourceVersion = existing.metadata.resourceVersion as string;
    if (metadata.managedFields === undefined && existing.metadata.managedFields !== undefined) {
      metadata.managedFields = existing.metadata.managedFields;
    }
    this.#validate(resource, object);
    let stored = resource.fromView(object);
    // No served CRD has a status subresource, so a status change is a change of the object: generation + 1.
    if (resource.custom && !sameOutsideMetadata(existing, stored)) {
      stored.metadata.generation = (existing.metadata.generation ?? 0) + 1;
    }
    if (jsonEqual(stored, existing)) return this.view(resource, existing);
    if (options.dryRun) return this.view(resource, stored);
    const finished =
      stored.metadata.deletionTimestamp !== undefined && (stored.metadata.finalizers ?? []).length === 0;
    stored = this.store.commit("MODIFIED", resource.storage, stored);
    if (finished) this.store.commit("DELETED", resource.storage, stored);
    return this.view(resource, stored);
  }

  /**
   * Deletes, or marks for deletion: an object with finalizers gets a deletionTimestamp and stays until an
   * update empties them. A pod bound to a node with a grace period above 0 is first marked terminating, as
   * the API server does, then removed at once, as a kubelet does that stops its containers instantly.
   * Returns the object as deleted (or marked), and whether it is gone.
   */
  delete(
    resource: ResourceDef,
    namespace: string,
    name: string,
    options: DeleteOptions,
  ): { object: KubeObject; gone: boolean } {
    const existing = this.#stored(resource, namespace, name);
    const { uid, resourceVersion } = options.preconditions;
    if (uid !== undefined && uid !== existing.metadata.uid) {
      throw this.#conflict(
        resource,
        name,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${existing.metadata.uid ?? ""}`,
      );
    }
    if (resourceVersion !== undefined && resourceVersion !== existing.metadata.resourceVersion) {
      throw this.#conflict(
        resource,
        name,
        `Precondition failed: ResourceVersion in precondition: ${resourceVersion}, ResourceVersion in object meta: ${existing.metadata.resourceVersion ?? ""}`,
      );
    }
    if (resource.storage === "namespaces" && !options.dryRun) this.#emptyNamespace(name);
    const now = this.#clock.now();
    const finalizers = existing.metadata.finalizers ?? [];
    if (finalizers.length > 0) {
      if (existing.metadata.deletionTimestamp !== undefined)
        return { object: this.view(resource, existing), gone: false };
      const marked = structuredClone(existing);
      marked.metadata.deletionTimestamp = kubeTime(now);
      marked.metadata.deletionGracePeriodSeconds = 0;
      if (options.dryRun) return { object: this.view(resource, marked), gone: false };
      return {
        object: this.view(resource, this.store.commit("MODIFIED", resource.storage, marked)),
        gone: false,
      };
    }
    let last = existing;
    const grace = options.gracePeriodSeconds ?? podGracePeriod(existing);
    const bound =
      resource.storage === "pods" &&
      isJsonObject(existing.spec) &&
      typeof existing.spec.nodeName === "string" &&
      existing.spec.nodeName !== "";
    if (bound && grace > 0 && existing.metadata.deletionTimestamp === undefined && !options.dryRun) {
      const marked = structuredClone(existing);
      marked.metadata.deletionTimestamp = kubeTime(now + grace * 1000);
      marked.metadata.deletionGracePeriodSeconds = grace;
      last = this.store.commit("MODIFIED", resource.storage, marked);
    }
    if (options.dryRun) return { object: this.view(resource, last), gone: true };
    return { object: this.view(resource, this.store.commit("DELETED", resource.storage, last)), gone: true };
  }

  /**
   * What the namespace controller does before a deleted namespace goes, done at once: every object in it is
   * removed (DELETED each), finalizers and grace periods notwithstanding.
   */
  #emptyNamespace(namespace: string): void {
    for (const storage of this.store.storages()) {
      if (storage === "namespaces") continue;
      for (const object of this.store.list(storage)) {
        if (object.metadata.namespace === namespace) this.store.commit("DELETED", storage, object);
      }
    }
  }

  /** The Status a delete answers with for resources that do not return the object. */
  deletedStatus(resource: ResourceDef, object: KubeObject): KubeStatus {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: {
        name: object.metadata.name ?? "",
        ...(resource.group === "" ? {} : { group: resource.group }),
        kind: resource.plural,
        ...(object.metadata.uid === undefined ? {} : { uid: object.metadata.uid }),
      },
      code: 200,
    };
  }

  /**
   * Writes an object outside the API's verbs and rules (the world file, the control API): creates it, or
   * replaces the stored one keeping its uid and creationTimestamp. Returns it in its primary form.
   */
  put(storage: string, object: KubeObject): KubeObject {
    const resource = primaryResource(storage);
    const namespace = resource.namespaced ? (object.metadata.namespace ?? "default") : "";
    const name = object.metadata.name ?? "";
    const existing = this.store.get(storage, namespace, name);
    if (existing === undefined)
      return this.create(resource, namespace, object, { dryRun: false, asGiven: true });
    const next = structuredClone(object);
    next.metadata.resourceVersion = existing.metadata.resourceVersion as string;
    return this.update(resource, namespace, name, next, { dryRun: false });
  }

  /** Removes an object at once, finalizers and grace periods notwithstanding (the control API's delete). */
  forceDelete(storage: string, namespace: string, name: string): KubeObject {
    const resource = primaryResource(storage);
    const existing = this.#stored(resource, namespace, name);
    return this.view(resource, this.store.commit("DELETED", storage, existing));
  }

  /** Marks a pod terminating as a graceful delete does, without removing it. */
  markTerminating(namespace: string, name: string, gracePeriodSeconds: number): KubeObject {
    const resource = primaryResource("pods");
    const existing = this.#stored(resource, namespace, name);
    if (existing.metadata.deletionTimestamp !== undefined) return this.view(resource, existing);
    const marked = structuredClone(existing);
    marked.metadata.deletionTimestamp = kubeTime(this.#clock.now() + gracePeriodSeconds * 1000);
    marked.metadata.deletionGracePeriodSeconds = gracePeriodSeconds;
    return this.view(resource, this.store.commit("MODIFIED", "pods", marked));
  }
}

function podGracePeriod(object: KubeObject): number {
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const value = spec.terminationGracePeriodSeconds;
  return typeof value === "number" && value >= 0 ? value : 30;
}

function sameOutsideMetadata(a: KubeObject, b: KubeObject): boolean {
  const strip = (o: KubeObject): JsonObject => {
    const { metadata: _m, ...rest } = o;
    return rest;
  };
  return jsonEqual(strip(a), strip(b));
}

/** A resourceVersion parameter as a number. Throws KubeApiError 400 for anything else. */
export function parseResourceVersion(text: string): number {
  if (!/^\d+$/.test(text))
    throw badRequest(`Invalid value: ${JSON.stringify(text)}: resourceVersion must be an integer`);
  return Number(text);
}

/** The answer to a resourceVersion newer than the store's: 504 Timeout, as kube-apiserver gives after waiting. */
export function tooLargeResourceVersion(wanted: number, current: number): KubeApiError {
  return new KubeApiError(504, "Timeout", `Too large resource version: ${wanted}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds: 1,
  });
}
