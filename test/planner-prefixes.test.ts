import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { coveringPrefix, DELEGATED_PREFIX_LENGTH } from "../src/eni/ip.js";
import { ipv6HolderLookupNeeded, plan } from "../src/eni/planner.js";
import type { EniState, PlanInput, PodInterface } from "../src/eni/types.js";

/*
 * Prefixes in the planner, no I/O. The instance:
 *   eth1  eni-1b  0a:00:00:00:00:02  198.51.100.64/26, 2001:db8:0:1::/64  primary .70, prefixes 198.51.100.96/28 and 2001:db8:0:1:1::/80
 *   eth2  eni-2c  0a:00:00:00:00:03  same subnets                        primary .71, prefix 198.51.100.112/28
 * Allowed: 198.51.100.64/26 and 2001:db8::/48.
 */
const MAC1 = "0a:00:00:00:00:02";
const MAC2 = "0a:00:00:00:00:03";
const ALLOWED = ["198.51.100.64/26", "2001:db8::/48"];

function eni(overrides: Partial<EniState> & Pick<EniState, "eniId">): EniState {
  return {
    mac: MAC1,
    deviceIndex: 1,
    subnetId: "subnet-b",
    subnetIpv4Cidrs: ["198.51.100.64/26"],
    subnetIpv6Cidrs: ["2001:db8:0:1::/64"],
    primaryIpv4: "198.51.100.70",
    ipv4s: ["198.51.100.70"],
    ipv6s: [],
    ...overrides,
  };
}

const ETH1 = eni({
  eniId: "eni-1b",
  ipv4Prefixes: ["198.51.100.96/28"],
  ipv6Prefixes: ["2001:db8:0:1:1::/80"],
});
const ETH2 = eni({
  eniId: "eni-2c",
  mac: MAC2,
  deviceIndex: 2,
  primaryIpv4: "198.51.100.71",
  ipv4s: ["198.51.100.71"],
  ipv4Prefixes: ["198.51.100.112/28"],
});

const iface = (name: string, mac: string, ...addresses: string[]): PodInterface => ({ name, mac, addresses });

const input = (interfaces: PodInterface[], extra: Partial<PlanInput> = {}): PlanInput => ({
  interfaces,
  enis: [ETH1, ETH2],
  policy: { allowedCidrs: ALLOWED },
  ...extra,
});

describe("coveringPrefix (src/eni/ip.ts)", () => {
  it.each([
    [["198.51.100.96/28"], "198.51.100.96", "198.51.100.96/28"],
    [["198.51.100.96/28"], "198.51.100.111", "198.51.100.96/28"],
    [["198.51.100.96/28"], "198.51.100.112", undefined],
    [["198.51.100.96/28"], "198.51.100.95", undefined],
    [["2001:db8:0:1:1::/80"], "2001:DB8:0:1:1:0:0:FF", "2001:db8:0:1:1::/80"],
    [["2001:db8:0:1:1::/80"], "2001:db8:0:1:2::", undefined],
    [["198.51.100.96/28", "2001:db8:0:1:1::/80"], "2001:db8:0:1:1::5", "2001:db8:0:1:1::/80"],
    [["198.51.100.96/28"], "::ffff:198.51.100.97", undefined],
    [[], "198.51.100.97", undefined],
  ])("%j covering %s: %s", (prefixes, address, expected) => {
    expect(coveringPrefix(prefixes, address)).toBe(expected);
  });

  it("knows EC2's delegated prefix lengths", () => {
    expect(DELEGATED_PREFIX_LENGTH).toEqual({ 4: 28, 6: 80 });
  });
});

describe("the planner with prefixes", () => {
  it("counts an address inside its ENI's IPv4 prefix as held: no call", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.97", "198.51.100.110")]));
    expect(result.actions).toEqual([]);
    expect(result.satisfied).toEqual(["198.51.100.97", "198.51.100.110"]);
    expect(result.placements.map((p) => [p.address, p.eniId])).toEqual([
      ["198.51.100.97", "eni-1b"],
      ["198.51.100.110", "eni-1b"],
    ]);
    expect(result.refusals).toEqual([]);
  });

  it("counts an address inside its ENI's IPv6 prefix as held, and looks up no holder for it", () => {
    const pod = input([iface("net1", MAC1, "2001:db8:0:1:1::42")]);
    const result = plan(pod);
    expect(result.actions).toEqual([]);
    expect(result.satisfied).toEqual(["2001:db8:0:1:1::42"]);
    expect(ipv6HolderLookupNeeded(pod)).toEqual([]);
  });

  it("assigns an address outside every prefix as before, one call", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.97", "198.51.100.80")]));
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.80"], allowReassignment: true },
    ]);
  });

  it("refuses an address inside a prefix another ENI of this node holds, naming the ENI and the prefix", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.113")]));
    expect(result.actions).toEqual([]);
    expect(result.placements).toEqual([]);
    expect(result.refusals).toEqual([
      {
        address: "198.51.100.113",
        interfaceName: "net1",
        mac: MAC1,
        reason: "inside-prefix",
        detail:
          "address 198.51.100.113 on net1 lies inside the prefix 198.51.100.112/28 that ENI eni-2c (MAC 0a:00:00:00:00:03) " +
          "holds, so the VPC delivers it to that ENI, not to ENI eni-1b behind net1; a prefix is never split or moved: " +
          "take the address out of the IPAM range (whereabouts: exclude), or give this interface a master whose ENI " +
          "holds the prefix.",
      },
    ]);
  });

  it("refuses an IPv6 address inside another ENI's /80 with no move planned", () => {
    const result = plan(input([iface("net2", MAC2, "2001:db8:0:1:1::7")]));
    expect(result.actions).toEqual([]);
    expect(result.refusals.map((r) => [r.address, r.reason])).toEqual([
      ["2001:db8:0:1:1::7", "inside-prefix"],
    ]);
  });

  it("refuses a prefix address on a summary ENI's prefix too (IPv4 prefixes are read for every ENI)", () => {
    const summary: EniState = {
      eniId: "eni-9z",
      mac: "0a:00:00:00:00:09",
      deviceIndex: -1,
      subnetId: "",
      subnetIpv4Cidrs: [],
      subnetIpv6Cidrs: [],
      primaryIpv4: "198.51.100.72",
      ipv4s: ["198.51.100.72"],
      ipv6s: [],
      ipv4Prefixes: ["198.51.100.80/28"],
      summary: true,
    };
    const result = plan({ ...input([iface("net1", MAC1, "198.51.100.81")]), enis: [ETH1, ETH2, summary] });
    expect(result.refusals.map((r) => [r.address, r.reason])).toEqual([["198.51.100.81", "inside-prefix"]]);
  });

  it("never releases an address inside a prefix, nor the prefix", () => {
    const withSingle = { ...ETH1, ipv4s: ["198.51.100.70", "198.51.100.80"] };
    const result = plan({
      ...input([iface("net1", MAC1)]),
      enis: [withSingle, ETH2],
      released: ["198.51.100.97", "198.51.100.80", "2001:db8:0:1:1::5"],
      assignedUnconfirmed: new Map([["198.51.100.98", "eni-1b"]]),
    });
    expect(result.actions).toEqual([
      { kind: "unassign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.80"] },
    ]);
  });

  it("refuses a floating address inside its own ENI's prefix (the node's slice), naming the address, prefix, ENI and fix", () => {
    // .97 is the pod's IPAM address (there since startup), .98 a floating one added later: same prefix.
    const result = plan(
      input([iface("net1", MAC1, "198.51.100.97", "198.51.100.98")], { floating: ["198.51.100.98"] }),
    );
    expect(result.actions).toEqual([]);
    expect(result.satisfied).toEqual(["198.51.100.97"]);
    expect(result.refusals).toEqual([
      {
        address: "198.51.100.98",
        interfaceName: "net1",
        mac: MAC1,
        reason: "floating-in-prefix",
        detail:
          "floating address 198.51.100.98 on net1 lies inside the prefix 198.51.100.96/28 that its own ENI eni-1b " +
          "(MAC 0a:00:00:00:00:02) holds: that prefix is this node's whereabouts slice (node_slice_size), which " +
          "stays on this node, so the address would be unrouted once it moves to another node; give floating " +
          "addresses a range without node_slice_size, or take them out of the sliced range (a narrower range on " +
          "the node-sliced NetworkAttachmentDefinition).",
      },
    ]);
  });

  it.each([
    ["inside another ENI's IPv4 prefix", "net1", MAC1, "198.51.100.113", "floating-in-prefix", "ENI eni-2c"],
    [
      "inside its own ENI's IPv6 prefix",
      "net1",
      MAC1,
      "2001:db8:0:1:1::9",
      "floating-in-prefix",
      "its own ENI eni-1b",
    ],
    ["outside every prefix: assigned as before", "net1", MAC1, "198.51.100.80", undefined, undefined],
    [
      "outside the allowed CIDRs: that refusal first",
      "net1",
      MAC1,
      "198.51.100.10",
      "outside-allowed-cidrs",
      undefined,
    ],
  ])("a floating address %s", (_, name, mac, address, reason, holder) => {
    const result = plan(input([iface(name, mac, address)], { floating: [address] }));
    expect(result.refusals.map((r) => r.reason)).toEqual(reason === undefined ? [] : [reason]);
    if (holder !== undefined) expect(result.refusals[0]?.detail).toContain(`that ${holder} (MAC`);
    if (reason === undefined) expect(result.actions.flatMap((a) => a.addresses)).toEqual([address]);
    else expect(result.actions).toEqual([]);
  });

  it("takes a floating address written in another form for the same address", () => {
    const result = plan(
      input([iface("net1", MAC1, "2001:db8:0:1:1:0:0:9")], { floating: ["2001:DB8:0:1:1::9"] }),
    );
    expect(result.refusals.map((r) => [r.address, r.reason])).toEqual([
      ["2001:db8:0:1:1::9", "floating-in-prefix"],
    ]);
  });

  it("reads ENIs without prefix fields (older fixtures) as holding none", () => {
    const bare = eni({ eniId: "eni-1b" });
    const result = plan({ ...input([iface("net1", MAC1, "198.51.100.97")]), enis: [bare] });
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.97"], allowReassignment: true },
    ]);
  });
});

/** Addresses of the /26 and a few /80s of the /64; prefixes are aligned /28s and /80s, held by one ENI each. */
const V4 = Array.from({ length: 64 }, (_, i) => `198.51.100.${64 + i}`).filter(
  (a) => !["198.51.100.64", "198.51.100.65", "198.51.100.66", "198.51.100.67", "198.51.100.127"].includes(a),
);
const V4_PREFIXES = ["198.51.100.80/28", "198.51.100.96/28", "198.51.100.112/28"];
const V6_PREFIXES = ["2001:db8:0:1:1::/80", "2001:db8:0:1:2::/80"];
const V6 = [
  "2001:db8:0:1::10",
  "2001:db8:0:1::11",
  "2001:db8:0:1:1::5",
  "2001:db8:0:1:1::6",
  "2001:db8:0:1:2::9",
];

const scenario = fc
  .record({
    /** For each prefix: no holder (0), eni-1b (1) or eni-2c (2). */
    v4Holders: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 3, maxLength: 3 }),
    v6Holders: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 2, maxLength: 2 }),
    net1: fc.subarray([...V4, ...V6], { maxLength: 8 }),
    net2: fc.subarray([...V4, ...V6], { maxLength: 8 }),
    released: fc.subarray([...V4, ...V6], { maxLength: 6 }),
  })
  .map((r): PlanInput => {
    const prefixesOf = (k: number) => ({
      ipv4Prefixes: V4_PREFIXES.filter((_, i) => r.v4Holders[i] === k),
      ipv6Prefixes: V6_PREFIXES.filter((_, i) => r.v6Holders[i] === k),
    });
    // Single addresses the ENIs hold, never inside any prefix (EC2 forbids the overlap).
    const all = [...V4_PREFIXES, ...V6_PREFIXES];
    const outside = (a: string) => coveringPrefix(all, a) === undefined;
    return {
      interfaces: [iface("net1", MAC1, ...r.net1), iface("net2", MAC2, ...r.net2)],
      enis: [
        eni({
          eniId: "eni-1b",
          ipv4s: ["198.51.100.70", ...r.released.filter(outside).slice(0, 2)],
          ...prefixesOf(1),
        }),
        eni({
          eniId: "eni-2c",
          mac: MAC2,
          deviceIndex: 2,
          primaryIpv4: "198.51.100.71",
          ipv4s: ["198.51.100.71"],
          ...prefixesOf(2),
        }),
      ],
      policy: { allowedCidrs: ALLOWED },
      released: r.released,
    };
  });

const prefixesHeld = (input: PlanInput): { eniId: string; prefix: string }[] =>
  input.enis.flatMap((e) =>
    [...(e.ipv4Prefixes ?? []), ...(e.ipv6Prefixes ?? [])].map((prefix) => ({ eniId: e.eniId, prefix })),
  );

describe("planner properties with prefixes (fast-check)", () => {
  it("no action names an address inside any prefix of any ENI, nor a prefix", () => {
    fc.assert(
      fc.property(scenario, (pod) => {
        const prefixes = prefixesHeld(pod).map((p) => p.prefix);
        for (const action of plan(pod).actions) {
          for (const address of action.addresses) {
            expect(address.includes("/")).toBe(false);
            expect(coveringPrefix(prefixes, address)).toBeUndefined();
          }
        }
      }),
    );
  });

  it("an address inside its own ENI's prefix is satisfied; inside another's, refused as inside-prefix", () => {
    fc.assert(
      fc.property(scenario, (pod) => {
        const result = plan(pod);
        const held = prefixesHeld(pod);
        for (const placement of result.placements) {
          const owner = held.find((h) => coveringPrefix([h.prefix], placement.address) !== undefined);
          if (owner !== undefined) {
            expect(owner.eniId).toBe(placement.eniId);
            expect(result.satisfied).toContain(placement.address);
          }
        }
        for (const refusal of result.refusals.filter((r) => r.reason === "inside-prefix")) {
          const owner = held.find((h) => coveringPrefix([h.prefix], refusal.address) !== undefined);
          expect(owner).toBeDefined();
          expect(refusal.detail).toContain(owner?.prefix);
          expect(refusal.detail).toContain(owner?.eniId);
        }
      }),
    );
  });

  it("never holds, assigns or releases a floating address inside any prefix: it is refused, naming that prefix", () => {
    fc.assert(
      fc.property(scenario, fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }), (pod, picks) => {
        const present = [...new Set(pod.interfaces.flatMap((i) => i.addresses))];
        const floating = present.filter((_, k) => picks[k % picks.length]);
        const result = plan({ ...pod, floating });
        const held = prefixesHeld(pod);
        for (const address of floating) {
          const owner = held.find((h) => coveringPrefix([h.prefix], address) !== undefined);
          if (owner === undefined) continue;
          expect(result.placements.map((p) => p.address)).not.toContain(address);
          expect(result.satisfied).not.toContain(address);
          expect(result.actions.flatMap((a) => a.addresses)).not.toContain(address);
          const refusals = result.refusals.filter((r) => r.address === address);
          expect(refusals.length).toBeGreaterThan(0);
          for (const refusal of refusals.filter((r) => r.reason === "floating-in-prefix")) {
            expect(refusal.detail).toContain(owner.prefix);
            expect(refusal.detail).toContain(owner.eniId);
          }
        }
      }),
    );
  });

  it("is idempotent: once its assigns are applied, planning again gives no assign", () => {
    fc.assert(
      fc.property(scenario, (pod) => {
        const first = plan(pod);
        const applied = pod.enis.map((e) => {
          const added = first.actions
            .filter((a) => a.eniId === e.eniId && (a.kind === "assign-ipv4" || a.kind === "assign-ipv6"))
            .flatMap((a) => a.addresses);
          return {
            ...e,
            ipv4s: [...e.ipv4s, ...added.filter((a) => !a.includes(":"))],
            ipv6s: [...e.ipv6s, ...added.filter((a) => a.includes(":"))],
          };
        });
        const again = plan({ ...pod, enis: applied, released: [] });
        expect(again.actions.filter((a) => a.kind.startsWith("assign"))).toEqual([]);
      }),
    );
  });
});
