/**
 * The bridge's desired state: from what it observed (this node's pods, the NADs, whereabouts' pools and
 * reservations, this node's ENIs) to which address belongs on which ENI, which are in conflict, and which
 * secondary addresses are released. Pure and deterministic: no I/O, no clock (`now` is an input), and the
 * output does not depend on the order of any input list.
 *
 * Placement. Each non-default network-status entry with a MAC, on a pod of this node that the bridge
 * manages (not opted out, not running the sidecar), asks for its addresses on the ENI with that MAC. An
 * entry whose MAC matches no ENI of this node is left out (`unmatched`): macvlan, bridge and SR-IOV give the
 * pod a MAC of its own, and only ipvlan's pod interface carries its ENI's MAC. The planner (src/eni/planner.ts)
 * then refuses as in `init`: outside the allowed CIDRs, outside the ENI's subnet, a primary address.
 *
 * Conflicts (never moved, reported on both pods):
 *   whereabouts allocates the address to another pod of the same whereabouts network (IPPool or
 *   OverlappingRangeIPReservation podref; whereabouts-owners.ts);
 *   two pods of this node carry it. A pod being deleted yields to a running pod with the same address, and
 *   when whereabouts names one of the carriers as the owner, the owner wins. A pod that has finished
 *   (phase Succeeded or Failed) carries nothing: its addresses are released like a deleted pod's.
 *
 * Input that cannot be read is unknown, never empty: a NAD whose configuration cannot be read keeps the
 * ranges it had when it last read (`lastGoodRanges`), and is listed in `unreadableNads` so that its
 * reservations are kept; a live pod whose network-status cannot be read is listed in `unreadablePods` (the
 * bridge then releases nothing, as that pod may carry any address). A NAD that named ranges when last read
 * and names none now keeps each of them while a pod carries an address in it (vanished-ranges.ts). Each is
 * an `InputProblem` naming the object.
 *
 * Release. A secondary address of one of this node's Multus ENIs is released when it lies in a managed range
 * (a whereabouts range of any NAD, within the allowed CIDRs), no pod of this node carries it (pods being
 * deleted, opted out or running the sidecar included), whereabouts does not allocate it to a pod of this
 * node (a pod starting, before Multus wrote its annotation), and all this has held for the grace period.
 * Never a primary address, never one outside the managed ranges, never another node's ENI (only this
 * node's ENIs are input).
 */
import { anyCidrContains, cidrContains, compareAddresses, family, tryCanonical } from "../eni/ip.js";
import type { EniState, IpFamily, PodInterface } from "../eni/types.js";
import type {
  EventObjectKind,
  IpPoolInfo,
  NadInfo,
  OverlappingReservationInfo,
  PodInfo,
} from "./kube-api.js";
import { type PodAttachment, type PodSkipReason, podNetworks, skipReasonOf } from "./pod-networks.js";
import { keptVanishedRanges, vanishedRangesMessage } from "./vanished-ranges.js";
import { type Owner, whereaboutsOwners } from "./whereabouts-owners.js";
import {
  rangeContains,
  rangesOfNad,
  type WhereaboutsRange,
  whyNoWhereaboutsRange,
} from "./whereabouts-ranges.js";

export interface PodRef {
  readonly namespace: string;
  readonly name: string;
  /** Undefined for a pod known only by whereabouts' podref (on another node, or gone). */
  readonly uid: string | undefined;
}

export interface DesiredInput {
  /** The pods of this node. */
  readonly pods: readonly PodInfo[];
  readonly nads: readonly NadInfo[];
  readonly ipPools: readonly IpPoolInfo[];
  readonly overlappingReservations: readonly OverlappingReservationInfo[];
  /** This node's ENIs (IMDS), Multus ENIs read in full. */
  readonly enis: readonly EniState[];
  /** The ENIs the bridge may release addresses from: tagged no_manage, or at a configured device index. */
  readonly multusEniIds: ReadonlySet<string>;
  readonly allowedCidrs: readonly string[];
  /** Milliseconds since the epoch. */
  readonly now: number;
  /** How long an address must stay unused before it is released, in ms. */
  readonly releaseGraceMs: number;
  /** From the previous computation: `unusedKey(eniId, address)` -> since when it is unused (ms). */
  readonly unusedSince: ReadonlyMap<string, number>;
  /** From the previous computation (`rangesByNad`): the ranges of each NAD when it last read. */
  readonly lastGoodRanges?: ReadonlyMap<string, readonly WhereaboutsRange[]>;
}

/** Input the bridge could not read, on the object that holds it. */
export interface InputProblem {
  readonly kind: EventObjectKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string | undefined;
  /** One sentence: the object, what is wrong, and the fix. */
  readonly message: string;
}

export interface Conflict {
  readonly address: string;
  /** The pod of this node that carries the address. */
  readonly pod: PodRef;
  /** The other claimant: the pod whereabouts allocates the address to, or another pod of this node. */
  readonly other: PodRef;
  /** A sentence naming both pods, the address, where the claim comes from, and the fix. */
  readonly detail: string;
}

export interface Release {
  readonly eniId: string;
  readonly address: string;
  readonly family: IpFamily;
  /** Why, in one sentence (logged with every release). */
  readonly reason: string;
}

export interface PendingRelease {
  readonly eniId: string;
  readonly address: string;
  /** When the grace ends, ms since the epoch. */
  readonly releaseAt: number;
}

export interface DesiredState {
  /** The planner's input: one interface per managed attachment, named `namespace/pod/interface`. */
  readonly interfaces: PodInterface[];
  /** Interface name (as above) -> its pod. */
  readonly podOfInterface: ReadonlyMap<string, PodRef>;
  readonly managedPods: PodRef[];
  readonly skippedPods: { readonly pod: PodRef; readonly reason: PodSkipReason }[];
  /** Attachments whose MAC matches no ENI of this node (not ipvlan on an ENI): left alone. */
  readonly unmatched: { readonly pod: PodRef; readonly interfaceName: string; readonly mac: string }[];
  readonly conflicts: Conflict[];
  /** Unreadable annotations, NAD configurations and IPPool entries, one per object and problem. */
  readonly problems: InputProblem[];
  /** Whereabouts ranges of every NAD (before the allowed CIDRs are applied); last good ones for unreadable NADs. */
  readonly ranges: WhereaboutsRange[];
  /** `namespace/name` of each NAD -> its ranges (the last good ones when it cannot be read now). */
  readonly rangesByNad: Map<string, readonly WhereaboutsRange[]>;
  /** NADs (`namespace/name`) whose configuration cannot be read: their reservations are kept. */
  readonly unreadableNads: string[];
  /** Live pods (`namespace/name`) whose network-status cannot be read: nothing is released while any is. */
  readonly unreadablePods: string[];
  /**
   * Addresses pods carry, sorted: this node's pods' (network-status) and those whereabouts gives any pod.
   * The reservations keeper deletes no reservation over one.
   */
  readonly carried: string[];
  readonly releases: Release[];
  readonly pending: PendingRelease[];
  /** To pass back as `unusedSince` next time. */
  readonly unusedSince: Map<string, number>;
}

/** The key of an (ENI, address) pair in `unusedSince`. */
export function unusedKey(eniId: string, address: string): string {
  return `${eniId} ${address}`;
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const podKey = (pod: { namespace: string; name: string }): string => `${pod.namespace}/${pod.name}`;
const refOf = (pod: PodInfo): PodRef => ({ namespace: pod.namespace, name: pod.name, uid: pod.uid });

/** A pod whose containers have all ended for good: it carries no address any more. */
export function podFinished(pod: PodInfo): boolean {
  return pod.phase === "Succeeded" || pod.phase === "Failed";
}

/** A podref's pod; its uid when it is a pod of this node (`uids`: podKey -> uid), so that its Event shows. */
function refOfPodref(podref: string, uids: ReadonlyMap<string, string>): PodRef {
  const slash = podref.indexOf("/");
  const [namespace, name] =
    slash < 0 ? ["default", podref] : [podref.slice(0, slash), podref.slice(slash + 1)];
  return { namespace, name, uid: uids.get(`${namespace}/${name}`) };
}

function poolProblem(pool: IpPoolInfo, message: string): InputProblem {
  return { kind: "IPPool", namespace: pool.namespace, name: pool.name, uid: undefined, message };
}

/**
 * The whereabouts networks a claim can be in: the `network_name`s of the ranges of its attachment's NAD
 * (Multus names it `namespace/name`, or `name` in the pod's namespace) that hold the address; undefined
 * when none can be told (the NAD unknown, or none of its ranges holds it).
 */
function networksOfClaim(
  pod: PodInfo,
  attachment: PodAttachment,
  address: string,
  rangesByNad: ReadonlyMap<string, readonly WhereaboutsRange[]>,
): ReadonlySet<string> | undefined {
  const nad = attachment.network.includes("/")
    ? attachment.network
    : `${pod.namespace}/${attachment.network}`;
  const names = (rangesByNad.get(nad) ?? [])
    .filter((r) => r.family === family(address) && cidrContains(r.cidr, address))
    .map((r) => r.networkName);
  return names.length === 0 ? undefined : new Set(names);
}

/** Of whereabouts' owners, one that carries the address among `podrefs` if any, else the first. */
const ownerAmong = (owners: readonly Owner[], podrefs: readonly string[]): Owner | undefined =>
  owners.find((o) => podrefs.includes(o.podref)) ?? owners[0];

interface Claim {
  readonly pod: PodInfo;
  readonly interfaceName: string;
  readonly mac: string;
  readonly address: string;
  /** Its whereabouts networks (`networksOfClaim`). */
  readonly networks: ReadonlySet<string> | undefined;
}

export function desiredState(input: DesiredInput): DesiredState {
  const problems: InputProblem[] = [];
  const pods = [...input.pods]
    .filter((pod) => !podFinished(pod))
    .sort((a, b) => byString(podKey(a), podKey(b)) || byString(a.uid, b.uid));
  const podsOnNode = new Set(pods.map(podKey));
  // A pod's uid by name: the running one's when a terminating pod shares its name.
  const uids = new Map(
    [...pods].sort((a, b) => Number(b.deleting) - Number(a.deleting)).map((p) => [podKey(p), p.uid]),
  );
  const enisByMac = new Map<string, EniState>();
  for (const eni of [...input.enis].sort((a, b) => byString(a.eniId, b.eniId))) {
    const mac = eni.mac.toLowerCase();
    if (!enisByMac.has(mac)) enisByMac.set(mac, eni);
  }

  const ranges: WhereaboutsRange[] = [];
  const rangesByNad = new Map<string, readonly WhereaboutsRange[]>();
  const unreadableNads: string[] = [];
  // NADs that named ranges when last read and name none now: decided once the carried addresses are known.
  const vanished: { nad: NadInfo; lastRanges: readonly WhereaboutsRange[] }[] = [];
  for (const nad of [...input.nads].sort((a, b) => byString(podKey(a), podKey(b)))) {
    const read = rangesOfNad(nad);
    const key = podKey(nad);
    let kept: readonly WhereaboutsRange[] = read.ranges;
    const lastRanges = input.lastGoodRanges?.get(key) ?? [];
    if (read.ranges.length === 0 && read.problems.length === 0 && lastRanges.length > 0) {
      vanished.push({ nad, lastRanges });
    }
    if (read.problems.length > 0) {
      unreadableNads.push(key);
      const lastGood = input.lastGoodRanges?.get(key) ?? [];
      kept = [...read.ranges, ...lastGood.filter((r) => !read.ranges.some((n) => n.cidr === r.cidr))];
      for (const message of read.problems) {
        problems.push({
          kind: "NetworkAttachmentDefinition",
          namespace: nad.namespace,
          name: nad.name,
          uid: nad.uid,
          message:
            `${message}; the bridge keeps what it last read of this NAD (${kept.length === 0 ? "nothing" : kept.map((r) => r.cidr).join(", ")}) ` +
            "and its reservations until the NAD reads again or is deleted: fix spec.config",
        });
      }
    }
    rangesByNad.set(key, kept);
    ranges.push(...kept);
  }
  const owners = whereaboutsOwners(input.ipPools, input.overlappingReservations, ranges, (pool, message) =>
    problems.push(poolProblem(pool, message)),
  );

  const carried = new Set<string>();
  /** Address -> a pod that carries it (this node's, by network-status), for `vanished`. */
  const carriedBy = new Map<string, string>();
  const claims: Claim[] = [];
  const managedPods: PodRef[] = [];
  const skippedPods: DesiredState["skippedPods"] = [];
  const unmatched: DesiredState["unmatched"] = [];
  const unreadablePods: string[] = [];
  for (const pod of pods) {
    const networks = podNetworks(pod);
    if (networks.problems.length > 0) {
      unreadablePods.push(podKey(pod));
      for (const message of networks.problems) {
        problems.push({
          kind: "Pod",
          namespace: pod.namespace,
          name: pod.name,
          uid: pod.uid,
          message: `${message}; the bridge releases no address on this node until it can read it`,
        });
      }
    }
    for (const attachment of networks.attachments) {
      for (const a of attachment.addresses) {
        carried.add(a);
        if (!carriedBy.has(a)) carriedBy.set(a, podKey(pod));
      }
    }
    const skip = skipReasonOf(pod);
    if (skip !== undefined) {
      skippedPods.push({ pod: refOf(pod), reason: skip });
      continue;
    }
    managedPods.push(refOf(pod));
    for (const attachment of networks.attachments) {
      if (!enisByMac.has(attachment.mac)) {
        unmatched.push({ pod: refOf(pod), interfaceName: attachment.interfaceName, mac: attachment.mac });
        continue;
      }
      for (const address of attachment.addresses) {
        const networks = networksOfClaim(pod, attachment, address, rangesByNad);
        claims.push({ pod, interfaceName: attachment.interfaceName, mac: attachment.mac, address, networks });
      }
    }
  }

  for (const [address, owner] of owners.entries())
    if (!carriedBy.has(address)) carriedBy.set(address, owner.podref);
  for (const { nad, lastRanges } of vanished) {
    const kept = keptVanishedRanges(lastRanges, carriedBy);
    if (kept.length === 0) continue;
    rangesByNad.set(
      podKey(nad),
      kept.map((k) => k.range),
    );
    ranges.push(...kept.map((k) => k.range));
    problems.push({
      kind: "NetworkAttachmentDefinition",
      namespace: nad.namespace,
      name: nad.name,
      uid: nad.uid,
      message: vanishedRangesMessage(podKey(nad), whyNoWhereaboutsRange(nad), kept),
    });
  }

  // Per address: the running claimants win over pods being deleted; then whereabouts and the other pods decide.
  const byAddress = new Map<string, Claim[]>();
  for (const claim of claims) byAddress.set(claim.address, [...(byAddress.get(claim.address) ?? []), claim]);
  const conflicts: Conflict[] = [];
  const accepted: Claim[] = [];
  for (const [address, all] of byAddress) {
    const running = all.filter((c) => !c.pod.deleting);
    const contenders = running.length > 0 ? running : all;
    const podrefs = [...new Set(contenders.map((c) => podKey(c.pod)))].sort(byString);
    // whereabouts' owner in the claimants' networks; in any network when one's cannot be told.
    const networks = contenders.every((c) => c.networks !== undefined)
      ? new Set(contenders.flatMap((c) => [...(c.networks ?? [])]))
      : undefined;
    const owner = ownerAmong(owners.of(address, networks), podrefs);
    if (owner !== undefined && podrefs.length > 1 && podrefs.includes(owner.podref)) {
      // whereabouts' owner wins the tie; the others are told.
      const winners = contenders.filter((c) => podKey(c.pod) === owner.podref);
      for (const claim of contenders.filter((c) => podKey(c.pod) !== owner.podref)) {
        conflicts.push({
          address,
          pod: refOf(claim.pod),
          other: refOf(winners[0]?.pod ?? claim.pod),
          detail:
            `address ${address} on ${podKey(claim.pod)} (${claim.interfaceName}) is allocated by whereabouts to ` +
            `${owner.podref} (${owner.source}), which carries it too; it stays on ${owner.podref}'s ENI: ` +
            "recreate the pod that does not own it.",
        });
      }
      accepted.push(...winners);
      continue;
    }
    if (owner !== undefined && !podrefs.includes(owner.podref)) {
      for (const claim of contenders) {
        conflicts.push({
          address,
          pod: refOf(claim.pod),
          other: refOfPodref(owner.podref, uids),
          detail:
            `address ${address} on ${podKey(claim.pod)} (${claim.interfaceName}) is allocated by whereabouts to ` +
            `${owner.podref} (${owner.source}); it is not assigned to any ENI until only one pod claims it: ` +
            "recreate the pod that does not own it, or clean up the stale allocation.",
        });
      }
      continue;
    }
    if (podrefs.length > 1) {
      for (const claim of contenders) {
        const others = podrefs.filter((p) => p !== podKey(claim.pod));
        for (const other of others) {
          conflicts.push({
            address,
            pod: refOf(claim.pod),
            other: refOfPodref(other, uids),
            detail:
              `address ${address} is carried by ${podrefs.join(" and ")} on this node; ` +
              "it is not assigned to any ENI until only one pod carries it: give each pod its own address.",
          });
        }
      }
      continue;
    }
    accepted.push(...contenders);
  }

  const interfacesByName = new Map<string, { mac: string; addresses: string[]; pod: PodInfo }>();
  for (const claim of accepted) {
    const name = `${podKey(claim.pod)}/${claim.interfaceName}`;
    const entry = interfacesByName.get(name) ?? { mac: claim.mac, addresses: [], pod: claim.pod };
    entry.addresses.push(claim.address);
    interfacesByName.set(name, entry);
  }
  const interfaces: PodInterface[] = [];
  const podOfInterface = new Map<string, PodRef>();
  for (const [name, entry] of [...interfacesByName].sort(([a], [b]) => byString(a, b))) {
    interfaces.push({
      name,
      mac: entry.mac,
      addresses: [...new Set(entry.addresses)].sort(compareAddresses),
    });
    podOfInterface.set(name, refOf(entry.pod));
  }

  const managed = (address: string): boolean =>
    ranges.some((range) => rangeContains(range, address)) && anyCidrContains(input.allowedCidrs, address);
  const releases: Release[] = [];
  const pending: PendingRelease[] = [];
  const unusedSince = new Map<string, number>();
  const multusEnis = input.enis
    .filter((eni) => input.multusEniIds.has(eni.eniId) && eni.summary !== true)
    .sort((a, b) => byString(a.eniId, b.eniId));
  for (const eni of multusEnis) {
    const primary = eni.primaryIpv4 === undefined ? undefined : tryCanonical(eni.primaryIpv4);
    const held = [...eni.ipv4s, ...eni.ipv6s]
      .map((a) => tryCanonical(a))
      .filter((a): a is string => a !== undefined && a !== primary);
    for (const address of [...new Set(held)].sort(compareAddresses)) {
      if (!managed(address) || carried.has(address)) continue;
      const all = owners.of(address);
      if (all.some((o) => podsOnNode.has(o.podref))) continue;
      const owner = all[0];
      const key = unusedKey(eni.eniId, address);
      const since = input.unusedSince.get(key) ?? input.now;
      unusedSince.set(key, since);
      const releaseAt = since + input.releaseGraceMs;
      if (input.now < releaseAt) {
        pending.push({ eniId: eni.eniId, address, releaseAt });
        continue;
      }
      const seconds = Math.round((input.now - since) / 1000);
      const whereabouts =
        owner === undefined
          ? "whereabouts allocates it to no pod"
          : `whereabouts allocates it to ${owner.podref}, which is not a pod of this node (gone, or on another node; ${owner.source})`;
      releases.push({
        eniId: eni.eniId,
        address,
        family: family(address),
        reason:
          `no pod of this node has carried ${address} for ${seconds} s (grace ${Math.round(input.releaseGraceMs / 1000)} s); ` +
          `${whereabouts}; it lies in a managed range and is a secondary address of Multus ENI ${eni.eniId}`,
      });
    }
  }

  conflicts.sort(
    (a, b) =>
      compareAddresses(a.address, b.address) ||
      byString(podKey(a.pod), podKey(b.pod)) ||
      byString(podKey(a.other), podKey(b.other)),
  );
  return {
    interfaces,
    podOfInterface,
    managedPods,
    skippedPods,
    unmatched,
    conflicts,
    problems,
    ranges,
    rangesByNad,
    unreadableNads,
    unreadablePods,
    carried: [...carriedBy.keys()].sort(compareAddresses),
    releases,
    pending,
    unusedSince,
  };
}
