import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cidrContains, cidrsOverlap } from "../src/eni/ip.js";
import type { EniState } from "../src/eni/types.js";
import type { NadInfo, NodeSlicePoolInfo } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import {
  type PrefixPlanInput,
  type PrefixStep,
  planPrefixes,
  prefixesOfSlice,
  prefixKey,
  prefixSteps,
} from "../src/ipam-whereabouts-bridge/prefixes/prefix-plan.js";

const NODE = "node-a";
const MAC = "02:00:00:00:01:01";
const MAC2 = "02:00:00:00:01:02";

function nad(
  overrides: {
    name?: string;
    master?: string | null;
    range?: string;
    slice?: string;
    networkName?: string;
  } = {},
): NadInfo {
  const {
    name = "sliced",
    master = "eth1",
    range = "198.51.100.128/26",
    slice = "/28",
    networkName,
  } = overrides;
  return {
    namespace: "cnf",
    name,
    uid: `uid-${name}`,
    config: JSON.stringify({
      cniVersion: "0.3.1",
      name: `${name}-net`,
      type: "ipvlan",
      ...(master === null ? {} : { master }),
      ipam: {
        type: "whereabouts",
        range,
        node_slice_size: slice,
        ...(networkName === undefined ? {} : { network_name: networkName }),
      },
    }),
  };
}

function pool(
  allocations: Record<string, string>,
  overrides: Partial<NodeSlicePoolInfo> = {},
): NodeSlicePoolInfo {
  return {
    namespace: "kube-system",
    name: "sliced-net",
    range: "198.51.100.128/26",
    sliceSize: "/28",
    allocations: Object.entries(allocations).map(([sliceRange, nodeName]) => ({ sliceRange, nodeName })),
    ownerNads: ["sliced"],
    ...overrides,
  };
}

function eni(overrides: Partial<EniState> = {}): EniState {
  return {
    eniId: "eni-0multus",
    mac: MAC,
    deviceIndex: 1,
    subnetId: "subnet-0multus",
    subnetIpv4Cidrs: ["198.51.100.0/24"],
    subnetIpv6Cidrs: ["2001:db8:100:2::/64"],
    primaryIpv4: "198.51.100.10",
    ipv4s: ["198.51.100.10"],
    ipv6s: [],
    ipv4Prefixes: [],
    ipv6Prefixes: [],
    ...overrides,
  };
}

function input(overrides: Partial<PrefixPlanInput> = {}): PrefixPlanInput {
  return {
    nodeName: NODE,
    nads: [nad()],
    slicePools: [pool({ "198.51.100.128/28": "node-b", "198.51.100.144/28": NODE, "198.51.100.160/28": "" })],
    enis: [eni()],
    multusEniIds: new Set(["eni-0multus", "eni-0other"]),
    hostMacs: new Map([
      ["eth1", MAC],
      ["eth2", MAC2],
    ]),
    allowedCidrs: ["198.51.100.128/25"],
    carried: new Set(),
    addressesPerEni: 15,
    overlap: "defer",
    now: 1_000_000,
    releaseGraceMs: 60_000,
    unusedSince: new Map(),
    ...overrides,
  };
}

const assignsOf = (steps: readonly PrefixStep[]) => steps.filter((s) => s.kind === "assign-prefixes");

describe("prefixesOfSlice", () => {
  it("splits a /26 into four aligned /28s and keeps a /28 whole", () => {
    expect(prefixesOfSlice("198.51.100.64/26")).toEqual([
      "198.51.100.64/28",
      "198.51.100.80/28",
      "198.51.100.96/28",
      "198.51.100.112/28",
    ]);
    expect(prefixesOfSlice("198.51.100.16/28")).toEqual(["198.51.100.16/28"]);
  });

  it("splits an IPv6 /78 into four /80s", () => {
    expect(prefixesOfSlice("2001:db8:100:2:4::/78")).toEqual([
      "2001:db8:100:2:4::/80",
      "2001:db8:100:2:5::/80",
      "2001:db8:100:2:6::/80",
      "2001:db8:100:2:7::/80",
    ]);
  });
});

describe("planPrefixes: the node's slice becomes prefixes on its master's ENI", () => {
  it("assigns the node's /28 slice as one prefix on the master's ENI, in one call", () => {
    const plan = planPrefixes(input());
    expect(plan.refusals).toEqual([]);
    expect(plan.assigns).toEqual([
      {
        kind: "assign-prefixes",
        eniId: "eni-0multus",
        family: 4,
        prefixes: ["198.51.100.144/28"],
        restore: [],
      },
    ]);
    expect(plan.wanted.map((w) => w.prefix)).toEqual(["198.51.100.144/28"]);
  });

  it("assigns the four /28s of a /26 slice in one call", () => {
    const plan = planPrefixes(
      input({
        nads: [nad({ range: "198.51.100.128/25", slice: "/26" })],
        slicePools: [
          pool(
            { "198.51.100.128/26": NODE, "198.51.100.192/26": "node-b" },
            { range: "198.51.100.128/25", sliceSize: "/26" },
          ),
        ],
      }),
    );
    expect(plan.refusals).toEqual([]);
    expect(assignsOf(plan.assigns)).toHaveLength(1);
    expect(
      assignsOf(plan.assigns)[0]?.kind === "assign-prefixes" && assignsOf(plan.assigns)[0]?.prefixes,
    ).toEqual(["198.51.100.128/28", "198.51.100.144/28", "198.51.100.160/28", "198.51.100.176/28"]);
  });

  it("assigns an IPv6 /80 slice as one /80 prefix, in the IPv6 call", () => {
    const plan = planPrefixes(
      input({
        nads: [nad({ range: "2001:db8:100:2:10::/76", slice: "/80" })],
        slicePools: [
          pool(
            { "2001:db8:100:2:10::/80": "node-b", "2001:db8:100:2:11::/80": NODE },
            { range: "2001:db8:100:2:10::/76", sliceSize: "/80" },
          ),
        ],
        allowedCidrs: ["2001:db8:100:2::/64"],
      }),
    );
    expect(plan.refusals).toEqual([]);
    expect(plan.assigns).toEqual([
      {
        kind: "assign-prefixes",
        eniId: "eni-0multus",
        family: 6,
        prefixes: ["2001:db8:100:2:11::/80"],
        restore: [],
      },
    ]);
  });

  it("makes no call when the ENI holds the prefix already", () => {
    const plan = planPrefixes(input({ enis: [eni({ ipv4Prefixes: ["198.51.100.144/28"] })] }));
    expect(plan.assigns).toEqual([]);
    expect(plan.held.map((h) => h.prefix)).toEqual(["198.51.100.144/28"]);
  });

  it("finds the pool by network_name when the NAD sets it", () => {
    const plan = planPrefixes(
      input({
        nads: [nad({ networkName: "upf-n3" })],
        slicePools: [pool({ "198.51.100.144/28": NODE }, { name: "upf-n3" })],
      }),
    );
    expect(plan.wanted.map((w) => w.prefix)).toEqual(["198.51.100.144/28"]);
  });

  it("does nothing for a node without a slice, or a pool of another range", () => {
    expect(planPrefixes(input({ nodeName: "node-c" })).assigns).toEqual([]);
    expect(
      planPrefixes(input({ slicePools: [pool({ "198.51.100.144/28": NODE }, { range: "198.51.100.0/26" })] }))
        .assigns,
    ).toEqual([]);
  });
});

describe("planPrefixes: refusals leave the network per-address, naming the NAD and the fix", () => {
  const cases: { name: string; over: Partial<PrefixPlanInput>; reason: string; says: string }[] = [
    {
      name: "a slice smaller than a /28",
      over: {
        nads: [nad({ slice: "/29" })],
        slicePools: [pool({ "198.51.100.144/29": NODE }, { sliceSize: "/29" })],
      },
      reason: "slice-too-small",
      says: "set node_slice_size to /28 or larger",
    },
    {
      name: "a slice with host bits",
      over: { slicePools: [pool({ "198.51.100.148/28": NODE })] },
      reason: "unaligned",
      says: "not aligned",
    },
    {
      name: "a slice outside the ENI's subnet",
      over: { enis: [eni({ subnetIpv4Cidrs: ["198.51.100.0/25"] })] },
      reason: "outside-eni-subnet",
      says: "make the NAD's range lie in the subnet of its master's ENI",
    },
    {
      name: "a slice outside the allowed CIDRs",
      over: { allowedCidrs: ["198.51.100.192/26"] },
      reason: "outside-allowed-cidrs",
      says: "IPMGR_ALLOWED_CIDRS",
    },
    {
      name: "a NAD without master",
      over: { nads: [nad({ master: null })] },
      reason: "no-master",
      says: 'set "master"',
    },
    {
      name: "a master the node does not have",
      over: { hostMacs: new Map([["eth9", MAC]]) },
      reason: "unknown-master",
      says: "eth1 is no network interface of node node-a",
    },
    {
      name: "a master that is no Multus ENI",
      over: { multusEniIds: new Set() },
      reason: "not-multus-eni",
      says: "no_manage=true",
    },
    {
      name: "a slice over the subnet's first addresses",
      over: { enis: [eni({ subnetIpv4Cidrs: ["198.51.100.144/28"] })], allowedCidrs: ["198.51.100.128/25"] },
      reason: "aws-reserved",
      says: "AWS keeps",
    },
    {
      name: "a slice another ENI of the node holds a prefix in",
      over: {
        enis: [
          eni(),
          eni({
            eniId: "eni-0other",
            mac: MAC2,
            deviceIndex: 2,
            primaryIpv4: "198.51.100.20",
            ipv4s: ["198.51.100.20"],
            ipv4Prefixes: ["198.51.100.144/28"],
          }),
        ],
      },
      reason: "held-by-other-eni",
      says: "prefix 198.51.100.144/28 on eni-0other",
    },
    {
      name: "a slice another ENI of the node holds an address in",
      over: {
        enis: [
          eni(),
          eni({
            eniId: "eni-0other",
            mac: MAC2,
            deviceIndex: 2,
            primaryIpv4: "198.51.100.20",
            ipv4s: ["198.51.100.20", "198.51.100.150"],
          }),
        ],
      },
      reason: "held-by-other-eni",
      says: "address 198.51.100.150 on eni-0other",
    },
    {
      name: "an ENI without room",
      over: {
        enis: [eni({ ipv4s: ["198.51.100.10", "198.51.100.11", "198.51.100.12"] })],
        addressesPerEni: 3,
      },
      reason: "eni-full",
      says: "set node_slice_size to a smaller slice",
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.name}: ${c.reason}`, () => {
      const plan = planPrefixes(input(c.over));
      expect(plan.assigns).toEqual([]);
      expect(plan.refusals.map((r) => r.reason)).toEqual([c.reason]);
      const refusal = plan.refusals[0];
      expect(refusal?.nad).toBe("cnf/sliced");
      expect(refusal?.detail).toContain("NAD cnf/sliced");
      expect(refusal?.detail).toContain(c.says);
      expect(refusal?.detail).toContain("per-address mode");
    });
  }
});

describe("planPrefixes: ordering around single addresses inside a new prefix", () => {
  const withSingles = eni({ ipv4s: ["198.51.100.10", "198.51.100.145", "198.51.100.150"] });

  it("defer: a block where the ENI holds single addresses waits, nothing is unassigned", () => {
    const plan = planPrefixes(input({ enis: [withSingles], carried: new Set(["198.51.100.145"]) }));
    expect(plan.assigns).toEqual([]);
    expect(plan.deferred.map((d) => [d.prefix, d.singles])).toEqual([
      ["198.51.100.144/28", ["198.51.100.145", "198.51.100.150"]],
    ]);
  });

  it("defer: the other blocks of the slice are assigned at once", () => {
    const plan = planPrefixes(
      input({
        enis: [withSingles],
        nads: [nad({ range: "198.51.100.128/26", slice: "/27" })],
        slicePools: [
          pool({ "198.51.100.128/27": "node-b", "198.51.100.160/27": NODE }, { sliceSize: "/27" }),
        ],
        allowedCidrs: ["198.51.100.128/25"],
      }),
    );
    expect(plan.assigns).toEqual([
      {
        kind: "assign-prefixes",
        eniId: "eni-0multus",
        family: 4,
        prefixes: ["198.51.100.160/28", "198.51.100.176/28"],
        restore: [],
      },
    ]);
  });

  it("swap: the singles inside are unassigned in the call right before the prefix assign, and restored if it fails", () => {
    const plan = planPrefixes(
      input({ enis: [withSingles], overlap: "swap", carried: new Set(["198.51.100.145"]) }),
    );
    expect(plan.assigns).toEqual([
      {
        kind: "unassign-addresses",
        eniId: "eni-0multus",
        family: 4,
        addresses: ["198.51.100.145", "198.51.100.150"],
      },
      {
        kind: "assign-prefixes",
        eniId: "eni-0multus",
        family: 4,
        prefixes: ["198.51.100.144/28"],
        restore: ["198.51.100.145", "198.51.100.150"],
      },
    ]);
  });

  it("steps: releases first, then each unassign immediately followed by its assign", () => {
    const plan = planPrefixes(input({ enis: [withSingles], overlap: "swap" }));
    const steps = prefixSteps(plan, [
      { eniId: "eni-0multus", family: 4, prefix: "198.51.100.224/28", reason: "gone" },
    ]);
    expect(steps.map((s) => s.kind)).toEqual(["release-prefixes", "unassign-addresses", "assign-prefixes"]);
  });
});

describe("planPrefixes: release", () => {
  const stale = eni({ ipv4Prefixes: ["198.51.100.160/28"] });

  it("releases a prefix of a slice the node no longer owns, after the grace, when no pod carries an address inside", () => {
    const first = planPrefixes(input({ enis: [stale] }));
    expect(first.releases).toEqual([]);
    expect(first.pending).toEqual([
      { eniId: "eni-0multus", prefix: "198.51.100.160/28", releaseAt: 1_060_000 },
    ]);
    const later = planPrefixes(input({ enis: [stale], now: 1_060_000, unusedSince: first.unusedSince }));
    expect(later.releases.map((r) => r.prefix)).toEqual(["198.51.100.160/28"]);
    expect(later.releases[0]?.reason).toContain("owns no slice covering 198.51.100.160/28");
  });

  it("keeps a prefix a pod of the node carries an address in, and restarts its grace", () => {
    const plan = planPrefixes(
      input({
        enis: [stale],
        now: 2_000_000,
        carried: new Set(["198.51.100.161"]),
        unusedSince: new Map([[prefixKey("eni-0multus", "198.51.100.160/28"), 0]]),
      }),
    );
    expect(plan.releases).toEqual([]);
    expect(plan.unusedSince.size).toBe(0);
  });

  it("keeps a prefix of a slice the node still owns, and one outside every node-sliced range", () => {
    const plan = planPrefixes(
      input({ enis: [eni({ ipv4Prefixes: ["198.51.100.144/28", "198.51.100.32/28"] })], now: 9e12 }),
    );
    expect(plan.releases).toEqual([]);
    expect(plan.pending).toEqual([]);
  });

  it("keeps a prefix when the NAD that slices its range is gone or unreadable (unknown, never empty)", () => {
    const plan = planPrefixes(input({ enis: [stale], nads: [{ ...nad(), config: "{" }], now: 9e12 }));
    expect(plan.releases).toEqual([]);
  });

  it("never releases a prefix of an ENI that is not a Multus ENI", () => {
    const plan = planPrefixes(input({ enis: [stale], multusEniIds: new Set(), now: 9e12 }));
    expect(plan.releases).toEqual([]);
  });
});

// ---- properties ----------------------------------------------------------------------------------------------

const sliceIndex = fc.integer({ min: 0, max: 7 });
const arbWorld = fc.record({
  mine: fc.uniqueArray(sliceIndex, { maxLength: 3 }),
  others: fc.uniqueArray(sliceIndex, { maxLength: 4 }),
  heldPrefixes: fc.uniqueArray(sliceIndex, { maxLength: 4 }),
  singles: fc.uniqueArray(fc.integer({ min: 0, max: 127 }), { maxLength: 6 }),
  carried: fc.uniqueArray(fc.integer({ min: 0, max: 127 }), { maxLength: 6 }),
  overlap: fc.constantFrom("defer" as const, "swap" as const),
  now: fc.integer({ min: 0, max: 200_000 }),
  limit: fc.option(fc.integer({ min: 2, max: 20 }), { nil: undefined }),
});

type World = typeof arbWorld extends fc.Arbitrary<infer T> ? T : never;

/** A /25 range sliced in /28s: slice i is 198.51.100.(128 + 16 i)/28. */
function worldInput(w: World, order: (xs: number[]) => number[] = (xs) => xs): PrefixPlanInput {
  const slice = (i: number) => `198.51.100.${128 + 16 * i}/28`;
  const allocations: Record<string, string> = {};
  for (const i of order(w.others)) allocations[slice(i)] = "node-b";
  for (const i of order(w.mine)) allocations[slice(i)] = NODE;
  return input({
    nads: [nad({ range: "198.51.100.128/25" })],
    slicePools: [pool(allocations, { range: "198.51.100.128/25" })],
    enis: [
      eni({
        ipv4s: [
          "198.51.100.10",
          ...order(w.singles)
            .map((n) => `198.51.100.${128 + n}`)
            .filter((a) => !w.heldPrefixes.some((i) => cidrContains(slice(i), a))),
        ],
        ipv4Prefixes: order(w.heldPrefixes).map(slice),
      }),
    ],
    carried: new Set(order(w.carried).map((n) => `198.51.100.${128 + n}`)),
    overlap: w.overlap,
    now: w.now,
    addressesPerEni: w.limit,
    unusedSince: new Map(order(w.heldPrefixes).map((i) => [prefixKey("eni-0multus", slice(i)), 0])),
  });
}

describe("planPrefixes: properties", () => {
  it("never assigns a prefix over an address the ENI still holds, unless the step right before unassigns it", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const i = worldInput(w);
        const steps = planPrefixes(i).assigns;
        const held = new Set(i.enis[0]?.ipv4s ?? []);
        steps.forEach((step, n) => {
          if (step.kind !== "assign-prefixes") return;
          const before = steps[n - 1];
          const unassigned = new Set(
            before?.kind === "unassign-addresses" && before.eniId === step.eniId ? before.addresses : [],
          );
          for (const prefix of step.prefixes) {
            for (const a of held) if (cidrContains(prefix, a)) expect(unassigned.has(a)).toBe(true);
          }
          expect([...unassigned].sort()).toEqual([...step.restore].sort());
        });
        if (w.overlap === "defer") expect(steps.some((s) => s.kind === "unassign-addresses")).toBe(false);
      }),
    );
  });

  it("assigns only prefixes inside the node's own slices, at most one call per ENI and family, never one held", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const i = worldInput(w);
        const plan = planPrefixes(i);
        const mine = (i.slicePools[0]?.allocations ?? [])
          .filter((a) => a.nodeName === NODE)
          .map((a) => a.sliceRange);
        const assigns = assignsOf(plan.assigns);
        expect(assigns.length).toBeLessThanOrEqual(1);
        for (const step of assigns) {
          if (step.kind !== "assign-prefixes") continue;
          for (const p of step.prefixes) {
            expect(mine.some((s) => cidrsOverlap(s, p))).toBe(true);
            expect(i.enis[0]?.ipv4Prefixes).not.toContain(p);
          }
        }
      }),
    );
  });

  it("releases only prefixes of slices the node does not own, with no carried address inside", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const i = worldInput(w);
        const plan = planPrefixes(i);
        const mine = (i.slicePools[0]?.allocations ?? [])
          .filter((a) => a.nodeName === NODE)
          .map((a) => a.sliceRange);
        for (const r of plan.releases) {
          expect(mine.some((s) => cidrsOverlap(s, r.prefix))).toBe(false);
          expect([...i.carried].some((a) => cidrContains(r.prefix, a))).toBe(false);
          expect(i.now).toBeGreaterThanOrEqual(i.releaseGraceMs);
        }
      }),
    );
  });

  it("is idempotent: once the assigns are applied, the next plan assigns nothing", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const i = worldInput(w);
        const plan = planPrefixes(i);
        const first = i.enis[0];
        if (first === undefined) return;
        let ipv4s = [...first.ipv4s];
        let prefixes = [...(first.ipv4Prefixes ?? [])];
        for (const step of plan.assigns) {
          if (step.kind === "unassign-addresses") ipv4s = ipv4s.filter((a) => !step.addresses.includes(a));
          if (step.kind === "assign-prefixes") prefixes = [...prefixes, ...step.prefixes];
        }
        const next = planPrefixes({ ...i, enis: [{ ...first, ipv4s, ipv4Prefixes: prefixes }] });
        expect(next.assigns).toEqual([]);
      }),
    );
  });

  it("a swap that frees room on a full ENI makes room for the other slices in the same plan (found by the property above)", () => {
    // ENI full (limit 3: .10, .144, .145); the slice .144/28 swaps two singles out, the slice .128/28 needs one slot.
    const w = {
      mine: [1, 0],
      others: [],
      heldPrefixes: [],
      singles: [16, 17],
      carried: [],
      overlap: "swap" as const,
      now: 0,
      limit: 3,
    };
    const plan = planPrefixes(worldInput(w));
    expect(plan.refusals).toEqual([]);
    expect(plan.assigns).toEqual([
      {
        kind: "unassign-addresses",
        eniId: "eni-0multus",
        family: 4,
        addresses: ["198.51.100.144", "198.51.100.145"],
      },
      {
        kind: "assign-prefixes",
        eniId: "eni-0multus",
        family: 4,
        prefixes: ["198.51.100.128/28", "198.51.100.144/28"],
        restore: ["198.51.100.144", "198.51.100.145"],
      },
    ]);
  });

  it("does not depend on the order of its input lists", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const a = planPrefixes(worldInput(w));
        const b = planPrefixes(worldInput(w, (xs) => [...xs].reverse()));
        expect(b.assigns).toEqual(a.assigns);
        expect(b.releases).toEqual(a.releases);
        expect(b.refusals).toEqual(a.refusals);
      }),
    );
  });
});

describe("planPrefixes: slices refused before any call (issue 27)", () => {
  const swapInput = (overrides: Partial<PrefixPlanInput> = {}) =>
    input({
      overlap: "swap",
      enis: [eni({ ipv4s: ["198.51.100.10", "198.51.100.150"] })],
      carried: new Set(["198.51.100.150"]),
      ...overrides,
    });

  it("a non-Nitro instance type refuses every slice with not-nitro: no unassign, no assign, the fix named", () => {
    const plan = planPrefixes(swapInput({ nonNitro: { instanceType: "m4.large", hypervisor: "xen" } }));
    expect(plan.assigns).toEqual([]);
    expect(plan.wanted).toEqual([]);
    expect(plan.refusals).toEqual([
      expect.objectContaining({
        nad: "cnf/sliced",
        reason: "not-nitro",
        detail:
          "NAD cnf/sliced: node node-a is of instance type m4.large, not built on the Nitro System (DescribeInstanceTypes: hypervisor xen), and EC2 delegates prefixes to Nitro instances only: run node-sliced workloads on a Nitro instance type; the network stays in per-address mode",
      }),
    ]);
  });

  it("a withheld slice is refused with the memory's reason and sentence, and makes no swap", () => {
    const withheld = new Map([
      [
        prefixKey("eni-0multus", "198.51.100.144/28"),
        {
          reason: "ec2-refused" as const,
          detail: "EC2 refused the prefixes 198.51.100.144/28 on ENI eni-0multus",
        },
      ],
    ]);
    const plan = planPrefixes(swapInput({ withheld }));
    expect(plan.assigns).toEqual([]);
    expect(plan.refusals.map((r) => [r.reason, r.detail])).toEqual([
      [
        "ec2-refused",
        "NAD cnf/sliced: EC2 refused the prefixes 198.51.100.144/28 on ENI eni-0multus; the network stays in per-address mode",
      ],
    ]);
    // Without it, the same input swaps: the unassign of the pod's single right before the prefix assign.
    expect(planPrefixes(swapInput()).assigns.map((s) => s.kind)).toEqual([
      "unassign-addresses",
      "assign-prefixes",
    ]);
  });

  it("a withheld or non-Nitro slice is still the node's: a prefix held inside it is never released", () => {
    const held = eni({ ipv4Prefixes: ["198.51.100.144/28"] });
    for (const overrides of [
      { nonNitro: { instanceType: "m4.large", hypervisor: "xen" } },
      {
        withheld: new Map([
          [prefixKey("eni-0multus", "198.51.100.144/28"), { reason: "held-in-subnet" as const, detail: "x" }],
        ]),
      },
    ]) {
      const plan = planPrefixes(input({ enis: [held], now: 10_000_000, ...overrides }));
      expect(plan.releases).toEqual([]);
      expect(plan.pending).toEqual([]);
    }
  });

  it("a withheld key of another ENI or slice leaves this slice alone", () => {
    const withheld = new Map([
      [prefixKey("eni-0other", "198.51.100.144/28"), { reason: "ec2-refused" as const, detail: "x" }],
      [prefixKey("eni-0multus", "198.51.100.160/28"), { reason: "ec2-refused" as const, detail: "x" }],
    ]);
    const plan = planPrefixes(swapInput({ withheld }));
    expect(plan.refusals).toEqual([]);
    expect(assignsOf(plan.assigns)).toHaveLength(1);
  });
});
