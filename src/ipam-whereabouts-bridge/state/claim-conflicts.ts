/**
 * The desired state's conflict phase: per address, which claims stand. Pure.
 *
 * The running claimants win over pods being deleted. Then, when whereabouts allocates the address (in the
 * claimants' network; whereabouts-owners.ts) to one of the carriers, that owner wins and the others are told;
 * when it allocates it to a pod that does not carry it, or two pods of this node carry it, no claim stands
 * and every claimant is told. A conflict is never moved, only reported on both pods.
 */
import { compareAddresses } from "../../eni/ip.js";
import type { Claim, Conflict } from "./desired-types.js";
import { podKey, refOf, refOfPodref } from "./pod-refs.js";
import type { Owner, WhereaboutsOwners } from "./whereabouts-owners.js";

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Of whereabouts' owners, one that carries the address among `podrefs` if any, else the first. */
const ownerAmong = (owners: readonly Owner[], podrefs: readonly string[]): Owner | undefined =>
  owners.find((o) => podrefs.includes(o.podref)) ?? owners[0];

/** `uids`: podKey -> uid of this node's pods, so that a conflict's Event reaches the pod it names. */
export function settleClaims(
  claims: readonly Claim[],
  owners: WhereaboutsOwners,
  uids: ReadonlyMap<string, string>,
): { accepted: Claim[]; conflicts: Conflict[] } {
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
  conflicts.sort(
    (a, b) =>
      compareAddresses(a.address, b.address) ||
      byString(podKey(a.pod), podKey(b.pod)) ||
      byString(podKey(a.other), podKey(b.other)),
  );
  return { accepted, conflicts };
}
