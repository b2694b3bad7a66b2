/**
 * One reconcile of the sidecar: observe (IMDS, and EC2 for lost addresses), plan (what the planner wants,
 * minus repairs held back by a drift episode's backoff, plus releases that came due), apply every action
 * (one refused action does not keep the others unrouted), confirm through IMDS, and record what is held.
 * A step that fails throws the first refusal, after recording what was done; the loop retries it.
 */
import { isAssign, isRelease } from "../eni/plan-actions.js";
import { applyPlan, confirmPlan, type Observation, planFor } from "../eni/reconcile.js";
import { addressesOf } from "./address-diff.js";
import { ChangeTiming } from "./change-timing.js";
import type { ObservedAddresses } from "./observed-addresses.js";
import { PendingReleases, RELEASE_REFUSALS_BEFORE_WARNING } from "./pending-releases.js";
import { DEFAULT_RELEASE_SETTLE_MS, type ReconcileLoopOptions } from "./reconcile-loop-options.js";

export class ReconcileStep {
  readonly #o: ReconcileLoopOptions;
  readonly #addresses: ObservedAddresses;
  /** What left our interfaces, waiting to be released. */
  readonly releases: PendingReleases;
  /** change_to_assigned: when the changes the steps make were seen. */
  readonly changeTiming = new ChangeTiming();
  /** Addresses of the actions EC2 refused in the last step (set before it throws). */
  #failedAddresses: readonly string[] = [];
  /** Called when a release made room on an ENI EC2 had called full: reconcile again at once. */
  readonly #roomMade: () => void;

  constructor(options: ReconcileLoopOptions, addresses: ObservedAddresses, roomMade: () => void) {
    this.#o = options;
    this.#addresses = addresses;
    this.#roomMade = roomMade;
    this.releases = new PendingReleases({
      settleMs: options.releaseSettleMs ?? DEFAULT_RELEASE_SETTLE_MS,
      ...(options.releaseRetryBackoff === undefined ? {} : { retryBackoff: options.releaseRetryBackoff }),
      random: options.random ?? Math.random,
    });
  }

  /** Addresses of the actions EC2 refused in the last step; none when it failed before any action. */
  get failedAddresses(): readonly string[] {
    return this.#failedAddresses;
  }

  /** One reconcile; `measuredFrom` is when the change it serves was seen (ChangeTiming.stepStarts). */
  async run(signal: AbortSignal, measuredFrom: number | undefined): Promise<void> {
    const { deps, watcher, metrics, policy } = this.#o;
    const addresses = this.#addresses;
    this.#failedAddresses = [];
    const token = watcher.released();
    const { observation, offline, observedAt } = await addresses.observe();

    const now = deps.clock.now();
    const heldBack = addresses.episodes.heldBack(now);
    const present = addressesOf(observation.interfaces);
    const released = this.#o.releaseOnRemove ? this.releases.due(token, present, now) : [];
    const planned = await planFor(
      withoutAddresses(observation, heldBack),
      {
        policy,
        released,
        assignedUnconfirmed: addresses.ec2.assignedUnconfirmed,
        learnedRefusals: addresses.ec2.refusals(now),
        floating: addresses.floating(present),
      },
      deps,
    );
    signal.throwIfAborted();

    const repairs = new Set<string>();
    for (const action of planned.actions) {
      if (!isAssign(action)) continue;
      for (const address of action.addresses)
        if (addresses.episodes.repairDue(address, now)) repairs.add(address);
    }
    const mutating = planned.actions.filter((a) => a.addresses.length > 0);
    if (mutating.length > 0) {
      deps.logger.info(
        { actions: mutating.map((a) => ({ kind: a.kind, eniId: a.eniId, addresses: a.addresses })) },
        "applying changes through EC2",
      );
    }
    const { mutatingCalls, refusedReleases, failures } = await applyPlan(planned, deps, {
      goOnAfterRefusal: true,
    });
    // Our release made room on an ENI EC2 had called full: ask again at once, not at the next read.
    if (addresses.ec2.applied(planned, new Set(failures.map((f) => f.action)))) this.#roomMade();
    // Another instance's primary, a full ENI: not asked about again before the next resync, or before the
    // full ENI holds fewer addresses (see docs/troubleshooting.md, exit 6 `eni-full`).
    addresses.ec2.refusedBy(
      failures,
      { placements: planned.placements, enis: observation.enis },
      deps.clock.now() + this.#o.resyncIntervalMs,
    );
    const first = failures[0];
    if (first !== undefined) {
      // One refused action must not keep the others unrouted: they were all tried, and what EC2 accepted stays
      // done. The step fails on the first refusal; the failure backoff retries it. Releases done are forgotten,
      // a failed release is kept for a later try.
      this.#failedAddresses = failures.flatMap((f) => f.action.addresses);
      const notReleased = failures.filter((f) => isRelease(f.action)).flatMap((f) => f.action.addresses);
      watcher.acknowledgeReleased(
        this.releases.acted(token, released, [...refusedReleases, ...notReleased], deps.clock.now()),
      );
      throw first.error;
    }
    const acceptedAt = deps.clock.now();
    const changeMs = this.changeTiming.stepDone(
      measuredFrom,
      observedAt,
      mutatingCalls > 0 ? acceptedAt : undefined,
    );
    if (changeMs !== undefined) metrics.changeToAssigned(changeMs);
    for (const address of repairs) {
      addresses.episodes.repaired(address, acceptedAt);
      metrics.driftRepair();
    }
    if (mutatingCalls > 0) {
      deps.logger.info(
        {
          mutatingCalls,
          ...(measuredFrom === undefined ? {} : { sinceChangeMs: acceptedAt - measuredFrom }),
        },
        "EC2 accepted the changes",
      );
      await confirmPlan(planned, deps, { ...this.#o.confirm, signal });
      addresses.ec2.confirmed(planned.placements.map((p) => p.address));
    }
    // What the planner was given and EC2 did not refuse: a release not yet due, or refused, stays for later.
    watcher.acknowledgeReleased(this.releases.acted(token, released, refusedReleases, deps.clock.now()));
    for (const address of refusedReleases) {
      if (this.releases.refusals(address) !== RELEASE_REFUSALS_BEFORE_WARNING) continue;
      deps.logger.warn(
        { address, refusals: RELEASE_REFUSALS_BEFORE_WARNING },
        `EC2 refused ${RELEASE_REFUSALS_BEFORE_WARNING} times in a row to release ${address}, which has left our interfaces but which our ENI still shows; trying again with backoff up to 60 s (logged once)`,
      );
    }

    // Everything planned is now held (confirmed through IMDS, or already in place); held-back addresses are not.
    // An address we assigned moved when EC2 accepted it; one already in place was seen now.
    const confirmedAt = deps.clock.now();
    addresses.confirmed(
      planned,
      { offline, present },
      confirmedAt,
      mutatingCalls > 0 ? acceptedAt : confirmedAt,
    );
    metrics.reconcile(mutatingCalls > 0 ? "applied" : "noop");
    if (mutatingCalls > 0) this.#o.onWork?.();
  }
}

function withoutAddresses(observation: Observation, drop: ReadonlySet<string>): Observation {
  if (drop.size === 0) return observation;
  return {
    ...observation,
    interfaces: observation.interfaces.map((iface) => ({
      ...iface,
      addresses: iface.addresses.filter((a) => !drop.has(a)),
    })),
  };
}
