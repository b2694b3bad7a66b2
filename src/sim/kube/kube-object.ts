/** The shape every stored Kubernetes object has; the rest of its fields are free JSON. */

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: unknown[];
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** A JSON object (not null, not a list). */
export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `ns/name`, or `/name` for a cluster-scoped object: the store's key, ordered as etcd orders keys. */
export function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The key of a stored object. */
export function objectKey(object: KubeObject): string {
  return keyOf(object.metadata.namespace ?? "", object.metadata.name ?? "");
}

/** Times as the API server writes metav1.Time: RFC 3339, UTC, whole seconds. */
export function kubeTime(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

/** Deep equality of JSON values (key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const keys = Object.keys(a).filter((k) => a[k] !== undefined);
    const other = Object.keys(b).filter((k) => b[k] !== undefined);
    return keys.length === other.length && keys.every((k) => jsonEqual(a[k], b[k]));
  }
  return false;
}
