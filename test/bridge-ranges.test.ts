import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cidrBounds, intervalToCidrs } from "../src/eni/ip.js";
import type { EniState, Plan } from "../src/eni/types.js";
import { overlayRecent, planWave } from "../src/ipam-whereabouts-bridge/wave-plan.js";
import { rangeContains, rangesOfNad } from "../src/ipam-whereabouts-bridge/whereabouts-ranges.js";

const nad = (ipam: unknown, extra: Record<string, unknown> = {}) => ({
  namespace: "cnf",
  name: "n",
  config: JSON.stringify({ type: "ipvlan", ipam, ...extra }),
});

describe("whereabouts ranges of a NAD", () => {
  it.each([
    ["a CIDR", { range: "198.51.100.192/27" }, "198.51.100.192", "198.51.100.223"],
    ["first-last/prefix", { range: "198.51.100.200-198.51.100.210/24" }, "198.51.100.200", "198.51.100.210"],
    [
      "range_start and range_end",
      { range: "198.51.100.0/24", range_start: "198.51.100.10", range_end: "198.51.100.20" },
      "198.51.100.10",
      "198.51.100.20",
    ],
    [
      "a CIDR with host bits (starts there)",
      { range: "198.51.100.225/28" },
      "198.51.100.225",
      "198.51.100.239",
    ],
    [
      "IPv6 wider than /65 (its first /65 only)",
      { range: "2001:db8:1::/64" },
      "2001:db8:1::",
      "2001:db8:1:0:7fff:ffff:ffff:ffff",
    ],
  ])("reads %s", (_what, ipam, first, last) => {
    const { ranges, problems } = rangesOfNad(nad({ type: "whereabouts", ...ipam }));
    expect(problems).toEqual([]);
    expect(ranges.map((r) => [r.first, r.last])).toEqual([[first, last]]);
  });

  it("reads ipRanges (dual stack) and plugin lists, and ignores other IPAM types", () => {
    const dual = rangesOfNad(
      nad(undefined, {
        plugins: [
          {
            type: "ipvlan",
            ipam: {
              type: "whereabouts",
              ipRanges: [{ range: "198.51.100.192/27" }, { range: "2001:db8::100/120" }],
            },
          },
          { type: "tuning" },
        ],
      }),
    );
    expect(dual.ranges.map((r) => r.cidr)).toEqual(["198.51.100.192/27", "2001:db8::100/120"]);
    expect(rangesOfNad(nad({ type: "host-local", subnet: "198.51.100.0/24" })).ranges).toEqual([]);
  });

  it("excludes the CIDRs in exclude", () => {
    const [range] = rangesOfNad(
      nad({ type: "whereabouts", range: "198.51.100.192/27", exclude: ["198.51.100.192/30"] }),
    ).ranges;
    if (range === undefined) throw new Error("no range");
    expect(rangeContains(range, "198.51.100.193")).toBe(false);
    expect(rangeContains(range, "198.51.100.196")).toBe(true);
    expect(rangeContains(range, "198.51.100.224")).toBe(false);
    expect(rangeContains(range, "2001:db8::1")).toBe(false);
  });

  it.each([
    [{ range: "nope" }, 'NAD cnf/n: whereabouts range "nope" is not a CIDR or first-last/prefix'],
    [
      { range: "198.51.100.0/24", range_start: "2001:db8::1" },
      'NAD cnf/n: range_start "2001:db8::1" is not an IPv4 address',
    ],
    [{ range: "198.51.100.0/24", exclude: ["x"] }, 'NAD cnf/n: exclude "x" is not a CIDR'],
  ])("reports %j", (ipam, problem) => {
    expect(rangesOfNad(nad({ type: "whereabouts", ...ipam })).problems).toEqual([problem]);
  });
});

describe("intervalToCidrs", () => {
  it.each([
    [4, "198.51.100.192", "198.51.100.223", ["198.51.100.192/27"]],
    [4, "198.51.100.200", "198.51.100.210", ["198.51.100.200/29", "198.51.100.208/31", "198.51.100.210/32"]],
    [4, "0.0.0.0", "255.255.255.255", ["0.0.0.0/0"]],
  ] as const)("covers IPv%i %s-%s with %j", (fam, first, last, cidrs) => {
    const a = cidrBounds(`${first}/32`).first;
    const b = cidrBounds(`${last}/32`).first;
    expect(intervalToCidrs(fam, a, b)).toEqual(cidrs);
  });

  it("covers exactly the interval, with disjoint aligned blocks no two of which could merge", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 4095n }), fc.bigInt({ min: 0n, max: 4095n }), (x, y) => {
        const [first, last] = x <= y ? [x, y] : [y, x];
        const base = (2001n << 112n) | (0xdb8n << 96n);
        const blocks = intervalToCidrs(6, base + first, base + last).map(cidrBounds);
        let next = base + first;
        for (const block of blocks) {
          expect(block.first).toBe(next);
          next = block.last + 1n;
        }
        expect(next).toBe(base + last + 1n);
        for (let i = 1; i < blocks.length; i++) {
          const a = blocks[i - 1];
          const b = blocks[i];
          if (a === undefined || b === undefined) continue;
          const size = a.last - a.first + 1n;
          const mergeable = size === b.last - b.first + 1n && a.first % (2n * size) === 0n;
          expect(mergeable).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });
});

const MULTUS: EniState = {
  eniId: "eni-0multus",
  mac: "02:00:00:00:01:01",
  deviceIndex: 1,
  subnetId: "subnet-0multus",
  subnetIpv4Cidrs: ["198.51.100.128/25"],
  subnetIpv6Cidrs: ["2001:db8:100:2::/64"],
  primaryIpv4: "198.51.100.140",
  ipv4s: ["198.51.100.140", "198.51.100.141"],
  ipv6s: [],
};

function planOf(addresses: string[], eniId = "eni-0multus"): Plan {
  return {
    actions: [{ kind: "assign-ipv4", eniId, addresses, allowReassignment: true }],
    placements: addresses.map((address) => ({
      address,
      family: 4,
      interfaceName: `cnf/p-${address}/net1`,
      eniId,
      mac: MULTUS.mac,
    })),
    satisfied: [],
    refusals: [],
    skipped: [],
  };
}

describe("planWave", () => {
  it("puts releases first, then one assign per ENI", () => {
    const wave = planWave({
      plan: planOf(["198.51.100.200", "198.51.100.201"]),
      releases: [
        { eniId: "eni-0multus", address: "198.51.100.141", family: 4, reason: "r" },
        { eniId: "eni-0multus", address: "2001:db8:100:2::105", family: 6, reason: "r" },
      ],
      enis: [MULTUS],
      multusEniIds: new Set(["eni-0multus"]),
      addressesPerEni: 10,
    });
    expect(wave.actions).toEqual([
      { kind: "unassign-ipv4", eniId: "eni-0multus", addresses: ["198.51.100.141"] },
      { kind: "unassign-ipv6", eniId: "eni-0multus", addresses: ["2001:db8:100:2::105"], reason: "release" },
      {
        kind: "assign-ipv4",
        eniId: "eni-0multus",
        addresses: ["198.51.100.200", "198.51.100.201"],
        allowReassignment: true,
      },
    ]);
    expect(wave.refusals).toEqual([]);
  });

  it("runs IPv4 assigns before an IPv6 move, and the move right before the IPv6 assign it serves", () => {
    const moved = "2001:db8:100:2::120";
    const plan = planOf(["198.51.100.200"]);
    const wave = planWave({
      plan: {
        ...plan,
        actions: [
          ...plan.actions,
          { kind: "unassign-ipv6", eniId: "eni-0other", addresses: [moved], reason: "move" },
          { kind: "assign-ipv6", eniId: "eni-0multus", addresses: [moved] },
        ],
        placements: [
          ...plan.placements,
          { address: moved, family: 6, interfaceName: "cnf/p6/net1", eniId: "eni-0multus", mac: MULTUS.mac },
        ],
      },
      releases: [{ eniId: "eni-0multus", address: "198.51.100.141", family: 4, reason: "r" }],
      enis: [MULTUS],
      multusEniIds: new Set(["eni-0multus"]),
      addressesPerEni: 10,
    });
    expect(wave.actions.map((a) => `${a.kind} ${a.eniId}`)).toEqual([
      "unassign-ipv4 eni-0multus",
      "assign-ipv4 eni-0multus",
      "unassign-ipv6 eni-0other",
      "assign-ipv6 eni-0multus",
    ]);
  });

  it("refuses what does not fit on the ENI before any call, counting the room this wave's releases make", () => {
    const wanted = Array.from({ length: 10 }, (_, i) => `198.51.100.${200 + i}`);
    const wave = planWave({
      plan: planOf(wanted),
      releases: [{ eniId: "eni-0multus", address: "198.51.100.141", family: 4, reason: "r" }],
      enis: [MULTUS],
      multusEniIds: new Set(["eni-0multus"]),
      addressesPerEni: 10,
    });
    // 10 per ENI, 2 held (the primary included), 1 released: room for 9.
    expect(wave.actions[1]).toEqual(
      expect.objectContaining({ kind: "assign-ipv4", addresses: wanted.slice(0, 9) }),
    );
    expect(wave.refusals.map((r) => `${r.address} ${r.reason}`)).toEqual(["198.51.100.209 eni-full"]);
    expect(wave.placements.map((p) => p.address)).toEqual(wanted.slice(0, 9));
  });

  it("counts the room an earlier IPv4 assign of the wave makes on the ENI it takes addresses from", () => {
    const a = { ...MULTUS, eniId: "eni-0a", ipv4s: ["198.51.100.140", "198.51.100.201", "198.51.100.202"] };
    const b = {
      ...MULTUS,
      eniId: "eni-0b",
      primaryIpv4: "198.51.100.150",
      ipv4s: ["198.51.100.150", "198.51.100.211", "198.51.100.212", "198.51.100.213"],
    };
    const toA = ["198.51.100.211", "198.51.100.212"];
    const toB = ["198.51.100.201", "198.51.100.202"];
    const place = (address: string, eniId: string) => ({
      address,
      family: 4 as const,
      interfaceName: `cnf/p-${address}/net1`,
      eniId,
      mac: MULTUS.mac,
    });
    const wave = planWave({
      plan: {
        actions: [
          { kind: "assign-ipv4", eniId: "eni-0a", addresses: toA, allowReassignment: true },
          { kind: "assign-ipv4", eniId: "eni-0b", addresses: toB, allowReassignment: true },
        ],
        placements: [...toA.map((x) => place(x, "eni-0a")), ...toB.map((x) => place(x, "eni-0b"))],
        satisfied: [],
        refusals: [],
        skipped: [],
      },
      releases: [],
      enis: [a, b],
      multusEniIds: new Set(["eni-0a", "eni-0b"]),
      addressesPerEni: 4,
    });
    // eni-0a has room for one; taking .211 off the full eni-0b makes room there for one of eni-0a's.
    expect(wave.actions.map((x) => `${x.eniId} ${x.addresses.join(",")}`)).toEqual([
      "eni-0a 198.51.100.211",
      "eni-0b 198.51.100.201",
    ]);
    expect(wave.refusals.map((r) => `${r.address} ${r.reason}`)).toEqual([
      "198.51.100.202 eni-full",
      "198.51.100.212 eni-full",
    ]);
  });

  it("swaps IPv6 addresses between two full ENIs in one wave: every move runs before every assign", () => {
    const v6 = (n: number) => `2001:db8:100:2::${n}`;
    const a = { ...MULTUS, eniId: "eni-0a", ipv6s: [v6(1), v6(2), v6(3), v6(4)] };
    const b = { ...MULTUS, eniId: "eni-0b", ipv6s: [v6(11), v6(12), v6(13), v6(14)] };
    const toA = [v6(11), v6(12)];
    const toB = [v6(1), v6(2)];
    const place = (address: string, eniId: string) => ({
      address,
      family: 6 as const,
      interfaceName: `cnf/p-${address}/net1`,
      eniId,
      mac: MULTUS.mac,
    });
    const swap = (extraToA: string[]) =>
      planWave({
        plan: {
          actions: [
            { kind: "unassign-ipv6", eniId: "eni-0a", addresses: toB, reason: "move" },
            { kind: "unassign-ipv6", eniId: "eni-0b", addresses: toA, reason: "move" },
            { kind: "assign-ipv6", eniId: "eni-0a", addresses: [...toA, ...extraToA] },
            { kind: "assign-ipv6", eniId: "eni-0b", addresses: toB },
          ],
          placements: [
            ...[...toA, ...extraToA].map((x) => place(x, "eni-0a")),
            ...toB.map((x) => place(x, "eni-0b")),
          ],
          satisfied: [],
          refusals: [],
          skipped: [],
        },
        releases: [],
        enis: [a, b],
        multusEniIds: new Set(["eni-0a", "eni-0b"]),
        addressesPerEni: 4,
      });
    expect(swap([]).refusals).toEqual([]);
    expect(swap([]).actions.map((x) => `${x.kind} ${x.eniId} ${x.addresses.length}`)).toEqual([
      "unassign-ipv6 eni-0a 2",
      "unassign-ipv6 eni-0b 2",
      "assign-ipv6 eni-0a 2",
      "assign-ipv6 eni-0b 2",
    ]);
    // One address more for eni-0a than the moves off it make room for: that one is refused, the rest swap.
    const over = swap([v6(21)]);
    expect(over.refusals.map((r) => `${r.address} ${r.reason}`)).toEqual([`${v6(21)} eni-full`]);
    expect(over.placements).toHaveLength(4);
  });

  it("refuses an address on an ENI that is not a Multus ENI", () => {
    const wave = planWave({
      plan: planOf(["198.51.100.20"], "eni-0eth0"),
      releases: [],
      enis: [MULTUS, { ...MULTUS, eniId: "eni-0eth0", deviceIndex: 0 }],
      multusEniIds: new Set(["eni-0multus"]),
      addressesPerEni: undefined,
    });
    expect(wave.actions).toEqual([]);
    expect(wave.refusals[0]?.reason).toBe("not-multus-eni");
    expect(wave.refusals[0]?.detail).toContain(
      "sits on ENI eni-0eth0 (device 0), which is not a Multus ENI of this node",
    );
  });
});

describe("overlayRecent", () => {
  it("shows an accepted address on its new ENI and off the old one until IMDS agrees or the memory expires", () => {
    const other = { ...MULTUS, eniId: "eni-0b", ipv4s: ["198.51.100.150", "198.51.100.200"] };
    const recent = [
      { eniId: "eni-0multus", address: "198.51.100.200", kind: "assigned" as const, until: 2_000 },
    ];
    const now = overlayRecent([MULTUS, other], recent, 1_000);
    expect(now.enis.map((e) => e.ipv4s)).toEqual([
      ["198.51.100.140", "198.51.100.141", "198.51.100.200"],
      ["198.51.100.150"],
    ]);
    expect(now.recent).toEqual(recent);
    expect(overlayRecent([MULTUS], recent, 2_000).recent).toEqual([]);
    const caughtUp = { ...MULTUS, ipv4s: [...MULTUS.ipv4s, "198.51.100.200"] };
    expect(overlayRecent([caughtUp], recent, 1_000).recent).toEqual([]);
  });

  it("hides a released address until IMDS stops showing it", () => {
    const recent = [
      { eniId: "eni-0multus", address: "198.51.100.141", kind: "released" as const, until: 2_000 },
    ];
    expect(overlayRecent([MULTUS], recent, 1_000).enis[0]?.ipv4s).toEqual(["198.51.100.140"]);
  });
});
