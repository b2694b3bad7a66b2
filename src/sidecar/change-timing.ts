/**
 * change_to_assigned: from the moment a change on the pod interfaces was seen to EC2 accepting the step that
 * followed, each change timed once. Pure bookkeeping: the reconcile loop says when a change was seen, when a
 * step began and ended, and records what this returns.
 *
 * A step can make a change's EC2 calls without having been started by it, when a drift check or a resync
 * read the interfaces first. In the sidecar every read is the watcher's too, so the change is reported
 * during that step, which is then timed from the reported moment if its reading came after it. A loop
 * whose reads are not the watcher's gets the report only after the step: the step the report triggers then
 * finds nothing left to do and times the earlier step's calls.
 */
export class ChangeTiming {
  /** When the first change not yet taken by a step was seen. */
  #seenAt: number | undefined;
  /** The last step's EC2 changes, when no change timed them. */
  #untimed: { readonly observedAt: number; readonly acceptedAt: number } | undefined;

  /** A change was seen at clock time `seenAt`; the first of several pending is the one kept. */
  seen(seenAt: number): void {
    this.#seenAt ??= seenAt;
  }

  /** A step begins: the moment it is timed from, taken from what was seen (undefined if nothing was). */
  stepStarts(): number | undefined {
    const measuredFrom = this.#seenAt;
    this.#seenAt = undefined;
    return measuredFrom;
  }

  /** The step that began with `measuredFrom` failed: its change is still to be timed, by the retry. */
  stepFailed(measuredFrom: number | undefined): void {
    this.#seenAt ??= measuredFrom;
  }

  /**
   * The step that began with `measuredFrom` and read the interfaces at `observedAt` ended; `acceptedAt` is
   * when EC2 accepted its changes, undefined when it made none. Returns the duration to record in ms, if any.
   */
  stepDone(
    measuredFrom: number | undefined,
    observedAt: number,
    acceptedAt: number | undefined,
  ): number | undefined {
    const untimed = this.#untimed;
    this.#untimed = undefined;
    if (acceptedAt !== undefined) {
      const seenAt = measuredFrom ?? this.#takeSeenBy(observedAt);
      if (seenAt !== undefined) return acceptedAt - seenAt;
      this.#untimed = { observedAt, acceptedAt };
      return undefined;
    }
    if (measuredFrom !== undefined && untimed !== undefined && measuredFrom <= untimed.observedAt) {
      return untimed.acceptedAt - measuredFrom;
    }
    return undefined;
  }

  /**
   * The moment of a change seen while a step ran, if it was seen before the step read the interfaces (so the
   * step's reading held it): taken, so that the step it triggers does not time it again.
   */
  #takeSeenBy(observedAt: number): number | undefined {
    const seenAt = this.#seenAt;
    if (seenAt === undefined || seenAt > observedAt) return undefined;
    this.#seenAt = undefined;
    return seenAt;
  }
}
