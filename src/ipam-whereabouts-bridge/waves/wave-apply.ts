/**
 * Runs a wave's EC2 actions one by one. An action EC2 refuses (a permission, a full ENI, an address held
 * elsewhere) is set aside and the others go on; throttling or EC2 unavailable after every retry, and any
 * error that is no IpmgrError, end the wave, which then runs again whole after the backoff.
 *
 * EC2 refuses an assign whole when one of its addresses cannot be assigned (another instance's ENI holds a
 * prefix over it, or has it as its primary address): a refused assign of several addresses is split in two
 * and each half tried again, down to single addresses, so that every address EC2 accepts is held in this
 * wave and only the refused ones fail, each with its own error. A permission error is not split: every
 * half would be denied the same way.
 *
 * Before them, each release is logged; in dry-run mode the release it would make, once per address.
 */
import type { Ec2Api } from "../../eni/ec2-api.js";
import { AddressNotAllowedError } from "../../eni/errors/address-not-allowed-error.js";
import { Ec2Error } from "../../eni/errors/ec2-error.js";
import { IpmgrError } from "../../eni/errors/ipmgr-error.js";
import { isAssign } from "../../eni/plan-actions.js";
import type { Logger } from "../../eni/process/logger.js";
import { applyPlan } from "../../eni/reconcile.js";
import type { Plan, PlanAction } from "../../eni/types.js";
import type { Release } from "../state/desired-state.js";
import type { BridgeMetrics } from "../telemetry/metrics.js";
import type { Wave } from "./wave-plan.js";
import type { FailedAction } from "./wave-report.js";

/** What EC2 did with a wave's actions. */
export interface AppliedWave {
  /** The actions EC2 accepted. */
  readonly done: Set<PlanAction>;
  /** The actions EC2 refused, with their errors. */
  readonly failures: FailedAction[];
  /** `eniId address` of the releases EC2 refused because the ENI no longer held the address. */
  readonly notHeld: Set<string>;
  /** The actions tried, the halves of a split assign included. */
  calls: number;
}

export async function applyWave(
  plan: Plan,
  wave: Wave,
  deps: { readonly ec2: Ec2Api; readonly logger: Logger },
  signal: AbortSignal,
): Promise<AppliedWave> {
  const { logger } = deps;
  const applied: AppliedWave = { done: new Set(), failures: [], notHeld: new Set(), calls: 0 };
  const run = async (action: PlanAction): Promise<void> => {
    signal.throwIfAborted();
    applied.calls += 1;
    try {
      const { refusedReleases } = await applyPlan({ ...plan, actions: [action] }, deps);
      for (const address of refusedReleases) applied.notHeld.add(`${action.eniId} ${address}`);
      if (refusedReleases.length > 0) {
        logger.warn(
          { eniId: action.eniId, addresses: refusedReleases },
          "EC2 refused to release addresses the ENI seemed to hold; taken as gone until IMDS shows them again after the confirm timeout, then released again",
        );
      }
      applied.done.add(action);
    } catch (error) {
      // Throttled or unavailable after every retry: the whole wave runs again after a backoff.
      if (error instanceof Ec2Error && error.kind === "unavailable") throw error;
      if (!(error instanceof IpmgrError)) throw error;
      if (isAssign(action) && action.addresses.length > 1 && splittable(error)) {
        logger.info(
          { eniId: action.eniId, addresses: action.addresses, reason: error.message },
          "EC2 refused an assign whole; trying its addresses in halves so that the ones it accepts are held",
        );
        const half = Math.ceil(action.addresses.length / 2);
        await run({ ...action, addresses: action.addresses.slice(0, half) });
        await run({ ...action, addresses: action.addresses.slice(half) });
        return;
      }
      applied.failures.push({ action, error });
      logger.warn({ err: error, action }, "EC2 refused an action of the wave; the others go on");
    }
  };
  for (const action of wave.actions) await run(action);
  return applied;
}

/** Whether EC2 refused the call for one of its addresses (a permission error is the same for every half). */
function splittable(error: IpmgrError): boolean {
  return error instanceof AddressNotAllowedError || (error instanceof Ec2Error && error.kind === "refused");
}

/**
 * Logs the releases of a wave. In dry-run mode (`dryRunLogged` set) none is made: each is logged and counted
 * once per ENI and address, its key kept in `dryRunLogged`.
 */
export function announceReleases(
  releases: readonly Release[],
  dryRunLogged: Set<string> | undefined,
  deps: { readonly logger: Logger; readonly metrics: BridgeMetrics },
): void {
  for (const release of releases) {
    const fields = { eniId: release.eniId, address: release.address, reason: release.reason };
    if (dryRunLogged === undefined) {
      deps.logger.info(fields, "releasing");
      continue;
    }
    const key = `${release.eniId} ${release.address}`;
    if (dryRunLogged.has(key)) continue;
    dryRunLogged.add(key);
    deps.metrics.released(1, true);
    deps.logger.info(fields, "dry run: would release");
  }
}
