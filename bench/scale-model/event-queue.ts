/**
 * The scale model's simulated clock: a priority queue of events, each a callback at a time in ms. Running
 * an event may schedule others; time only moves forward, to the next event. Events at the same time run in
 * the order they were scheduled, so a run is deterministic for a given seed.
 */

interface QueuedEvent {
  readonly at: number;
  readonly seq: number;
  readonly run: () => void;
}

const before = (a: QueuedEvent, b: QueuedEvent): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

export class EventQueue {
  readonly #heap: QueuedEvent[] = [];
  #seq = 0;
  #now = 0;
  #ran = 0;

  /** The simulated time, in ms since the model started. */
  get now(): number {
    return this.#now;
  }

  /** Events run so far. */
  get ran(): number {
    return this.#ran;
  }

  /** Events waiting. */
  get size(): number {
    return this.#heap.length;
  }

  /**
   * Runs `run` at `at` ms (never before now: a time in the past means now).
   * @throws RangeError when `at` is not a finite number.
   */
  at(at: number, run: () => void): void {
    if (!Number.isFinite(at)) throw new RangeError(`event time ${at} is not a finite number of ms`);
    const event = { at: Math.max(at, this.#now), seq: this.#seq++, run };
    const heap = this.#heap;
    heap.push(event);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as QueuedEvent;
      if (!before(event, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = event;
  }

  /** Runs `run` `delayMs` after now. */
  after(delayMs: number, run: () => void): void {
    this.at(this.#now + delayMs, run);
  }

  #pop(): QueuedEvent | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let smallest = last;
      let at = -1;
      const left = heap[l];
      if (left !== undefined && before(left, smallest)) {
        smallest = left;
        at = l;
      }
      const right = heap[r];
      if (right !== undefined && before(right, smallest)) {
        smallest = right;
        at = r;
      }
      if (at < 0) break;
      heap[i] = smallest;
      i = at;
    }
    heap[i] = last;
    return top;
  }

  /**
   * Runs events in time order until none is left, the next is after `untilMs`, or `done()` says so (asked
   * after each event). Returns the simulated time then.
   */
  run(untilMs = Number.POSITIVE_INFINITY, done: () => boolean = () => false): number {
    for (;;) {
      const next = this.#heap[0];
      if (next === undefined || next.at > untilMs) break;
      this.#pop();
      this.#now = next.at;
      this.#ran += 1;
      next.run();
      if (done()) break;
    }
    return this.#now;
  }
}
