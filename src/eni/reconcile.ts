import type { Clock } from "./clock.js";
import type { Ec2Api } from "./ec2-api.js";
import { confirmHeld, readInstanceEnis } from "./eni-discovery.js";
import { Ec2Error } from "./errors/ec2-error.js";
import type { Imds } from "./imds.js";
import type { InterfaceSource } from "./interface-source.js";
import { family } from "./ip.js";
import type { Logger } from "./logger.js";
import { ipv6HolderLookupNeeded, plan } from "./planner.js";
import type { EniState, Plan, PlanAction, PlanInput, PlanPolicy, PodInterface } from "./types.js";

/** The outside world one reconcile needs. */
export interface ReconcileDeps {
  readonly imds: Imds;
  readonly ec2: Ec2Api;
  readonly interfaces: InterfaceSource;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** What we saw: the pod's managed interfaces and every ENI of this instance, as IMDS shows them. */
export interface Observation {
  readonly interfaces: PodInterface[];
  readonly enis: EniState[];
}

export interface ConfirmOptions {
  /** How long IMDS may take to show the assignments, in ms. */
  readonly timeoutMs: number;
  /** Poll interval, in ms. */
  readonly intervalMs: number;
  readonly signal?: AbortSignal;
}

/**
 * Reads the pod's interfaces and the instance's ENIs, in full those the interfaces use. Discovery is
 * through IMDS only: no EC2 call.
 */
export async function observe(deps: ReconcileDeps): Promise<Observation> {
  const interfaces = await deps.interfaces.read();
  const enis = await readInstanceEnis(
    deps.imds,
    interfaces.map((i) => i.mac),
  );
  return { interfaces, enis };
}

/**
 * Plans, looking up current holders of IPv6 addresses only when the plan needs them (one
 * DescribeNetworkInterfaces). EC2 is the truth where IMDS lags: an address EC2 already shows on its target
 * ENI is taken as held there.
 */
export async function planFor(
  observation: Observation,
  policy: PlanPolicy,
  released: readonly string[],
  deps: Pick<ReconcileDeps, "ec2">,
): Promise<Plan> {
  const input: PlanInput = { interfaces: observation.interfaces, enis: observation.enis, policy, released };
  const lookup = ipv6HolderLookupNeeded(input);
  if (lookup.length === 0) return plan(input);

  const wanted = new Set(lookup);
  const target = new Map(plan(input).placements.map((p) => [p.address, p.eniId]));
  const holders = new Map<string, string>();
  const heldByTarget = new Map<string, string[]>();
  for (const eni of await deps.ec2.describeNetworkInterfaces({ ipv6Addresses: lookup })) {
    for (const address of eni.ipv6s) {
      if (!wanted.has(address)) continue;
      if (target.get(address) === eni.eniId) {
        heldByTarget.set(eni.eniId, [...(heldByTarget.get(eni.eniId) ?? []), address]);
      } else {
        holders.set(address, eni.eniId);
      }
    }
  }
  const enis = observation.enis.map((eni) => {
    const extra = heldByTarget.get(eni.eniId);
    return extra === undefined ? eni : { ...eni, ipv6s: [...eni.ipv6s, ...extra] };
  });
  return plan({ ...input, enis, ipv6Holders: holders });
}

function isMutating(action: PlanAction): boolean {
  return action.addresses.length > 0;
}

/**
 * Executes the plan's actions in order (IPv6 moves before assigns). Returns how many EC2 calls it made.
 *
 * A move (unassign from the previous holder) that EC2 refuses is not an error: the goal is the address on our
 * ENI, not the unassign. EC2's reads lag its writes, so the holder that Describe showed may already have let
 * the address go; the assign that follows says whether the address is free. Only the assign's refusal fails.
 */
export async function applyPlan(
  plan: Plan,
  deps: Pick<ReconcileDeps, "ec2" | "logger">,
): Promise<{ mutatingCalls: number }> {
  let mutatingCalls = 0;
  for (const action of plan.actions) {
    if (!isMutating(action)) continue;
    switch (action.kind) {
      case "assign-ipv4":
        await deps.ec2.assignPrivateIpv4(action.eniId, action.addresses, action.allowReassignment);
        break;
      case "unassign-ipv4":
        await deps.ec2.unassignPrivateIpv4(action.eniId, action.addresses);
        break;
      case "assign-ipv6":
        await deps.ec2.assignIpv6(action.eniId, action.addresses);
        break;
      case "unassign-ipv6":
        if (action.reason === "move") await moveIpv6(action.eniId, action.addresses, deps);
        else await deps.ec2.unassignIpv6(action.eniId, action.addresses);
        break;
    }
    mutatingCalls++;
  }
  return { mutatingCalls };
}

/** Unassigns IPv6 addresses from their previous holder; a refusal is logged and left to the assign to settle. */
async function moveIpv6(
  eniId: string,
  addresses: readonly string[],
  deps: Pick<ReconcileDeps, "ec2" | "logger">,
): Promise<void> {
  try {
    await deps.ec2.unassignIpv6(eniId, addresses);
  } catch (err) {
    if (!(err instanceof Ec2Error) || err.kind !== "refused") throw err;
    deps.logger.info(
      { eniId, addresses, code: err.code, requestId: err.requestId, reason: err.message },
      "EC2 refused to take the addresses from their previous holder, which may have let them go already (EC2's reads lag); assigning them anyway",
    );
  }
}

/** Waits until IMDS shows every placement of the plan on its ENI (EC2 accepted; IMDS follows). */
export async function confirmPlan(
  plan: Plan,
  deps: Pick<ReconcileDeps, "imds" | "clock">,
  options: ConfirmOptions,
): Promise<void> {
  const expected = plan.placements.map((p) => ({
    mac: p.mac,
    address: p.address,
    family: family(p.address),
  }));
  if (expected.length === 0) return;
  await confirmHeld(deps.imds, expected, {
    timeoutMs: options.timeoutMs,
    intervalMs: options.intervalMs,
    clock: deps.clock,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}

export interface ReconcileResult {
  readonly observation: Observation;
  readonly plan: Plan;
  readonly mutatingCalls: number;
}

/**
 * One full pass: observe, plan, apply what is allowed, confirm. Refused addresses are left out of the
 * actions and reported in `plan.refusals`; the caller decides whether they are fatal.
 */
export async function reconcileOnce(
  deps: ReconcileDeps,
  options: { policy: PlanPolicy; released: readonly string[]; confirm: ConfirmOptions },
): Promise<ReconcileResult> {
  const observation = await observe(deps);
  const planned = await planFor(observation, options.policy, options.released, deps);
  const { mutatingCalls } = await applyPlan(planned, deps);
  if (mutatingCalls > 0) await confirmPlan(planned, deps, options.confirm);
  return { observation, plan: planned, mutatingCalls };
}
