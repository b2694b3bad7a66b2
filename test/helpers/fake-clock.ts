import type { Clock } from "../../src/eni/process/clock.js";

/** A clock whose sleep returns at once and moves time forward: waits and deadlines run at full speed. */
export class FakeClock implements Clock {
  #now: number;
  readonly sleeps: number[] = [];

  constructor(start = 1_700_000_000_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    this.sleeps.push(ms);
    this.#now += ms;
  }
}
