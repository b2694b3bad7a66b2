/**
 * Which of a wave's due releases it makes, and when a wave is due for the others. Pure: the confirmation is
 * asked through `confirm` (ReleaseGuard.confirmBeside, which runs the fresh list beside the waves).
 *
 * - On a stale view nothing is released and every grace restarts (no `unusedSince` is kept).
 * - While a live pod's network-status cannot be read, nothing is released.
 * - Otherwise only the releases a fresh list confirmed are made. One it found in use restarts its grace now:
 *   it stays pending, and a wave is due when that grace ends (not at the resync).
 * - Releases held for a failed list or an unreadable pod are looked at again after `retryMs` (while a new
 *   list runs, its end wakes a wave instead).
 */
import { type DesiredState, type Release, unusedKey } from "../state/desired-state.js";
import type { ReleaseHoldReason } from "../telemetry/metrics.js";
import type { ConfirmationTurn } from "./release-guard.js";

export interface ReleaseInput {
  readonly desired: DesiredState;
  readonly trusted: boolean;
  /** ms since the epoch. */
  readonly now: number;
  readonly releaseGraceMs: number;
  /** How soon held releases are looked at again, ms. */
  readonly retryMs: number;
  /** Asked only when releases are due and nothing holds them. */
  readonly confirm: (due: readonly Release[]) => ConfirmationTurn;
}

export interface ReleaseDecision {
  /** The releases to make in this wave. */
  readonly releases: readonly Release[];
  /** Due releases not made in this wave (held, in use after all, or waiting for their list): pending. */
  readonly heldReleases: number;
  readonly holds: ReadonlySet<ReleaseHoldReason>;
  /** To pass to the next wave's desired state. */
  readonly unusedSince: Map<string, number>;
  /** When a wave is due for a pending release; undefined: none. */
  readonly nextAt: number | undefined;
}

export function decideReleases(input: ReleaseInput): ReleaseDecision {
  const { desired, now } = input;
  const holds = new Set<ReleaseHoldReason>();
  if (!input.trusted) holds.add("stale-view");
  if (desired.unreadablePods.length > 0) holds.add("unreadable-pod");
  const unusedSince = input.trusted ? new Map(desired.unusedSince) : new Map<string, number>();
  let releases: readonly Release[] = holds.size === 0 ? desired.releases : [];
  let nextAt =
    desired.pending.length === 0 ? undefined : Math.min(...desired.pending.map((p) => p.releaseAt));
  let waiting = false;
  if (releases.length > 0) {
    const turn = input.confirm(releases);
    waiting = turn.waiting;
    if (turn.failed) holds.add("unconfirmed");
    const confirmed = new Set(turn.confirmed.map((r) => unusedKey(r.eniId, r.address)));
    releases = releases.filter((r) => confirmed.has(unusedKey(r.eniId, r.address)));
    for (const key of turn.inUse) unusedSince.set(key, now);
    if (turn.inUse.length > 0) nextAt = Math.min(nextAt ?? Infinity, now + input.releaseGraceMs);
  }
  // Held releases are due: look again soon rather than at the resync (a running list wakes a wave itself).
  if ((holds.has("unconfirmed") && !waiting) || (holds.has("unreadable-pod") && desired.releases.length > 0))
    nextAt = Math.min(nextAt ?? Infinity, now + input.retryMs);
  return { releases, heldReleases: desired.releases.length - releases.length, holds, unusedSince, nextAt };
}
