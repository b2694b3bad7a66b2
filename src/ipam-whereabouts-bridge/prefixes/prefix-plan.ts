/**
 * Prefix mode's plan: from whereabouts' node slices to the delegated prefixes this node's ENIs hold. Pure: no
 * I/O, no clock (`now` is an input), and the output does not depend on the order of any input list.
 *
 * For each NAD with `node_slice_size` whose NodeSlicePool gives this node a slice:
 * - the ENI that carries it: the NAD's `master` -> that host interface's MAC -> the ENI with the MAC, which
 *   must be a Multus ENI of this node;
 * - the slice, split into aligned /28 (IPv4) or /80 (IPv6) prefixes; the new ones are assigned in one call per
 *   ENI and family;
 * - refused, the network then staying in per-address mode, with one sentence naming the NAD and the fix: a
 *   slice smaller than a prefix, not aligned (host bits), outside the allowed CIDRs or the ENI's subnet, over
 *   one of the five addresses AWS keeps in the subnet, more prefixes than the ENI has room for, or overlapping
 *   a prefix or an address another ENI of this node holds (a prefix is never reassigned); a non-Nitro
 *   instance type; or a slice EC2 refused, or found taken in the subnet before a swap (`withheld`).
 *
 * Ordering. EC2 refuses a prefix that overlaps any address assigned in the subnet, the ENI's own included
 * (EC2-SEMANTICS.md; the simulator's model/prefixes.ts). A block in which the ENI already holds single
 * addresses therefore cannot become a prefix while it holds them:
 * - `defer` (the default): the block waits. Its single addresses stay routed; the ones no pod uses are
 *   released by the address path after their grace, and the block becomes a prefix at the next wave after
 *   the last goes. No pod address is ever unrouted, at the cost of blocks that stay per-address while pods
 *   hold addresses in them.
 * - `swap`: the singles inside are unassigned (one call) right before the prefix assign (the next call) on the
 *   same ENI, with nothing in between: an address a pod holds there is unrouted until the assign returns,
 *   its retries included. If the assign fails, the singles are assigned again at once (`restore`).
 *
 * Release. A prefix of a Multus ENI of this node is released only when it lies in a node-sliced range of a
 * NAD the bridge reads (and in the allowed CIDRs), this node owns no slice that covers it, no pod of this node
 * carries an address inside it, and all this has held for the grace period. Never another ENI's prefix, never
 * one outside the managed ranges (the VPC CNI's own prefixes among them).
 */
import {
  addressOfValue,
  addressValue,
  canonicalCidr,
  cidrBounds,
  cidrContains,
  cidrsOverlap,
  DELEGATED_PREFIX_LENGTH,
  hasHostBits,
  parseCidr,
  tryCanonical,
} from "../../eni/ip.js";
import type { EniState, IpFamily } from "../../eni/types.js";
import type { NadInfo, NodeSlicePoolInfo } from "../kube/kube-api.js";
import { rangesOfNad } from "../state/whereabouts-ranges.js";

/** How a block in which the ENI holds single addresses becomes a prefix: see the module comment. */
export type PrefixOverlapMode = "defer" | "swap";

export interface PrefixPlanInput {
  readonly nodeName: string;
  readonly nads: readonly NadInfo[];
  readonly slicePools: readonly NodeSlicePoolInfo[];
  /** This node's ENIs (IMDS), with their prefixes. */
  readonly enis: readonly EniState[];
  readonly multusEniIds: ReadonlySet<string>;
  /** The node's network interfaces: name -> MAC (lowercase), where a NAD's `master` is looked up. */
  readonly hostMacs: ReadonlyMap<string, string>;
  readonly allowedCidrs: readonly string[];
  /** Addresses any pod of this node carries (network-status), deleting and opted-out pods included. */
  readonly carried: ReadonlySet<string>;
  /** Addresses and prefixes one ENI holds, per family, the primary included; undefined: unknown (no room check). */
  readonly addressesPerEni: number | undefined;
  readonly overlap: PrefixOverlapMode;
  /** Milliseconds since the epoch. */
  readonly now: number;
  /** How long a prefix must stay unused before it is released, ms. */
  readonly releaseGraceMs: number;
  /** From the previous plan: `prefixKey(eniId, prefix)` -> since when it is unused (ms). */
  readonly unusedSince: ReadonlyMap<string, number>;
  /** Set when DescribeInstanceTypes says the instance is not built on Nitro: every slice is refused, no call. */
  readonly nonNitro?: { readonly instanceType: string; readonly hypervisor: string };
  /**
   * Slices EC2 refused, or found taken in the subnet before a swap, `prefixKey(eniId, slice)` -> the refusal
   * (prefix-refusal-memory.ts): refused again, with no call, until their backoff ends or the prefixes their
   * ENI holds inside change.
   */
  readonly withheld?: ReadonlyMap<string, WithheldSlice>;
}

/** A slice held back from EC2 for now, and why. */
export interface WithheldSlice {
  readonly reason: "ec2-refused" | "held-in-subnet";
  /** One sentence: what was refused or found, and the fix. */
  readonly detail: string;
}

export type PrefixRefusalReason =
  | "no-master"
  | "unknown-master"
  | "unknown-mac"
  | "not-multus-eni"
  | "bad-slice"
  | "slice-too-small"
  | "unaligned"
  | "outside-allowed-cidrs"
  | "outside-eni-subnet"
  | "aws-reserved"
  | "eni-full"
  | "held-by-other-eni"
  | "not-nitro"
  | "held-in-subnet"
  | "ec2-refused";

/** A network left in per-address mode, and why: one per NAD and reason. */
export interface PrefixRefusal {
  /** `namespace/name` of the NAD. */
  readonly nad: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string | undefined;
  readonly reason: PrefixRefusalReason;
  /** One sentence: the NAD, the value, and the fix. */
  readonly detail: string;
}

/** A prefix that belongs on an ENI: the node's slice of a NAD, or a part of it. */
export interface WantedPrefix {
  readonly nad: string;
  readonly eniId: string;
  readonly family: IpFamily;
  readonly prefix: string;
  /** The node's slice it comes from. */
  readonly slice: string;
}

/** A block of a slice that stays per-address for now (`defer`): the ENI holds single addresses inside. */
export interface DeferredPrefix extends WantedPrefix {
  readonly singles: readonly string[];
}

export type PrefixStep =
  | {
      readonly kind: "release-prefixes";
      readonly eniId: string;
      readonly family: IpFamily;
      readonly prefixes: readonly string[];
    }
  /** Only right before the `assign-prefixes` of the same ENI and family whose `restore` lists the same addresses. */
  | {
      readonly kind: "unassign-addresses";
      readonly eniId: string;
      readonly family: IpFamily;
      readonly addresses: readonly string[];
    }
  | {
      readonly kind: "assign-prefixes";
      readonly eniId: string;
      readonly family: IpFamily;
      readonly prefixes: readonly string[];
      /** The single addresses unassigned by the step before: assigned again at once if this step fails. */
      readonly restore: readonly string[];
    };

export interface PrefixRelease {
  readonly eniId: string;
  readonly family: IpFamily;
  readonly prefix: string;
  /** Why, in one sentence (logged with every release). */
  readonly reason: string;
}

export interface PendingPrefixRelease {
  readonly eniId: string;
  readonly prefix: string;
  readonly releaseAt: number;
}

export interface PrefixPlan {
  /** Every prefix that belongs on an ENI of this node, held already or not. */
  readonly wanted: WantedPrefix[];
  /** Wanted prefixes the ENI holds already. */
  readonly held: WantedPrefix[];
  readonly deferred: DeferredPrefix[];
  readonly refusals: PrefixRefusal[];
  /** Due releases (the caller confirms them, then passes them to `prefixSteps`). */
  readonly releases: PrefixRelease[];
  readonly pending: PendingPrefixRelease[];
  /** To pass back as `unusedSince` next time. */
  readonly unusedSince: Map<string, number>;
  /** The assigns (with their swaps), in execution order, without releases: see `prefixSteps`. */
  readonly assigns: PrefixStep[];
}

/** The key of an (ENI, prefix) pair in `unusedSince`. */
export function prefixKey(eniId: string, prefix: string): string {
  return `${eniId} ${prefix}`;
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

// biome-ignore lint/suspicious/noExplicitAny: CNI configuration JSON, read defensively.
type Json = any;

/** A NAD with a node-sliced range, as the prefix plan needs it. */
interface SlicedNetwork {
  readonly nad: NadInfo;
  readonly key: string;
  /** The NodeSlicePool's name: `network_name`, else the CNI configuration's `name` (whereabouts' getSliceName). */
  readonly poolName: string;
  readonly master: string | undefined;
  readonly family: IpFamily;
  /** The whole range, canonical. */
  readonly range: string;
}

/** A slice of this node that passed every check but the ENI's room. */
interface SliceThatFits {
  readonly network: SlicedNetwork;
  readonly refuse: (reason: PrefixRefusalReason, detail: string) => void;
  readonly eni: EniState;
  readonly fam: IpFamily;
  /** The delegated prefix length of the family. */
  readonly length: number;
  readonly slice: string;
  readonly blocks: readonly string[];
  /** Prefixes the ENI holds already, of this family. */
  readonly mine: readonly string[];
  /** Single addresses the ENI holds, of this family. */
  readonly singles: readonly string[];
  /** Singles inside the slice that a swap unassigns. */
  readonly swapped: number;
  /** Prefixes to assign. */
  readonly need: number;
}

function slicedNetworks(nads: readonly NadInfo[]): SlicedNetwork[] {
  const out: SlicedNetwork[] = [];
  for (const nad of [...nads].sort((a, b) =>
    byString(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`),
  )) {
    const sliced = rangesOfNad(nad).ranges.find((r) => r.slicePrefix !== undefined);
    if (sliced === undefined) continue;
    let config: Json;
    try {
      config = JSON.parse(nad.config);
    } catch {
      continue;
    }
    const plugins: Json[] = Array.isArray(config?.plugins) ? config.plugins : [config];
    const plugin = plugins.find((p) => p?.ipam?.type === "whereabouts");
    const networkName = typeof plugin?.ipam?.network_name === "string" ? plugin.ipam.network_name : "";
    const name = typeof config?.name === "string" ? config.name : "";
    out.push({
      nad,
      key: `${nad.namespace}/${nad.name}`,
      poolName: networkName !== "" ? networkName : name,
      master: typeof plugin?.master === "string" && plugin.master !== "" ? plugin.master : undefined,
      family: sliced.family,
      range: sliced.cidr,
    });
  }
  return out;
}

/** The NodeSlicePool of a network: named after it, over the same range. */
function poolOf(network: SlicedNetwork, pools: readonly NodeSlicePoolInfo[]): NodeSlicePoolInfo | undefined {
  return [...pools]
    .sort((a, b) => byString(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`))
    .find((p) => {
      if (p.name !== network.poolName) return false;
      const range = canonicalOrUndefined(p.range);
      return range === network.range;
    });
}

function canonicalOrUndefined(cidr: string): string | undefined {
  try {
    return canonicalCidr(cidr);
  } catch {
    return undefined;
  }
}

/** The aligned prefixes that make up `slice` (a canonical CIDR no longer than the prefix length). */
export function prefixesOfSlice(slice: string): string[] {
  const { family, first, last } = cidrBounds(slice);
  const size = 1n << BigInt((family === 4 ? 32 : 128) - DELEGATED_PREFIX_LENGTH[family]);
  const out: string[] = [];
  for (let value = first; value <= last; value += size) {
    out.push(`${addressOfValue(family, value)}/${DELEGATED_PREFIX_LENGTH[family]}`);
  }
  return out;
}

/** The ENI's held prefixes of one family, canonical. */
function prefixesHeld(eni: EniState, fam: IpFamily): string[] {
  return ((fam === 4 ? eni.ipv4Prefixes : eni.ipv6Prefixes) ?? [])
    .map(canonicalOrUndefined)
    .filter((p): p is string => p !== undefined);
}

function singlesHeld(eni: EniState, fam: IpFamily): string[] {
  return (fam === 4 ? eni.ipv4s : eni.ipv6s)
    .map((a) => tryCanonical(a))
    .filter((a): a is string => a !== undefined);
}

/** Whether every address of `inner` lies in `outer` (same family, `outer` no longer). */
function within(inner: string, outer: string): boolean {
  const i = canonicalOrUndefined(inner);
  const o = canonicalOrUndefined(outer);
  if (i === undefined || o === undefined) return false;
  const a = parseCidr(i);
  const b = parseCidr(o);
  return a.family === b.family && b.prefix <= a.prefix && cidrContains(o, a.network);
}

/** Whether a block covers one of the five addresses AWS keeps in the subnet block (EC2 refuses such a prefix). */
function coversAwsReserved(subnet: string, block: string): boolean {
  const s = cidrBounds(subnet);
  const b = cidrBounds(block);
  return b.first < s.first + 4n || b.last === s.last;
}

const MAX_PREFIXES_UNKNOWN_LIMIT = 50;

export function planPrefixes(input: PrefixPlanInput): PrefixPlan {
  const refusals: PrefixRefusal[] = [];
  const wanted: WantedPrefix[] = [];
  const held: WantedPrefix[] = [];
  const deferred: DeferredPrefix[] = [];
  const enis = [...input.enis].sort((a, b) => byString(a.eniId, b.eniId));
  const eniByMac = new Map<string, EniState>();
  for (const eni of enis) if (!eniByMac.has(eni.mac.toLowerCase())) eniByMac.set(eni.mac.toLowerCase(), eni);
  const networks = slicedNetworks(input.nads);
  const limit = input.addressesPerEni ?? MAX_PREFIXES_UNKNOWN_LIMIT;
  /** Slots each ENI and family will use: its addresses and prefixes now, plus this plan's new prefixes. */
  const slots = new Map<string, number>();
  const slotKey = (eniId: string, fam: IpFamily) => `${fam} ${eniId}`;
  for (const eni of enis) {
    for (const fam of [4, 6] as const) {
      const singles = singlesHeld(eni, fam).length;
      slots.set(
        slotKey(eni.eniId, fam),
        (fam === 4 ? Math.max(singles, 1) : singles) + prefixesHeld(eni, fam).length,
      );
    }
  }
  /** Slices this node owns, per network: kept even when refused, so that their prefixes are never released. */
  const ownedSlices: string[] = [];
  /** Slices that passed every check but the ENI's room, which is checked once all are known. */
  const fits: SliceThatFits[] = [];

  for (const network of networks) {
    const { nad } = network;
    const refuse = (reason: PrefixRefusalReason, detail: string): void => {
      refusals.push({
        nad: network.key,
        namespace: nad.namespace,
        name: nad.name,
        uid: nad.uid,
        reason,
        detail: `NAD ${network.key}: ${detail}; the network stays in per-address mode`,
      });
    };
    const pool = poolOf(network, input.slicePools);
    if (pool === undefined) continue;
    const slices = pool.allocations
      .filter((a) => a.nodeName === input.nodeName)
      .map((a) => a.sliceRange)
      .sort(byString);
    for (const sliceText of slices) {
      const slice = canonicalOrUndefined(sliceText);
      if (slice === undefined || parseCidr(slice).family !== network.family) {
        refuse(
          "bad-slice",
          `NodeSlicePool ${pool.namespace}/${pool.name} gives node ${input.nodeName} the slice ${JSON.stringify(sliceText)}, which is not an IPv${network.family} CIDR: fix or recreate the NodeSlicePool (whereabouts' node slice controller writes it)`,
        );
        continue;
      }
      ownedSlices.push(slice);
      if (input.nonNitro !== undefined) {
        refuse(
          "not-nitro",
          `node ${input.nodeName} is of instance type ${input.nonNitro.instanceType}, not built on the Nitro System (DescribeInstanceTypes: hypervisor ${input.nonNitro.hypervisor}), and EC2 delegates prefixes to Nitro instances only: run node-sliced workloads on a Nitro instance type`,
        );
        continue;
      }
      const fam = network.family;
      const length = DELEGATED_PREFIX_LENGTH[fam];
      const slicePrefix = parseCidr(slice).prefix;
      if (hasHostBits(sliceText)) {
        refuse(
          "unaligned",
          `the slice ${sliceText} of node ${input.nodeName} is not aligned on its own size (host bits set), so it is not a whole number of aligned /${length} prefixes: make the range in spec.config a CIDR whose address is its network address`,
        );
        continue;
      }
      if (slicePrefix > length) {
        refuse(
          "slice-too-small",
          `the slice ${slice} of node ${input.nodeName} is smaller than one IPv${fam} prefix (/${length}): set node_slice_size to /${length} or larger (a shorter prefix length) for prefix mode`,
        );
        continue;
      }
      if (!input.allowedCidrs.some((c) => within(slice, c))) {
        refuse(
          "outside-allowed-cidrs",
          `the slice ${slice} of node ${input.nodeName} is not inside the allowed CIDRs (${input.allowedCidrs.join(", ") || "none"}): add the NAD's range to IPMGR_ALLOWED_CIDRS`,
        );
        continue;
      }
      if (network.master === undefined) {
        refuse(
          "no-master",
          `spec.config names no master, so the ENI that carries the slice ${slice} is unknown: set "master" to the Multus ENI's interface name`,
        );
        continue;
      }
      const mac = input.hostMacs.get(network.master);
      if (mac === undefined) {
        refuse(
          "unknown-master",
          `its master ${network.master} is no network interface of node ${input.nodeName} (${[...input.hostMacs.keys()].sort(byString).join(", ") || "none seen"}): set "master" to the interface name of a Multus ENI of the node`,
        );
        continue;
      }
      const eni = eniByMac.get(mac.toLowerCase());
      if (eni === undefined || eni.summary === true) {
        refuse(
          "unknown-mac",
          `its master ${network.master} (MAC ${mac}) is no ENI of this instance that IMDS lists in full: attach the Multus ENI, or fix "master"`,
        );
        continue;
      }
      if (!input.multusEniIds.has(eni.eniId)) {
        refuse(
          "not-multus-eni",
          `its master ${network.master} is ENI ${eni.eniId} (device ${eni.deviceIndex}), which is not a Multus ENI of this node: tag it node.k8s.amazonaws.com/no_manage=true or list its device index in IPMGR_BRIDGE_DEVICE_INDEXES`,
        );
        continue;
      }
      const subnets = fam === 4 ? eni.subnetIpv4Cidrs : eni.subnetIpv6Cidrs;
      const subnet = subnets.find((s) => within(slice, s));
      if (subnet === undefined) {
        refuse(
          "outside-eni-subnet",
          `the slice ${slice} of node ${input.nodeName} is not inside the subnet of ENI ${eni.eniId} (${subnets.join(", ") || `no IPv${fam} block`}): make the NAD's range lie in the subnet of its master's ENI`,
        );
        continue;
      }
      const blocks = prefixesOfSlice(slice);
      const reserved = blocks.filter((b) => coversAwsReserved(subnet, b));
      if (reserved.length > 0) {
        refuse(
          "aws-reserved",
          `the slice ${slice} holds ${reserved.join(", ")}, over addresses AWS keeps in subnet ${subnet} (its first four and its last), which EC2 never delegates: start the NAD's range after the subnet's first /${length} and end it before its last`,
        );
        continue;
      }
      // Never reassign: another ENI of this node holding a prefix or an address inside refuses the whole slice.
      const taken = enis
        .filter((other) => other.eniId !== eni.eniId)
        .flatMap((other) => [
          ...prefixesHeld(other, fam)
            .filter((p) => cidrsOverlap(p, slice))
            .map((p) => `prefix ${p} on ${other.eniId}`),
          ...singlesHeld(other, fam)
            .filter((a) => cidrContains(slice, a))
            .map((a) => `address ${a} on ${other.eniId}`),
        ]);
      if (taken.length > 0) {
        refuse(
          "held-by-other-eni",
          `the slice ${slice} of node ${input.nodeName} overlaps ${taken.join(", ")}, another ENI of this node than its master's (${eni.eniId}); a prefix is never reassigned: release those there, or make the master that ENI`,
        );
        continue;
      }
      const withheld = input.withheld?.get(prefixKey(eni.eniId, slice));
      if (withheld !== undefined) {
        refuse(withheld.reason, withheld.detail);
        continue;
      }
      const mine = prefixesHeld(eni, fam);
      const singles = singlesHeld(eni, fam);
      const toAssign = blocks.filter((b) => !mine.includes(b));
      const swapped = input.overlap === "swap" ? singles.filter((a) => cidrContains(slice, a)).length : 0;
      const need = toAssign.filter(
        (b) => input.overlap === "swap" || !singles.some((a) => cidrContains(b, a)),
      ).length;
      fits.push({ network, refuse, eni, fam, length, slice, blocks, mine, singles, swapped, need });
    }
  }

  // The room check last, over every slice that passed the others, those that free slots first: a swap
  // unassigns its singles in the same call as every other swap of the ENI, so a slice whose swap frees
  // room makes room for the next one in the same plan (checked in slice order, a full ENI refused the
  // slice that came first and took it the wave after: two waves, and a plan that was not idempotent).
  fits.sort(
    (a, b) =>
      a.need - a.swapped - (b.need - b.swapped) ||
      byString(a.eni.eniId, b.eni.eniId) ||
      byString(a.slice, b.slice),
  );
  for (const { network, refuse, eni, fam, length, slice, blocks, mine, singles, swapped, need } of fits) {
    const k = slotKey(eni.eniId, fam);
    const used = slots.get(k) ?? 0;
    if (need > 0 && used - swapped + need > limit) {
      refuse(
        "eni-full",
        `the slice ${slice} needs ${need} more /${length} prefixes on ENI ${eni.eniId}, which holds ${used} of the ${limit} addresses and prefixes its instance type allows per ENI: set node_slice_size to a smaller slice, or release addresses no pod uses`,
      );
      continue;
    }
    slots.set(k, used - swapped + need);
    for (const prefix of blocks) {
      const w: WantedPrefix = { nad: network.key, eniId: eni.eniId, family: fam, prefix, slice };
      wanted.push(w);
      if (mine.includes(prefix)) {
        held.push(w);
        continue;
      }
      const inside = singles.filter((a) => cidrContains(prefix, a));
      if (inside.length > 0 && input.overlap === "defer") deferred.push({ ...w, singles: inside });
    }
  }

  // One assign per ENI and family, the swap's unassign right before it.
  const deferredKeys = new Set(deferred.map((d) => prefixKey(d.eniId, d.prefix)));
  const heldKeys = new Set(held.map((h) => prefixKey(h.eniId, h.prefix)));
  const groups = new Map<string, { eniId: string; family: IpFamily; prefixes: Set<string> }>();
  for (const w of wanted) {
    const key = prefixKey(w.eniId, w.prefix);
    if (heldKeys.has(key) || deferredKeys.has(key)) continue;
    const g = groups.get(slotKey(w.eniId, w.family)) ?? {
      eniId: w.eniId,
      family: w.family,
      prefixes: new Set(),
    };
    g.prefixes.add(w.prefix);
    groups.set(slotKey(w.eniId, w.family), g);
  }
  const assigns: PrefixStep[] = [];
  for (const [, g] of [...groups].sort(([a], [b]) => byString(a, b))) {
    const prefixes = [...g.prefixes].sort(comparePrefixes);
    const eni = enis.find((e) => e.eniId === g.eniId);
    const restore =
      eni === undefined
        ? []
        : singlesHeld(eni, g.family)
            .filter((a) => prefixes.some((p) => cidrContains(p, a)))
            .sort(compareValues);
    if (restore.length > 0)
      assigns.push({ kind: "unassign-addresses", eniId: g.eniId, family: g.family, addresses: restore });
    assigns.push({ kind: "assign-prefixes", eniId: g.eniId, family: g.family, prefixes, restore });
  }

  // Releases: a prefix in a node-sliced range that this node no longer owns, unused by every pod, after the grace.
  const managedRanges = networks.map((n) => n.range);
  const releases: PrefixRelease[] = [];
  const pending: PendingPrefixRelease[] = [];
  const unusedSince = new Map<string, number>();
  for (const eni of enis) {
    if (!input.multusEniIds.has(eni.eniId) || eni.summary === true) continue;
    for (const fam of [4, 6] as const) {
      for (const prefix of prefixesHeld(eni, fam).sort(comparePrefixes)) {
        const managed =
          managedRanges.some((r) => within(prefix, r)) && input.allowedCidrs.some((c) => within(prefix, c));
        if (!managed) continue;
        if (ownedSlices.some((s) => cidrsOverlap(s, prefix))) continue;
        if ([...input.carried].some((a) => tryCanonical(a) !== undefined && cidrContains(prefix, a)))
          continue;
        const key = prefixKey(eni.eniId, prefix);
        const since = input.unusedSince.get(key) ?? input.now;
        unusedSince.set(key, since);
        const releaseAt = since + input.releaseGraceMs;
        if (input.now < releaseAt) {
          pending.push({ eniId: eni.eniId, prefix, releaseAt });
          continue;
        }
        releases.push({
          eniId: eni.eniId,
          family: fam,
          prefix,
          reason:
            `node ${input.nodeName} owns no slice covering ${prefix} in any NodeSlicePool, and no pod of this node has carried an address inside for ` +
            `${Math.round((input.now - since) / 1000)} s (grace ${Math.round(input.releaseGraceMs / 1000)} s); it lies in a node-sliced range and is a prefix of Multus ENI ${eni.eniId}`,
        });
      }
    }
  }

  refusals.sort(
    (a, b) => byString(a.nad, b.nad) || byString(a.reason, b.reason) || byString(a.detail, b.detail),
  );
  return { wanted, held, deferred, refusals, releases, pending, unusedSince, assigns };
}

/** The steps of a wave in execution order: releases first (one call per ENI and family), then the assigns. */
export function prefixSteps(plan: PrefixPlan, releases: readonly PrefixRelease[]): PrefixStep[] {
  const groups = new Map<string, { eniId: string; family: IpFamily; prefixes: string[] }>();
  for (const r of releases) {
    const key = `${r.family} ${r.eniId}`;
    const g = groups.get(key) ?? { eniId: r.eniId, family: r.family, prefixes: [] };
    g.prefixes.push(r.prefix);
    groups.set(key, g);
  }
  const released: PrefixStep[] = [...groups]
    .sort(([a], [b]) => byString(a, b))
    .map(([, g]) => ({
      kind: "release-prefixes",
      eniId: g.eniId,
      family: g.family,
      prefixes: [...new Set(g.prefixes)].sort(comparePrefixes),
    }));
  return [...released, ...plan.assigns];
}

function compareValues(a: string, b: string): number {
  const x = addressValue(a);
  const y = addressValue(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function comparePrefixes(a: string, b: string): number {
  return compareValues(parseCidr(a).network, parseCidr(b).network);
}
