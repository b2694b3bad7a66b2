/**
 * The desired state's release phase. Pure.
 *
 * A secondary address of one of this node's Multus ENIs is released when it lies in a managed range (a
 * whereabouts range of any NAD, within the allowed CIDRs), no pod of this node carries it (pods being
 * deleted, opted out or running the sidecar included), whereabouts does not allocate it to a pod of this
 * node (a pod starting, before Multus wrote its annotation), and all this has held for the grace period.
 * Never a primary address, never one outside the managed ranges, never another node's ENI (only this
 * node's ENIs are input).
 */
import { anyCidrContains, compareAddresses, family, tryCanonical } from "../../eni/ip.js";
import type { DesiredInput, PendingRelease, Release } from "./desired-types.js";
import type { WhereaboutsOwners } from "./whereabouts-owners.js";
import { rangeContains, type WhereaboutsRange } from "./whereabouts-ranges.js";

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The key of an (ENI, address) pair in `unusedSince`. */
export function unusedKey(eniId: string, address: string): string {
  return `${eniId} ${address}`;
}

export interface ReleaseFacts {
  /** Every NAD's ranges, as the desired state keeps them. */
  readonly ranges: readonly WhereaboutsRange[];
  /** Addresses this node's pods carry (network-status). */
  readonly carried: ReadonlySet<string>;
  readonly owners: WhereaboutsOwners;
  /** `namespace/name` of this node's live pods. */
  readonly podsOnNode: ReadonlySet<string>;
}

export function releasesOf(
  input: DesiredInput,
  facts: ReleaseFacts,
): { releases: Release[]; pending: PendingRelease[]; unusedSince: Map<string, number> } {
  const managed = (address: string): boolean =>
    facts.ranges.some((range) => rangeContains(range, address)) &&
    anyCidrContains(input.allowedCidrs, address);
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
      if (!managed(address) || facts.carried.has(address)) continue;
      const all = facts.owners.of(address);
      if (all.some((o) => facts.podsOnNode.has(o.podref))) continue;
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
  return { releases, pending, unusedSince };
}
