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

import { compareAddresses } from "../../eni/ip.js";
import type { EniState } from "../../eni/types.js";
import type { IpPoolInfo } from "../kube/kube-api.js";
import { settleClaims } from "./claim-conflicts.js";
import { keepVanishedRanges, readNads } from "./desired-nads.js";
import { releasesOf } from "./desired-releases.js";
import type { DesiredInput, DesiredState, InputProblem } from "./desired-types.js";
import { interfacesOf, readPods } from "./pod-claims.js";
import { podFinished, podKey } from "./pod-refs.js";
import { whereaboutsOwners } from "./whereabouts-owners.js";

export { unusedKey } from "./desired-releases.js";
export type {
  Conflict,
  DesiredInput,
  DesiredState,
  InputProblem,
  PendingRelease,
  PodRef,
  Release,
} from "./desired-types.js";
export { podFinished } from "./pod-refs.js";

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The phases, in order: the node's pods and ENIs, the NADs, whereabouts' owners, the pods' claims, the
 *  vanished ranges kept, the conflicts, the planner's interfaces, the releases. */
export function desiredState(input: DesiredInput): DesiredState {
  const problems: InputProblem[] = [];
  const pods = livePods(input);
  const nads = readNads(input.nads, input.lastGoodRanges, problems);
  const owners = whereaboutsOwners(
    input.ipPools,
    input.overlappingReservations,
    nads.ranges,
    (pool, message) => problems.push(poolProblem(pool, message)),
  );
  const podClaims = readPods(pods, enisByMac(input.enis), nads.rangesByNad, problems);
  const carried = new Set(podClaims.carriedBy.keys());
  // Carried by a pod of this node, or given to any pod by whereabouts: what a vanished range is kept for.
  const carriedBy = new Map(podClaims.carriedBy);
  for (const [address, owner] of owners.entries())
    if (!carriedBy.has(address)) carriedBy.set(address, owner.podref);
  keepVanishedRanges(nads, carriedBy, problems);
  const { accepted, conflicts } = settleClaims(podClaims.claims, owners, podUids(pods));
  const { interfaces, podOfInterface } = interfacesOf(accepted);
  const { releases, pending, unusedSince } = releasesOf(input, {
    ranges: nads.ranges,
    carried,
    owners,
    podsOnNode: new Set(pods.map(podKey)),
  });
  return {
    interfaces,
    podOfInterface,
    managedPods: podClaims.managedPods,
    skippedPods: podClaims.skippedPods,
    unmatched: podClaims.unmatched,
    conflicts,
    problems,
    ranges: nads.ranges,
    rangesByNad: nads.rangesByNad,
    unreadableNads: nads.unreadableNads,
    unreadablePods: podClaims.unreadablePods,
    carried: [...carriedBy.keys()].sort(compareAddresses),
    releases,
    pending,
    unusedSince,
  };
}

/** This node's pods that have not finished, sorted by name, then uid. */
function livePods(input: DesiredInput): DesiredInput["pods"] {
  return [...input.pods]
    .filter((pod) => !podFinished(pod))
    .sort((a, b) => byString(podKey(a), podKey(b)) || byString(a.uid, b.uid));
}

/** A pod's uid by name: the running one's when a terminating pod shares its name. */
function podUids(pods: DesiredInput["pods"]): Map<string, string> {
  return new Map(
    [...pods].sort((a, b) => Number(b.deleting) - Number(a.deleting)).map((p) => [podKey(p), p.uid]),
  );
}

/** This node's ENIs by lowercase MAC; the first by ENI ID when two share one. */
function enisByMac(enis: readonly EniState[]): Map<string, EniState> {
  const byMac = new Map<string, EniState>();
  for (const eni of [...enis].sort((a, b) => byString(a.eniId, b.eniId))) {
    const mac = eni.mac.toLowerCase();
    if (!byMac.has(mac)) byMac.set(mac, eni);
  }
  return byMac;
}

function poolProblem(pool: IpPoolInfo, message: string): InputProblem {
  return { kind: "IPPool", namespace: pool.namespace, name: pool.name, uid: undefined, message };
}
