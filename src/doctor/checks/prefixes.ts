/**
 * Prefix mode on this node: whether the instance type takes delegated prefixes (Nitro), whether each Multus
 * subnet in which this node's ENIs hold prefixes covers them with `explicit` reservations (never `prefix`
 * ones) with free aligned blocks left, and which of this node's whereabouts slices are not held as prefixes
 * yet.
 */
import { cidrBounds, cidrContains, DELEGATED_PREFIX_LENGTH, family, tryCanonical } from "../../eni/ip.js";
import type {
  Ec2InstanceType,
  Ec2NetworkInterface,
  EniState,
  IpFamily,
  SubnetCidrReservation,
} from "../../eni/types.js";
import { type CheckResult, listText, ok, problem, skipped, warn } from "../check.js";
import { cidrRelation, uncoveredParts } from "../cidr-coverage.js";
import { freePrefixBlocks } from "../free-prefix-blocks.js";
import type { NodeSlice } from "../node-slices.js";

const NITRO_TYPES_COMMAND =
  "aws ec2 describe-instance-types --filters Name=hypervisor,Values=nitro --query 'InstanceTypes[].InstanceType'";

/**
 * DescribeInstanceTypes' answer for this instance's type. `slices`: this node's whereabouts slices, when
 * known: on a type without prefixes they stay per address, which is worth a warning only when there are some.
 */
export function prefixSupportCheck(
  instanceType: string,
  described: Ec2InstanceType | undefined,
  slices: readonly NodeSlice[] | undefined,
): CheckResult {
  const subject = instanceType;
  if (described === undefined) {
    return skipped(
      "prefix-support",
      `EC2 does not know the instance type ${instanceType} (DescribeInstanceTypes: InvalidInstanceType): not checked.`,
      { subject },
    );
  }
  if (described.hypervisor === "nitro") {
    return ok(
      "prefix-support",
      `${instanceType} is built on the Nitro System (DescribeInstanceTypes: hypervisor nitro): its ENIs can hold delegated prefixes (/28, /80), so a node slice costs one EC2 call and a pod none.`,
      { subject },
    );
  }
  const what =
    described.hypervisor === undefined
      ? `EC2 names no hypervisor for ${instanceType} (bare metal), so doctor cannot tell whether it takes delegated prefixes`
      : `${instanceType} is not built on the Nitro System (DescribeInstanceTypes: hypervisor ${described.hypervisor}): EC2 refuses delegated prefixes on it`;
  const sliced = slices !== undefined && slices.length > 0;
  const detail = `${what}, so node slices stay in per-address mode here (one EC2 call per pod address).`;
  if (!sliced && described.hypervisor !== undefined) return ok("prefix-support", detail, { subject });
  return warn("prefix-support", detail, {
    subject,
    fix: `run node-sliced workloads on a Nitro instance type (${NITRO_TYPES_COMMAND})`,
  });
}

/** ec2:DescribeInstanceTypes denied: said, never taken for an answer. */
export function prefixSupportDenied(instanceType: string, message: string): CheckResult {
  return warn(
    "prefix-support",
    `ec2:DescribeInstanceTypes is denied, so doctor cannot tell whether ${instanceType} takes delegated prefixes (Nitro): ${message}`,
    {
      subject: instanceType,
      fix: `grant ec2:DescribeInstanceTypes (deploy/iam/iam-policy-pod.json has it), or look it up: aws ec2 describe-instance-types --instance-types ${instanceType} --query 'InstanceTypes[].Hypervisor'`,
    },
  );
}

/** A Multus subnet and family in which this node's ENIs hold delegated prefixes. */
export interface PrefixSubnet {
  readonly subnetId: string;
  readonly family: IpFamily;
  /** The subnet's CIDR of that family. */
  readonly cidr: string;
  /** ENI id -> the prefixes of that family it holds, in this subnet. */
  readonly held: ReadonlyMap<string, readonly string[]>;
}

/** The subnets and families in which `enis` hold prefixes. */
export function prefixSubnetsOf(enis: readonly EniState[]): PrefixSubnet[] {
  const out = new Map<
    string,
    { subnetId: string; family: IpFamily; cidr: string; held: Map<string, string[]> }
  >();
  for (const eni of enis) {
    for (const fam of [4, 6] as const) {
      const prefixes = (fam === 4 ? eni.ipv4Prefixes : eni.ipv6Prefixes) ?? [];
      const cidrs = fam === 4 ? eni.subnetIpv4Cidrs : eni.subnetIpv6Cidrs;
      for (const prefix of prefixes) {
        const first = prefix.split("/")[0] ?? "";
        const cidr = cidrs.find((c) => cidrContains(c, first));
        if (cidr === undefined) continue;
        const key = `${eni.subnetId} ${fam} ${cidr}`;
        const entry = out.get(key) ?? { subnetId: eni.subnetId, family: fam, cidr, held: new Map() };
        entry.held.set(eni.eniId, [...(entry.held.get(eni.eniId) ?? []), prefix]);
        out.set(key, entry);
      }
    }
  }
  return [...out.values()];
}

/** Whether a NodeSlicePool's `spec.range` (read as it stands) is a CIDR block doctor can reckon with. */
function isBlock(text: string): boolean {
  const [address, length, ...rest] = text.split("/");
  if (rest.length > 0 || length === undefined || !/^\d{1,3}$/.test(length)) return false;
  const canonicalAddress = tryCanonical(address ?? "");
  return canonicalAddress !== undefined && Number(length) <= (family(canonicalAddress) === 4 ? 32 : 128);
}

const UNKNOWN_RANGE = "<the node-sliced range of the NetworkAttachmentDefinition>";

function createCommand(subnetId: string, cidr: string): string {
  return `aws ec2 create-subnet-cidr-reservation --subnet-id ${subnetId} --cidr ${cidr} --reservation-type explicit --description "multus-ipmgr node slices"`;
}

function deleteCommand(r: SubnetCidrReservation): string {
  return `aws ec2 delete-subnet-cidr-reservation --subnet-cidr-reservation-id ${r.reservationId}`;
}

const named = (rs: readonly SubnetCidrReservation[]): string =>
  listText(rs.map((r) => `${r.reservationId} (${r.cidr})`));

/**
 * Per subnet and family that holds prefixes, the reservations over this node's prefixes and its known
 * node-sliced ranges, as the bridge's reservation keeper wants them (docs/prefix-mode.md, "Subnet CIDR
 * reservations"): `explicit` ones, which keep DHCP and EC2's own picks off the range while the bridge assigns
 * chosen prefixes inside (a manual assignment). A `prefix` one is a problem: EC2 takes the blocks it picks for
 * Ipv4PrefixCount / Ipv6PrefixCount (the VPC CNI's prefix delegation, on any ENI of the subnet) from it first,
 * so another ENI could get a block of some node's slice, which that node's bridge could then never assign: a
 * problem, as in the `reservation` check and the bridge, not a slowdown. Then the free aligned blocks left in
 * the explicit reservations (or in the subnet, without one), where the next node's slice comes from.
 * `inSubnets`: every ENI of those subnets (DescribeNetworkInterfaces by subnet), for what is assigned there;
 * `slices`: this node's slices when known, to name the range to reserve.
 */
export function prefixBlockChecks(
  subnets: readonly PrefixSubnet[],
  reservations: ReadonlyMap<string, readonly SubnetCidrReservation[]>,
  inSubnets: readonly Ec2NetworkInterface[],
  slices: readonly NodeSlice[] | undefined,
): CheckResult[] {
  return subnets.map((s) => {
    const subject = `${s.subnetId} IPv${s.family}`;
    const length = DELEGATED_PREFIX_LENGTH[s.family];
    const heldPrefixes = [...s.held.values()].flat();
    const ranges = [
      ...new Set(
        (slices ?? [])
          .filter(
            (slice) => isBlock(slice.poolRange) && cidrContains(s.cidr, slice.poolRange.split("/")[0] ?? ""),
          )
          .map((slice) => slice.poolRange),
      ),
    ];
    const watched = [...heldPrefixes, ...ranges];
    const over = (reservations.get(s.subnetId) ?? []).filter(
      (r) =>
        cidrBounds(r.cidr).family === s.family && watched.some((c) => cidrRelation(r.cidr, c) !== "disjoint"),
    );
    const prefixType = over.filter((r) => r.type === "prefix");
    const explicit = over.filter((r) => r.type === "explicit");
    const used = inSubnets
      .filter((e) => e.subnetId === s.subnetId)
      .flatMap((e) =>
        s.family === 4 ? [...e.ipv4s, ...(e.ipv4Prefixes ?? [])] : [...e.ipv6s, ...(e.ipv6Prefixes ?? [])],
      );
    const area = explicit.length > 0 ? explicit.map((r) => r.cidr) : [s.cidr];
    const blocks = freePrefixBlocks({ family: s.family, subnetCidr: s.cidr, area, used });
    const holders = [...s.held]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([eniId, prefixes]) => `${eniId} holds ${listText(prefixes)}`);
    const head = `${s.subnetId} (${s.cidr}): ${listText(holders)}`;
    const left = `${blocks.free} of ${blocks.total} aligned /${length} blocks free`;
    const where =
      explicit.length > 0 ? `in the explicit reservation${explicit.length > 1 ? "s" : ""}` : "in the subnet";
    // What explicit reservations to create: the node-sliced ranges' parts none covers yet (EC2 refuses a
    // reservation that overlaps another), or a placeholder when this node's slices are unknown.
    const creates = (): string[] => {
      if (ranges.length === 0) return [createCommand(s.subnetId, UNKNOWN_RANGE)];
      return ranges
        .flatMap((range) =>
          uncoveredParts(
            range,
            explicit.map((r) => r.cidr),
          ),
        )
        .map((gap) => createCommand(s.subnetId, gap));
    };
    if (prefixType.length > 0) {
      const many = prefixType.length > 1;
      return problem(
        "prefix-blocks",
        `${head}; the prefix reservation${many ? "s" : ""} ${named(prefixType)} ${many ? "overlap" : "overlaps"} the node-sliced range: EC2 takes the blocks it picks for Ipv${s.family}PrefixCount (the VPC CNI's prefix delegation, on any ENI of the subnet) from prefix reservations first, so another ENI can be given a block of some node's slice, which that node's bridge can then never assign; node slices want explicit reservations (${left} ${where}).`,
        { subject, fix: [...prefixType.map(deleteCommand), ...creates()].join("; ") },
      );
    }
    const gaps = heldPrefixes.flatMap((prefix) =>
      uncoveredParts(
        prefix,
        explicit.map((r) => r.cidr),
      ),
    );
    if (gaps.length > 0) {
      return warn(
        "prefix-blocks",
        `${head}, but ${explicit.length === 0 ? `no IPv${s.family} explicit subnet CIDR reservation covers ${listText(gaps)}` : `the explicit reservation${explicit.length > 1 ? "s" : ""} ${named(explicit)} leave${explicit.length > 1 ? "" : "s"} ${listText(gaps)} uncovered`}: DHCP (new ENIs) and EC2's own picks (SecondaryPrivateIpAddressCount, Ipv${s.family}PrefixCount: the VPC CNI) may take addresses inside the node-sliced range, and EC2 then refuses the prefix of the node whose slice holds one; ${left} ${where}.`,
        { subject, fix: creates().join("; ") },
      );
    }
    if (blocks.free === 0n) {
      const many = explicit.length > 1;
      const none = `${head}; the explicit reservation${many ? "s" : ""} ${named(explicit)}`;
      const fix =
        "widen the node-sliced range and its explicit reservation, or free blocks: unassign the prefixes of nodes that are gone (aws ec2 unassign-private-ip-addresses --ipv4-prefixes ... / unassign-ipv6-addresses --ipv6-prefixes ...) and the single addresses assigned inside the range";
      if (ranges.length === 0) {
        // Without this node's slices doctor sees only the reservations over its own prefixes, which those
        // prefixes may fill while the rest of the node-sliced range is reserved apart: not proof of a shortage.
        return warn(
          "prefix-blocks",
          `${none} over this node's prefixes ${many ? "have" : "has"} no free aligned /${length} block left (${blocks.total} in all), and the node-sliced range is unknown (see node-slice), so reservations over the rest of it were not counted: if there are none, the next node's slice cannot become a prefix (EC2: InsufficientCidrBlocks or an overlap).`,
          { subject, fix: `let doctor read the NodeSlicePools (see node-slice), or ${fix}` },
        );
      }
      return problem(
        "prefix-blocks",
        `${none} over the node-sliced range ${many ? "have" : "has"} no free aligned /${length} block left (${blocks.total} in all): the next node's slice cannot become a prefix (EC2: InsufficientCidrBlocks or an overlap), and its pods cost one EC2 call each.`,
        { subject, fix },
      );
    }
    return ok(
      "prefix-blocks",
      `${head}; explicit reservation${explicit.length > 1 ? "s" : ""} ${named(explicit)}: ${left}.`,
      {
        subject,
      },
    );
  });
}

/**
 * This node's whereabouts slices (NodeSlicePools), each held as prefixes by one of its Multus ENIs or not:
 * a slice not held yet makes every pod address in it cost one EC2 call. Undefined `slices`: not checked,
 * with `why`.
 */
export function nodeSliceChecks(
  slices: readonly NodeSlice[] | undefined,
  why: string,
  multus: readonly EniState[],
): CheckResult[] {
  if (slices === undefined) return [skipped("node-slice", why)];
  if (slices.length === 0) {
    return [ok("node-slice", "no NodeSlicePool gives this node a slice: no network here is in prefix mode.")];
  }
  return slices.map((slice) => {
    const subject = slice.sliceRange;
    const of = `slice ${slice.sliceRange} of NodeSlicePool ${slice.pool} (range ${slice.poolRange})`;
    const range = tryCanonical(slice.sliceRange.split("/")[0] ?? "");
    const fam = range === undefined ? undefined : family(range);
    const length = fam === undefined ? undefined : DELEGATED_PREFIX_LENGTH[fam];
    const sliceLength = Number(slice.sliceRange.split("/")[1]);
    if (fam === undefined || length === undefined || !Number.isInteger(sliceLength)) {
      return warn("node-slice", `${of}: not a CIDR whereabouts would write.`, {
        subject,
        fix: "check the NodeSlicePool (kubectl get nodeslicepools -A -o yaml) and whereabouts' node slice controller",
      });
    }
    if (sliceLength > length) {
      return warn(
        "node-slice",
        `${of} is smaller than a delegated prefix (/${length}), so it cannot be held as one: pods here cost one EC2 call per address.`,
        {
          subject,
          fix: `set node_slice_size to /${length} or larger (a smaller prefix length) on the NetworkAttachmentDefinition`,
        },
      );
    }
    const { first, last } = cidrBounds(slice.sliceRange);
    const holder = multus.find((eni) => {
      const prefixes = (fam === 4 ? eni.ipv4Prefixes : eni.ipv6Prefixes) ?? [];
      // Covered when the ENI's prefixes inside the slice add up to all of it (they never overlap).
      const inside = prefixes.map(cidrBounds).filter((b) => b.first >= first && b.last <= last);
      const covered = inside.reduce((sum, b) => sum + (b.last - b.first + 1n), 0n);
      return covered === last - first + 1n;
    });
    if (holder !== undefined) {
      return ok(
        "node-slice",
        `${of} is held by ENI ${holder.eniId} as prefixes: its pods start with no EC2 call.`,
        {
          subject,
        },
      );
    }
    return warn(
      "node-slice",
      `${of} is not held as prefixes by a Multus ENI of this node yet: each pod address in it costs one EC2 call.`,
      {
        subject,
        fix: "run the bridge with prefix mode on this node, and read its Events on the NetworkAttachmentDefinition (kubectl get events -A --field-selector reason=PrefixModeRefused) for why a slice stays per address",
      },
    );
  });
}
