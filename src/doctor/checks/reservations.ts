import type { SubnetCidrReservation } from "../../eni/types.js";
import { type CheckResult, listText, ok, problem } from "../check.js";
import { cidrRelation, uncoveredParts } from "../cidr-coverage.js";
import type { MultusSubnet } from "./allowed-cidrs.js";

const DESCRIPTION = "multus-ipmgr pod range";

function createCommand(subnetId: string, cidr: string): string {
  return `aws ec2 create-subnet-cidr-reservation --subnet-id ${subnetId} --cidr ${cidr} --reservation-type explicit --description "${DESCRIPTION}"`;
}

/**
 * Each allowed CIDR inside a Multus subnet must be covered by explicit subnet CIDR reservations, which keep
 * EC2's own assignment (DHCP for new ENIs, the VPC CNI's warm pool) off it. A prefix reservation over it is
 * the opposite: EC2 hands its addresses out as prefixes (the VPC CNI's prefix delegation). A node-sliced
 * range is no exception: EC2 takes the blocks it picks for Ipv4PrefixCount / Ipv6PrefixCount from prefix
 * reservations first, so another ENI could get a block of some node's slice. The bridge's reservation keeper
 * says the same (docs/prefix-mode.md, "Subnet CIDR reservations").
 */
export function reservationChecks(
  ranges: readonly { cidr: string; subnet: MultusSubnet }[],
  reservations: ReadonlyMap<string, readonly SubnetCidrReservation[]>,
): CheckResult[] {
  return ranges.map(({ cidr, subnet }) => {
    const subject = cidr;
    const ofSubnet = reservations.get(subnet.subnetId) ?? [];
    const overlapping = ofSubnet.filter((r) => cidrRelation(r.cidr, cidr) !== "disjoint");
    const prefix = overlapping.filter((r) => r.type === "prefix");
    if (prefix.length > 0) {
      const names = prefix.map((r) => `${r.reservationId} (${r.cidr})`);
      return problem(
        "reservation",
        `${cidr} overlaps the prefix reservation${prefix.length > 1 ? "s" : ""} ${listText(names)} in ${subnet.subnetId}: EC2 hands those addresses out as prefixes (the VPC CNI's prefix delegation), to the ENIs of any node.`,
        {
          subject,
          fix: `${prefix.map((r) => `aws ec2 delete-subnet-cidr-reservation --subnet-cidr-reservation-id ${r.reservationId}`).join("; ")}; then ${createCommand(subnet.subnetId, cidr)} (and keep prefix delegation's reservations apart from your pod ranges)`,
        },
      );
    }
    const explicit = overlapping.filter((r) => r.type === "explicit");
    const gaps = uncoveredParts(
      cidr,
      explicit.map((r) => r.cidr),
    );
    if (gaps.length === 0) {
      const names = explicit.map((r) => `${r.reservationId} (${r.cidr})`);
      return ok(
        "reservation",
        `${cidr} is covered by the explicit reservation${explicit.length > 1 ? "s" : ""} ${listText(names)} in ${subnet.subnetId}.`,
        {
          subject,
        },
      );
    }
    const what =
      explicit.length === 0
        ? `no explicit subnet CIDR reservation in ${subnet.subnetId} covers ${cidr}`
        : `the explicit reservations in ${subnet.subnetId} leave ${listText(gaps)} of ${cidr} uncovered`;
    return problem(
      "reservation",
      `${what}: EC2 may give those addresses to a new ENI (DHCP) or to the VPC CNI's warm pool, while whereabouts gives them to pods.`,
      { subject, fix: gaps.map((gap) => createCommand(subnet.subnetId, gap)).join("; ") },
    );
  });
}
