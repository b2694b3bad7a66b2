/**
 * Which changes of a two-state health (bad: a watch failing, the view stale; good) to log, so that the log
 * says each change of state once, with counts, and a flapping API does not write a line per flap. A change
 * to bad is told, and the change back that ends it; a change to bad within `windowMs` of the last one told
 * is folded: counted, not told, as is the change back that ends it. The folded changes are told in one line
 * once the window has passed: with the next change to bad, or as a summary at the next `note` (the bridge
 * notes the view at every wave). A bad state folded that lasts past the window is told then. Pure: time
 * comes in as arguments.
 */

/** Changes to bad folded since the last line told, and the time spent bad in them. */
export interface Folded {
  readonly times: number;
  /** Time bad in the folded changes, up to `now` for one still bad, ms. */
  readonly badMs: number;
  /** Since the first folded change, ms. */
  readonly overMs: number;
}

/** A line to tell: the change to bad, the change back, or the changes folded since the last line. */
export type StateChange =
  | { readonly kind: "bad"; readonly folded: Folded | undefined }
  | { readonly kind: "good"; readonly badMs: number; readonly folded: Folded | undefined }
  | { readonly kind: "folded"; readonly folded: Folded };

export class StateChangeLog {
  #bad = false;
  #badSince = 0;
  /** Whether the change to bad of the current bad state was told (then so is its end). */
  #badTold = false;
  #toldAt = Number.NEGATIVE_INFINITY;
  #foldedTimes = 0;
  #foldedBadMs = 0;
  #foldedSince = 0;

  constructor(private readonly windowMs: number) {}

  get bad(): boolean {
    return this.#bad;
  }

  /** The state at `now`: the line to tell, if any. */
  note(bad: boolean, now: number): StateChange | undefined {
    if (bad && !this.#bad) {
      this.#bad = true;
      this.#badSince = now;
      this.#badTold = false;
      if (now - this.#toldAt >= this.windowMs) return this.#tellBad(now);
      if (this.#foldedTimes === 0) this.#foldedSince = now;
      this.#foldedTimes += 1;
      return undefined;
    }
    if (!bad && this.#bad) {
      this.#bad = false;
      const badMs = now - this.#badSince;
      if (this.#badTold) {
        this.#badTold = false;
        return { kind: "good", badMs, folded: undefined };
      }
      this.#foldedBadMs += badMs;
    }
    if (now - this.#toldAt < this.windowMs) return undefined;
    if (this.#bad && !this.#badTold) {
      // Folded when it began, still bad a window later: told now, its end told too.
      this.#foldedTimes -= 1;
      return this.#tellBad(now);
    }
    if (this.#foldedTimes === 0) return undefined;
    this.#toldAt = now;
    return { kind: "folded", folded: this.#takeFolded(now) };
  }

  #tellBad(now: number): StateChange {
    this.#badTold = true;
    this.#toldAt = now;
    return { kind: "bad", folded: this.#foldedTimes === 0 ? undefined : this.#takeFolded(now) };
  }

  #takeFolded(now: number): Folded {
    const folded: Folded = {
      times: this.#foldedTimes,
      badMs: this.#foldedBadMs,
      overMs: now - this.#foldedSince,
    };
    this.#foldedTimes = 0;
    this.#foldedBadMs = 0;
    return folded;
  }
}

/** ", after going bad N times more in the last X s (Y s in all), not logged one by one" in the caller's words. */
export function foldedWords(folded: Folded, what: string): string {
  const s = (ms: number): string => `${Math.round(ms / 1000)} s`;
  return `${what} ${folded.times} ${folded.times === 1 ? "time" : "times"} in the last ${s(folded.overMs)} (${s(folded.badMs)} in all), not logged one by one`;
}
