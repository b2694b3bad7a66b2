import type { Clock } from "../eni/process/clock.js";
import type { Logger } from "../eni/process/logger.js";
import type { KubeApi, PodEvent } from "./kube-api.js";
import type { BridgeMetrics } from "./metrics.js";

export interface PodEventOptions {
  /** The same event (pod, reason, message) is not posted again within this time, in ms. */
  readonly repeatIntervalMs: number;
  /** Events posted per second at most, after a burst of `burst` (a token bucket). */
  readonly perSecond: number;
  readonly burst: number;
}

/**
 * Posts Kubernetes Events about pods, rate-limited: an event identical to one posted within the repeat
 * interval is dropped, and a token bucket bounds the rate (a wave over a thousand pods must not flood the
 * API server). Posting never blocks a wave; a failure is logged and counted, never thrown.
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
    const post = this.kube
      .createEvent(event)
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

  /** Waits for the events being posted. */
  async flush(): Promise<void> {
    await Promise.all([...this.#inflight]);
  }
}
