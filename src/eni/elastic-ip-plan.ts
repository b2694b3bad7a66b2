/**
 * Which AssociateAddress calls to make so that each Elastic IP follows its floating address, given the
 * addresses our ENIs hold and what DescribeAddresses says. Pure: no I/O, tested with tables and properties.
 *
 * The rules, each a guard against moving a public address that is not ours to move:
 * - An Elastic IP is only ever pointed at its mapped address on OUR ENI, and only while our ENI holds that
 *   address (latest observation). A standby, or a pod that does not carry the address, does nothing; and
 *   since EC2 associates only a private address the ENI holds, a public address never moves faster than its
 *   private address does.
 * - An allocation that is not mapped is never touched, not even one sitting on our address: associating
 *   another Elastic IP with a private address takes the one there off it, so that case is reported instead.
 * - An Elastic IP pointing at another private address is someone's deliberate choice: reported, never pulled.
 * - Nothing is ever disassociated.
 * - An unassociated Elastic IP is associated with AllowReassociation=false (EC2 reassociates by default), so
 *   that if it was associated meanwhile (a race with the other pod), EC2 refuses instead of moving it. Only
 *   one that points at our very address on another ENI (EC2's reads lag: an address is on one ENI at a time)
 *   is associated with AllowReassociation=true; EC2 itself checks that our ENI holds the address.
 */
import type { Ec2ElasticIp, ElasticIpAssociation, ElasticIpMapping } from "./types.js";

export interface ElasticIpPlanInput {
  readonly mappings: readonly ElasticIpMapping[];
  /** Addresses our ENIs hold at the latest observation: address -> the ENI (ours) that holds it. */
  readonly held: ReadonlyMap<string, string>;
  /**
   * DescribeAddresses for the mapped allocations: an allocation absent here does not exist. Items of
   * allocations that are not mapped are ignored.
   */
  readonly described: readonly Ec2ElasticIp[];
  /**
   * The Elastic IPs on the (ENI, address) pairs of `occupantQuery`, read after a first plan asked for them;
   * undefined until then. A plan makes no call before it has them.
   */
  readonly occupants?: readonly Ec2ElasticIp[];
}

/** What is true of one mapping, and what (if anything) is done about it. */
export type ElasticIpStatus =
  /** Our ENI does not hold the address (the standby, or a pod that does not carry it): nothing to do. */
  | { readonly kind: "not-held" }
  /** The Elastic IP points at the address on our ENI. */
  | { readonly kind: "in-place"; readonly eniId: string }
  /** No such allocation in this account and region. */
  | { readonly kind: "missing-allocation"; readonly eniId: string }
  /** To associate with the address on `eniId` (ours). */
  | { readonly kind: "associate"; readonly eniId: string; readonly allowReassociation: boolean }
  /** The Elastic IP points at another private address: left alone. */
  | { readonly kind: "elsewhere"; readonly eniId: string; readonly association: ElasticIpAssociation }
  /** Our address already carries another Elastic IP: left alone. */
  | { readonly kind: "occupied"; readonly eniId: string; readonly occupant: Ec2ElasticIp };

export interface ElasticIpDecision {
  readonly mapping: ElasticIpMapping;
  /** What DescribeAddresses said about the mapped allocation; undefined when it does not exist. */
  readonly described: Ec2ElasticIp | undefined;
  readonly status: ElasticIpStatus;
}

export interface AssociateCall {
  readonly allocationId: string;
  readonly eniId: string;
  readonly privateIp: string;
  readonly allowReassociation: boolean;
}

export interface ElasticIpPlan {
  /** One per mapping, in the mappings' order. */
  readonly decisions: readonly ElasticIpDecision[];
  /** AssociateAddress calls to make; empty until `occupants` were given. */
  readonly calls: readonly AssociateCall[];
  /**
   * When associations are due but `occupants` were not given: the ENIs and addresses to read them for
   * (DescribeAddresses filtered by both), then plan again with them.
   */
  readonly occupantQuery:
    | { readonly eniIds: readonly string[]; readonly privateIps: readonly string[] }
    | undefined;
}

function pointsAt(association: ElasticIpAssociation | undefined, eniId: string, address: string): boolean {
  return association?.eniId === eniId && association.privateIp === address;
}

/** The status of one mapping before occupants are known. */
function statusOf(
  mapping: ElasticIpMapping,
  eniId: string | undefined,
  eip: Ec2ElasticIp | undefined,
): ElasticIpStatus {
  if (eniId === undefined) return { kind: "not-held" };
  if (eip === undefined) return { kind: "missing-allocation", eniId };
  const association = eip.association;
  if (association === undefined) return { kind: "associate", eniId, allowReassociation: false };
  if (association.privateIp !== mapping.address) return { kind: "elsewhere", eniId, association };
  if (association.eniId === eniId) return { kind: "in-place", eniId };
  // Our address on another ENI: EC2's reads lag the move (an address is on one ENI at a time).
  return { kind: "associate", eniId, allowReassociation: true };
}

/** Re-decides a due association knowing what sits on our address. */
function withOccupants(
  mapping: ElasticIpMapping,
  status: Extract<ElasticIpStatus, { kind: "associate" }>,
  occupants: readonly Ec2ElasticIp[],
): ElasticIpStatus {
  const here = occupants.filter((o) => pointsAt(o.association, status.eniId, mapping.address));
  // The fresher read shows our own Elastic IP already there: nothing to do.
  if (here.some((o) => o.allocationId === mapping.allocationId))
    return { kind: "in-place", eniId: status.eniId };
  const occupant = here[0];
  if (occupant !== undefined) return { kind: "occupied", eniId: status.eniId, occupant };
  return status;
}

export function planElasticIps(input: ElasticIpPlanInput): ElasticIpPlan {
  const byAllocation = new Map(input.described.map((eip) => [eip.allocationId, eip]));
  let decisions: ElasticIpDecision[] = input.mappings.map((mapping) => {
    const described = byAllocation.get(mapping.allocationId);
    return { mapping, described, status: statusOf(mapping, input.held.get(mapping.address), described) };
  });
  const due = decisions.filter((d) => d.status.kind === "associate");
  if (due.length === 0) return { decisions, calls: [], occupantQuery: undefined };
  const occupants = input.occupants;
  if (occupants === undefined) {
    const eniIds = new Set<string>();
    for (const d of due) if (d.status.kind === "associate") eniIds.add(d.status.eniId);
    return {
      decisions,
      calls: [],
      occupantQuery: { eniIds: [...eniIds], privateIps: due.map((d) => d.mapping.address) },
    };
  }
  decisions = decisions.map((d) =>
    d.status.kind === "associate" ? { ...d, status: withOccupants(d.mapping, d.status, occupants) } : d,
  );
  const calls: AssociateCall[] = [];
  for (const d of decisions) {
    if (d.status.kind !== "associate") continue;
    calls.push({
      allocationId: d.mapping.allocationId,
      eniId: d.status.eniId,
      privateIp: d.mapping.address,
      allowReassociation: d.status.allowReassociation,
    });
  }
  return { decisions, calls, occupantQuery: undefined };
}
