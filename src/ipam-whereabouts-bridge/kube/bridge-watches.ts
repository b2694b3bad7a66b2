/**
 * The four watches the bridge reads (this node's pods, the NetworkAttachmentDefinitions, whereabouts'
 * IPPools and OverlappingRangeIPReservations): started together, trusted together, listed afresh together
 * when releases must be confirmed.
 */
import type {
  IpPoolInfo,
  KubeApi,
  NadInfo,
  OverlappingReservationInfo,
  PodInfo,
  WatchedCollection,
  WatchListener,
} from "./kube-api.js";
import { type ViewTrust, viewTrust } from "./view-trust.js";

export interface Collections {
  readonly pods: WatchedCollection<PodInfo>;
  readonly nads: WatchedCollection<NadInfo>;
  readonly ipPools: WatchedCollection<IpPoolInfo>;
  readonly reservations: WatchedCollection<OverlappingReservationInfo>;
}

/** A fresh list of what decides releases: this node's pods, the IPPools and the reservations. */
export interface FreshReading {
  readonly pods: readonly PodInfo[];
  readonly ipPools: readonly IpPoolInfo[];
  readonly reservations: readonly OverlappingReservationInfo[];
}

export class BridgeWatches {
  #collections: Collections | undefined;

  /** Starts the four watches; resolves once each has listed once (or failed and is being retried). */
  async start(kube: KubeApi, nodeName: string, listener: WatchListener): Promise<void> {
    const [pods, nads, ipPools, reservations] = await Promise.all([
      kube.watchPods(nodeName, listener),
      kube.watchNetworkAttachmentDefinitions(listener),
      kube.watchIpPools(listener),
      kube.watchOverlappingReservations(listener),
    ]);
    this.#collections = { pods, nads, ipPools, reservations };
  }

  /** The started watches; undefined before start(). */
  get collections(): Collections | undefined {
    return this.#collections;
  }

  /** Whether releases may act on the watches' caches at `now`, and why not. */
  trust(now: number, silenceMs: number): ViewTrust {
    const c = this.#collections;
    if (c === undefined) return { trusted: false, reasons: ["the Kubernetes watches have not started"] };
    return viewTrust(
      Object.values(c).map((collection) => collection.health()),
      now,
      silenceMs,
    );
  }

  /** Whether a watch reports a fault now. */
  get faulted(): boolean {
    return Object.values(this.#collections ?? {}).some((c) => c.health().fault !== undefined);
  }

  /** Whether every watch has listed once. */
  get synced(): boolean {
    const c = this.#collections;
    return c !== undefined && Object.values(c).every((collection) => collection.synced);
  }

  /** A fresh, consistent list from the API server, the caches left alone; each list fails after `timeoutMs`. */
  async fresh(timeoutMs?: number): Promise<FreshReading> {
    const c = this.#collections;
    if (c === undefined) throw new Error("internal: the bridge confirmed releases before start()");
    const [pods, ipPools, reservations] = await Promise.all([
      c.pods.fetchNow(timeoutMs),
      c.ipPools.fetchNow(timeoutMs),
      c.reservations.fetchNow(timeoutMs),
    ]);
    return { pods, ipPools, reservations };
  }
}
