import { AddressNotAllowedError } from "./errors/address-not-allowed-error.js";
import { EniNotFoundError } from "./errors/eni-not-found-error.js";
import {
  applyPlan,
  type ConfirmOptions,
  confirmPlan,
  observe,
  planFor,
  type ReconcileDeps,
} from "./reconcile.js";
import type { Plan, PlanPolicy } from "./types.js";
import { waitForAddresses } from "./wait-for-addresses.js";

export interface ReconcileOnceOptions {
  readonly policy: PlanPolicy;
  /** Bounded wait for the managed interfaces to carry addresses, in ms. */
  readonly waitForAddressesMs: number;
  /**
   * False: no wait, the interfaces are read as they are, and a pod without addresses is a pass with nothing
   * to assign (a restarted sidecar with releases to make: the addresses it releases were the pod's).
   * Default true.
   */
  readonly addressesRequired?: boolean;
  readonly confirm: ConfirmOptions;
  readonly signal?: AbortSignal;
}

export interface ReconcileOnceResult {
  readonly plan: Plan;
  /** Addresses EC2 now holds on the right ENI, whether we assigned them now or they already were. */
  readonly held: readonly string[];
  readonly mutatingCalls: number;
}

/** A refusal of the planner becomes the error the user reads; an unknown MAC comes first. */
function throwRefusals(plan: Plan, knownMacs: readonly string[]): void {
  const unknown = plan.refusals.find((r) => r.reason === "unknown-mac");
  if (unknown !== undefined) throw new EniNotFoundError(unknown.interfaceName, unknown.mac, knownMacs);
  if (plan.refusals.length > 0) throw new AddressNotAllowedError(plan.refusals);
}

/**
 * One full pass, all or nothing: wait for the pod's addresses, observe, plan, apply, confirm. Everything is
 * checked before anything is changed: if any address is refused, nothing is assigned. Returns only when EC2
 * holds every address and IMDS shows it. `init` is this (and its Elastic IPs); the sidecar starts with it.
 */
export async function reconcileOnce(
  deps: ReconcileDeps,
  options: ReconcileOnceOptions,
): Promise<ReconcileOnceResult> {
  if (options.addressesRequired ?? true) {
    await waitForAddresses(deps.interfaces, deps.clock, {
      timeoutMs: options.waitForAddressesMs,
      intervalMs: 100,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  }
  const observation = await observe(deps);
  const plan = await planFor(observation, { policy: options.policy }, deps);
  throwRefusals(
    plan,
    observation.enis.map((e) => e.mac),
  );
  for (const skip of plan.skipped) {
    deps.logger.debug(
      { address: skip.address, interface: skip.interfaceName, reason: skip.reason },
      "address skipped",
    );
  }
  const { mutatingCalls } = await applyPlan(plan, deps);
  if (mutatingCalls > 0) await confirmPlan(plan, deps, options.confirm);
  const held = plan.placements.map((p) => p.address);
  deps.logger.info(
    {
      held,
      alreadyHeld: plan.satisfied,
      mutatingCalls,
      enis: [...new Set(plan.placements.map((p) => p.eniId))],
    },
    held.length === 0 ? "no pod address to assign" : "pod addresses held by their ENIs",
  );
  return { plan, held, mutatingCalls };
}
