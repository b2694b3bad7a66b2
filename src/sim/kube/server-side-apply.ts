import { isJsonObject, type JsonObject, jsonEqual, type KubeObject } from "./kube-object.js";
import type { PatchStrategies } from "./resource-def.js";

/**
 * Server-side apply (`application/apply-patch+yaml`), as a pure function of the stored object, the applied
 * configuration and the field manager. The fields a manager applies are recorded in
 * `metadata.managedFields` (operation Apply, fieldsType FieldsV1, in kube-apiserver's notation: `f:<field>`,
 * `k:{"<merge key>":<value>}` for an item of a list with a merge key, `v:<value>` for an item of a set,
 * `.` for the item itself). Applying again removes the fields the manager applied before and applies no
 * longer, unless another manager owns them too; a field another applier owns with a different value is a
 * conflict (409) unless `force` takes it over. Lists merge by the resource's strategic merge keys; lists
 * without one are atomic. Only appliers own fields here: create, update and the other patches record none.
 */

/** A field another manager owns with another value: `.spec.replicas`, `.spec.containers[name="app"].image`. */
export interface ApplyConflict {
  readonly manager: string;
  /** The apiVersion the manager applied with. */
  readonly apiVersion: string;
  readonly field: string;
}

/** Fields another manager applied with other values, when `force` is not set. */
export class ApplyConflictError extends Error {
  override name = "ApplyConflictError";
  readonly conflicts: readonly ApplyConflict[];

  constructor(conflicts: readonly ApplyConflict[]) {
    super(
      `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? "" : "s"}: ${conflicts
        .map((c) => `conflict with "${c.manager}" using ${c.apiVersion}: ${c.field}`)
        .join("\n")}`,
    );
    this.conflicts = conflicts;
  }
}

export interface ApplyRequest {
  readonly manager: string;
  readonly force: boolean;
  /** The object's apiVersion, recorded in its managedFields entry. */
  readonly apiVersion: string;
  /** metav1.Time of the apply. */
  readonly time: string;
  readonly strategies: PatchStrategies;
}

interface ManagedFieldsEntry extends JsonObject {
  manager: string;
  operation: string;
  fieldsV1: JsonObject;
}

/** Metadata the server owns or that names the object: never a managed field. */
const serverMetadata = new Set([
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
]);

function join(path: string, field: string): string {
  return path === "" ? field : `${path}.${field}`;
}

/** The FieldsV1 set of an applied configuration. */
export function fieldSetOf(config: JsonObject, strategies: PatchStrategies, path = ""): JsonObject {
  const out: JsonObject = {};
  for (const [field, value] of Object.entries(config)) {
    if (path === "" && (field === "apiVersion" || field === "kind" || field === "status")) continue;
    if (path === "metadata" && serverMetadata.has(field)) continue;
    const here = join(path, field);
    if (isJsonObject(value) && Object.keys(value).length > 0) {
      out[`f:${field}`] = fieldSetOf(value, strategies, here);
    } else if (Array.isArray(value)) {
      out[`f:${field}`] = listSetOf(value, strategies, here);
    } else {
      out[`f:${field}`] = {};
    }
  }
  return out;
}

function itemKey(item: unknown, strategy: string | undefined): string | undefined {
  if (strategy === "merge") return `v:${JSON.stringify(item)}`;
  if (strategy === undefined || !isJsonObject(item) || item[strategy] === undefined) return undefined;
  return `k:${JSON.stringify({ [strategy]: item[strategy] })}`;
}

function listSetOf(list: unknown[], strategies: PatchStrategies, path: string): JsonObject {
  const strategy = strategies[path];
  const keys = list.map((item) => itemKey(item, strategy));
  // A list without merge keys (or with an item lacking its key) is atomic: owned as one value.
  if (keys.some((k) => k === undefined)) return {};
  const out: JsonObject = {};
  list.forEach((item, i) => {
    const key = keys[i] as string;
    out[key] =
      strategy === "merge" || !isJsonObject(item)
        ? {}
        : { ".": {}, ...fieldSetOf(item, strategies, `${path}[]`) };
  });
  return out;
}

/** Every leaf of a set, as its list of keys. */
function leavesOf(set: JsonObject, prefix: readonly string[] = []): string[][] {
  const out: string[][] = [];
  for (const [key, child] of Object.entries(set)) {
    const here = [...prefix, key];
    if (isJsonObject(child) && Object.keys(child).length > 0) out.push(...leavesOf(child, here));
    else out.push(here);
  }
  return out;
}

function hasPath(set: JsonObject, path: readonly string[]): boolean {
  let node: unknown = set;
  for (const key of path) {
    if (!isJsonObject(node) || !(key in node)) return false;
    node = node[key];
  }
  return true;
}

/** Removes one leaf from a field set (a manager losing a field to a forced apply), and the sets it empties. */
function removeFromSet(set: JsonObject, path: readonly string[]): void {
  const nodes: JsonObject[] = [set];
  for (const key of path.slice(0, -1)) {
    const next = (nodes.at(-1) as JsonObject)[key];
    if (!isJsonObject(next)) return;
    nodes.push(next);
  }
  for (let depth = path.length - 1; depth >= 0; depth--) {
    const node = nodes[depth] as JsonObject;
    delete node[path[depth] as string];
    if (Object.keys(node).length > 0) return;
  }
}

/** The list index a `k:` or `v:` key names in `list`, or -1. */
function indexIn(list: unknown[], key: string): number {
  const wanted = JSON.parse(key.slice(2)) as unknown;
  if (key.startsWith("v:")) return list.findIndex((item) => jsonEqual(item, wanted));
  const [[field, value] = ["", undefined]] = Object.entries(wanted as JsonObject);
  return list.findIndex((item) => isJsonObject(item) && jsonEqual(item[field], value));
}

/** The value at a set path, or undefined. */
function valueAt(object: unknown, path: readonly string[]): unknown {
  let node = object;
  for (const key of path) {
    if (key === ".") return node;
    if (key.startsWith("f:")) node = isJsonObject(node) ? node[key.slice(2)] : undefined;
    else node = Array.isArray(node) ? node[indexIn(node, key)] : undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/** Removes the field (or list item, for a path ending in `.` or `v:`) at a set path from `object`. */
function removeAt(object: JsonObject, path: readonly string[]): void {
  const last = path.at(-1) as string;
  const itemLevel = last === "." ? path.length - 2 : path.length - 1;
  const parent = valueAt(object, path.slice(0, itemLevel));
  const key = path[itemLevel] as string;
  if (key.startsWith("f:")) {
    if (isJsonObject(parent) && last !== ".") delete parent[key.slice(2)];
    return;
  }
  if (Array.isArray(parent)) {
    const index = indexIn(parent, key);
    if (index >= 0 && (last === "." || key.startsWith("v:"))) parent.splice(index, 1);
  }
}

/** The applied configuration merged over `target`: maps merge, keyed lists merge by key, sets unite, the rest replaces. */
function mergeApplied(target: unknown, applied: unknown, strategies: PatchStrategies, path: string): unknown {
  if (Array.isArray(applied)) {
    const strategy = strategies[path];
    const keys = applied.map((item) => itemKey(item, strategy));
    if (!Array.isArray(target) || keys.some((k) => k === undefined)) return structuredClone(applied);
    const out = [...target];
    applied.forEach((item, i) => {
      const index = indexIn(out, keys[i] as string);
      if (index < 0) out.push(structuredClone(item));
      else if (strategy !== "merge") out[index] = mergeApplied(out[index], item, strategies, `${path}[]`);
    });
    return out;
  }
  if (!isJsonObject(applied)) return structuredClone(applied);
  const out: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [field, value] of Object.entries(applied)) {
    if (value === null) delete out[field];
    else out[field] = mergeApplied(out[field], value, strategies, join(path, field));
  }
  return out;
}

function fieldPathOf(path: readonly string[]): string {
  return path
    .filter((key) => key !== ".")
    .map((key) => {
      if (key.startsWith("f:")) return `.${key.slice(2)}`;
      const value = JSON.parse(key.slice(2)) as unknown;
      if (key.startsWith("v:")) return `[${JSON.stringify(value)}]`;
      const [[field, v] = ["", ""]] = Object.entries(value as JsonObject);
      return `[${field}=${JSON.stringify(v)}]`;
    })
    .join("");
}

function managedFieldsOf(object: KubeObject | undefined): ManagedFieldsEntry[] {
  const entries = object?.metadata.managedFields;
  if (!Array.isArray(entries)) return [];
  return entries.filter(
    (e): e is ManagedFieldsEntry =>
      isJsonObject(e) && typeof e.manager === "string" && isJsonObject(e.fieldsV1),
  );
}

/**
 * The object after `manager` applies `applied` to `current` (undefined: the object is created), with its
 * managedFields. Throws ApplyConflictError when another applier owns a changed field and `force` is unset.
 */
export function serverSideApply(
  current: KubeObject | undefined,
  applied: KubeObject,
  request: ApplyRequest,
): KubeObject {
  const { manager, strategies } = request;
  const newSet = fieldSetOf(applied, strategies);
  const entries = structuredClone(managedFieldsOf(current));
  const mine = entries.find((e) => e.manager === manager && e.operation === "Apply");
  const others = entries.filter((e) => e !== mine);
  const conflicts: { entry: ManagedFieldsEntry; path: string[] }[] = [];
  if (current !== undefined) {
    for (const path of leavesOf(newSet)) {
      if (path.at(-1) === ".") continue;
      for (const entry of others) {
        if (hasPath(entry.fieldsV1, path) && !jsonEqual(valueAt(current, path), valueAt(applied, path))) {
          conflicts.push({ entry, path });
        }
      }
    }
  }
  if (conflicts.length > 0 && !request.force) {
    throw new ApplyConflictError(
      conflicts.map((c) => ({
        manager: c.entry.manager,
        apiVersion: String(c.entry.apiVersion ?? ""),
        field: fieldPathOf(c.path),
      })),
    );
  }
  for (const { entry, path } of conflicts) removeFromSet(entry.fieldsV1, path);
  const base: JsonObject = structuredClone(current ?? { metadata: {} });
  if (mine !== undefined) {
    const gone = leavesOf(mine.fieldsV1).filter(
      (path) => !hasPath(newSet, path) && !others.some((e) => hasPath(e.fieldsV1, path)),
    );
    for (const path of gone) removeAt(base, path);
  }
  const result = mergeApplied(base, applied, strategies, "") as KubeObject;
  result.metadata.managedFields = [
    ...others.filter((e) => leavesOf(e.fieldsV1).length > 0),
    {
      manager,
      operation: "Apply",
      apiVersion: request.apiVersion,
      time: request.time,
      fieldsType: "FieldsV1",
      fieldsV1: newSet,
    },
  ];
  return result;
}
