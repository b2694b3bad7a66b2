import type { Clock } from "../eni/clock.js";

/**
 * Runs one full garbage collection once the sidecar has been quiet for a while after work, so that memory a
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
    this.#clock.sleep(this.#quietMs, armed.signal).then(
      () => {
        if (this.#armed !== armed) return;
        this.#armed = undefined;
        this.#collect();
      },
      () => undefined, // re-armed or stopped: nothing to do
    );
  }

  stop(): void {
    this.#stopped = true;
    this.#armed?.abort();
    this.#armed = undefined;
  }
}
