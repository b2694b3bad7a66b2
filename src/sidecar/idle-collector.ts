import type { Clock } from "../eni/process/clock.js";

/**
 * Runs full garbage collections once the sidecar has been quiet for a while after work, so that memory a
 * burst of failovers took is handed back instead of kept until V8 next needs it. A failover allocates for
 * EC2's SDK (request, response, XML parse); V8 grows the old generation under that churn and shrinks it
 * only at a full collection, which an idle process rarely triggers by itself.
 */
export class IdleCollector {
  readonly #collect: () => void;
  readonly #quietMs: number;
  readonly #clock: Clock;
  #armed: AbortController | undefined;
  #stopped = false;

  /** `collect` runs a full collection (global.gc); `quietMs` is how long no work must have run. */
  constructor(collect: () => void, quietMs: number, clock: Clock) {
    this.#collect = collect;
    this.#quietMs = quietMs;
    this.#clock = clock;
  }

  /** Work ran: (re)starts the quiet period. */
  noteActivity(): void {
    if (this.#stopped) return;
    this.#armed?.abort();
    const armed = new AbortController();
    this.#armed = armed;
    this.#run(armed.signal).then(
      () => {
        if (this.#armed === armed) this.#armed = undefined;
      },
      () => undefined, // re-armed or stopped: nothing to do
    );
  }

  /**
   * Two collections, `quietMs` after the work and again `quietMs / 2` later: the first frees the garbage,
   * the second lets V8 shrink the spaces the first emptied (as its own memory reducer does, which an idle
   * process does not always reach).
   */
  async #run(signal: AbortSignal): Promise<void> {
    await this.#clock.sleep(this.#quietMs, signal);
    this.#collect();
    await this.#clock.sleep(this.#quietMs / 2, signal);
    this.#collect();
  }

  stop(): void {
    this.#stopped = true;
    this.#armed?.abort();
    this.#armed = undefined;
  }
}
