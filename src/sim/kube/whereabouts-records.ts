import { SandboxError } from "../errors/sandbox-error.js";
import { bigIntToAddress, parseCidr } from "../ip-math.js";
import type { KubeApi } from "./kube-api.js";
import { isJsonObject, type JsonObject } from "./kube-object.js";
import { nodeIpPoolName } from "./node-slices.js";
import { primaryResource } from "./resources.js";
import {
  ipPoolName,
  lowestFree,
  reservationNameOf,
  type WhereaboutsRange,
  whereaboutsRanges,
} from "./whereabouts-ipam.js";

/**
 * whereabouts' records over the simulated API, as whereabouts keeps them: an IPPool per range, with
 * `{offset: {id, podref, ifname}}` allocations, and an OverlappingRangeIPReservation per address.
 */

/** Where whereabouts keeps its IPPools and reservations (its default namespace). */
export const whereaboutsNamespace = "kube-system";

/** What whereabouts recorded for one address of a pod, to remove when the pod goes. */
export interface WhereaboutsAllocation {
  readonly pool: string;
  readonly offset: string;
  readonly reservation: string | undefined;
  readonly containerId: string;
}

function objectAt(object: JsonObject, field: string): JsonObject {
  const value = object[field];
  return isJsonObject(value) ? value : {};
}

/** Where whereabouts runs: the node (its NODENAME) and the network's CNI config `name`. */
export interface WhereaboutsCall {
  readonly nodeName: string;
  /** The NAD's CNI config `name` (a plugin list's): names the NodeSlicePool when `network_name` is unset. */
  readonly netName: string;
}

/** A range to allocate from and the IPPool that records it. */
interface PoolRange {
  readonly range: WhereaboutsRange;
  readonly poolName: string;
}

/**
 * whereabouts' node-slice mode (`node_slice_size` set): the node's slice, read from the NodeSlicePool named
 * after `network_name` (else the config's `name`) in kube-system, as the one range, from its first to its
 * last usable address with no exclusions (whereabouts drops `exclude` there), recorded in the per-node
 * IPPool `network_name-node-slice`. One address per network: whereabouts reads one slice for all ranges.
 */
function nodeSliceRange(api: KubeApi, first: WhereaboutsRange, call: WhereaboutsCall): PoolRange {
  const poolName = first.networkName === "" ? call.netName : first.networkName;
  const pool = api.store.get("nodeslicepools", whereaboutsNamespace, poolName);
  if (pool === undefined) {
    throw new SandboxError(
      `error at storage engine: nodeslicepools.whereabouts.cni.cncf.io "${poolName}" not found`,
    );
  }
  const status = objectAt(pool, "status");
  const list = Array.isArray(status.allocations) ? status.allocations.filter(isJsonObject) : [];
  const slice = list.find((a) => a.nodeName === call.nodeName)?.sliceRange;
  if (typeof slice !== "string")
    throw new SandboxError("error at storage engine: no allocated node slice for node");
  const cidr = parseCidr(slice);
  if (typeof cidr === "string" || cidr.size <= 2n) {
    throw new SandboxError(
      `error at storage engine: node slice ${slice} ${typeof cidr === "string" ? cidr : "has no usable address"}`,
    );
  }
  return {
    range: { ...first, cidr, first: cidr.base + 1n, last: cidr.base + cidr.size - 2n, exclude: [] },
    poolName: nodeIpPoolName(first.networkName, call.nodeName, cidr.text),
  };
}

/**
 * whereabouts' ADD: one address of each range of `ipam` (of the node's slice in node-slice mode), recorded
 * in the range's IPPool (created if missing) and in an OverlappingRangeIPReservation. Appends what it
 * recorded to `allocations`; returns the addresses. Throws SandboxError for a config whereabouts refuses,
 * a full range, or a node without a slice.
 */
export function allocateAddresses(
  api: KubeApi,
  ipam: JsonObject,
  call: WhereaboutsCall,
  podRef: string,
  ifname: string,
  containerId: string,
  allocations: WhereaboutsAllocation[],
): string[] {
  let poolRanges: PoolRange[];
  try {
    const ranges = whereaboutsRanges(ipam);
    poolRanges = ranges.map((range) => ({ range, poolName: ipPoolName(range) }));
  } catch (error) {
    throw new SandboxError((error as Error).message);
  }
  if (typeof ipam.node_slice_size === "string" && ipam.node_slice_size !== "") {
    poolRanges = [nodeSliceRange(api, (poolRanges[0] as PoolRange).range, call)];
  }
  const ippools = primaryResource("ippools");
  const reservations = primaryResource("overlappingrangeipreservations");
  const ips: string[] = [];
  for (const { range, poolName } of poolRanges) {
    let pool = api.store.get("ippools", whereaboutsNamespace, poolName);
    if (pool === undefined) {
      pool = api.create(
        ippools,
        whereaboutsNamespace,
        { metadata: { name: poolName }, spec: { range: range.cidr.text, allocations: {} } },
        { dryRun: false },
      );
    }
    const current = objectAt(objectAt(pool, "spec"), "allocations");
    const taken = (ip: string): boolean => {
      if (!range.overlapping) return false;
      const reservation = api.store.get(
        "overlappingrangeipreservations",
        whereaboutsNamespace,
        reservationNameOf(range, ip),
      );
      return reservation !== undefined && objectAt(reservation, "spec").podref !== podRef;
    };
    const free = lowestFree(range, new Set(Object.keys(current)), taken);
    if (free === undefined) {
      throw new SandboxError(
        `Error at storage engine: Could not allocate IP in range: ip: ${bigIntToAddress(range.first, range.cidr.family)} / - ${bigIntToAddress(range.last, range.cidr.family)} / range: ${range.cidr.text} / excludeRanges: [${range.exclude.map((b) => b.text).join(" ")}]`,
      );
    }
    const updated = structuredClone(pool);
    updated.spec = {
      ...objectAt(updated, "spec"),
      allocations: { ...current, [free.offset]: { id: containerId, podref: podRef, ifname } },
    };
    api.update(ippools, whereaboutsNamespace, poolName, updated, { dryRun: false });
    let reservation: string | undefined;
    if (range.overlapping) {
      reservation = reservationNameOf(range, free.ip);
      const spec = { containerid: containerId, podref: podRef, ifname };
      const existing = api.store.get("overlappingrangeipreservations", whereaboutsNamespace, reservation);
      if (existing === undefined) {
        api.create(
          reservations,
          whereaboutsNamespace,
          { metadata: { name: reservation }, spec },
          { dryRun: false },
        );
      } else {
        api.update(reservations, whereaboutsNamespace, reservation, { ...existing, spec }, { dryRun: false });
      }
    }
    allocations.push({ pool: poolName, offset: free.offset, reservation, containerId });
    ips.push(free.ip);
  }
  return ips;
}

/** whereabouts' DEL: the pod's allocations and reservations go, where they are still the pod's. */
export function releaseAddresses(
  api: KubeApi,
  podRef: string,
  allocations: readonly WhereaboutsAllocation[],
): void {
  for (const allocation of allocations) {
    const pool = api.store.get("ippools", whereaboutsNamespace, allocation.pool);
    const current = pool === undefined ? {} : objectAt(objectAt(pool, "spec"), "allocations");
    const entry = objectAt(current, allocation.offset);
    if (pool !== undefined && entry.id === allocation.containerId && entry.podref === podRef) {
      const { [allocation.offset]: _gone, ...rest } = current;
      const updated = structuredClone(pool);
      updated.spec = { ...objectAt(updated, "spec"), allocations: rest };
      api.update(primaryResource("ippools"), whereaboutsNamespace, allocation.pool, updated, {
        dryRun: false,
      });
    }
    if (allocation.reservation === undefined) continue;
    const reservation = api.store.get(
      "overlappingrangeipreservations",
      whereaboutsNamespace,
      allocation.reservation,
    );
    if (reservation !== undefined && objectAt(reservation, "spec").containerid === allocation.containerId) {
      api.forceDelete("overlappingrangeipreservations", whereaboutsNamespace, allocation.reservation);
    }
  }
}
