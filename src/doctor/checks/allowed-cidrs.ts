import { awsReservedAddresses, cidrContains } from "../../eni/ip.js";
import type { Ec2NetworkInterface } from "../../eni/types.js";
import { type CheckResult, listText, ok, problem, warn } from "../check.js";
import { cidrRelation } from "../cidr-coverage.js";
import { eniLabel, type MultusEni } from "../multus-enis.js";
import { NO_MANAGE_TAG } from "./eni-tags.js";

/** A subnet CIDR of a Multus ENI. */
export interface MultusSubnet {
  readonly subnetId: string;
  readonly cidr: string;
  readonly enis: readonly MultusEni[];
}

/** Every subnet CIDR (both families) of the Multus ENIs, each once. */
export function multusSubnets(multus: readonly MultusEni[]): MultusSubnet[] {
  const byCidr = new Map<string, { subnetId: string; cidr: string; enis: MultusEni[] }>();
  for (const m of multus) {
    for (const cidr of [...m.eni.subnetIpv4Cidrs, ...m.eni.subnetIpv6Cidrs]) {
      const entry = byCidr.get(cidr) ?? { subnetId: m.eni.subnetId, cidr, enis: [] };
      entry.enis.push(m);
      byCidr.set(cidr, entry);
    }
  }
  return [...byCidr.values()];
}

/** The allowed CIDRs that lie inside (or equal) a Multus subnet: the ranges this node can assign. */
export function allowedInSubnets(
  allowed: readonly string[],
  subnets: readonly MultusSubnet[],
): { cidr: string; subnet: MultusSubnet }[] {
  const out: { cidr: string; subnet: MultusSubnet }[] = [];
  for (const cidr of allowed) {
    const subnet = subnets.find((s) => ["inside", "equal"].includes(cidrRelation(cidr, s.cidr)));
    if (subnet !== undefined) out.push({ cidr, subnet });
  }
  return out;
}

function subnetText(subnet: MultusSubnet): string {
  return `${subnet.subnetId} (${subnet.cidr}), the subnet of ${listText(subnet.enis.map(eniLabel))}`;
}

/**
 * Each allowed CIDR against the Multus ENIs' subnets: inside one (ok, unless it holds addresses AWS reserves
 * or an ENI's primary), larger than one (warned: node addresses included), or in none (warned: another
 * zone's range, or a mistake; a problem when no allowed CIDR fits any Multus subnet of this node).
 */
export function allowedCidrChecks(
  allowed: readonly string[],
  subnets: readonly MultusSubnet[],
): CheckResult[] {
  const noneFits = allowedInSubnets(allowed, subnets).length === 0;
  return allowed.map((cidr) => {
    const subject = cidr;
    const home = subnets.find((s) => ["inside", "equal"].includes(cidrRelation(cidr, s.cidr)));
    if (home !== undefined) {
      const reserved = awsReservedAddresses(home.cidr).filter((a) => cidrContains(cidr, a));
      const primaries = home.enis
        .map((m) => m.eni.primaryIpv4)
        .filter((a): a is string => a !== undefined && cidrContains(cidr, a));
      const inside = `${cidr} lies in ${subnetText(home)}`;
      if (reserved.length > 0 || primaries.length > 0) {
        const parts = [
          ...(reserved.length > 0 ? [`${listText(reserved)}, which AWS reserves`] : []),
          ...(primaries.length > 0
            ? [`the ENI primary address${primaries.length > 1 ? "es" : ""} ${listText(primaries)}`]
            : []),
        ];
        return warn(
          "allowed-cidr",
          `${inside}, but it includes ${parts.join(" and ")}: a pod given one of them is refused.`,
          {
            subject,
            fix: `keep them out of the whereabouts range (exclude: ${[...reserved, ...primaries].map((a) => (a.includes(":") ? `${a}/128` : `${a}/32`)).join(", ")}), or list a narrower pod range in IPMGR_ALLOWED_CIDRS`,
          },
        );
      }
      return ok("allowed-cidr", `${inside}.`, { subject });
    }
    const covered = subnets.filter((s) => cidrRelation(cidr, s.cidr) === "contains");
    if (covered.length > 0) {
      return warn(
        "allowed-cidr",
        `${cidr} is larger than ${listText(covered.map(subnetText))} and holds all of it, node and VPC CNI addresses included: any of them that a pod ever carries is moved to this node.`,
        {
          subject,
          fix: "list only your Multus pod ranges in IPMGR_ALLOWED_CIDRS, each inside a Multus ENI's subnet",
        },
      );
    }
    const where =
      subnets.length === 0 ? "no Multus ENI" : listText(subnets.map((s) => `${s.subnetId} (${s.cidr})`));
    const detail = `${cidr} lies in no subnet of this node's secondary ENIs (${where}): no address in it can be assigned here`;
    if (noneFits) {
      return problem(
        "allowed-cidr",
        `${detail}, and no other allowed CIDR fits either, so every pod address is refused.`,
        {
          subject,
          fix: "set IPMGR_ALLOWED_CIDRS to the pod ranges of the NetworkAttachmentDefinition, inside the subnet of its master ENI",
        },
      );
    }
    return warn("allowed-cidr", `${detail} (fine if it is another zone's range).`, {
      subject,
      fix: "if pods on this node use it, attach a Multus ENI in its subnet to the node; otherwise nothing to do",
    });
  });
}

/** One address in an allowed CIDR that is not a pod address of a Multus ENI. */
interface Intruder {
  readonly address: string;
  readonly eni: Ec2NetworkInterface;
  readonly primary: boolean;
}

function intruderText(i: Intruder): string {
  const eni = `${i.eni.eniId}${i.eni.instanceId === undefined ? " (attached to no instance)" : ` of ${i.eni.instanceId}`}`;
  if (i.primary) return `${i.address}, the primary address of ${eni}`;
  return `${i.address}, held by ${eni}, which is not tagged ${NO_MANAGE_TAG}=true (a node's or the VPC CNI's ENI)`;
}

/**
 * Addresses inside the allowed CIDRs held by ENIs that are not Multus ENIs (no no_manage tag: a node's, the
 * VPC CNI's) or as any ENI's primary address. A pod given one of them would take it away from its holder.
 * `podEnis`: the ENIs of this pod's interfaces, Multus ENIs whatever their tags (eni-tag reports those).
 */
export function overlapChecks(
  ranges: readonly { cidr: string; subnet: MultusSubnet }[],
  subnetEnis: readonly Ec2NetworkInterface[],
  podEnis: ReadonlySet<string>,
): CheckResult[] {
  return ranges.map(({ cidr, subnet }) => {
    const intruders: Intruder[] = [];
    const inSubnet = subnetEnis.filter((e) => e.subnetId === subnet.subnetId);
    for (const eni of inSubnet) {
      const tagged = eni.tags[NO_MANAGE_TAG] === "true" || podEnis.has(eni.eniId);
      for (const address of [...eni.ipv4s, ...eni.ipv6s]) {
        if (!cidrContains(cidr, address)) continue;
        const primary = address === eni.primaryIpv4;
        if (primary || !tagged) intruders.push({ address, eni, primary });
      }
    }
    const subject = cidr;
    if (intruders.length === 0) {
      return ok(
        "address-overlap",
        `no address in ${cidr} is an ENI's primary address or held by an ENI without ${NO_MANAGE_TAG}=true (${inSubnet.length} ENI${inSubnet.length === 1 ? "" : "s"} in ${subnet.subnetId} read).`,
        { subject },
      );
    }
    const shown = intruders.slice(0, 5).map(intruderText);
    const more = intruders.length > 5 ? ` and ${intruders.length - 5} more` : "";
    return warn(
      "address-overlap",
      `${cidr} holds addresses that are not Multus pod addresses: ${shown.join("; ")}${more}. A pod given one of them takes it from its holder.`,
      {
        subject,
        fix: "keep these addresses out of the whereabouts range (exclude:) and out of IPMGR_ALLOWED_CIDRS, and keep EC2 from handing out more with an explicit subnet CIDR reservation (see reservation)",
      },
    );
  });
}
