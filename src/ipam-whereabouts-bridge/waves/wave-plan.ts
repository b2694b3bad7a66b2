/**
 * One wave's EC2 actions, from the planner's plan and the desired releases. Pure.
 *
 * - Releases come first (one unassign per ENI and family), so that their room serves this wave's assigns.
 * - Assigns go only to Multus ENIs (tagged no_manage or at a configured device index): an address whose
 *   interface sits on another ENI (the primary ENI, one the VPC CNI manages) is refused, not assigned.
 * - Each ENI gets at most one assign per family, holding no more addresses than the ENI has room for
 *   (the instance type's per-ENI limit counts the primary address); the rest are refused as `eni-full`
 *   before any call, instead of a call that EC2 refuses whole (`PrivateIpAddressLimitExceeded`).
 * - IPv4 assigns come before IPv6 moves (unassign from another holder), and each move right before the IPv6
 *   assigns it serves, as the core plans them: an IPv6 address is unrouted only between the two.
 *
 * And the view of the ENIs a wave starts from: IMDS reflects EC2's changes with a delay, so an address EC2
 * accepted recently counts as held by its new ENI, and one released recently as gone, until IMDS agrees or
 * the memory expires.
 */
import { compareAddresses } from "../../eni/ip.js";
import { isAssign, isMove } from "../../eni/plan-actions.js";
import type { EniState, Placement, Plan, PlanAction } from "../../eni/types.js";
import type { Release } from "../state/desired-state.js";

export type BridgeRefusalReason =
  | "outside-allowed-cidrs"
  | "outside-eni-subnet"
  | "unknown-mac"
  | "eni-primary-address"
  | "address-conflict"
  | "inside-prefix"
  | "floating-in-prefix"
  | "not-multus-eni"
  | "eni-full"
  /** EC2 refused it in an earlier wave; asked again after a backoff (refused-addresses.ts). */
  | "ec2-refused";

export interface BridgeRefusal {
  readonly address: string;
  /** `namespace/pod/interface`. */
  readonly interfaceName: string;
  readonly reason: BridgeRefusalReason;
  readonly detail: string;
}

export interface WaveInput {
  /** From src/eni/planner.ts (via planFor), without releases. */
  readonly plan: Plan;
  readonly releases: readonly Release[];
  readonly enis: readonly EniState[];
  readonly multusEniIds: ReadonlySet<string>;
  /** Addresses per ENI and family for this instance type, the primary included; undefined: unknown. */
  readonly addressesPerEni: number | undefined;
}

export interface Wave {
  /** In execution order: releases, IPv4 assigns, IPv6 moves, IPv6 assigns. */
  readonly actions: PlanAction[];
  /** Addresses that will be held by the right ENI once the actions succeed (already held ones included). */
  readonly placements: Placement[];
  readonly refusals: BridgeRefusal[];
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function releaseActions(releases: readonly Release[]): PlanAction[] {
  const groups = new Map<string, string[]>();
  for (const r of releases) {
    const key = `${r.family} ${r.eniId}`;
    groups.set(key, [...(groups.get(key) ?? []), r.address]);
  }
  return [...groups]
    .sort(([a], [b]) => byString(a, b))
    .map(([key, addresses]): PlanAction => {
      const [fam, eniId = ""] = key.split(" ");
      const sorted = [...new Set(addresses)].sort(compareAddresses);
      return fam === "4"
        ? { kind: "unassign-ipv4", eniId, addresses: sorted }
        : { kind: "unassign-ipv6", eniId, addresses: sorted, reason: "release" };
    });
}

export function planWave(input: WaveInput): Wave {
  const { plan, enis, multusEniIds, addressesPerEni } = input;
  const eniById = new Map(enis.map((e) => [e.eniId, e]));
  const refusals: BridgeRefusal[] = plan.refusals.map((r) => ({
    address: r.address,
    interfaceName: r.interfaceName,
    reason: r.reason,
    detail: r.detail,
  }));
  const refusedPlacement = new Set<string>();
  const refuse = (p: Placement, reason: BridgeRefusalReason, detail: string): void => {
    refusals.push({ address: p.address, interfaceName: p.interfaceName, reason, detail });
    refusedPlacement.add(`${p.eniId} ${p.address}`);
  };

  for (const p of plan.placements) {
    if (!multusEniIds.has(p.eniId)) {
      const eni = eniById.get(p.eniId);
      refuse(
        p,
        "not-multus-eni",
        `address ${p.address} on ${p.interfaceName} sits on ENI ${p.eniId} (device ${eni?.deviceIndex ?? "?"}), ` +
          "which is not a Multus ENI of this node (tagged node.k8s.amazonaws.com/no_manage=true, or in " +
          "IPMGR_BRIDGE_DEVICE_INDEXES); make the NetworkAttachmentDefinition's master a Multus ENI.",
      );
    }
  }

  const released = releaseActions(input.releases);
  const candidates = plan.actions.filter(isAssign).map((action) => ({
    action,
    addresses: action.addresses.filter((a) => !refusedPlacement.has(`${action.eniId} ${a}`)),
  }));
  const fitted = fitRooms({
    candidates,
    moves: plan.actions.filter(isMove),
    released,
    enis,
    addressesPerEni,
  });
  const actions: PlanAction[] = [...released, ...plan.actions.filter(isMove)];
  const assigns: PlanAction[] = [];
  for (const { action, addresses } of candidates) {
    const fit = fitted.get(action) ?? { count: addresses.length, held: 0, room: 0 };
    const fam = action.kind === "assign-ipv4" ? 4 : 6;
    for (const address of addresses.slice(fit.count)) {
      for (const p of plan.placements.filter((x) => x.address === address && x.eniId === action.eniId)) {
        refuse(
          p,
          "eni-full",
          `address ${address} on ${p.interfaceName} does not fit on ENI ${action.eniId}: it holds ${fit.held} ` +
            `IPv${fam} addresses of the ${addressesPerEni} its instance type allows per ENI, and this wave ` +
            `assigns ${fit.room} more; release addresses no pod uses, or spread the pods over more nodes.`,
        );
      }
    }
    const kept = addresses.slice(0, fit.count);
    if (kept.length > 0) assigns.push({ ...action, addresses: kept });
  }
  // IPv6 moves whose assign was refused entirely are dropped: the address stays with its holder.
  const assigned6 = new Set(assigns.filter((a) => a.kind === "assign-ipv6").flatMap((a) => a.addresses));
  const kept = actions.filter((a) => !isMove(a) || a.addresses.some((x) => assigned6.has(x)));
  const movesTrimmed = kept.map((a) =>
    isMove(a) ? { ...a, addresses: a.addresses.filter((x) => assigned6.has(x)) } : a,
  );
  refusals.sort(
    (a, b) =>
      compareAddresses(a.address, b.address) ||
      byString(a.interfaceName, b.interfaceName) ||
      byString(a.reason, b.reason),
  );
  return {
    actions: [
      ...movesTrimmed.filter((a) => !isMove(a)),
      ...assigns.filter((a) => a.kind === "assign-ipv4"),
      ...movesTrimmed.filter(isMove),
      ...assigns.filter((a) => a.kind === "assign-ipv6"),
    ],
    placements: plan.placements.filter((p) => !refusedPlacement.has(`${p.eniId} ${p.address}`)),
    refusals,
  };
}

interface Fit {
  /** How many of the assign's addresses (a prefix) fit. */
  readonly count: number;
  /** Addresses of the family the ENI holds before the wave (the IPv4 primary counted). */
  readonly held: number;
  /** Room for this wave's assign. */
  readonly room: number;
}

/**
 * How much of each assign fits on its ENI, counting the slots this wave frees there first: its releases;
 * the IPv6 moves (unassigns from a holder), which all run before the IPv6 assigns, for as long as the
 * assign they serve goes ahead (a fixpoint: moves whose address does not fit are dropped, and the room they
 * made with them); and for IPv4, an earlier assign of the wave that takes an address from this ENI
 * (AllowReassignment takes it off its holder). Pods swapping between two full ENIs are placed so, in one
 * wave for IPv6, in growing steps for IPv4, instead of being refused for good. Unknown limit: all fits.
 */
function fitRooms(input: {
  readonly candidates: readonly { readonly action: PlanAction; readonly addresses: readonly string[] }[];
  readonly moves: readonly PlanAction[];
  readonly released: readonly PlanAction[];
  readonly enis: readonly EniState[];
  readonly addressesPerEni: number | undefined;
}): Map<PlanAction, Fit> {
  const { candidates, moves, released, enis, addressesPerEni } = input;
  const fits = new Map<PlanAction, Fit>();
  const eniById = new Map(enis.map((e) => [e.eniId, e]));
  const key = (fam: 4 | 6, eniId: string) => `${fam} ${eniId}`;
  const freedByReleases = new Map<string, number>();
  for (const action of released) {
    const k = key(action.kind === "unassign-ipv4" ? 4 : 6, action.eniId);
    freedByReleases.set(k, (freedByReleases.get(k) ?? 0) + action.addresses.length);
  }
  const fitOne = (action: PlanAction, addresses: readonly string[], freed: number): Fit => {
    const eni = eniById.get(action.eniId);
    if (addressesPerEni === undefined || eni === undefined)
      return { count: addresses.length, held: 0, room: addresses.length };
    // IPv4 holds the primary among its addresses; an IPv6 ENI holds up to the same number of IPv6 addresses.
    // Each delegated prefix takes one slot of the same limit (prefix mode).
    const held =
      action.kind === "assign-ipv4"
        ? Math.max(eni.ipv4s.length, 1) + (eni.ipv4Prefixes?.length ?? 0)
        : eni.ipv6s.length + (eni.ipv6Prefixes?.length ?? 0);
    const room = Math.max(0, addressesPerEni - held + freed);
    return { count: Math.min(addresses.length, room), held, room };
  };

  // IPv4, in execution order: what an assign takes from another of our ENIs is room for the later ones.
  const freed4 = new Map<string, number>();
  for (const { action, addresses } of candidates) {
    if (action.kind !== "assign-ipv4") continue;
    const k = key(4, action.eniId);
    const fit = fitOne(action, addresses, (freedByReleases.get(k) ?? 0) + (freed4.get(k) ?? 0));
    fits.set(action, fit);
    for (const address of addresses.slice(0, fit.count)) {
      for (const other of enis) {
        if (other.eniId === action.eniId || !other.ipv4s.includes(address)) continue;
        freed4.set(key(4, other.eniId), (freed4.get(key(4, other.eniId)) ?? 0) + 1);
      }
    }
  }

  // IPv6: every move runs before every assign. Start from all moves and shrink until nothing changes.
  const six = candidates.filter((c) => c.action.kind === "assign-ipv6");
  let placed = new Set(six.flatMap((c) => c.addresses));
  for (;;) {
    const freed6 = new Map<string, number>();
    for (const move of moves) {
      const k = key(6, move.eniId);
      freed6.set(k, (freed6.get(k) ?? 0) + move.addresses.filter((a) => placed.has(a)).length);
    }
    const next = new Set<string>();
    for (const { action, addresses } of six) {
      const k = key(6, action.eniId);
      const fit = fitOne(action, addresses, (freedByReleases.get(k) ?? 0) + (freed6.get(k) ?? 0));
      fits.set(action, fit);
      for (const address of addresses.slice(0, fit.count)) next.add(address);
    }
    if (next.size === placed.size) break;
    placed = next;
  }
  return fits;
}

/** What this process changed recently, which IMDS may not show yet. */
export interface RecentChange {
  readonly eniId: string;
  readonly address: string;
  readonly kind: "assigned" | "released";
  /** Forgotten after this time (ms since the epoch), whatever IMDS shows. */
  readonly until: number;
}

/**
 * The ENIs as IMDS shows them, corrected by the changes EC2 accepted recently. Returns the corrected ENIs
 * and the changes still worth remembering (those IMDS does not reflect yet and that have not expired).
 */
export function overlayRecent(
  enis: readonly EniState[],
  recent: readonly RecentChange[],
  now: number,
): { enis: EniState[]; recent: RecentChange[] } {
  const live = recent.filter((c) => c.until > now);
  const still: RecentChange[] = [];
  const corrected = enis.map((eni) => ({ ...eni, ipv4s: [...eni.ipv4s], ipv6s: [...eni.ipv6s] }));
  for (const change of live) {
    const target = corrected.find((e) => e.eniId === change.eniId);
    if (target === undefined) continue;
    const list = change.address.includes(":") ? target.ipv6s : target.ipv4s;
    const shows = list.includes(change.address);
    if (change.kind === "assigned") {
      if (shows) continue;
      list.push(change.address);
      // The address moved here: an older view of another of our ENIs may still show it.
      for (const other of corrected) {
        if (other === target) continue;
        const otherList = change.address.includes(":") ? other.ipv6s : other.ipv4s;
        const index = otherList.indexOf(change.address);
        if (index >= 0) otherList.splice(index, 1);
      }
    } else {
      if (!shows) continue;
      list.splice(list.indexOf(change.address), 1);
    }
    still.push(change);
  }
  return { enis: corrected, recent: still };
}
