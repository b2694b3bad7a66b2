import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { DesiredState, Release } from "../src/ipam-whereabouts-bridge/state/desired-state.js";
import { countPodAddresses } from "../src/ipam-whereabouts-bridge/waves/pod-address-count.js";
import type { ConfirmationTurn } from "../src/ipam-whereabouts-bridge/waves/release-guard.js";
import { decideReleases } from "../src/ipam-whereabouts-bridge/waves/wave-releases.js";

const NOW = 1_700_000_000_000;
const release = (n: number): Release => ({
  eniId: "eni-0multus",
  address: `198.51.100.${n}`,
  family: 4,
  reason: "unused",
});
const key = (r: Release) => `${r.eniId} ${r.address}`;

/** Only the fields decideReleases reads. */
function desired(
  releases: Release[],
  options: { pendingAt?: number[]; unreadable?: boolean } = {},
): DesiredState {
  return {
    releases,
    unreadablePods: options.unreadable === true ? ["cnf/a"] : [],
    pending: (options.pendingAt ?? []).map((releaseAt, i) => ({
      eniId: "eni-0multus",
      address: `198.51.100.${230 + i}`,
      releaseAt,
    })),
    unusedSince: new Map(releases.map((r) => [key(r), NOW - 5_000])),
  } as unknown as DesiredState;
}

const turn =
  (t: Partial<ConfirmationTurn>): (() => ConfirmationTurn) =>
  () => ({
    confirmed: [],
    inUse: [],
    failed: false,
    waiting: false,
    ...t,
  });

const base = { now: NOW, releaseGraceMs: 30_000, retryMs: 1_000 };

describe("decideReleases", () => {
  const cases: {
    name: string;
    desired: DesiredState;
    trusted: boolean;
    confirm: () => ConfirmationTurn;
    released: number[];
    held: number;
    holds: string[];
    nextAt: number | undefined;
  }[] = [
    {
      name: "confirmed: released, nothing pending",
      desired: desired([release(199)]),
      trusted: true,
      confirm: turn({ confirmed: [release(199)] }),
      released: [199],
      held: 0,
      holds: [],
      nextAt: undefined,
    },
    {
      name: "its list still runs: pending, no hold, the list's end wakes a wave",
      desired: desired([release(199)]),
      trusted: true,
      confirm: turn({ waiting: true }),
      released: [],
      held: 1,
      holds: [],
      nextAt: undefined,
    },
    {
      name: "in use after all: pending, due again when the grace ends (not at the resync)",
      desired: desired([release(199), release(200)]),
      trusted: true,
      confirm: turn({ confirmed: [release(199)], inUse: [key(release(200))] }),
      released: [199],
      held: 1,
      holds: [],
      nextAt: NOW + 30_000,
    },
    {
      name: "the list failed or timed out: held, looked at again shortly",
      desired: desired([release(199)], { pendingAt: [NOW + 9_000] }),
      trusted: true,
      confirm: turn({ failed: true }),
      released: [],
      held: 1,
      holds: ["unconfirmed"],
      nextAt: NOW + 1_000,
    },
    {
      name: "failing still, a new list running: held, its end wakes a wave",
      desired: desired([release(199)]),
      trusted: true,
      confirm: turn({ failed: true, waiting: true }),
      released: [],
      held: 1,
      holds: ["unconfirmed"],
      nextAt: undefined,
    },
    {
      name: "a stale view: nothing released, no list",
      desired: desired([release(199)]),
      trusted: false,
      confirm: () => {
        throw new Error("no list on a stale view");
      },
      released: [],
      held: 1,
      holds: ["stale-view"],
      nextAt: undefined,
    },
    {
      name: "an unreadable pod: nothing released, no list, looked at again shortly",
      desired: desired([release(199)], { unreadable: true, pendingAt: [NOW + 500] }),
      trusted: true,
      confirm: () => {
        throw new Error("no list while a pod cannot be read");
      },
      released: [],
      held: 1,
      holds: ["unreadable-pod"],
      nextAt: NOW + 500,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = decideReleases({ ...base, desired: c.desired, trusted: c.trusted, confirm: c.confirm });
      expect(d.releases.map((r) => Number(r.address.split(".")[3]))).toEqual(c.released);
      expect(d.heldReleases).toBe(c.held);
      expect([...d.holds]).toEqual(c.holds);
      expect(d.nextAt).toBe(c.nextAt);
    });
  }

  it("restarts the grace of a release found in use, and keeps no grace on a stale view", () => {
    const inUse = decideReleases({
      ...base,
      desired: desired([release(199)]),
      trusted: true,
      confirm: turn({ inUse: [key(release(199))] }),
    });
    expect(inUse.unusedSince.get(key(release(199)))).toBe(NOW);
    const stale = decideReleases({
      ...base,
      desired: desired([release(199)]),
      trusted: false,
      confirm: turn({}),
    });
    expect(stale.unusedSince.size).toBe(0);
  });

  it("releases only what is due, trusted and confirmed (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 193, max: 254 }), { maxLength: 8 }),
        fc.uniqueArray(fc.integer({ min: 193, max: 254 }), { maxLength: 8 }),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        (dueN, confirmedN, trusted, unreadable, failed) => {
          const due = dueN.map(release);
          const d = decideReleases({
            ...base,
            desired: desired(due, { unreadable }),
            trusted,
            confirm: turn({ confirmed: failed ? [] : confirmedN.map(release), failed }),
          });
          const dueKeys = new Set(due.map(key));
          for (const r of d.releases) {
            expect(dueKeys.has(key(r))).toBe(true);
            expect(confirmedN).toContain(Number(r.address.split(".")[3]));
          }
          if (!trusted || unreadable || failed) expect(d.releases).toEqual([]);
          expect(d.heldReleases).toBe(due.length - d.releases.length);
        },
      ),
    );
  });
});

describe("countPodAddresses", () => {
  const eni = {
    eniId: "eni-0a1",
    mac: "02:00:00:00:01:01",
    deviceIndex: 1,
    subnetId: "subnet-0multus",
    subnetIpv4Cidrs: ["198.51.100.128/25"],
    subnetIpv6Cidrs: [],
    primaryIpv4: "198.51.100.140",
    ipv4s: ["198.51.100.140"],
    ipv6s: [],
    ipv4Prefixes: ["198.51.100.224/28"],
  };
  const iface = (pod: string, addresses: string[], mac = eni.mac) => ({
    name: `cnf/${pod}/net1`,
    mac,
    addresses,
  });

  it.each([
    {
      name: "held by its ENI, inside its prefix, or not held",
      interfaces: [
        iface("a", ["198.51.100.196"]),
        iface("b", ["198.51.100.225"]),
        iface("c", ["198.51.100.197"]),
      ],
      keys: ["eni-0a1 198.51.100.196"],
      excused: [],
      want: { wanted: 3, held: 2, unheld: ["198.51.100.197 (cnf/c/net1)"] },
    },
    {
      name: "an address held by another ENI than its MAC's is not held",
      interfaces: [iface("a", ["198.51.100.196"])],
      keys: ["eni-0a2 198.51.100.196"],
      excused: [],
      want: { wanted: 1, held: 0, unheld: ["198.51.100.196 (cnf/a/net1)"] },
    },
    {
      name: "addresses refused by policy or in conflict do not count",
      interfaces: [iface("a", ["198.51.100.196", "203.0.113.9"]), iface("b", ["198.51.100.199"])],
      keys: ["eni-0a1 198.51.100.196"],
      excused: ["203.0.113.9", "198.51.100.199"],
      want: { wanted: 1, held: 1, unheld: [] },
    },
    {
      name: "a MAC of no ENI of the node: unheld",
      interfaces: [iface("a", ["198.51.100.196"], "02:00:00:00:09:09")],
      keys: ["eni-0a1 198.51.100.196"],
      excused: [],
      want: { wanted: 1, held: 0, unheld: ["198.51.100.196 (cnf/a/net1)"] },
    },
  ])("$name", ({ interfaces, keys, excused, want }) => {
    expect(
      countPodAddresses(interfaces, { enis: [eni], keys: new Set(keys), excused: new Set(excused) }),
    ).toEqual(want);
  });
});
