/**
 * The fresh list that confirms prefix releases, run beside the waves, never in them, as the address
 * releases' list is (release-guard.ts `confirmBeside`): a list that hangs must not delay a prefix assign.
 * A wave with releases due starts a list when none runs, and makes none of them; a later wave makes those
 * that the list's answer, when it is at most `maxAgeMs` old, agreed on. A list that failed or timed out
 * confirms nothing, and the next wave starts another.
 */
import type { Clock } from "../../eni/process/clock.js";

export interface ConfirmationTurn {
  /** Due keys the fresh list agreed on: release them now. */
  readonly confirmed: ReadonlySet<string>;
  /** Due keys the fresh list found in use: their grace starts again. */
  readonly inUse: readonly string[];
}

export class BesideConfirmation {
  #running: Promise<void> | undefined;
  #settled: { readonly at: number; readonly agreed: ReadonlySet<string> | undefined } | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly maxAgeMs: number,
  ) {}

  /**
   * What a wave may do with its due releases (keys) now: undefined when no answer can be used (a list was
   * started, runs, or failed). `list` gives the keys a fresh reading would release; undefined when it could
   * not be read. It must not throw, and must time out well below a pod's patience.
   */
  turn(
    due: readonly string[],
    list: () => Promise<ReadonlySet<string> | undefined>,
  ): ConfirmationTurn | undefined {
    const settled = this.#settled;
    this.#settled = undefined;
    if (settled !== undefined && this.clock.now() - settled.at <= this.maxAgeMs) {
      const agreed = settled.agreed;
      if (agreed === undefined) return undefined;
      return {
        confirmed: new Set(due.filter((key) => agreed.has(key))),
        inUse: due.filter((key) => !agreed.has(key)),
      };
    }
    if (this.#running === undefined) {
      this.#running = list().then((agreed) => {
        this.#settled = { at: this.clock.now(), agreed };
        this.#running = undefined;
      });
    }
    return undefined;
  }

  /** Waits for the list running beside the waves, if any. */
  async idle(): Promise<void> {
    await this.#running;
  }
}
