import type { Clock } from "../../src/eni/process/clock.js";

/** A clock whose sleeps wait until the test moves time forward (or their signal aborts them). */
export class ManualClock implements Clock {
  #now = 1_700_000_000_000;
  readonly sleeps: number[] = [];
  #waiting: { until: number; resolve: () => void }[] = [];

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.sleeps.push(ms);
    return new Promise((resolve, reject) => {
      const entry = {
        until: this.#now + ms,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#waiting = this.#waiting.filter((w) => w !== entry);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(entry);
    });
  }

  /** Moves time forward by `ms` and wakes the sleeps that are due. */
  async advance(ms: number): Promise<void> {
    this.#now += ms;
    const due = this.#waiting.filter((w) => w.until <= this.#now);
    this.#waiting = this.#waiting.filter((w) => w.until > this.#now);
    for (const w of due) w.resolve();
    await flush();
  }
}

/** Lets every pending callback and promise run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}
