/**
 * The Kubernetes calls the bridge makes, and only those, in the bridge's own shapes. Implemented by
 * kube-client.ts, the only importer of @kubernetes/client-node (loaded with a dynamic import, so that no
 * other command parses it). Each method's doc comment names the RBAC verbs and resources it needs; the
 * chart's ClusterRole and Role (charts/multus-ipmgr/templates/bridge/bridge-rbac.yaml) grant exactly those
 * (test/chart-rbac.test.ts reads the calls from kube-client.ts and checks these comments and the chart).
 */

import type { NodeTaint } from "./node-taints.js";
import type { WatchHealth } from "./view-trust.js";

/** A container of a pod: enough to recognise the sidecar. */
export interface ContainerInfo {
  readonly name: string;
  readonly image: string;
  readonly args: readonly string[];
}

/** A pod of this node, as the bridge reads it. */
export interface PodInfo {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly nodeName: string | undefined;
  /** `metadata.deletionTimestamp` is set: the pod is terminating and keeps its addresses until it is gone. */
  readonly deleting: boolean;
  /** `status.phase`: Pending, Running, Succeeded, Failed, Unknown; undefined when not set yet. */
  readonly phase?: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
  /** Init containers (native sidecars among them) and containers. */
  readonly containers: readonly ContainerInfo[];
}

/** A NetworkAttachmentDefinition (k8s.cni.cncf.io/v1): its CNI configuration, unparsed. */
export interface NadInfo {
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string | undefined;
  /** `spec.config`: a CNI JSON document in a string; empty when the NAD has none (a CNI file on the node). */
  readonly config: string;
}

/** One whereabouts allocation: the container and the pod ("namespace/name") an address was given to. */
export interface WhereaboutsAllocation {
  readonly id: string | undefined;
  readonly podref: string | undefined;
  readonly ifname: string | undefined;
}

/** A whereabouts IPPool (whereabouts.cni.cncf.io/v1alpha1): allocations keyed by decimal offset in `range`. */
export interface IpPoolInfo {
  readonly namespace: string;
  readonly name: string;
  readonly range: string;
  readonly allocations: Readonly<Record<string, WhereaboutsAllocation>>;
}

/** One slice of a NodeSlicePool: the node it is given to ("" while free) and its CIDR. */
export interface NodeSliceAllocation {
  readonly nodeName: string;
  readonly sliceRange: string;
}

/**
 * A whereabouts NodeSlicePool (whereabouts.cni.cncf.io/v1alpha1), made by whereabouts' node slice controller
 * for each NAD with `node_slice_size`, in whereabouts' namespace, named after the network (`network_name`,
 * else the CNI configuration's `name`), owned by the NADs that share it.
 */
export interface NodeSlicePoolInfo {
  readonly namespace: string;
  readonly name: string;
  /** `spec.range`: the whole range, sliced. */
  readonly range: string;
  /** `spec.sliceSize`: the slices' prefix length, as whereabouts writes it ("/28" or "28"). */
  readonly sliceSize: string;
  /** `status.allocations`. */
  readonly allocations: readonly NodeSliceAllocation[];
  /** Names of the NetworkAttachmentDefinitions among `metadata.ownerReferences`. */
  readonly ownerNads: readonly string[];
}

/** A whereabouts OverlappingRangeIPReservation: one per allocated address, named after it (`:` as `-`). */
export interface OverlappingReservationInfo {
  readonly namespace: string;
  readonly name: string;
  readonly podref: string | undefined;
  readonly containerId: string | undefined;
}

/** A coordination.k8s.io/v1 Lease. */
export interface LeaseInfo {
  readonly namespace: string;
  readonly name: string;
  readonly holderIdentity: string | undefined;
  readonly leaseDurationSeconds: number | undefined;
  readonly acquireTime: Date | undefined;
  readonly renewTime: Date | undefined;
  readonly leaseTransitions: number | undefined;
  /** Undefined only for a Lease not created yet. */
  readonly resourceVersion: string | undefined;
}

/** The kinds of object the bridge writes Events about. */
export type EventObjectKind = "Pod" | "NetworkAttachmentDefinition" | "IPPool" | "Node";

/** A core/v1 Event about a pod (or, with `kind`, a NAD, an IPPool or a Node: namespace "default", as kubelet's). */
export interface PodEvent {
  readonly pod: {
    readonly namespace: string;
    readonly name: string;
    readonly uid: string | undefined;
    /** Default Pod. */
    readonly kind?: EventObjectKind;
  };
  readonly type: "Normal" | "Warning";
  /** UpperCamelCase, e.g. `AddressesAssigned`. */
  readonly reason: string;
  readonly message: string;
}

/** The objects a watch holds now. Reads the cache of the watch: no request. */
export interface WatchedCollection<T> {
  list(): readonly T[];
  /** Whether the first list has completed (the cache is complete, or has been once). */
  readonly synced: boolean;
  /** What the watch is doing, when it was last heard from, and its last failure. */
  health(): WatchHealth;
  /**
   * A fresh, consistent list from the API server (the list verb its watch needs already), the cache left alone.
   * `timeoutMs`: the list fails with a timeout after this long; default the watch's list timeout.
   */
  fetchNow(timeoutMs?: number): Promise<readonly T[]>;
}

/** Told about every change of a watched collection, and about watches that fail and are restarted. */
export interface WatchListener {
  /** Any object was added, modified or deleted (after a relist too). Must not throw. */
  changed(): void;
  /**
   * A list or watch failed; the next attempt starts `backoffMs` after the failed one began (at once when that
   * has passed). Must not throw.
   */
  failed?(resource: string, error: unknown, backoffMs: number): void;
  /** A watch's phase or fault changed (it failed, relisted, or works again). Must not throw. */
  healthChanged?(): void;
}

export interface KubeApi {
  /** RBAC: pods get, list, watch (cluster-wide, field selector `spec.nodeName`). */
  watchPods(nodeName: string, listener: WatchListener): Promise<WatchedCollection<PodInfo>>;
  /** RBAC: network-attachment-definitions (k8s.cni.cncf.io) list, watch, in every namespace. */
  watchNetworkAttachmentDefinitions(listener: WatchListener): Promise<WatchedCollection<NadInfo>>;
  /** RBAC: ippools (whereabouts.cni.cncf.io) list, watch, in every namespace. */
  watchIpPools(listener: WatchListener): Promise<WatchedCollection<IpPoolInfo>>;
  /** RBAC: overlappingrangeipreservations (whereabouts.cni.cncf.io) list, watch, in every namespace. */
  watchOverlappingReservations(
    listener: WatchListener,
  ): Promise<WatchedCollection<OverlappingReservationInfo>>;
  /** RBAC: nodeslicepools (whereabouts.cni.cncf.io) list, watch, in every namespace. Prefix mode only. */
  watchNodeSlicePools(listener: WatchListener): Promise<WatchedCollection<NodeSlicePoolInfo>>;
  /** RBAC: pods get. The pod's uid; undefined when there is no such pod. */
  podUid(namespace: string, name: string): Promise<string | undefined>;
  /** RBAC: leases (coordination.k8s.io) get. Undefined when there is none. */
  getLease(namespace: string, name: string): Promise<LeaseInfo | undefined>;
  /** RBAC: leases create. @throws KubeConflictError when it exists already (409). */
  createLease(lease: LeaseInfo): Promise<LeaseInfo>;
  /** RBAC: leases update. @throws KubeConflictError when `resourceVersion` is stale (409). */
  updateLease(lease: LeaseInfo): Promise<LeaseInfo>;
  /** RBAC: events (core) create. */
  createEvent(event: PodEvent): Promise<void>;
  /** RBAC: nodes get. The node's `spec.taints` ([] when none). Attach mode only (the startup taint). */
  getNodeTaints(nodeName: string): Promise<readonly NodeTaint[]>;
  /**
   * RBAC: nodes get, patch. Puts `taint` on the node (`present`) or takes every taint with its key and effect
   * off, every other taint as it was: the node is read, then patched with a JSON patch that tests the taints
   * it read, read again when another writer changed them in between (422 or 409), up to TAINT_PATCH_ATTEMPTS
   * times. True when it changed the node, false when the node was so already. Attach mode only.
   * @throws KubeConflictError when the taints changed under every attempt.
   */
  setNodeTaint(nodeName: string, taint: NodeTaint, present: boolean): Promise<boolean>;
  /** Stops every watch. */
  close(): Promise<void>;
}

/**
 * How long the fresh list that confirms releases may take, ms: well below a pod's patience, since a hung list
 * counts as no confirmation (nothing released) and another is tried at the next wave. The waves' and prefix
 * mode's confirmations both run beside their waves, never in them.
 */
export const CONFIRM_TIMEOUT_MS = 10_000;

/**
 * How old a confirming list's answer may be when a wave makes the releases it confirmed, beyond the wave
 * window, ms: its end wakes a wave at once, and an older answer is listed again rather than trusted.
 */
export const CONFIRMATION_MAX_AGE_MS = 2_000;

/** `multus-ipmgr.io/managed: "false"`: the bridge leaves the pod to its own init or sidecar container. */
export const MANAGED_ANNOTATION = "multus-ipmgr.io/managed";
/** `multus-ipmgr.io/sidecar: "true"`: the pod runs the sidecar, which moves its addresses itself. */
export const SIDECAR_ANNOTATION = "multus-ipmgr.io/sidecar";
