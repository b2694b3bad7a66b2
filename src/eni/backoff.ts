/** Capped exponential backoff, in milliseconds. */
export interface BackoffPolicy {
  /** Delay after the first failure (or repair), in ms. */
  readonly baseMs: number;
  /** Largest nominal delay, in ms. */
  readonly maxMs: number;
}

/**
 * The delay before attempt `attempt + 1`, given `attempt` (≥ 1) attempts so far: base·2^(attempt−1), capped,
 * plus up to 25% jitter on top. The jitter only ever adds, so two sidecars fighting over one address never
 * retry faster than the nominal backoff, and their retries drift apart instead of colliding in lockstep.
 */
export function backoffDelay(
  policy: BackoffPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 30));
  const nominal = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.round(nominal * (1 + 0.25 * random()));
}
