import { bigIntToAddress, type Cidr } from "../ip-math.js";
import { isJsonObject, type JsonObject } from "./kube-object.js";
import { whereaboutsRanges } from "./whereabouts-ipam.js";

/**
 * whereabouts' node slices ("fast IPAM"), the pure part: which NADs ask for them, how a range is cut into
 * slices, and how nodes are given slices. Read from whereabouts' pkg/node-controller/controller.go and
 * pkg/iphelpers (DivideRangeBySize), not from this project's bridge, which it is there to check.
 */

/** One `status.allocations` entry of a NodeSlicePool: `nodeName` is "" for a free slice. */
export interface NodeSliceAllocation {
  readonly nodeName: string;
  readonly sliceRange: string;
}

/** What a NAD's whereabouts IPAM config tells the node-slice controller. */
export interface WhereaboutsNetwork {
  /** The NodeSlicePool's name: `network_name`, else the CNI config's `name`. */
  readonly poolName: string;
  /** `network_name` ("" when unset): NADs of one network must agree; it prefixes the per-node IPPools. */
  readonly networkName: string;
  /** The first range, host bits masked, as whereabouts' config loader leaves it: `spec.range`. */
  readonly range: string;
  /** `node_slice_size` as written (`/28` or `28`): `spec.sliceSize`; "" when the NAD has no node slices. */
  readonly sliceSize: string;
}

/**
 * The whereabouts network of a NAD's CNI config (JSON text), or undefined when it has none: not JSON, or no
 * whereabouts IPAM. As whereabouts' controller reads it, a plugin list is read from its first plugin.
 * Throws Error with the reason for a whereabouts config it cannot read (no range, a bad CIDR).
 */
export function whereaboutsNetworkOf(configText: string): WhereaboutsNetwork | undefined {
  let config: unknown;
  try {
    config = JSON.parse(configText);
  } catch {
    // whereabouts' controller logs the parse error and skips the NAD; so does the stand-in.
    return undefined;
  }
  if (!isJsonObject(config)) return undefined;
  const plugin: JsonObject =
    typeof config.type === "string" && config.type !== ""
      ? config
      : Array.isArray(config.plugins) && isJsonObject(config.plugins[0])
        ? config.plugins[0]
        : {};
  const ipam = plugin.ipam;
  if (!isJsonObject(ipam) || ipam.type !== "whereabouts") return undefined;
  const first = whereaboutsRanges(ipam)[0] as { cidr: Cidr };
  const networkName = typeof ipam.network_name === "string" ? ipam.network_name : "";
  const name = typeof plugin.name === "string" ? plugin.name : "";
  return {
    poolName: networkName === "" ? name : networkName,
    networkName,
    range: first.cidr.text,
    sliceSize: typeof ipam.node_slice_size === "string" ? ipam.node_slice_size : "",
  };
}

/**
 * The most slices the stand-in lists in one NodeSlicePool. whereabouts has no limit, but a list much longer
 * would pass etcd's 1.5 MiB request limit and the controller's write would fail (2^48 /80s of a /32 never
 * fit); whereabouts' own e2e test lists 4,096.
 */
export const maxSlices = 1 << 14;

/**
 * The slices of `range` (a masked CIDR) of `/size` each, in address order: whereabouts' DivideRangeBySize,
 * which reads `/28` and `28` alike and answers no slice at all for a size that is not a number. Unlike
 * whereabouts (whose DivideRangeBySize panics on IPv6: `cannot convert IPv6 into uint32`), IPv6 ranges are
 * cut the same way. Returns a reason string for what the controller refuses.
 */
export function divideRange(range: Cidr, sliceSize: string): string[] | string {
  const text = sliceSize.startsWith("/") ? sliceSize.slice(1) : sliceSize;
  if (!/^[+-]?\d+$/.test(text)) return [];
  const size = Number(text);
  const bits = range.family === 4 ? 32 : 128;
  if (range.prefix > size) return "subnetMaskSize must be greater or equal than netMaskSize";
  if (size > bits) return `slice size /${size} is longer than an IPv${range.family} address`;
  const count = 1n << BigInt(size - range.prefix);
  if (count > BigInt(maxSlices)) {
    return `${range.text} holds ${count} slices of /${size}, more than the ${maxSlices} the simulator lists in one NodeSlicePool (etcd refuses objects above 1.5 MiB): use a smaller range or larger slices`;
  }
  const step = 1n << BigInt(bits - size);
  const slices: string[] = [];
  for (let i = 0n; i < count; i++)
    slices.push(`${bigIntToAddress(range.base + i * step, range.family)}/${size}`);
  return slices;
}

/** Every slice free: a new pool's, or a re-cut pool's allocations before nodes are assigned. */
export function freeAllocations(slices: readonly string[]): NodeSliceAllocation[] {
  return slices.map((sliceRange) => ({ nodeName: "", sliceRange }));
}

/**
 * whereabouts' assignNodeToSlice for each node, in order: a node without a slice takes the first free one;
 * a node finds none when every slice is taken (whereabouts leaves it without, silently).
 */
export function assignNodes(
  allocations: readonly NodeSliceAllocation[],
  nodeNames: readonly string[],
): NodeSliceAllocation[] {
  const out: { nodeName: string; sliceRange: string }[] = allocations.map((a) => ({ ...a }));
  const held = new Set(out.map((a) => a.nodeName));
  // Slices fill in order, so the next free one is never before the last one taken.
  let next = 0;
  for (const nodeName of nodeNames) {
    if (held.has(nodeName)) continue;
    while (next < out.length && (out[next] as NodeSliceAllocation).nodeName !== "") next++;
    const free = out[next];
    if (free === undefined) break;
    free.nodeName = nodeName;
    held.add(nodeName);
  }
  return out;
}

/** whereabouts' removeUnusedNodes: the slice of a node that is gone is free again. */
export function removeUnusedNodes(
  allocations: readonly NodeSliceAllocation[],
  nodeNames: readonly string[],
): NodeSliceAllocation[] {
  const present = new Set(nodeNames);
  return allocations.map((a) =>
    a.nodeName !== "" && !present.has(a.nodeName) ? { nodeName: "", sliceRange: a.sliceRange } : { ...a },
  );
}

/** The IPPool whereabouts keeps a node's slice in: `network_name-node-slice` (`:` and `/` as `-`). */
export function nodeIpPoolName(networkName: string, nodeName: string, sliceRange: string): string {
  const text = sliceRange.endsWith(":") ? `${sliceRange}0` : sliceRange;
  const normalized = text.replaceAll(":", "-").replaceAll("/", "-");
  return networkName === "" ? `${nodeName}-${normalized}` : `${networkName}-${nodeName}-${normalized}`;
}
