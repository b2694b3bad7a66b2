import { type BackoffPolicy, backoffDelay } from "../eni/backoff.js";
import { canonical } from "../eni/ip.js";
import type { ReleasedToken } from "./address-watcher.js";

/** 1 s doubling to 60 s between tries of a release EC2 refused. */
export const DEFAULT_RELEASE_RETRY_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

/** Refusals of one address's release in a row after which the sidecar warns (once). */
export const RELEASE_REFUSALS_BEFORE_WARNING = 3;

export interface PendingReleasesOptions {
  /** How long an address must stay off our interfaces before it is released (IPMGR_RELEASE_SETTLE_MS). */
  readonly settleMs: number;
  readonly retryBackoff?: BackoffPolicy;
  /** For tests: the jitter source, in [0, 1). */
  readonly random?: () => number;
}

/**
 * When the sidecar releases what left its interfaces. An address is due once it has stayed off for the
 * settle time (a bounce keeps it routed), and again, with backoff, after each time EC2 refused its release.
 * EC2's reads lag its writes: after another ENI took an address over, IMDS can show it on our ENI for
 * seconds, and EC2 then refuses the unassign. Once our reads agree that our ENI no longer holds it, the
 * planner stops releasing it and the watcher forgets it; until then it is tried again, never forgotten in
 * silence, so that an address our ENI does hold is not left there for good.
 */
export class PendingReleases {
  readonly #settleMs: number;
  readonly #retryBackoff: BackoffPolicy;
  readonly #random: () => number;
  /** Released addresses and when they were first seen gone. */
  readonly #goneSince = new Map<string, number>();
  /** Releases EC2 refused: how many times in a row, and when to try again. */
  readonly #refused = new Map<string, { readonly times: number; readonly retryAt: number }>();
  #nextDueAt: number | undefined;

  constructor(options: PendingReleasesOptions) {
    this.#settleMs = options.settleMs;
    this.#retryBackoff = options.retryBackoff ?? DEFAULT_RELEASE_RETRY_BACKOFF;
    this.#random = options.random ?? Math.random;
  }

  /** When the next release not yet due comes due (clock time), if any; set by `due`. */
  get nextDueAt(): number | undefined {
    return this.#nextDueAt;
  }

  /** The released addresses of `token` that are due now. Forgets those back on our interfaces or acknowledged. */
  due(token: ReleasedToken, present: ReadonlySet<string>, now: number): string[] {
    for (const map of [this.#goneSince, this.#refused]) {
      for (const address of map.keys()) if (!token.has(address) || present.has(address)) map.delete(address);
    }
    const due: string[] = [];
    let next: number | undefined;
    for (const address of token.keys()) {
      if (present.has(address)) continue;
      const since = this.#goneSince.get(address) ?? now;
      this.#goneSince.set(address, since);
      const at = Math.max(since + this.#settleMs, this.#refused.get(address)?.retryAt ?? 0);
      if (now >= at) due.push(address);
      else next = next === undefined ? at : Math.min(next, at);
    }
    this.#nextDueAt = next;
    return due;
  }

  /**
   * A reconcile acted on `token` with `due` released as planned: what the watcher may forget. Everything but
   * the releases not yet due and those EC2 refused, which stay for a later try.
   */
  acted(
    token: ReleasedToken,
    due: readonly string[],
    refused: readonly string[],
    now: number,
  ): ReleasedToken {
    const dueNow = new Set(due);
    const refusedNow = new Set(refused.map(canonical));
    const done = new Map<string, number>();
    for (const [address, generation] of token) {
      if (refusedNow.has(canonical(address))) {
        const times = (this.#refused.get(address)?.times ?? 0) + 1;
        const retryAt = now + backoffDelay(this.#retryBackoff, times, this.#random);
        this.#refused.set(address, { times, retryAt });
        this.#nextDueAt = this.#nextDueAt === undefined ? retryAt : Math.min(this.#nextDueAt, retryAt);
      } else if (dueNow.has(address) || !this.#goneSince.has(address)) {
        this.#goneSince.delete(address);
        this.#refused.delete(address);
        done.set(address, generation);
      }
    }
    return done;
  }

  /** Whether the release of `address` is still to be made: waiting to settle, or to be tried again. */
  has(address: string): boolean {
    const wanted = canonical(address);
    return [...this.#goneSince.keys(), ...this.#refused.keys()].some((a) => canonical(a) === wanted);
  }

  /** How many times in a row EC2 refused to release `address` (0 when it did not). */
  refusals(address: string): number {
    const key = [...this.#refused.keys()].find((a) => canonical(a) === canonical(address));
    return key === undefined ? 0 : (this.#refused.get(key)?.times ?? 0);
  }
}
