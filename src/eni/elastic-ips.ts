/**
 * One Elastic IP check, shared by `init` (once) and the sidecar (after every move of a mapped address, and at
 * each resync): DescribeAddresses for the mapped allocations whose address our ENI holds (one call), then,
 * only when an association is due, one read of what sits on those addresses, the AssociateAddress calls the
 * pure plan asks for, and a DescribeAddresses until EC2 shows them. A mapped address we do not hold costs
 * nothing.
 */

import type { Ec2Api } from "./ec2-api.js";
import {
  type AssociateCall,
  type ElasticIpDecision,
  type ElasticIpPlan,
  planElasticIps,
} from "./elastic-ip-plan.js";
import { Ec2Error } from "./errors/ec2-error.js";
import { TimeoutError } from "./errors/timeout-error.js";
import type { Clock } from "./process/clock.js";
import type { Logger } from "./process/logger.js";
import type { Ec2ElasticIp, ElasticIpMapping } from "./types.js";

export interface ElasticIpCheckDeps {
  readonly ec2: Ec2Api;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface ElasticIpCheckOptions {
  readonly mappings: readonly ElasticIpMapping[];
  /** Addresses our ENIs hold at the latest observation: address -> our ENI holding it. */
  readonly held: ReadonlyMap<string, string>;
  /** How long DescribeAddresses may take to show an association EC2 accepted, and the poll interval, in ms. */
  readonly confirm: { readonly timeoutMs: number; readonly intervalMs: number };
  readonly signal?: AbortSignal;
  /** Whether a due association may be made now (the sidecar paces them); default: always. */
  readonly mayAssociate?: (call: AssociateCall) => boolean;
}

export interface ElasticIpCheck {
  /** The final plan: one decision per mapping. */
  readonly plan: ElasticIpPlan;
  /** Associations EC2 accepted and DescribeAddresses showed. */
  readonly associated: readonly AssociateCall[];
  /** Associations EC2 refused (e.g. Resource.AlreadyAssociated after a race), with its error. */
  readonly refused: readonly { readonly call: AssociateCall; readonly error: Ec2Error }[];
  /** Associations due but not made: `mayAssociate` said not yet. */
  readonly deferred: readonly AssociateCall[];
  /** EC2 calls made, reads included. */
  readonly calls: number;
}

/** Checks, associates what is due, confirms. Permission and availability errors propagate; refusals are returned. */
export async function checkElasticIps(
  deps: ElasticIpCheckDeps,
  options: ElasticIpCheckOptions,
): Promise<ElasticIpCheck> {
  const { mappings, held } = options;
  let calls = 0;
  const wanted = mappings.filter((m) => held.has(m.address)).map((m) => m.allocationId);
  let described: Ec2ElasticIp[] = [];
  if (wanted.length > 0) {
    described = await deps.ec2.describeElasticIps({ allocationIds: wanted });
    calls += 1;
  }
  let plan = planElasticIps({ mappings, held, described });
  if (plan.occupantQuery !== undefined) {
    const occupants = await deps.ec2.describeElasticIps(plan.occupantQuery);
    calls += 1;
    plan = planElasticIps({ mappings, held, described, occupants });
  }
  const associated: AssociateCall[] = [];
  const refused: { call: AssociateCall; error: Ec2Error }[] = [];
  const deferred: AssociateCall[] = [];
  for (const call of plan.calls) {
    options.signal?.throwIfAborted();
    if (options.mayAssociate?.(call) === false) {
      deferred.push(call);
      continue;
    }
    try {
      calls += 1;
      await deps.ec2.associateElasticIp(
        call.allocationId,
        call.eniId,
        call.privateIp,
        call.allowReassociation,
      );
      associated.push(call);
    } catch (error) {
      if (!(error instanceof Ec2Error) || error.kind !== "refused") throw error;
      refused.push({ call, error });
    }
  }
  if (associated.length > 0) calls += await confirmAssociations(deps, associated, options);
  return { plan, associated, refused, deferred, calls };
}

/** Polls DescribeAddresses until every association shows; returns the calls made. Throws TimeoutError. */
async function confirmAssociations(
  deps: ElasticIpCheckDeps,
  expected: readonly AssociateCall[],
  options: ElasticIpCheckOptions,
): Promise<number> {
  const { timeoutMs, intervalMs } = options.confirm;
  const started = deps.clock.now();
  let calls = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const now = await deps.ec2.describeElasticIps({ allocationIds: expected.map((c) => c.allocationId) });
    calls += 1;
    const missing = expected.filter((c) => {
      const a = now.find((e) => e.allocationId === c.allocationId)?.association;
      return a?.eniId !== c.eniId || a.privateIp !== c.privateIp;
    });
    if (missing.length === 0) return calls;
    const elapsed = deps.clock.now() - started;
    if (elapsed >= timeoutMs) {
      throw new TimeoutError(
        `DescribeAddresses to show ${missing.map((c) => `${c.allocationId} on ${c.privateIp} of ${c.eniId}`).join("; ")}`,
        timeoutMs,
        "EC2 accepted AssociateAddress but does not show the association; another pod may have moved the address " +
          "meanwhile (check with aws ec2 describe-addresses).",
      );
    }
    await deps.clock.sleep(Math.min(intervalMs, timeoutMs - elapsed), options.signal);
  }
}

/** The sentence for a mapping whose Elastic IP cannot follow its address, or undefined when there is none. */
export function elasticIpProblem(decision: ElasticIpDecision): string | undefined {
  const { mapping, status, described } = decision;
  const name = `Elastic IP ${mapping.allocationId}${described === undefined ? "" : ` (${described.publicIp})`}`;
  switch (status.kind) {
    case "missing-allocation":
      return (
        `Elastic IP ${mapping.allocationId}, mapped to ${mapping.address} in IPMGR_ELASTIC_IPS, does not exist in ` +
        "this account and region; allocate one (aws ec2 allocate-address --domain vpc) and map its allocation id, " +
        "or remove the mapping."
      );
    case "elsewhere":
      return (
        `${name} points at ${status.association.privateIp} on ${status.association.eniId}, not at ` +
        `${mapping.address}, so multus-ipmgr leaves it alone; disassociate it there (aws ec2 disassociate-address ` +
        `--association-id ${status.association.associationId}) or fix IPMGR_ELASTIC_IPS.`
      );
    case "occupied": {
      const occupant = status.occupant;
      return (
        `${mapping.address} on ${status.eniId} already carries Elastic IP ${occupant.allocationId} ` +
        `(${occupant.publicIp}), which IPMGR_ELASTIC_IPS does not map, so multus-ipmgr does not replace it with ` +
        `${mapping.allocationId}; disassociate it (aws ec2 disassociate-address --association-id ` +
        `${occupant.association?.associationId ?? "..."}) or map it instead.`
      );
    }
    default:
      return undefined;
  }
}
