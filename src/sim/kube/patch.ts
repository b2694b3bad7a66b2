import { isJsonObject, type JsonObject, jsonEqual } from "./kube-object.js";
import type { PatchStrategies } from "./resources.js";

/** A patch document the server cannot apply: the message becomes a 422 (or a 400 for a malformed one). */
export class PatchError extends Error {
  override name = "PatchError";
  readonly status: 400 | 422;

  constructor(message: string, status: 400 | 422 = 422) {
    super(message);
    this.status = status;
  }
}

/** RFC 7386 JSON merge patch: objects merge, `null` deletes, anything else (lists included) replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return structuredClone(patch);
  const out: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

const directive = "$patch";
const retainKeys = "$retainKeys";
const setElementOrder = "$setElementOrder/";
const deleteFromPrimitiveList = "$deleteFromPrimitiveList/";

/**
 * Kubernetes strategic merge patch for the fields the simulator's built-in types use: maps merge; lists with
 * a merge key (containers by name, conditions by type, ...) merge element by element; primitive lists marked
 * `merge` (finalizers) take the union; other lists are replaced. Directives: `$patch: replace|delete|merge`,
 * `$retainKeys`, `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`.
 */
export function strategicMergePatch(target: unknown, patch: unknown, strategies: PatchStrategies): unknown {
  return mergeMap(isJsonObject(target) ? target : {}, patch, strategies, "");
}

function childPath(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

function mergeMap(target: JsonObject, patch: unknown, strategies: PatchStrategies, path: string): unknown {
  if (!isJsonObject(patch)) return structuredClone(patch);
  const mode = patch[directive];
  if (mode === "replace") {
    const out = structuredClone(patch);
    delete out[directive];
    return out;
  }
  if (mode === "delete") return undefined;
  if (mode !== undefined && mode !== "merge") {
    throw new PatchError(`unknown patch type: ${JSON.stringify(mode)} in map`, 400);
  }
  let out: JsonObject = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key === directive || key === retainKeys || key.startsWith(setElementOrder)) continue;
    if (key.startsWith(deleteFromPrimitiveList)) {
      const field = key.slice(deleteFromPrimitiveList.length);
      const current = out[field];
      if (Array.isArray(current) && Array.isArray(value)) {
        out[field] = current.filter((item) => !value.some((v) => jsonEqual(v, item)));
      }
      continue;
    }
    const here = childPath(path, key);
    if (value === null) {
      delete out[key];
    } else if (Array.isArray(value)) {
      out[key] = mergeList(out[key], value, strategies, here);
    } else if (isJsonObject(value)) {
      const merged = mergeMap(
        isJsonObject(out[key]) ? (out[key] as JsonObject) : {},
        value,
        strategies,
        here,
      );
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    } else {
      out[key] = value;
    }
  }
  for (const [key, order] of Object.entries(patch)) {
    if (!key.startsWith(setElementOrder) || !Array.isArray(order)) continue;
    const field = key.slice(setElementOrder.length);
    const list = out[field];
    if (Array.isArray(list)) out[field] = ordered(list, order, strategies[childPath(path, field)]);
  }
  const retained = patch[retainKeys];
  if (Array.isArray(retained)) {
    out = Object.fromEntries(Object.entries(out).filter(([k]) => retained.includes(k)));
  }
  return out;
}

/** Sorts `list` as `order` says (elements it does not name keep their place after the named ones). */
function ordered(list: unknown[], order: unknown[], mergeKey: string | undefined): unknown[] {
  const id = (item: unknown): unknown =>
    mergeKey !== undefined && mergeKey !== "merge" && isJsonObject(item) ? item[mergeKey] : item;
  const rank = (item: unknown): number => {
    const i = order.findIndex((o) => jsonEqual(id(o), id(item)));
    return i < 0 ? order.length : i;
  };
  return list
    .map((item, i) => ({ item, i }))
    .sort((a, b) => rank(a.item) - rank(b.item) || a.i - b.i)
    .map((e) => e.item);
}

function mergeList(target: unknown, patch: unknown[], strategies: PatchStrategies, path: string): unknown[] {
  const strategy = strategies[path];
  const current = Array.isArray(target) ? target : [];
  if (patch.some((item) => isJsonObject(item) && item[directive] === "replace")) {
    return structuredClone(patch.filter((item) => !(isJsonObject(item) && item[directive] === "replace")));
  }
  if (strategy === undefined) return structuredClone(patch);
  if (strategy === "merge") {
    const out = [...current];
    for (const item of patch) if (!out.some((o) => jsonEqual(o, item))) out.push(structuredClone(item));
    return out;
  }
  const out = [...current];
  const itemPath = `${path}[]`;
  for (const item of patch) {
    if (!isJsonObject(item) || item[strategy] === undefined) {
      throw new PatchError(
        `map: ${JSON.stringify(item)} does not contain declared merge key: ${strategy}`,
        400,
      );
    }
    const index = out.findIndex((o) => isJsonObject(o) && jsonEqual(o[strategy], item[strategy]));
    if (item[directive] === "delete") {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) out[index] = mergeMap(out[index] as JsonObject, item, strategies, itemPath);
    else out.push(mergeMap({}, item, strategies, itemPath));
  }
  return out;
}

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/"))
    throw new PatchError(`JSON pointer ${JSON.stringify(path)} does not start with /`, 400);
  return path
    .slice(1)
    .split("/")
    .map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function parentOf(document: unknown, parts: string[], path: string): { parent: unknown; last: string } {
  let node = document;
  for (const part of parts.slice(0, -1)) {
    node = Array.isArray(node) ? node[Number(part)] : isJsonObject(node) ? node[part] : undefined;
    if (node === undefined) throw new PatchError(`doc is missing path: "${path}": missing value`);
  }
  return { parent: node, last: parts.at(-1) as string };
}

function getAt(document: unknown, path: string): unknown {
  let node = document;
  for (const part of pointer(path)) {
    node = Array.isArray(node) ? node[Number(part)] : isJsonObject(node) ? node[part] : undefined;
    if (node === undefined) throw new PatchError(`doc is missing path: "${path}": missing value`);
  }
  return node;
}

function removeAt(document: unknown, path: string): unknown {
  const { parent, last } = parentOf(document, pointer(path), path);
  if (Array.isArray(parent)) {
    const index = Number(last);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length) {
      throw new PatchError(`Unable to remove nonexistent key: ${last}: missing value`);
    }
    return parent.splice(index, 1)[0];
  }
  if (!isJsonObject(parent) || !(last in parent)) {
    throw new PatchError(`Unable to remove nonexistent key: ${last}: missing value`);
  }
  const value = parent[last];
  delete parent[last];
  return value;
}

function addAt(document: unknown, path: string, value: unknown, replace: boolean): unknown {
  const parts = pointer(path);
  if (parts.length === 0) return structuredClone(value);
  const { parent, last } = parentOf(document, parts, path);
  if (Array.isArray(parent)) {
    const index = last === "-" ? parent.length : Number(last);
    if (!Number.isInteger(index) || index < 0 || index > parent.length - (replace ? 1 : 0)) {
      throw new PatchError(`Unable to access invalid index: ${last}: invalid index`);
    }
    parent.splice(index, replace ? 1 : 0, structuredClone(value));
  } else if (isJsonObject(parent)) {
    if (replace && !(last in parent))
      throw new PatchError(`replace operation does not apply: doc is missing key: ${path}: missing value`);
    parent[last] = structuredClone(value);
  } else {
    throw new PatchError(`doc is missing path: "${path}": missing value`);
  }
  return document;
}

/** RFC 6902 JSON patch: add, remove, replace, move, copy and test. */
export function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) throw new PatchError("a JSON patch must be a list of operations", 400);
  let document = structuredClone(target);
  for (const raw of operations) {
    if (!isJsonObject(raw) || typeof raw.op !== "string" || typeof raw.path !== "string") {
      throw new PatchError(`invalid JSON patch operation ${JSON.stringify(raw)}: needs op and path`, 400);
    }
    const { op, path } = raw;
    switch (op) {
      case "add":
        document = addAt(document, path, raw.value, false);
        break;
      case "replace":
        document = addAt(document, path, raw.value, true);
        break;
      case "remove":
        removeAt(document, path);
        break;
      case "move":
      case "copy": {
        if (typeof raw.from !== "string") throw new PatchError(`${op} operation needs from`, 400);
        const value =
          op === "move" ? removeAt(document, raw.from) : structuredClone(getAt(document, raw.from));
        document = addAt(document, path, value, false);
        break;
      }
      case "test":
        if (!jsonEqual(getAt(document, path), raw.value)) {
          throw new PatchError(`testing value ${path} failed: test failed`);
        }
        break;
      default:
        throw new PatchError(`Unexpected kind: ${op}`, 400);
    }
  }
  return document;
}
