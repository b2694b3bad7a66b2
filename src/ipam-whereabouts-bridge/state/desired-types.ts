/**
 * The types of the bridge's desired state (desired-state.ts) and of its phases: what they take, what they
 * give, and a pod's claim on an address. Types only.
 */
import type { EniState, IpFamily, PodInterface } from "../../eni/types.js";
import type {
  EventObjectKind,
  IpPoolInfo,
  NadInfo,
  OverlappingReservationInfo,
  PodInfo,
} from "../kube/kube-api.js";
import type { PodSkipReason } from "./pod-networks.js";
import type { WhereaboutsRange } from "./whereabouts-ranges.js";

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
  readonly kind: Exclude<EventObjectKind, "Node">;
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

/** A managed pod's claim on one address of one attachment whose MAC is an ENI of this node. */
export interface Claim {
  readonly pod: PodInfo;
  readonly interfaceName: string;
  readonly mac: string;
  readonly address: string;
  /** Its whereabouts networks (`networksOfClaim`). */
  readonly networks: ReadonlySet<string> | undefined;
}
