/** One EC2 request as the simulator saw it (GET /calls). IMDS requests are not logged. */
export interface SimCall {
  /** 1, 2, 3, ... in arrival order; not reset by clearCalls(). */
  seq: number;
  /** ISO 8601 time of arrival, from the simulator's clock. */
  time: string;
  /** The `Action` parameter, or "" when missing. */
  action: string;
  /** The flattened form parameters, exactly as sent. */
  params: Record<string, string>;
  /** HTTP status answered. */
  status: number;
  /** "ok", or the EC2 error code answered. */
  outcome: string;
  requestId: string;
}

/** The most recent EC2 calls, oldest first; older ones are dropped beyond `capacity`. */
export class CallLog {
  readonly #calls: SimCall[] = [];
  readonly #capacity: number;
  #seq = 0;

  /** @param capacity calls kept; default 10 000. */
  constructor(capacity = 10_000) {
    this.#capacity = capacity;
  }

  nextSeq(): number {
    this.#seq += 1;
    return this.#seq;
  }

  record(call: SimCall): void {
    this.#calls.push(call);
    if (this.#calls.length > this.#capacity) this.#calls.shift();
  }

  list(): SimCall[] {
    return structuredClone(this.#calls);
  }

  clear(): void {
    this.#calls.length = 0;
  }
}
