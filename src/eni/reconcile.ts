import type { Ec2Api } from "./ec2-api.js";
import { confirmHeld, readInstanceEnis } from "./eni-discovery.js";
import { AddressNotAllowedError } from "./errors/address-not-allowed-error.js";
import { Ec2Error } from "./errors/ec2-error.js";
import type { IpmgrError } from "./errors/ipmgr-error.js";
import type { Imds } from "./imds.js";
import type { InterfaceSource } from "./interface-source.js";
import { family } from "./ip.js";
import { isMove } from "./plan-actions.js";
import { ipv6HolderLookupNeeded, plan } from "./planner.js";
import type { Clock } from "./process/clock.js";
import type { Logger } from "./process/logger.js";
import type {
  Ec2NetworkInterface,
  EniState,
  Plan,
  PlanAction,
  PlanInput,
  PodInterface,
  Refusal,
} from "./types.js";

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
 * What a plan is asked for besides the observation: the policy, and what only the sidecar knows (its
 * releases, and EC2's answers that IMDS does not show).
 */
export type PlanRequest = Pick<
  PlanInput,
  "policy" | "released" | "assignedUnconfirmed" | "learnedRefusals" | "floating"
>;

/**
 * Plans, looking up current holders of IPv6 addresses only when the plan needs them (one
 * DescribeNetworkInterfaces). EC2 is the truth where IMDS lags: an address EC2 already shows on its target
 * ENI is taken as held there.
 */
export async function planFor(
  observation: Observation,
  request: PlanRequest,
  deps: Pick<ReconcileDeps, "ec2">,
): Promise<Plan> {
  const input: PlanInput = { interfaces: observation.interfaces, enis: observation.enis, ...request };
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

export interface Applied {
  /** The plan's actions EC2 carried out, wholly or in part (a move counts even when refused). */
  readonly mutatingCalls: number;
  /** Addresses whose release EC2 refused: our ENI no longer held them (see `releaseFromOurEni`). */
  readonly refusedReleases: readonly string[];
  /** With `goOnAfterRefusal`: the actions EC2 refused or denied, in order; the others were all tried. */
  readonly failures: readonly { readonly action: PlanAction; readonly error: IpmgrError }[];
}

export interface ApplyOptions {
  /**
   * Go on with the plan's other actions after EC2 refuses or denies one (an address it will not assign, a
   * missing permission, a full ENI), and report it in `failures` instead of throwing: the sidecar, where one
   * bad address must not keep the others unrouted. EC2 unavailable (throttled past every retry, no answer)
   * still stops the plan at once. Default false: stop at the first error (init: nothing more is changed).
   */
  readonly goOnAfterRefusal?: boolean;
}

/**
 * Executes the plan's actions in order (IPv4 assigns, IPv6 moves right before their assigns, releases).
 *
 * A move (unassign from the previous holder) that EC2 refuses is not an error: the goal is the address on our
 * ENI, not the unassign. EC2's reads lag its writes, so the holder that Describe showed may already have let
 * the address go; the assign that follows says whether the address is free. Only the assign's refusal fails.
 * A release that EC2 refuses is not an error either (see `releaseFromOurEni`).
 */
export async function applyPlan(
  plan: Plan,
  deps: Pick<ReconcileDeps, "ec2" | "logger">,
  options: ApplyOptions = {},
): Promise<Applied> {
  let mutatingCalls = 0;
  const refusedReleases: string[] = [];
  const failures: { action: PlanAction; error: IpmgrError }[] = [];
  for (const action of plan.actions) {
    if (!isMutating(action)) continue;
    try {
      if (action.kind === "assign-ipv4") await assignIpv4(plan, action, deps);
      else if (action.kind === "assign-ipv6") await deps.ec2.assignIpv6(action.eniId, action.addresses);
      else if (isMove(action)) {
        await moveIpv6(action.eniId, action.addresses, deps);
      } else {
        const refused = await releaseFromOurEni(action, deps);
        refusedReleases.push(...refused);
        if (refused.length === action.addresses.length) continue;
      }
    } catch (error) {
      if (!options.goOnAfterRefusal || !isRefusal(error)) throw error;
      failures.push({ action, error });
      continue;
    }
    mutatingCalls++;
  }
  return { mutatingCalls, refusedReleases, failures };
}

/** EC2 refused or denied the call, or found an address not allowed: other actions may still succeed. */
function isRefusal(error: unknown): error is IpmgrError {
  if (error instanceof AddressNotAllowedError) return true;
  return error instanceof Ec2Error && error.kind !== "unavailable";
}

/**
 * Releases addresses from one of our ENIs; returns those EC2 refused to release. IMDS and Describe lag EC2's
 * writes: after another ENI took an address over (AllowReassignment), our ENI can still show it for seconds,
 * and EC2 then refuses the unassign, all or nothing. The write's answer is the truth there, so a refused
 * release is tried address by address (the adapter has already re-read the ENI), and an address EC2 refuses
 * on its own is left alone and logged: it is not ours to release any more. EC2 never unassigns an address
 * from an ENI other than the one named, so trying is safe.
 */
async function releaseFromOurEni(
  action: Extract<PlanAction, { kind: "unassign-ipv4" | "unassign-ipv6" }>,
  deps: Pick<ReconcileDeps, "ec2" | "logger">,
): Promise<string[]> {
  const { eniId } = action;
  const unassign = (addresses: readonly string[]): Promise<void> =>
    action.kind === "unassign-ipv4"
      ? deps.ec2.unassignPrivateIpv4(eniId, addresses)
      : deps.ec2.unassignIpv6(eniId, addresses);
  const refused: string[] = [];
  const tryRelease = async (addresses: readonly string[]): Promise<void> => {
    try {
      await unassign(addresses);
    } catch (err) {
      if (!(err instanceof Ec2Error) || err.kind !== "refused") throw err;
      if (addresses.length > 1) {
        for (const address of addresses) await tryRelease([address]);
        return;
      }
      refused.push(...addresses);
      deps.logger.info(
        { eniId, addresses, code: err.code, requestId: err.requestId, reason: err.message },
        "EC2 refused to release the address from our ENI, which no longer holds it (another ENI took it over; EC2's reads lag); leaving it alone",
      );
    }
  };
  await tryRelease(action.addresses);
  return refused;
}

/**
 * Assigns IPv4 addresses with AllowReassignment. The planner knows only this instance's ENIs, so another
 * instance's ENI primary address reaches EC2, which refuses it (the code is unconfirmed, so any refusal
 * counts): when a re-read shows a refused address as some ENI's primary, that is the error the user gets.
 */
async function assignIpv4(
  plan: Plan,
  action: Extract<PlanAction, { kind: "assign-ipv4" }>,
  deps: Pick<ReconcileDeps, "ec2" | "logger">,
): Promise<void> {
  const { eniId, addresses } = action;
  try {
    await deps.ec2.assignPrivateIpv4(eniId, addresses, action.allowReassignment);
  } catch (err) {
    if (!(err instanceof Ec2Error) || err.kind !== "refused") throw err;
    let holders: Ec2NetworkInterface[];
    try {
      holders = await deps.ec2.describeNetworkInterfaces({ ipv4Addresses: addresses });
    } catch (readErr) {
      if (!(readErr instanceof Ec2Error)) throw readErr;
      deps.logger.warn(
        { err: readErr, eniId, addresses },
        "could not re-read the refused addresses to see whether one is another ENI's primary address",
      );
      throw err;
    }
    const refusals: Refusal[] = [];
    for (const holder of holders) {
      const address = holder.primaryIpv4;
      if (address === undefined || !addresses.includes(address)) continue;
      const of =
        holder.instanceId === undefined ? "attached to no instance" : `of instance ${holder.instanceId}`;
      for (const p of plan.placements.filter((p) => p.address === address && p.eniId === eniId)) {
        refusals.push({
          address,
          interfaceName: p.interfaceName,
          mac: p.mac,
          reason: "eni-primary-address",
          detail:
            `address ${address} on ${p.interfaceName} is the primary private IPv4 address of ENI ${holder.eniId} ` +
            `${of}, which EC2 never reassigns (it refused AssignPrivateIpAddresses on ${eniId}); ` +
            "exclude it from the IPAM range and from IPMGR_ALLOWED_CIDRS.",
        });
      }
    }
    if (refusals.length === 0) throw err;
    throw new AddressNotAllowedError(refusals, { cause: err });
  }
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
