import { KubeApiError } from "../errors/kube-api-error.js";
import { type KubeObject, objectKey } from "./kube-object.js";

export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

/** One committed change. `object` carries the change's resourceVersion (a DELETED one too, as etcd gives it). */
export interface StoreEvent {
  readonly type: ChangeType;
  /** The storage name, e.g. `pods`. */
  readonly storage: string;
  readonly resourceVersion: number;
  readonly object: KubeObject;
  /** The object before the change (MODIFIED, DELETED). */
  readonly previous: KubeObject | undefined;
}

export interface KubeStoreOptions {
  /** How many of the latest changes are kept to resume watches and serve consistent pages. Default 1000. */
  readonly historyLimit?: number;
}

/**
 * The simulated etcd: objects by storage name and key, one cluster-wide resourceVersion counter bumped by
 * every change, and a bounded history of changes. A watch or a paged list from a resourceVersion older than
 * the history reaches is answered 410 Expired, as after etcd's compaction. Objects handed in and out are
 * never mutated afterwards: the store keeps its own copies.
 */
export class KubeStore {
  #resourceVersion = 0;
  /** The newest resourceVersion dropped from the history: resuming from it or later is possible. */
  #compacted = 0;
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #history: StoreEvent[] = [];
  readonly #historyLimit: number;
  readonly #listeners = new Set<(event: StoreEvent) => void>();

  constructor(options: KubeStoreOptions = {}) {
    this.#historyLimit = options.historyLimit ?? 1000;
  }

  /** The resourceVersion of the latest change (0 before any). */
  get resourceVersion(): number {
    return this.#resourceVersion;
  }

  /** Watches and paged lists from a resourceVersion below this are expired. */
  get compactedRevision(): number {
    return this.#compacted;
  }

  #bucket(storage: string): Map<string, KubeObject> {
    let bucket = this.#objects.get(storage);
    if (bucket === undefined) {
      bucket = new Map();
      this.#objects.set(storage, bucket);
    }
    return bucket;
  }

  get(storage: string, namespace: string, name: string): KubeObject | undefined {
    return this.#objects.get(storage)?.get(`${namespace}/${name}`);
  }

  /**
   * The objects of a storage, ordered by key, as of `atResourceVersion` (default: now), rebuilt from the
   * history. Throws KubeApiError 410 when that version is compacted away.
   */
  list(storage: string, atResourceVersion?: number): KubeObject[] {
    const current = this.#objects.get(storage) ?? new Map<string, KubeObject>();
    let objects: Map<string, KubeObject> = current;
    if (atResourceVersion !== undefined && atResourceVersion < this.#resourceVersion) {
      this.#checkNotCompacted(atResourceVersion);
      objects = new Map(current);
      for (let i = this.#history.length - 1; i >= 0; i--) {
        const event = this.#history[i] as StoreEvent;
        if (event.resourceVersion <= atResourceVersion) break;
        if (event.storage !== storage) continue;
        const key = objectKey(event.object);
        if (event.type === "ADDED") objects.delete(key);
        else objects.set(key, event.previous as KubeObject);
      }
    }
    return [...objects.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
  }

  #checkNotCompacted(resourceVersion: number): void {
    if (resourceVersion < this.#compacted) {
      throw new KubeApiError(
        410,
        "Expired",
        `too old resource version: ${resourceVersion} (${this.#compacted})`,
      );
    }
  }

  /** The changes after `resourceVersion`, oldest first. Throws KubeApiError 410 when some were compacted away. */
  changesSince(resourceVersion: number): StoreEvent[] {
    this.#checkNotCompacted(resourceVersion);
    let first = this.#history.length;
    while (first > 0 && (this.#history[first - 1] as StoreEvent).resourceVersion > resourceVersion)
      first -= 1;
    return this.#history.slice(first);
  }

  /** Calls `listener` synchronously after each commit. Returns the unsubscribe function. */
  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /**
   * Commits a change: stamps the next resourceVersion on a copy of `object` (the deleted object, for
   * DELETED), stores it, records the event and tells the listeners. Returns the stored object.
   */
  commit(type: ChangeType, storage: string, object: KubeObject): KubeObject {
    const bucket = this.#bucket(storage);
    const key = objectKey(object);
    const previous = bucket.get(key);
    if ((type === "ADDED") !== (previous === undefined)) {
      throw new Error(
        `store: ${type} of ${storage} ${key}, which ${previous === undefined ? "does not exist" : "exists"}`,
      );
    }
    this.#resourceVersion += 1;
    const stored: KubeObject = structuredClone(object);
    stored.metadata.resourceVersion = String(this.#resourceVersion);
    if (type === "DELETED") bucket.delete(key);
    else bucket.set(key, stored);
    const event: StoreEvent = {
      type,
      storage,
      resourceVersion: this.#resourceVersion,
      object: stored,
      previous,
    };
    this.#history.push(event);
    while (this.#history.length > this.#historyLimit) {
      this.#compacted = (this.#history.shift() as StoreEvent).resourceVersion;
    }
    for (const listener of [...this.#listeners]) listener(event);
    return stored;
  }

  /** Drops the whole history, as etcd's compaction does: every earlier resourceVersion is now expired. */
  compact(): number {
    this.#history.length = 0;
    this.#compacted = this.#resourceVersion;
    return this.#compacted;
  }

  /** Every storage name that holds objects. */
  storages(): string[] {
    return [...this.#objects.keys()];
  }
}
