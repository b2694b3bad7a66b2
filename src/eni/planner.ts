/**
 * The planner: from what we observed (pod interfaces, this instance's ENIs, the policy) to the EC2 actions that
 * put every pod address on the ENI that carries its interface. Pure and deterministic: no I/O, and the output
 * does not depend on the order of interfaces or ENIs in the input.
 *
 * Verdict for each (interface, address), first match wins:
 *   not unicast                          -> skipped (link-local, loopback, multicast, unspecified, ipv4-mapped)
 *   interface MAC matches no ENI         -> refused `unknown-mac`
 *   primary IPv4 of any of our ENIs      -> refused `eni-primary-address`
 *   outside policy.allowedCidrs          -> refused `outside-allowed-cidrs`
 *   outside the ENI's subnet, or one of
 *   the five addresses AWS reserves      -> refused `outside-eni-subnet`
 *   floating (input.floating), inside a
 *   prefix any of our ENIs holds         -> refused `floating-in-prefix` (naming the prefix, the ENI, the fix)
 *   inside a prefix another of our ENIs
 *   holds                                -> refused `inside-prefix` (naming that ENI and the prefix)
 *   also accepted for a different ENI    -> refused `address-conflict` on every claimant
 *   otherwise                            -> placed on the ENI whose MAC the interface carries
 * Prefixes (prefix delegation): an address inside a prefix its own ENI holds is held, with no call; the planner
 * never plans a single-address assign inside a prefix, and never assigns, moves or releases a prefix itself.
 * Non-unicast addresses are skipped before the MAC is looked at: an ipvlan interface always has an fe80::
 * address, and it says nothing about whether the interface is ours.
 */
import {
  addressKind,
  anyCidrContains,
  awsReservedAddresses,
  canonical,
  canonicalCidr,
  cidrContains,
  compareAddresses,
  coveringPrefix,
  family,
} from "./ip.js";
import type {
  EniState,
  IpFamily,
  Placement,
  Plan,
  PlanAction,
  PlanInput,
  PodInterface,
  Refusal,
  Skip,
} from "./types.js";

interface Eni {
  readonly eniId: string;
  readonly mac: string;
  readonly subnetId: string;
  readonly primaryIpv4: string | undefined;
  readonly cidrs: { readonly 4: readonly string[]; readonly 6: readonly string[] };
  readonly held: { readonly 4: ReadonlySet<string>; readonly 6: ReadonlySet<string> };
  /** Delegated prefixes, canonical: every address inside is routed to this ENI. */
  readonly prefixes: { readonly 4: readonly string[]; readonly 6: readonly string[] };
}

interface Analysis {
  readonly enis: readonly Eni[];
  readonly allowed: readonly string[];
  readonly primaries: ReadonlyMap<string, Eni>;
  /** Every canonical address seen on any interface, whatever its verdict: never released. */
  readonly present: ReadonlySet<string>;
  readonly placements: readonly Placement[];
  readonly refusals: readonly Refusal[];
  readonly skipped: readonly Skip[];
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function sortedUnique(addresses: Iterable<string>): string[] {
  return [...new Set(addresses)].sort(compareAddresses);
}

function normalizeMac(mac: string): string {
  return mac.trim().toLowerCase();
}

function toEni(state: EniState): Eni {
  return {
    eniId: state.eniId,
    mac: normalizeMac(state.mac),
    subnetId: state.subnetId,
    primaryIpv4: state.primaryIpv4 === undefined ? undefined : canonical(state.primaryIpv4),
    cidrs: { 4: state.subnetIpv4Cidrs.map(canonicalCidr), 6: state.subnetIpv6Cidrs.map(canonicalCidr) },
    held: { 4: new Set(state.ipv4s.map(canonical)), 6: new Set(state.ipv6s.map(canonical)) },
    prefixes: {
      4: (state.ipv4Prefixes ?? []).map(canonicalCidr),
      6: (state.ipv6Prefixes ?? []).map(canonicalCidr),
    },
  };
}

/** Whether the ENI holds `address`, singly or inside one of its prefixes. */
function holds(eni: Eni, fam: IpFamily, address: string): boolean {
  return eni.held[fam].has(address) || coveringPrefix(eni.prefixes[fam], address) !== undefined;
}

function compareInterfaces(a: PodInterface, b: PodInterface): number {
  return byString(a.name, b.name) || byString(normalizeMac(a.mac), normalizeMac(b.mac));
}

function list(items: readonly string[]): string {
  return items.length === 0 ? "none" : items.join(", ");
}

function analyze(input: PlanInput): Analysis {
  const enis = input.enis.map(toEni).sort((a, b) => byString(a.eniId, b.eniId));
  const byMac = new Map<string, Eni>();
  for (const eni of enis) if (!byMac.has(eni.mac)) byMac.set(eni.mac, eni);
  const primaries = new Map<string, Eni>();
  for (const eni of enis) if (eni.primaryIpv4 !== undefined) primaries.set(eni.primaryIpv4, eni);
  const allowed = input.policy.allowedCidrs.map(canonicalCidr);
  const knownMacs = [...byMac.keys()].sort(byString);
  const floating = new Set((input.floating ?? []).map(canonical));
  const learned = new Map(
    (input.learnedRefusals ?? []).map((r) => [`${canonical(r.address)} ${r.interfaceName}`, r] as const),
  );

  const present = new Set<string>();
  const refusals: Refusal[] = [];
  const skipped: Skip[] = [];
  const accepted: Placement[] = [];

  for (const iface of [...input.interfaces].sort(compareInterfaces)) {
    const mac = normalizeMac(iface.mac);
    const eni = byMac.get(mac);
    const refuse = (address: string, reason: Refusal["reason"], detail: string): void => {
      refusals.push({ address, interfaceName: iface.name, mac, reason, detail });
    };
    for (const address of sortedUnique(iface.addresses.map(canonical))) {
      present.add(address);
      const kind = addressKind(address);
      if (kind !== "unicast") {
        skipped.push({ address, interfaceName: iface.name, reason: kind });
        continue;
      }
      if (eni === undefined) {
        refuse(
          address,
          "unknown-mac",
          `address ${address} on ${iface.name}: the interface has MAC ${mac}, which matches no ENI of this instance ` +
            `(instance ENI MACs: ${list(knownMacs)}). With ipvlan the pod interface carries its parent ENI's MAC: ` +
            "check the NetworkAttachmentDefinition's master, or exclude the interface with IPMGR_EXCLUDE_INTERFACES.",
        );
        continue;
      }
      const refusedByEc2 = learned.get(`${address} ${iface.name}`);
      if (refusedByEc2 !== undefined) {
        refuse(address, refusedByEc2.reason, refusedByEc2.detail);
        continue;
      }
      const primaryOf = primaries.get(address);
      if (primaryOf !== undefined) {
        refuse(
          address,
          "eni-primary-address",
          `address ${address} on ${iface.name} is the primary private IPv4 address of ENI ${primaryOf.eniId} ` +
            `(MAC ${primaryOf.mac}), which is never assigned or released; exclude it from the IPAM range.`,
        );
        continue;
      }
      if (!anyCidrContains(allowed, address)) {
        refuse(
          address,
          "outside-allowed-cidrs",
          `address ${address} on ${iface.name} is outside the allowed CIDRs [${allowed.join(", ")}]; ` +
            "add its range to IPMGR_ALLOWED_CIDRS if it is a pod address",
        );
        continue;
      }
      const fam: IpFamily = family(address);
      const subnet = eni.cidrs[fam].find((cidr) => cidrContains(cidr, address));
      if (subnet === undefined) {
        const cidrs = [...eni.cidrs[4], ...eni.cidrs[6]];
        refuse(
          address,
          "outside-eni-subnet",
          `address ${address} on ${iface.name} is outside the subnet of ENI ${eni.eniId} (MAC ${mac}, ` +
            `${eni.subnetId}, IPv${fam} CIDRs: ${list(eni.cidrs[fam])}; all CIDRs: ${list(cidrs)}); ` +
            "the NetworkAttachmentDefinition's master must be the ENI in the address's subnet, " +
            "or the IPAM range must lie inside the ENI's subnet.",
        );
        continue;
      }
      if (awsReservedAddresses(subnet).includes(address)) {
        refuse(
          address,
          "outside-eni-subnet",
          `address ${address} on ${iface.name} is reserved by AWS in subnet ${subnet} of ENI ${eni.eniId} ` +
            "(AWS keeps the first four and the last address of every subnet); exclude it from the IPAM range.",
        );
        continue;
      }
      if (floating.has(address)) {
        const slice = enis
          .map((holder) => ({ holder, prefix: coveringPrefix(holder.prefixes[fam], address) }))
          .find((hit) => hit.prefix !== undefined);
        if (slice !== undefined) {
          const { holder, prefix } = slice;
          const whose = holder.eniId === eni.eniId ? "its own ENI" : "ENI";
          refuse(
            address,
            "floating-in-prefix",
            `floating address ${address} on ${iface.name} lies inside the prefix ${prefix} that ${whose} ` +
              `${holder.eniId} (MAC ${holder.mac}) holds: that prefix is this node's whereabouts slice ` +
              "(node_slice_size), which stays on this node, so the address would be unrouted once it moves to " +
              "another node; give floating addresses a range without node_slice_size, or take them out of the " +
              "sliced range (a narrower range on the node-sliced NetworkAttachmentDefinition).",
          );
          continue;
        }
      }
      const prefixOwner = enis
        .filter((other) => other.eniId !== eni.eniId)
        .map((other) => ({ other, prefix: coveringPrefix(other.prefixes[fam], address) }))
        .find((hit) => hit.prefix !== undefined);
      if (prefixOwner !== undefined) {
        const { other, prefix } = prefixOwner;
        refuse(
          address,
          "inside-prefix",
          `address ${address} on ${iface.name} lies inside the prefix ${prefix} that ENI ${other.eniId} ` +
            `(MAC ${other.mac}) holds, so the VPC delivers it to that ENI, not to ENI ${eni.eniId} behind ` +
            `${iface.name}; a prefix is never split or moved: take the address out of the IPAM range ` +
            "(whereabouts: exclude), or give this interface a master whose ENI holds the prefix.",
        );
        continue;
      }
      accepted.push({ address, family: fam, interfaceName: iface.name, eniId: eni.eniId, mac });
    }
  }

  // One address accepted for two different ENIs would give two contradicting assigns (and, for IPv4 with
  // reassignment, an address flapping between ENIs on every reconcile): refuse it everywhere instead.
  const targets = new Map<string, Placement[]>();
  for (const placement of accepted) {
    const claims = targets.get(placement.address) ?? [];
    claims.push(placement);
    targets.set(placement.address, claims);
  }
  const placements: Placement[] = [];
  for (const [address, claims] of targets) {
    if (new Set(claims.map((c) => c.eniId)).size === 1) {
      placements.push(...claims);
      continue;
    }
    const who = claims.map((c) => `${c.interfaceName} (MAC ${c.mac}, ENI ${c.eniId})`).join(" and ");
    for (const claim of claims) {
      refusals.push({
        address,
        interfaceName: claim.interfaceName,
        mac: claim.mac,
        reason: "address-conflict",
        detail:
          `address ${address} is on ${who}; an address can be held by only one ENI, so it is assigned to none: ` +
          "make the IPAM ranges of the NetworkAttachmentDefinitions on different masters disjoint.",
      });
    }
  }

  const byAddressThenInterface = (
    a: { address: string; interfaceName: string },
    b: { address: string; interfaceName: string },
  ): number => compareAddresses(a.address, b.address) || byString(a.interfaceName, b.interfaceName);
  placements.sort(byAddressThenInterface);
  refusals.sort(
    (a, b) => byAddressThenInterface(a, b) || byString(a.mac, b.mac) || byString(a.reason, b.reason),
  );
  skipped.sort(byAddressThenInterface);

  return { enis, allowed, primaries, present, placements, refusals, skipped };
}

function eniById(enis: readonly Eni[], eniId: string): Eni {
  const eni = enis.find((e) => e.eniId === eniId);
  if (eni === undefined) throw new Error(`internal: placement on unknown ENI ${eniId}`);
  return eni;
}

/** Groups addresses by ENI id: ENI ids sorted, addresses sorted and unique. */
class Grouped {
  private readonly byEni = new Map<string, Set<string>>();

  add(eniId: string, address: string): void {
    const set = this.byEni.get(eniId) ?? new Set<string>();
    set.add(address);
    this.byEni.set(eniId, set);
  }

  entries(): [string, string[]][] {
    return [...this.byEni.keys()]
      .sort(byString)
      .map((eniId) => [eniId, sortedUnique(this.byEni.get(eniId) ?? [])]);
  }
}

/**
 * The actions that put every pod address on its ENI and release the addresses we let go.
 * Refusals do not stop planning: the caller decides which are fatal. A refused or skipped address never
 * appears in an action. Actions come in execution order: IPv4 assigns, IPv6 moves (unassign from the current
 * holder), IPv6 assigns, then releases (IPv4, then IPv6); ENIs by id, addresses by `compareAddresses`. The
 * IPv4 assigns come first because EC2 may refuse one on facts the planner cannot see (another instance's
 * primary address): then no IPv6 address has been taken from its holder without being assigned here. And an
 * IPv6 address is unrouted only from its move to its assign, with no other call between them.
 * @throws InvalidAddressError / InvalidCidrError when the input holds text that is not an address or CIDR.
 */
export function plan(input: PlanInput): Plan {
  const analysis = analyze(input);
  const { enis } = analysis;

  const holders = new Map<string, string>();
  for (const [address, eniId] of input.ipv6Holders ?? []) holders.set(canonical(address), eniId);

  const satisfied = new Set<string>();
  const moves = new Grouped();
  const assign4 = new Grouped();
  const assign6 = new Grouped();
  for (const placement of analysis.placements) {
    const target = eniById(enis, placement.eniId);
    const fam = placement.family;
    // Inside a prefix of its own ENI: routed already, and EC2 refuses a single address there anyway.
    if (holds(target, fam, placement.address)) {
      satisfied.add(placement.address);
      continue;
    }
    if (fam === 4) {
      // AllowReassignment moves an IPv4 address from wherever it is, our other ENIs included.
      assign4.add(target.eniId, placement.address);
      continue;
    }
    assign6.add(target.eniId, placement.address);
    // Our own ENIs are known first-hand; ipv6Holders only answers for ENIs outside this instance.
    const ours = enis.filter((e) => e.eniId !== target.eniId && e.held[6].has(placement.address));
    for (const holder of ours) moves.add(holder.eniId, placement.address);
    const elsewhere = holders.get(placement.address);
    if (ours.length === 0 && elsewhere !== undefined && elsewhere !== target.eniId) {
      moves.add(elsewhere, placement.address);
    }
  }

  const release4 = new Grouped();
  const release6 = new Grouped();
  // Only the ENIs behind this pod's own interfaces: an address another pod on this node took over, on
  // another ENI, is that pod's now and is never released from under it.
  const podMacs = new Set(input.interfaces.map((i) => normalizeMac(i.mac)));
  const unconfirmed = new Map(
    [...(input.assignedUnconfirmed ?? [])].map(([address, eniId]) => [canonical(address), eniId]),
  );
  for (const address of sortedUnique((input.released ?? []).map(canonical))) {
    if (analysis.present.has(address)) continue;
    if (addressKind(address) !== "unicast") continue;
    if (!anyCidrContains(analysis.allowed, address)) continue;
    if (analysis.primaries.has(address)) continue;
    const fam = family(address);
    for (const eni of enis) {
      if (!podMacs.has(eni.mac)) continue;
      // Inside a prefix: the prefix keeps routing it, and a prefix is never released here.
      if (coveringPrefix(eni.prefixes[fam], address) !== undefined) continue;
      const held = eni.held[fam].has(address) || unconfirmed.get(address) === eni.eniId;
      if (held) (fam === 4 ? release4 : release6).add(eni.eniId, address);
    }
  }

  const actions: PlanAction[] = [
    ...assign4.entries().map(
      ([eniId, addresses]): PlanAction => ({
        kind: "assign-ipv4",
        eniId,
        addresses,
        allowReassignment: true,
      }),
    ),
    ...moves
      .entries()
      .map(([eniId, addresses]): PlanAction => ({ kind: "unassign-ipv6", eniId, addresses, reason: "move" })),
    ...assign6.entries().map(([eniId, addresses]): PlanAction => ({ kind: "assign-ipv6", eniId, addresses })),
    ...release4
      .entries()
      .map(([eniId, addresses]): PlanAction => ({ kind: "unassign-ipv4", eniId, addresses })),
    ...release6
      .entries()
      .map(
        ([eniId, addresses]): PlanAction => ({ kind: "unassign-ipv6", eniId, addresses, reason: "release" }),
      ),
  ];

  return {
    actions,
    placements: analysis.placements,
    satisfied: sortedUnique(satisfied),
    refusals: analysis.refusals,
    skipped: analysis.skipped,
  };
}

/**
 * The IPv6 addresses that must go to one of our ENIs but that no ENI of this instance holds, sorted. The caller
 * looks up their holders (DescribeNetworkInterfaces, filter `ipv6-addresses.ipv6-address`) and plans again with
 * `ipv6Holders`. Addresses held by another of our ENIs are left out: `plan` moves those by itself.
 */
export function ipv6HolderLookupNeeded(input: PlanInput): string[] {
  const { enis, placements } = analyze(input);
  return sortedUnique(
    placements
      .filter(
        (p) =>
          p.family === 6 &&
          !enis.some((e) => e.held[6].has(p.address)) &&
          !holds(eniById(enis, p.eniId), 6, p.address),
      )
      .map((p) => p.address),
  );
}
