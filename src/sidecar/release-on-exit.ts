/**
 * IPMGR_RELEASE_ON_EXIT: on shutdown, release the addresses of our interfaces that our ENIs hold. Every
 * release is tried, even after one EC2 denies (say, a missing permission for IPv6 only); the first denial is
 * thrown after the others were tried.
 */
import { plan as planOffline } from "../eni/planner.js";
import { applyPlan, observe, type ReconcileDeps } from "../eni/reconcile.js";
import type { PlanPolicy } from "../eni/types.js";
import { addressesOf } from "./address-diff.js";
import type { WatchedAddresses } from "./reconcile-loop-options.js";

export interface ReleaseOnExitInput {
  readonly deps: ReconcileDeps;
  readonly policy: PlanPolicy;
  readonly watcher: WatchedAddresses;
  /** Addresses our ENI held at the last observation: ours even when they have left the interfaces. */
  readonly held: ReadonlySet<string>;
  /** Assignments EC2 accepted that IMDS has not shown yet: address -> ENI id. */
  readonly assignedUnconfirmed: ReadonlyMap<string, string>;
}

export async function releaseOnExit(
  input: ReleaseOnExitInput,
): Promise<{ mutatingCalls: number; released: string[] }> {
  const { deps, policy, watcher } = input;
  const ours = new Set([...addressesOf(watcher.snapshot()), ...input.held]);
  const observation = await observe(deps);
  // Our interfaces without their addresses: the planner releases only from the ENIs behind them, and
  // nothing counts as still present.
  const interfaces = watcher.snapshot().map((i) => ({ ...i, addresses: [] }));
  const planned = planOffline({
    interfaces,
    enis: observation.enis,
    policy,
    released: [...ours],
    assignedUnconfirmed: input.assignedUnconfirmed,
  });
  const { mutatingCalls, refusedReleases, failures } = await applyPlan(planned, deps, {
    goOnAfterRefusal: true,
  });
  // A release EC2 refused: our ENI no longer held the address (applyPlan logged it); nothing to do on exit.
  const notReleased = new Set([...refusedReleases, ...failures.flatMap((f) => f.action.addresses)]);
  const released = planned.actions.flatMap((a) => a.addresses).filter((a) => !notReleased.has(a));
  deps.logger.info(
    { released },
    released.length === 0 ? "nothing to release on exit" : "released our addresses",
  );
  const first = failures[0];
  if (first !== undefined) throw first.error;
  return { mutatingCalls, released };
}
