import type { ElasticIpCheck } from "../eni/elastic-ips.js";
import { AddressNotAllowedError } from "../eni/errors/address-not-allowed-error.js";
import { EniNotFoundError } from "../eni/errors/eni-not-found-error.js";
import {
  applyPlan,
  type ConfirmOptions,
  confirmPlan,
  observe,
  planFor,
  type ReconcileDeps,
} from "../eni/reconcile.js";
import type { ElasticIpMapping, Plan, PlanPolicy } from "../eni/types.js";
import { waitForAddresses } from "./wait-for-addresses.js";

export interface InitOptions {
  readonly policy: PlanPolicy;
  /** Bounded wait for the managed interfaces to carry addresses, in ms. */
  readonly waitForAddressesMs: number;
  readonly confirm: ConfirmOptions;
  readonly signal?: AbortSignal;
  /**
   * IPMGR_ELASTIC_IPS: once the addresses are held, each mapped one's Elastic IP is associated with it (and
   * confirmed); one that cannot be is an ElasticIpError. Empty or undefined: no Elastic IP call.
   */
  readonly elasticIps?: readonly ElasticIpMapping[];
}

export interface InitResult {
  readonly plan: Plan;
  /** Addresses EC2 now holds on the right ENI, whether we assigned them now or they already were. */
  readonly held: readonly string[];
  readonly mutatingCalls: number;
  /** The Elastic IP check, when IPMGR_ELASTIC_IPS maps an address. */
  readonly elasticIps?: ElasticIpCheck;
}

/** A refusal of the planner becomes the error the user reads; an unknown MAC comes first. */
function throwRefusals(plan: Plan, knownMacs: readonly string[]): void {
  const unknown = plan.refusals.find((r) => r.reason === "unknown-mac");
  if (unknown !== undefined) throw new EniNotFoundError(unknown.interfaceName, unknown.mac, knownMacs);
  if (plan.refusals.length > 0) throw new AddressNotAllowedError(plan.refusals);
}

/**
 * `multus-ipmgr init`: one shot. Everything is checked before anything is changed: if any address is
 * refused, nothing is assigned. Returns only when EC2 holds every address and IMDS shows it.
 */
export async function runInit(deps: ReconcileDeps, options: InitOptions): Promise<InitResult> {
  const signalOption = options.signal === undefined ? {} : { signal: options.signal };
  await waitForAddresses(deps.interfaces, deps.clock, {
    timeoutMs: options.waitForAddressesMs,
    intervalMs: 100,
    ...signalOption,
  });
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
  if (options.elasticIps === undefined || options.elasticIps.length === 0)
    return { plan, held, mutatingCalls };
  // Loaded only when IPMGR_ELASTIC_IPS is set: most pod starts never parse it.
  const { ensureElasticIps } = await import("./ensure-elastic-ips.js");
  const elasticIps = await ensureElasticIps(deps, plan, options, options.elasticIps);
  return { plan, held, mutatingCalls, elasticIps };
}
