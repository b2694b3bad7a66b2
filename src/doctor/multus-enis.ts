import type { EniState, PodInterface } from "../eni/types.js";

/** An ENI behind at least one of the pod's managed interfaces (matched by MAC, as the planner does). */
export interface MultusEni {
  readonly eni: EniState;
  /** The pod interfaces on it, e.g. `net1`. */
  readonly interfaces: readonly string[];
}

/** The ENIs the pod's managed interfaces sit on, in the order of the instance's ENIs. */
export function multusEnisOf(interfaces: readonly PodInterface[], enis: readonly EniState[]): MultusEni[] {
  const out: MultusEni[] = [];
  for (const eni of enis) {
    const names = interfaces.filter((i) => i.mac.toLowerCase() === eni.mac.toLowerCase()).map((i) => i.name);
    if (names.length > 0) out.push({ eni, interfaces: names });
  }
  return out;
}

/**
 * The ENIs whose subnets may hold pod ranges: every ENI a pod interface sits on, and every secondary ENI
 * (device index above 0) of the instance, since another pod on this node may use it. Device 0 belongs to
 * the VPC CNI.
 */
export function secondaryEnisOf(interfaces: readonly PodInterface[], enis: readonly EniState[]): MultusEni[] {
  const used = new Map(multusEnisOf(interfaces, enis).map((m) => [m.eni.eniId, m]));
  return enis
    .filter((e) => used.has(e.eniId) || e.deviceIndex !== 0)
    .map((eni) => used.get(eni.eniId) ?? { eni, interfaces: [] });
}

/** `eni-0123 (net1)`, or `eni-0123` when no pod interface sits on it. */
export function eniLabel(multus: MultusEni): string {
  return multus.interfaces.length === 0
    ? multus.eni.eniId
    : `${multus.eni.eniId} (${multus.interfaces.join(", ")})`;
}
