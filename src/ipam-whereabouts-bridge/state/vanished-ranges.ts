/**
 * A NAD that named whereabouts ranges when the bridge last read it and names none now (spec.config emptied,
 * the ipam `type` misspelt, the `ipam` block removed) reads without error, as a NAD of another IPAM would:
 * a typo there must not free a live pod's range. Pure.
 *
 * The rule: each range it last named still counts (its subnet CIDR reservations kept, its addresses
 * managed) while a pod carries an address inside the range's block: a pod of this node by its
 * network-status, or any pod by whereabouts' allocations (IPPool, OverlappingRangeIPReservation). The NAD is
 * reported meanwhile. Once no pod carries one, the change stands and the range goes (a NAD moved to another
 * IPAM on purpose, its pods gone).
 */
import { cidrContains, compareAddresses } from "../../eni/ip.js";
import type { WhereaboutsRange } from "./whereabouts-ranges.js";

/** A range that still counts, with the first address a pod carries in it, and that pod. */
export interface KeptRange {
  readonly range: WhereaboutsRange;
  readonly address: string;
  /** `namespace/name`. */
  readonly pod: string;
}

/** Of a NAD's last ranges, those that hold an address a pod carries (`carriedBy`: address -> pod). */
export function keptVanishedRanges(
  lastRanges: readonly WhereaboutsRange[],
  carriedBy: ReadonlyMap<string, string>,
): KeptRange[] {
  const addresses = [...carriedBy.keys()].sort(compareAddresses);
  const kept: KeptRange[] = [];
  for (const range of lastRanges) {
    const address = addresses.find((a) => cidrContains(range.cidr, a));
    if (address !== undefined) kept.push({ range, address, pod: carriedBy.get(address) ?? "" });
  }
  return kept;
}

/** The NAD's problem while it keeps ranges this way: what it named, why it names none, the pods, the fix. */
export function vanishedRangesMessage(nad: string, why: string, kept: readonly KeptRange[]): string {
  const ranges = kept.map((k) => k.range.cidr).join(", ");
  const carried = kept.map((k) => `${k.address} on ${k.pod}`).join(", ");
  return (
    `NAD ${nad} named the whereabouts range ${ranges} and names none now (${why}), while pods still carry ` +
    `addresses in it (${carried}); the bridge keeps the range and its subnet CIDR reservations while a pod ` +
    "carries an address in it: fix spec.config, or delete those pods if the NAD is meant to leave whereabouts"
  );
}
