import type { Clock } from "../../eni/process/clock.js";

/** Burst capacity and refill rate (tokens per second) of one EC2 throttling bucket. */
export interface BucketSpec {
  /** Bucket name: the action, or a variant such as `DescribeNetworkInterfaces (unfiltered)`. */
  readonly key: string;
  readonly burst: number;
  readonly refillPerSecond: number;
}

interface Bucket {
  tokens: number;
  last: number;
  scale: number;
}

/** EC2's per-account token buckets. A bucket starts full; a changed scale refills it at the new size. */
export class TokenBuckets {
  readonly #clock: Clock;
  readonly #buckets = new Map<string, Bucket>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Takes one token; false when the bucket is empty (the call is throttled). */
  take(spec: BucketSpec, scale: number): boolean {
    const now = this.#clock.now();
    const burst = spec.burst * scale;
    let bucket = this.#buckets.get(spec.key);
    if (bucket === undefined || bucket.scale !== scale) {
      bucket = { tokens: burst, last: now, scale };
      this.#buckets.set(spec.key, bucket);
    }
    bucket.tokens = Math.min(
      burst,
      bucket.tokens + ((now - bucket.last) / 1000) * spec.refillPerSecond * scale,
    );
    bucket.last = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
