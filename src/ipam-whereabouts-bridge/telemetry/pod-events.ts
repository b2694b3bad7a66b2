import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { KubeApi, PodEvent } from "../kube/kube-api.js";
import type { BridgeMetrics } from "./metrics.js";

/**
 * Events the bridge posts per second at most, after a burst (EVENT_BURST). A wave over a thousand pods
 * must not flood the API server with Events, which are informative only.
 */
export const EVENTS_PER_SECOND = 5;
/**
 * Events posted at once before the rate applies: the problems of one wave (a few pods refused) are all
 * posted at once. The same figure as client-go's per-object event spam filter (25).
 */
export const EVENT_BURST = 25;

export interface PodEventOptions {
  /** The same event (pod, reason, message) is not posted again within this time, in ms. */
  readonly repeatIntervalMs: number;
  /** Events posted per second at most, after a burst of `burst` (a token bucket). */
  readonly perSecond: number;
  readonly burst: number;
}

/**
 * Posts Kubernetes Events about pods (and NADs, IPPools, the node), rate-limited: an event identical to one posted within the repeat
 * interval is dropped, and a token bucket bounds the rate (a wave over a thousand pods must not flood the
 * API server). Posting never blocks a wave; a failure is logged and counted, never thrown.
 * An event about a pod known only by name (whereabouts' podref: a pod of another node) gets the pod's uid
 * from the API first: `kubectl describe pod` lists only the events whose involvedObject.uid is the pod's.
 */
export class PodEventReporter {
  readonly #posted = new Map<string, number>();
  readonly #inflight = new Set<Promise<void>>();
  #tokens: number;
  #refilledAt: number;

  constructor(
    private readonly kube: KubeApi,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly metrics: BridgeMetrics,
    private readonly options: PodEventOptions,
  ) {
    this.#tokens = options.burst;
    this.#refilledAt = clock.now();
  }

  report(event: PodEvent): void {
    const now = this.clock.now();
    for (const [key, at] of this.#posted)
      if (now - at >= this.options.repeatIntervalMs) this.#posted.delete(key);
    const key = `${event.pod.namespace}/${event.pod.name} ${event.reason} ${event.message}`;
    this.#tokens = Math.min(
      this.options.burst,
      this.#tokens + ((now - this.#refilledAt) / 1000) * this.options.perSecond,
    );
    this.#refilledAt = now;
    if (this.#posted.has(key) || this.#tokens < 1) {
      this.metrics.event("suppressed");
      return;
    }
    this.#tokens -= 1;
    this.#posted.set(key, now);
    const post = this.#withUid(event)
      .then((full) => this.kube.createEvent(full))
      .then(() => this.metrics.event("posted"))
      .catch((error: unknown) => {
        this.metrics.event("failed");
        // Forgotten, so that the next wave tries again.
        this.#posted.delete(key);
        this.logger.warn({ err: error, pod: key }, "could not post a Kubernetes Event");
      })
      .finally(() => this.#inflight.delete(post));
    this.#inflight.add(post);
  }

  /** The event with its pod's uid, read when it is not known (a pod that is gone: none). Pods only. */
  async #withUid(event: PodEvent): Promise<PodEvent> {
    if (event.pod.uid !== undefined || (event.pod.kind ?? "Pod") !== "Pod") return event;
    const uid = await this.kube.podUid(event.pod.namespace, event.pod.name);
    return uid === undefined ? event : { ...event, pod: { ...event.pod, uid } };
  }

  /** Waits for the events being posted. */
  async flush(): Promise<void> {
    await Promise.all([...this.#inflight]);
  }
}
