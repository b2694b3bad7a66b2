import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { DesiredState } from "../state/desired-state.js";
import type { LeaseRenewer } from "./lease-renewer.js";
import type { SubnetView } from "./reservation-cover.js";
import type { ReservationKeeper } from "./reservation-keeper.js";

/**
 * Until the first wave has run there is nothing to compare; the loop looks again this often (or every
 * interval, if that is shorter), so that the first pass follows the first wave closely, in ms.
 */
export const FIRST_WAVE_POLL_MS = 1_000;

/** What the loop reads of the wave loop (Bridge): the last wave's ranges and subnets, and whether to trust them. */
export interface WaveView {
  /** The last wave's desired state; undefined until a wave has run. */
  readonly lastDesired: Pick<DesiredState, "ranges" | "unreadableNads" | "carried"> | undefined;
  readonly lastSubnets: readonly SubnetView[];
  /** Every watch has listed once. */
  readonly synced: boolean;
  /** The view of the cluster can be trusted now (ViewTrust). */
  readonly trusted: boolean;
}

/** What the loop drives: the keeper's passes and prunes, and its Lease, renewed on a timer of its own. */
export type Keeper = Pick<ReservationKeeper, "pass" | "prune" | "lines"> & {
  readonly lease: Pick<LeaseRenewer, "run">;
};

/**
 * Work of the Lease holder run after each pass (attach mode's orphan sweep, attach/orphan-sweep.ts): it checks
 * the Lease itself, and is a no-op off it.
 */
export interface HolderSweep {
  sweep(now: number): Promise<unknown>;
}

export interface ReservationsLoopOptions {
  /** Between passes, in ms (IPMGR_BRIDGE_RESERVATION_INTERVAL_MS). */
  readonly intervalMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Run after every pass, whether the pass worked or not; its failure is logged once and never stops the passes. */
  readonly orphans?: HolderSweep;
}

/**
 * The reservations beside the waves: every interval, once the watches have listed and a wave has run, a
 * keeper pass (the Lease, then the reservations), then a prune, unless the view of the cluster is stale or
 * a NAD cannot be read: a NAD that cannot be read is unknown, not gone, and a stale view may miss a NAD, so
 * nothing is pruned on either. A prune never deletes a reservation over an address a pod carries. The Lease is renewed on its own timer alongside (LeaseRenewer.run). A failed
 * pass is logged once and tried again after the interval; it never stops the waves.
 */
export class ReservationsLoop {
  constructor(
    private readonly keeper: Keeper,
    private readonly waves: WaveView,
    private readonly options: ReservationsLoopOptions,
  ) {}

  /** /readyz lines of the keeper (missing reservations, problems); they never make the bridge unready. */
  lines(): string[] {
    return this.keeper.lines();
  }

  /** The passes and the Lease renewal until `signal` aborts; resolves then. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([this.#passes(signal), this.keeper.lease.run(signal)]);
  }

  async #passes(signal: AbortSignal): Promise<void> {
    const { intervalMs, clock, logger } = this.options;
    const { keeper, waves } = this;
    let failing = false;
    let sweepFailing = false;
    let pruneHeldFor = "";
    while (!signal.aborted) {
      const desired = waves.lastDesired;
      if (desired !== undefined && waves.synced) {
        try {
          await keeper.pass(desired.ranges, waves.lastSubnets);
          const held = [
            ...(waves.trusted ? [] : ["the view of the cluster is stale"]),
            ...desired.unreadableNads.map((nad) => `NAD ${nad} cannot be read`),
          ].join("; ");
          if (held === "") await keeper.prune(desired.ranges, waves.lastSubnets, desired.carried);
          else if (held !== pruneHeldFor) {
            logger.warn(
              { reason: held },
              "reservations are kept, none is deleted, until every NAD reads and the view is trusted",
            );
          }
          pruneHeldFor = held;
          if (failing) logger.info("the reservations pass works again");
          failing = false;
        } catch (error) {
          if (!failing)
            logger.warn({ err: error }, "the reservations pass failed; it runs again after the interval");
          failing = true;
        }
        if (this.options.orphans !== undefined) sweepFailing = await this.#sweep(sweepFailing);
      }
      await clock
        .sleep(desired === undefined ? Math.min(intervalMs, FIRST_WAVE_POLL_MS) : intervalMs, signal)
        .catch((error: unknown) => {
          if (!signal.aborted) throw error;
        });
    }
  }

  /** The orphan sweep after a pass; answers whether it failed (logged on the change only). */
  async #sweep(failing: boolean): Promise<boolean> {
    const { orphans, clock, logger } = this.options;
    try {
      await orphans?.sweep(clock.now());
      if (failing) logger.info("the orphan sweep works again");
      return false;
    } catch (error) {
      if (!failing) logger.warn({ err: error }, "the orphan sweep failed; it runs again after the interval");
      return true;
    }
  }
}
