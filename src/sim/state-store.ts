import type { Clock } from "../eni/process/clock.js";
import type { SimState } from "./sim-state.js";

interface Snapshot {
  /** Clock time of the commit, in milliseconds since the epoch. */
  readonly time: number;
  readonly state: SimState;
}

/**
 * Holds the account state as immutable timestamped snapshots, so that reads can be served "as of N ms ago"
 * (staleReadsMs) while writes always see the newest state. Snapshots are never mutated: a write clones the
 * newest one, changes the clone and commits it, which also makes every write all-or-nothing.
 */
export class StateStore {
  readonly #clock: Clock;
  /** Oldest first; never empty. */
  #snapshots: Snapshot[];
  /** How long superseded snapshots are kept, in milliseconds. */
  readonly #retentionMs: number;

  constructor(initial: SimState, clock: Clock, retentionMs = 10 * 60_000) {
    this.#clock = clock;
    this.#retentionMs = retentionMs;
    this.#snapshots = [{ time: clock.now(), state: initial }];
  }

  /** The newest state. Do not mutate it: use draft() and commit(). */
  current(): SimState {
    return (this.#snapshots[this.#snapshots.length - 1] as Snapshot).state;
  }

  /** A deep copy of the newest state, to change and commit. */
  draft(): SimState {
    return structuredClone(this.current());
  }

  commit(next: SimState): void {
    const now = this.#clock.now();
    this.#snapshots.push({ time: now, state: next });
    // Keep the newest snapshot older than the retention window: it is the state as of that cutoff.
    const cutoff = now - this.#retentionMs;
    while (this.#snapshots.length > 1 && (this.#snapshots[1] as Snapshot).time <= cutoff)
      this.#snapshots.shift();
  }

  /** Runs `change` on a draft and commits the draft; when `change` throws, nothing is committed. */
  write<T>(change: (draft: SimState) => T): T {
    const draft = this.draft();
    const result = change(draft);
    this.commit(draft);
    return result;
  }

  /** The state as it was `ageMs` milliseconds ago (the oldest kept snapshot if none is that old). */
  asOf(ageMs: number): SimState {
    if (ageMs <= 0) return this.current();
    const target = this.#clock.now() - ageMs;
    for (let i = this.#snapshots.length - 1; i >= 0; i--) {
      const snapshot = this.#snapshots[i] as Snapshot;
      if (snapshot.time <= target) return snapshot.state;
    }
    return (this.#snapshots[0] as Snapshot).state;
  }
}
