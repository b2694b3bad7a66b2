import { describe, expect, it } from "vitest";
import type { EniState, PodInterface } from "../src/eni/types.js";
import type { PodRef } from "../src/ipam-whereabouts-bridge/state/desired-state.js";
import { ConflictEpisodes } from "../src/ipam-whereabouts-bridge/waves/conflict-episodes.js";

const ADDRESS = "198.51.100.205";
const OURS = "eni-0a1";
const RIVAL = "eni-0b1";
const IFACE: PodInterface = { name: "cnf/twin-a/net1", mac: "02:00:00:00:01:01", addresses: [ADDRESS] };
const POD: PodRef = { namespace: "cnf", name: "twin-a", uid: "uid-a" };
const podOf = new Map([[IFACE.name, POD]]);

function eni(holds: boolean): EniState {
  return {
    eniId: OURS,
    mac: IFACE.mac,
    deviceIndex: 1,
    subnetId: "subnet-0multus",
    subnetIpv4Cidrs: ["198.51.100.128/25"],
    subnetIpv6Cidrs: [],
    primaryIpv4: "198.51.100.140",
    ipv4s: ["198.51.100.140", ...(holds ? [ADDRESS] : [])],
    ipv6s: [],
  };
}

function episodes(): ConflictEpisodes {
  return new ConflictEpisodes({ backoff: { baseMs: 1_000, maxMs: 60_000 }, random: () => 0 });
}

/** One wave's look: what the ENI holds and, when the address is lost, who holds it. Whether the address may be assigned now. */
function look(e: ConflictEpisodes, now: number, holder: "ours" | string | null): boolean {
  const { lost } = e.observe([IFACE], podOf, [eni(holder === "ours")], now);
  e.settle(lost, new Map(lost.map((w) => [w.address, holder === "ours" ? OURS : holder])), now);
  return (e.withoutHeldBack([IFACE], [eni(holder === "ours")], now)[0]?.addresses ?? []).includes(ADDRESS);
}

describe("ConflictEpisodes", () => {
  it("assigns an address never held at once, whoever holds it (the first assign is no repair)", () => {
    const e = episodes();
    expect(look(e, 0, RIVAL)).toBe(true);
    expect(e.conflicts(0)).toEqual([]);
  });

  it("reports another ENI taking back an address ours held as a conflict, and paces the repairs by the backoff, or sooner once the rival has been quiet for twice its last interval", () => {
    const e = episodes();
    expect(look(e, 0, "ours")).toBe(true);
    // Taken back: held back for 1 s (one move), reported with the fix.
    expect(look(e, 100, RIVAL)).toBe(false);
    expect(look(e, 600, RIVAL)).toBe(false);
    expect(e.conflicts(600).map((c) => [c.pod.name, c.message])).toEqual([
      [
        "twin-a",
        `address ${ADDRESS} on cnf/twin-a (net1) belongs on ENI ${OURS}, but ENI ${RIVAL} took it back after ours held it: a pod elsewhere carries the same address and whereabouts names neither; it is taken back with backoff until one pod lets it go. Give each pod its own address, or delete the pod that should not have it.`,
      ],
    ]);
    expect(look(e, 1_100, RIVAL)).toBe(true);
    e.assigned(OURS, [ADDRESS], 1_100);
    // Our repair held, then taken again 0.9 s after it: three moves, 4 s of backoff, but the rival's last
    // interval (at least the backoff's 1 s base) twice over comes first: 2 s.
    expect(look(e, 1_200, "ours")).toBe(true);
    expect(look(e, 2_000, RIVAL)).toBe(false);
    expect(look(e, 3_900, RIVAL)).toBe(false);
    expect(look(e, 4_000, RIVAL)).toBe(true);
    e.assigned(OURS, [ADDRESS], 4_000);
    // Taken again 2.5 s after our repair: five moves, 16 s of backoff, or 5 s once the rival stays quiet.
    expect(look(e, 6_500, RIVAL)).toBe(false);
    expect(look(e, 11_400, RIVAL)).toBe(false);
    expect(look(e, 11_500, RIVAL)).toBe(true);
    expect(e.conflicts(11_500)).toHaveLength(1);
  });

  it("repairs at once an address that no ENI holds any more, without a conflict", () => {
    const e = episodes();
    look(e, 0, "ours");
    expect(look(e, 100, null)).toBe(true);
    expect(e.conflicts(100)).toEqual([]);
  });

  it("ends the episode when the pod no longer carries the address on that ENI", () => {
    const e = episodes();
    look(e, 0, "ours");
    look(e, 100, RIVAL);
    const { events } = e.observe([], podOf, [eni(false)], 200);
    expect(events.map((x) => x.kind)).toEqual(["over"]);
    expect(e.conflicts(200)).toEqual([]);
    expect(e.nextCheckAt(200, 1_000)).toBeUndefined();
  });

  it("asks EC2 who holds an address of a conflict that only our recent repair says we hold, and takes the rival's answer as a new loss", () => {
    const e = episodes();
    look(e, 0, "ours");
    look(e, 100, RIVAL);
    expect(look(e, 1_100, RIVAL)).toBe(true);
    e.assigned(OURS, [ADDRESS], 1_100);
    // Our repair is in `enis` (remembered), IMDS does not show it: the rival may have taken it back already.
    const seen = e.observe([IFACE], podOf, [eni(true)], 1_500, [eni(false)]);
    expect(seen.lost).toEqual([]);
    expect(seen.unconfirmed.map((w) => w.address)).toEqual([ADDRESS]);
    const { taken } = e.confirmHeld(seen.unconfirmed, new Map([[ADDRESS, RIVAL]]), 1_500);
    expect(taken.map((w) => w.address)).toEqual([ADDRESS]);
    e.settle(taken, new Map([[ADDRESS, RIVAL]]), 1_500);
    // Paced as any take after a repair: held back, the conflict still on /readyz.
    expect(e.withoutHeldBack([IFACE], [eni(false)], 1_600)[0]?.addresses).toEqual([]);
    expect(e.conflicts(1_600)).toHaveLength(1);
  });

  it("holds an address of a conflict that EC2 says our ENI holds, IMDS lagging, and reads nothing once IMDS shows it", () => {
    const e = episodes();
    look(e, 0, "ours");
    look(e, 100, RIVAL);
    look(e, 1_100, RIVAL);
    e.assigned(OURS, [ADDRESS], 1_100);
    const seen = e.observe([IFACE], podOf, [eni(true)], 1_500, [eni(false)]);
    const { taken } = e.confirmHeld(seen.unconfirmed, new Map([[ADDRESS, OURS]]), 1_500);
    expect(taken).toEqual([]);
    expect(e.withoutHeldBack([IFACE], [eni(true)], 1_600)[0]?.addresses).toEqual([ADDRESS]);
    const later = e.observe([IFACE], podOf, [eni(true)], 2_000, [eni(true)]);
    expect(later.unconfirmed).toEqual([]);
    expect(later.lost).toEqual([]);
  });

  it("reads nothing for an address never in a conflict that only our recent assign holds (IMDS lag after a first assign)", () => {
    const e = episodes();
    expect(look(e, 0, RIVAL)).toBe(true);
    e.assigned(OURS, [ADDRESS], 0);
    const seen = e.observe([IFACE], podOf, [eni(true)], 500, [eni(false)]);
    expect(seen.unconfirmed).toEqual([]);
  });
});
