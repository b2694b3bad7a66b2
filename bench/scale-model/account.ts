/** One AWS account's EC2 buckets in the model, and what they answered. */
import { DOCUMENTED_BUCKETS, type ModelEc2Action, TokenBucket } from "./token-bucket.js";

export interface CallCounts {
  readonly accepted: number;
  readonly throttled: number;
}

export class ModelAccount {
  readonly #buckets = new Map<ModelEc2Action, TokenBucket>();
  readonly #counts = new Map<ModelEc2Action, { accepted: number; throttled: number }>();

  /** One request at `nowMs`: true when EC2 takes it, false when it answers `RequestLimitExceeded`. */
  request(action: ModelEc2Action, nowMs: number): boolean {
    let bucket = this.#buckets.get(action);
    if (bucket === undefined) {
      bucket = new TokenBucket(DOCUMENTED_BUCKETS[action]);
      this.#buckets.set(action, bucket);
    }
    const ok = bucket.take(nowMs);
    const counts = this.#counts.get(action) ?? { accepted: 0, throttled: 0 };
    if (ok) counts.accepted += 1;
    else counts.throttled += 1;
    this.#counts.set(action, counts);
    return ok;
  }

  /** Requests so far, by action. */
  counts(): Map<ModelEc2Action, CallCounts> {
    return new Map([...this.#counts].map(([action, c]) => [action, { ...c }]));
  }

  /** Requests so far, all actions together. */
  total(): CallCounts {
    let accepted = 0;
    let throttled = 0;
    for (const c of this.#counts.values()) {
      accepted += c.accepted;
      throttled += c.throttled;
    }
    return { accepted, throttled };
  }
}
