import { describe, expect, it } from "vitest";
import { InvalidAddressError } from "../src/eni/errors/invalid-address-error.js";
import { InvalidCidrError } from "../src/eni/errors/invalid-cidr-error.js";
import { ipv6HolderLookupNeeded, plan } from "../src/eni/planner.js";
import type { EniState, PlanInput, PodInterface } from "../src/eni/types.js";

/*
 * The instance in every table below:
 *   eth0  eni-0a  0a:00:00:00:00:01  198.51.100.0/26                        primary 198.51.100.10
 *   eth1  eni-1b  0a:00:00:00:00:02  198.51.100.64/26,  2001:db8:0:1::/64   primary 198.51.100.70
 *   eth2  eni-2c  0a:00:00:00:00:03  198.51.100.64/26,  2001:db8:0:1::/64   primary 198.51.100.71  (same subnet as eth1)
 *   eth3  eni-3d  0a:00:00:00:00:04  198.51.100.128/26 (no IPv6)            primary 198.51.100.140
 * Allowed: 198.51.100.64/26, 198.51.100.128/26 and 2001:db8::/48 (not eth0's subnet).
 */
const MAC0 = "0a:00:00:00:00:01";
const MAC1 = "0a:00:00:00:00:02";
const MAC2 = "0a:00:00:00:00:03";
const MAC3 = "0a:00:00:00:00:04";
const UNKNOWN_MAC = "0a:ff:00:00:00:09";
const ALLOWED = ["198.51.100.64/26", "198.51.100.128/26", "2001:db8::/48"];

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

const ETH0 = eni({
  eniId: "eni-0a",
  mac: MAC0,
  deviceIndex: 0,
  subnetId: "subnet-a",
  subnetIpv4Cidrs: ["198.51.100.0/26"],
  subnetIpv6Cidrs: [],
  primaryIpv4: "198.51.100.10",
  ipv4s: ["198.51.100.10"],
});
const ETH1 = eni({ eniId: "eni-1b" });
const ETH2 = eni({
  eniId: "eni-2c",
  mac: MAC2,
  deviceIndex: 2,
  primaryIpv4: "198.51.100.71",
  ipv4s: ["198.51.100.71"],
});
const ETH3 = eni({
  eniId: "eni-3d",
  mac: MAC3,
  deviceIndex: 3,
  subnetId: "subnet-d",
  subnetIpv4Cidrs: ["198.51.100.128/26"],
  subnetIpv6Cidrs: [],
  primaryIpv4: "198.51.100.140",
  ipv4s: ["198.51.100.140"],
});

function iface(name: string, mac: string, ...addresses: string[]): PodInterface {
  return { name, mac, addresses };
}

function input(interfaces: PodInterface[], extra: Partial<PlanInput> = {}): PlanInput {
  return { interfaces, enis: [ETH0, ETH1, ETH2, ETH3], policy: { allowedCidrs: ALLOWED }, ...extra };
}

function withEni(base: PlanInput, replacement: EniState): PlanInput {
  return { ...base, enis: base.enis.map((e) => (e.eniId === replacement.eniId ? replacement : e)) };
}

describe("plan: matching interfaces to ENIs (rule 1)", () => {
  it("two ENIs in one subnet: the MAC decides", () => {
    const result = plan(input([iface("net1", MAC2, "198.51.100.90")]));
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-2c", addresses: ["198.51.100.90"], allowReassignment: true },
    ]);
    expect(result.placements).toEqual([
      { address: "198.51.100.90", family: 4, interfaceName: "net1", eniId: "eni-2c", mac: MAC2 },
    ]);
  });

  it("uppercase MAC from the annotation still matches", () => {
    const result = plan(input([iface("net1", MAC1.toUpperCase(), "198.51.100.90")]));
    expect(result.refusals).toEqual([]);
    expect(result.placements).toEqual([
      { address: "198.51.100.90", family: 4, interfaceName: "net1", eniId: "eni-1b", mac: MAC1 },
    ]);
  });

  it("uppercase MAC reported for the ENI still matches a lowercase interface MAC", () => {
    const result = plan(
      withEni(input([iface("net1", MAC1, "198.51.100.90")]), { ...ETH1, mac: MAC1.toUpperCase() }),
    );
    expect(result.placements.map((p) => p.eniId)).toEqual(["eni-1b"]);
  });

  it("unknown MAC: each unicast address is refused, naming interface, MAC, the instance's MACs and the fix", () => {
    const result = plan(input([iface("net1", UNKNOWN_MAC, "198.51.100.90", "2001:db8:0:1::5")]));
    expect(result.actions).toEqual([]);
    expect(result.placements).toEqual([]);
    expect(result.refusals.map((r) => [r.address, r.reason, r.interfaceName, r.mac])).toEqual([
      ["198.51.100.90", "unknown-mac", "net1", UNKNOWN_MAC],
      ["2001:db8:0:1::5", "unknown-mac", "net1", UNKNOWN_MAC],
    ]);
    expect(result.refusals[0]?.detail).toBe(
      "address 198.51.100.90 on net1: the interface has MAC 0a:ff:00:00:00:09, which matches no ENI of this " +
        "instance (instance ENI MACs: 0a:00:00:00:00:01, 0a:00:00:00:00:02, 0a:00:00:00:00:03, " +
        "0a:00:00:00:00:04). With ipvlan the pod interface carries its parent ENI's MAC: check the " +
        "NetworkAttachmentDefinition's master, or exclude the interface with IPMGR_EXCLUDE_INTERFACES.",
    );
  });

  it("unknown MAC: the link-local address is skipped, not refused", () => {
    const result = plan(input([iface("net1", UNKNOWN_MAC, "fe80::1")]));
    expect(result.refusals).toEqual([]);
    expect(result.skipped).toEqual([{ address: "fe80::1", interfaceName: "net1", reason: "link-local" }]);
  });

  it("unknown MAC with no ENIs at all says 'none'", () => {
    const result = plan({ ...input([iface("net1", UNKNOWN_MAC, "198.51.100.90")]), enis: [] });
    expect(result.refusals[0]?.detail).toContain("(instance ENI MACs: none)");
  });
});

describe("plan: which addresses are ours (rule 2)", () => {
  it.each([
    ["IPv4 link-local", "169.254.3.4", "link-local"],
    ["IPv6 link-local", "fe80::a00:ff:fe00:2", "link-local"],
    ["IPv4 loopback", "127.0.0.1", "loopback"],
    ["IPv6 loopback", "::1", "loopback"],
    ["IPv4 multicast", "224.0.0.251", "multicast"],
    ["IPv6 multicast", "ff02::fb", "multicast"],
    ["IPv4 unspecified", "0.0.0.0", "unspecified"],
    ["IPv6 unspecified", "::", "unspecified"],
    ["IPv4-mapped IPv6", "::ffff:198.51.100.90", "ipv4-mapped"],
  ])("%s address %s is skipped as %s, with no action and no refusal", (_name, address, reason) => {
    const result = plan(input([iface("net1", MAC1, address)]));
    expect(result.skipped).toEqual([{ address, interfaceName: "net1", reason }]);
    expect(result.actions).toEqual([]);
    expect(result.refusals).toEqual([]);
    expect(result.placements).toEqual([]);
  });

  it("address outside the allowed CIDRs is refused, with the exact detail", () => {
    const result = plan(input([iface("net1", MAC0, "198.51.100.20")]));
    expect(result.actions).toEqual([]);
    expect(result.refusals).toEqual([
      {
        address: "198.51.100.20",
        interfaceName: "net1",
        mac: MAC0,
        reason: "outside-allowed-cidrs",
        detail:
          "address 198.51.100.20 on net1 is outside the allowed CIDRs [198.51.100.64/26, 198.51.100.128/26, 2001:db8::/48]; " +
          "add its range to IPMGR_ALLOWED_CIDRS if it is a pod address",
      },
    ]);
  });

  it("allowed CIDRs are shown canonical in the detail", () => {
    const result = plan({
      ...input([iface("net1", MAC1, "203.0.113.9")]),
      policy: { allowedCidrs: ["198.51.100.77/26", "2001:DB8:0:0::/48"] },
    });
    expect(result.refusals[0]?.detail).toContain("[198.51.100.64/26, 2001:db8::/48]");
  });

  it("no allowed CIDRs at all: everything is refused", () => {
    const result = plan({ ...input([iface("net1", MAC1, "198.51.100.90")]), policy: { allowedCidrs: [] } });
    expect(result.refusals.map((r) => r.reason)).toEqual(["outside-allowed-cidrs"]);
    expect(result.actions).toEqual([]);
  });

  it("allowed address outside the carrying ENI's subnet is refused, naming ENI, subnet, CIDRs and the fix", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.150")]));
    expect(result.actions).toEqual([]);
    expect(result.refusals).toEqual([
      {
        address: "198.51.100.150",
        interfaceName: "net1",
        mac: MAC1,
        reason: "outside-eni-subnet",
        detail:
          "address 198.51.100.150 on net1 is outside the subnet of ENI eni-1b (MAC 0a:00:00:00:00:02, subnet-b, " +
          "IPv4 CIDRs: 198.51.100.64/26; all CIDRs: 198.51.100.64/26, 2001:db8:0:1::/64); the " +
          "NetworkAttachmentDefinition's master must be the ENI in the address's subnet, or the IPAM range must " +
          "lie inside the ENI's subnet.",
      },
    ]);
  });

  it("IPv6 address on an ENI without an IPv6 subnet is refused as outside the ENI's subnet", () => {
    const result = plan(input([iface("net1", MAC3, "2001:db8:0:1::5")]));
    expect(result.refusals.map((r) => r.reason)).toEqual(["outside-eni-subnet"]);
    expect(result.refusals[0]?.detail).toContain("IPv6 CIDRs: none");
  });

  it("the subnet is never guessed from the address: an address of eth3's subnet on eth1's MAC is refused", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.150")]));
    expect(result.placements).toEqual([]);
    expect(result.actions).toEqual([]);
  });

  it.each([
    ["network address", "198.51.100.64"],
    ["VPC router", "198.51.100.65"],
    ["DNS", "198.51.100.66"],
    ["reserved for future use", "198.51.100.67"],
    ["last address", "198.51.100.127"],
    ["IPv6 subnet's first address", "2001:db8:0:1::"],
    ["IPv6 subnet's fourth address", "2001:db8:0:1::3"],
    ["IPv6 subnet's last address", "2001:db8:0:1:ffff:ffff:ffff:ffff"],
  ])("AWS-reserved subnet address (%s) %s is refused as outside the ENI's subnet", (_name, address) => {
    const result = plan(input([iface("net1", MAC1, address)]));
    expect(result.actions).toEqual([]);
    expect(result.refusals.map((r) => [r.address, r.reason])).toEqual([[address, "outside-eni-subnet"]]);
    expect(result.refusals[0]?.detail).toContain("is reserved by AWS in subnet");
  });

  it("the reserved-address detail names the subnet and ENI and says what AWS keeps", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.65")]));
    expect(result.refusals[0]?.detail).toBe(
      "address 198.51.100.65 on net1 is reserved by AWS in subnet 198.51.100.64/26 of ENI eni-1b " +
        "(AWS keeps the first four and the last address of every subnet); exclude it from the IPAM range.",
    );
  });

  it("the fifth address of a subnet is not reserved", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.68", "2001:db8:0:1::4")]));
    expect(result.refusals).toEqual([]);
    expect(result.placements.map((p) => p.address)).toEqual(["198.51.100.68", "2001:db8:0:1::4"]);
  });

  it("the primary IPv4 of the carrying ENI is refused, with the exact detail", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.70")]));
    expect(result.actions).toEqual([]);
    expect(result.satisfied).toEqual([]);
    expect(result.refusals).toEqual([
      {
        address: "198.51.100.70",
        interfaceName: "net1",
        mac: MAC1,
        reason: "eni-primary-address",
        detail:
          "address 198.51.100.70 on net1 is the primary private IPv4 address of ENI eni-1b (MAC 0a:00:00:00:00:02), " +
          "which is never assigned or released; exclude it from the IPAM range.",
      },
    ]);
  });

  it("the primary IPv4 of another ENI in the same subnet is refused too (it would be stolen by reassignment)", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.71")]));
    expect(result.actions).toEqual([]);
    expect(result.refusals.map((r) => r.reason)).toEqual(["eni-primary-address"]);
    expect(result.refusals[0]?.detail).toContain("of ENI eni-2c");
  });

  it("the primary IPv4 of the node's eth0 is refused even when outside the allowed CIDRs", () => {
    const result = plan(input([iface("net1", MAC0, "198.51.100.10")]));
    expect(result.refusals.map((r) => r.reason)).toEqual(["eni-primary-address"]);
  });

  it("a primary written non-canonically in the ENI state is still recognised", () => {
    const base = input([iface("net1", MAC1, "2001:db8:0:1::70")]);
    const result = plan(withEni(base, { ...ETH1, ipv6s: ["2001:DB8:0:1:0:0:0:70"] }));
    expect(result.satisfied).toEqual(["2001:db8:0:1::70"]);
    expect(result.actions).toEqual([]);
  });
});

describe("plan: duplicates", () => {
  it("the same address twice on one interface is one placement and one assign", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.90", "198.51.100.90")]));
    expect(result.placements).toHaveLength(1);
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90"], allowReassignment: true },
    ]);
  });

  it("the same address in two spellings on one interface is one address", () => {
    const result = plan(input([iface("net1", MAC1, "2001:db8:0:1::5", "2001:0DB8:0:1:0:0:0:5")]));
    expect(result.placements.map((p) => p.address)).toEqual(["2001:db8:0:1::5"]);
  });

  it("the same address on two interfaces of one ENI: two placements, one assign", () => {
    const result = plan(input([iface("net2", MAC1, "198.51.100.90"), iface("net1", MAC1, "198.51.100.90")]));
    expect(result.placements.map((p) => [p.interfaceName, p.eniId])).toEqual([
      ["net1", "eni-1b"],
      ["net2", "eni-1b"],
    ]);
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90"], allowReassignment: true },
    ]);
  });

  it("the same address on interfaces of two ENIs in one subnet is refused on both: no contradicting assigns", () => {
    const result = plan(
      input([iface("net1", MAC1, "198.51.100.90", "198.51.100.91"), iface("net2", MAC2, "198.51.100.90")]),
    );
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.91"], allowReassignment: true },
    ]);
    expect(result.placements.map((p) => p.address)).toEqual(["198.51.100.91"]);
    expect(result.refusals).toEqual([
      {
        address: "198.51.100.90",
        interfaceName: "net1",
        mac: MAC1,
        reason: "address-conflict",
        detail:
          "address 198.51.100.90 is on net1 (MAC 0a:00:00:00:00:02, ENI eni-1b) and net2 (MAC 0a:00:00:00:00:03, " +
          "ENI eni-2c); an address can be held by only one ENI, so it is assigned to none: make the IPAM ranges " +
          "of the NetworkAttachmentDefinitions on different masters disjoint.",
      },
      expect.objectContaining({
        address: "198.51.100.90",
        interfaceName: "net2",
        reason: "address-conflict",
      }),
    ]);
  });

  it("the same IPv6 address on interfaces of two ENIs is refused on both and not looked up", () => {
    const world = input([iface("net1", MAC1, "2001:db8:0:1::5"), iface("net2", MAC2, "2001:db8:0:1::5")]);
    expect(plan(world).actions).toEqual([]);
    expect(ipv6HolderLookupNeeded(world)).toEqual([]);
  });

  it("a duplicate that is refused on one ENI's subnet is placed on the ENI whose subnet holds it", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.90"), iface("net2", MAC3, "198.51.100.90")]));
    expect(result.placements.map((p) => p.eniId)).toEqual(["eni-1b"]);
    expect(result.refusals.map((r) => [r.interfaceName, r.reason])).toEqual([["net2", "outside-eni-subnet"]]);
  });
});

describe("plan: IPv4 assigns (rule 3)", () => {
  it("an address already on its ENI is satisfied and needs no action", () => {
    const base = input([iface("net1", MAC1, "198.51.100.90")]);
    const result = plan(withEni(base, { ...ETH1, ipv4s: ["198.51.100.70", "198.51.100.90"] }));
    expect(result.actions).toEqual([]);
    expect(result.satisfied).toEqual(["198.51.100.90"]);
    expect(result.placements).toHaveLength(1);
  });

  it("several missing addresses on one ENI are one assign, sorted numerically not as text", () => {
    const result = plan(input([iface("net1", MAC1, "198.51.100.100", "198.51.100.90", "198.51.100.99")]));
    expect(result.actions).toEqual([
      {
        kind: "assign-ipv4",
        eniId: "eni-1b",
        addresses: ["198.51.100.90", "198.51.100.99", "198.51.100.100"],
        allowReassignment: true,
      },
    ]);
  });

  it("missing and present addresses mix: only the missing ones are assigned", () => {
    const base = input([iface("net1", MAC1, "198.51.100.90", "198.51.100.91")]);
    const result = plan(withEni(base, { ...ETH1, ipv4s: ["198.51.100.70", "198.51.100.91"] }));
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90"], allowReassignment: true },
    ]);
    expect(result.satisfied).toEqual(["198.51.100.91"]);
  });

  it("interfaces on two ENIs give one assign per ENI, ordered by ENI id", () => {
    const result = plan(input([iface("net1", MAC3, "198.51.100.150"), iface("net2", MAC1, "198.51.100.90")]));
    expect(result.actions.map((a) => [a.kind, a.eniId, a.addresses])).toEqual([
      ["assign-ipv4", "eni-1b", ["198.51.100.90"]],
      ["assign-ipv4", "eni-3d", ["198.51.100.150"]],
    ]);
  });

  it("an IPv4 address held by our other ENI is assigned with reassignment, never unassigned first", () => {
    const base = input([iface("net1", MAC1, "198.51.100.90")]);
    const result = plan(withEni(base, { ...ETH2, ipv4s: ["198.51.100.71", "198.51.100.90"] }));
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90"], allowReassignment: true },
    ]);
  });

  it("an address held in non-canonical spelling by the ENI is satisfied", () => {
    const base = input([iface("net1", MAC1, "2001:db8:0:1::5")]);
    const result = plan(withEni(base, { ...ETH1, ipv6s: ["2001:0db8:0000:0001:0000:0000:0000:0005"] }));
    expect(result.satisfied).toEqual(["2001:db8:0:1::5"]);
    expect(result.actions).toEqual([]);
  });
});

describe("plan: IPv6 assigns and moves (rule 4)", () => {
  it("IPv6 written in expanded form is matched to its compressed form on the ENI", () => {
    const base = input([iface("net1", MAC1, "2001:0db8:0000:0001:0000:0000:0000:0005")]);
    const result = plan(withEni(base, { ...ETH1, ipv6s: ["2001:db8:0:1::5"] }));
    expect(result.actions).toEqual([]);
    expect(result.satisfied).toEqual(["2001:db8:0:1::5"]);
  });

  it("IPv6 written in uppercase is placed in canonical lowercase", () => {
    const result = plan(input([iface("net1", MAC1, "2001:DB8:0:1::A")]));
    expect(result.actions).toEqual([
      { kind: "assign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::a"] },
    ]);
  });

  it("a free IPv6 address gives one assign-ipv6 and no move", () => {
    const result = plan(input([iface("net1", MAC1, "2001:db8:0:1::6", "2001:db8:0:1::5")]));
    expect(result.actions).toEqual([
      { kind: "assign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::5", "2001:db8:0:1::6"] },
    ]);
  });

  it("IPv6 held by a foreign ENI (from ipv6Holders) is unassigned there first, with reason move", () => {
    const result = plan(
      input([iface("net1", MAC1, "2001:db8:0:1::5")], {
        ipv6Holders: new Map([["2001:db8:0:1::5", "eni-other-node"]]),
      }),
    );
    expect(result.actions).toEqual([
      { kind: "unassign-ipv6", eniId: "eni-other-node", addresses: ["2001:db8:0:1::5"], reason: "move" },
      { kind: "assign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::5"] },
    ]);
  });

  it("ipv6Holders keys in non-canonical spelling still apply", () => {
    const result = plan(
      input([iface("net1", MAC1, "2001:db8:0:1::5")], {
        ipv6Holders: new Map([["2001:DB8:0:1:0:0:0:5", "eni-other-node"]]),
      }),
    );
    expect(result.actions[0]).toEqual({
      kind: "unassign-ipv6",
      eniId: "eni-other-node",
      addresses: ["2001:db8:0:1::5"],
      reason: "move",
    });
  });

  it("moves are grouped per holder and ordered by holder id", () => {
    const result = plan(
      input([iface("net1", MAC1, "2001:db8:0:1::7", "2001:db8:0:1::5", "2001:db8:0:1::6")], {
        ipv6Holders: new Map([
          ["2001:db8:0:1::7", "eni-z"],
          ["2001:db8:0:1::5", "eni-y"],
          ["2001:db8:0:1::6", "eni-z"],
        ]),
      }),
    );
    expect(result.actions).toEqual([
      { kind: "unassign-ipv6", eniId: "eni-y", addresses: ["2001:db8:0:1::5"], reason: "move" },
      {
        kind: "unassign-ipv6",
        eniId: "eni-z",
        addresses: ["2001:db8:0:1::6", "2001:db8:0:1::7"],
        reason: "move",
      },
      {
        kind: "assign-ipv6",
        eniId: "eni-1b",
        addresses: ["2001:db8:0:1::5", "2001:db8:0:1::6", "2001:db8:0:1::7"],
      },
    ]);
  });

  it("IPv6 held by another of our ENIs moves between them without a lookup", () => {
    const base = input([iface("net1", MAC1, "2001:db8:0:1::5")]);
    const world = withEni(base, { ...ETH2, ipv6s: ["2001:db8:0:1::5"] });
    expect(ipv6HolderLookupNeeded(world)).toEqual([]);
    expect(plan(world).actions).toEqual([
      { kind: "unassign-ipv6", eniId: "eni-2c", addresses: ["2001:db8:0:1::5"], reason: "move" },
      { kind: "assign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::5"] },
    ]);
  });

  it("our own ENI's holding wins over a stale ipv6Holders entry", () => {
    const base = input([iface("net1", MAC1, "2001:db8:0:1::5")], {
      ipv6Holders: new Map([["2001:db8:0:1::5", "eni-other-node"]]),
    });
    const result = plan(withEni(base, { ...ETH2, ipv6s: ["2001:db8:0:1::5"] }));
    expect(result.actions[0]).toEqual({
      kind: "unassign-ipv6",
      eniId: "eni-2c",
      addresses: ["2001:db8:0:1::5"],
      reason: "move",
    });
    expect(result.actions).toHaveLength(2);
  });

  it("ipv6Holders naming the target ENI itself is ignored: just assign", () => {
    const result = plan(
      input([iface("net1", MAC1, "2001:db8:0:1::5")], {
        ipv6Holders: new Map([["2001:db8:0:1::5", "eni-1b"]]),
      }),
    );
    expect(result.actions).toEqual([
      { kind: "assign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::5"] },
    ]);
  });

  it("ipv6Holders entries for addresses already in place are ignored", () => {
    const base = input([iface("net1", MAC1, "2001:db8:0:1::5")], {
      ipv6Holders: new Map([["2001:db8:0:1::5", "eni-other-node"]]),
    });
    expect(plan(withEni(base, { ...ETH1, ipv6s: ["2001:db8:0:1::5"] })).actions).toEqual([]);
  });

  it("ipv6HolderLookupNeeded lists wanted IPv6 not held by any of our ENIs, sorted, and nothing else", () => {
    const base = input([
      iface(
        "net1",
        MAC1,
        "2001:db8:0:1::9",
        "2001:db8:0:1::5",
        "2001:db8:0:1::6",
        "2001:db8:0:1::7",
        "198.51.100.90",
      ),
      iface("net2", MAC3, "2001:db8:0:1::8"), // refused: eth3 has no IPv6 subnet
      iface("net3", MAC1, "2001:db8:9::5"), // refused: outside eth1's subnet
    ]);
    const world = withEni(withEni(base, { ...ETH1, ipv6s: ["2001:db8:0:1::6"] }), {
      ...ETH2,
      ipv6s: ["2001:db8:0:1::7"],
    });
    expect(ipv6HolderLookupNeeded(world)).toEqual(["2001:db8:0:1::5", "2001:db8:0:1::9"]);
  });

  it("ipv6HolderLookupNeeded is empty when everything is IPv4 or in place", () => {
    expect(ipv6HolderLookupNeeded(input([iface("net1", MAC1, "198.51.100.90")]))).toEqual([]);
  });
});

describe("plan: releases (rule 5)", () => {
  const holding = (base: PlanInput): PlanInput =>
    withEni(base, {
      ...ETH1,
      ipv4s: ["198.51.100.70", "198.51.100.90", "198.51.100.91"],
      ipv6s: ["2001:db8:0:1::5"],
    });

  it("a released IPv4 address our ENI still holds is unassigned", () => {
    const result = plan(holding(input([iface("net1", MAC1)], { released: ["198.51.100.90"] })));
    expect(result.actions).toEqual([
      { kind: "unassign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90"] },
    ]);
  });

  it("a released IPv6 address our ENI still holds is unassigned with reason release", () => {
    const result = plan(holding(input([iface("net1", MAC1)], { released: ["2001:0db8:0:1:0:0:0:5"] })));
    expect(result.actions).toEqual([
      { kind: "unassign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::5"], reason: "release" },
    ]);
  });

  it("released addresses on one ENI are one action, sorted, listed once", () => {
    const result = plan(
      holding(
        input([iface("net1", MAC1)], { released: ["198.51.100.91", "198.51.100.90", "198.51.100.91"] }),
      ),
    );
    expect(result.actions).toEqual([
      { kind: "unassign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90", "198.51.100.91"] },
    ]);
  });

  it("a released address still on any interface is not released", () => {
    const result = plan(
      holding(input([iface("net2", MAC1, "198.51.100.90")], { released: ["198.51.100.90"] })),
    );
    expect(result.actions).toEqual([]);
    expect(result.satisfied).toEqual(["198.51.100.90"]);
  });

  it("a released address still on an interface, even a refused one, is not released", () => {
    const result = plan(
      holding(
        input([iface("net2", MAC2, "198.51.100.90"), iface("net3", MAC1, "198.51.100.90")], {
          released: ["198.51.100.90"],
        }),
      ),
    );
    expect(result.refusals.map((r) => r.reason)).toEqual(["address-conflict", "address-conflict"]);
    expect(result.actions).toEqual([]);
  });

  it("a released address that another ENI of this node took over (another pod's) is never released", () => {
    const base = input([iface("net1", MAC1)], { released: ["198.51.100.90"] });
    const result = plan(withEni(base, { ...ETH2, ipv4s: ["198.51.100.71", "198.51.100.90"] }));
    expect(result.actions).toEqual([]);
  });

  it("on exit, our addresses are released from the ENI behind our interface only", () => {
    const base = input([iface("net1", MAC1)], { released: ["198.51.100.90", "198.51.100.91"] });
    const world = withEni(withEni(base, { ...ETH1, ipv4s: ["198.51.100.70", "198.51.100.90"] }), {
      ...ETH2,
      ipv4s: ["198.51.100.71", "198.51.100.91"],
    });
    expect(plan(world).actions).toEqual([
      { kind: "unassign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90"] },
    ]);
  });

  it("a released address no ENI of ours holds is not released", () => {
    expect(plan(input([], { released: ["198.51.100.95", "2001:db8:0:1::99"] })).actions).toEqual([]);
  });

  it("a released address outside the allowed CIDRs is never released, even if our ENI holds it", () => {
    const base = input([], { released: ["198.51.100.20"] });
    const result = plan(withEni(base, { ...ETH0, ipv4s: ["198.51.100.10", "198.51.100.20"] }));
    expect(result.actions).toEqual([]);
  });

  it("a released primary address is never released", () => {
    expect(
      plan(holding(input([iface("net1", MAC1)], { released: ["198.51.100.70", "198.51.100.71"] }))).actions,
    ).toEqual([]);
  });

  it("a released address EC2 accepted on our ENI, which IMDS does not show yet, is unassigned", () => {
    const unconfirmed = new Map([
      ["198.51.100.92", "eni-1b"],
      ["2001:0db8:0:1::6", "eni-1b"],
    ]);
    const base = input([iface("net1", MAC1)], {
      released: ["198.51.100.92", "2001:db8:0:1::6"],
      assignedUnconfirmed: unconfirmed,
    });
    expect(plan(holding(base)).actions).toEqual([
      { kind: "unassign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.92"] },
      { kind: "unassign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::6"], reason: "release" },
    ]);
  });

  it("an unconfirmed assignment is released only from its own ENI, behind our interface, and never while present", () => {
    const released = ["198.51.100.92", "198.51.100.93", "198.51.100.94"];
    const base = input([iface("net1", MAC1, "198.51.100.94")], {
      released,
      assignedUnconfirmed: new Map([
        ["198.51.100.92", "eni-2c"], // another ENI of this node: another pod's
        ["198.51.100.93", "eni-foreign"], // an ENI of no ours
        ["198.51.100.94", "eni-1b"], // still on our interface
      ]),
    });
    expect(plan(withEni(holding(base), { ...ETH2, ipv4s: ["198.51.100.71"] })).actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.94"], allowReassignment: true },
    ]);
  });

  it("an unconfirmed primary or disallowed address is never released", () => {
    const base = input([iface("net1", MAC1)], {
      released: ["198.51.100.70", "198.51.100.20"],
      assignedUnconfirmed: new Map([
        ["198.51.100.70", "eni-1b"],
        ["198.51.100.20", "eni-1b"],
      ]),
    });
    expect(plan(holding(base)).actions).toEqual([]);
  });

  it("a released link-local address is never released", () => {
    const base = { ...input([], { released: ["169.254.1.1"] }), policy: { allowedCidrs: ["0.0.0.0/0"] } };
    const result = plan(withEni(base, { ...ETH1, ipv4s: ["198.51.100.70", "169.254.1.1"] }));
    expect(result.actions).toEqual([]);
  });
});

describe("plan: refusals learned from EC2", () => {
  const learned = {
    address: "198.51.100.90",
    interfaceName: "net1",
    mac: MAC1,
    reason: "eni-primary-address" as const,
    detail: "address 198.51.100.90 on net1 is the primary private IPv4 address of ENI eni-x of instance i-y",
  };

  it("refuses the same address on the same interface up front, with EC2's detail, and plans no call for it", () => {
    const result = plan(
      input([iface("net1", MAC1, "198.51.100.90", "198.51.100.91")], { learnedRefusals: [learned] }),
    );
    expect(result.refusals).toEqual([learned]);
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.91"], allowReassignment: true },
    ]);
    expect(result.placements.map((p) => p.address)).toEqual(["198.51.100.91"]);
  });

  it("leaves the same address on another interface to the usual rules", () => {
    const result = plan(input([iface("net2", MAC1, "198.51.100.90")], { learnedRefusals: [learned] }));
    expect(result.refusals).toEqual([]);
    expect(result.placements.map((p) => `${p.address} ${p.interfaceName}`)).toEqual(["198.51.100.90 net2"]);
  });
});

describe("plan: refusals, ordering, placements (rules 6-8)", () => {
  it("a refusal does not stop the other addresses from being planned", () => {
    const result = plan(
      input([
        iface("net1", UNKNOWN_MAC, "198.51.100.95"),
        iface("net2", MAC1, "198.51.100.20", "198.51.100.70", "198.51.100.90", "2001:db8:0:1::5"),
      ]),
    );
    expect(result.refusals.map((r) => [r.address, r.reason])).toEqual([
      ["198.51.100.20", "outside-allowed-cidrs"],
      ["198.51.100.70", "eni-primary-address"],
      ["198.51.100.95", "unknown-mac"],
    ]);
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90"], allowReassignment: true },
      { kind: "assign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::5"] },
    ]);
  });

  it("a refused address never appears in any action, not even as a release", () => {
    const base = input([iface("net1", MAC1, "198.51.100.150")], { released: ["198.51.100.150"] });
    const result = plan(withEni(base, { ...ETH3, ipv4s: ["198.51.100.140", "198.51.100.150"] }));
    expect(result.refusals.map((r) => r.reason)).toEqual(["outside-eni-subnet"]);
    expect(result.actions).toEqual([]);
  });

  it("actions come in order: IPv4 assigns, moves, IPv6 assigns, IPv4 releases, IPv6 releases", () => {
    const base = input(
      [
        iface("net1", MAC1, "2001:db8:0:1::5", "198.51.100.90"),
        iface("net2", MAC3, "198.51.100.150"),
        iface("net3", MAC2),
      ],
      {
        ipv6Holders: new Map([["2001:db8:0:1::5", "eni-other-node"]]),
        released: ["2001:db8:0:1::66", "198.51.100.160"],
      },
    );
    const world = withEni(withEni(base, { ...ETH2, ipv6s: ["2001:db8:0:1::66"] }), {
      ...ETH3,
      ipv4s: ["198.51.100.140", "198.51.100.160"],
    });
    expect(plan(world).actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-1b", addresses: ["198.51.100.90"], allowReassignment: true },
      { kind: "assign-ipv4", eniId: "eni-3d", addresses: ["198.51.100.150"], allowReassignment: true },
      { kind: "unassign-ipv6", eniId: "eni-other-node", addresses: ["2001:db8:0:1::5"], reason: "move" },
      { kind: "assign-ipv6", eniId: "eni-1b", addresses: ["2001:db8:0:1::5"] },
      { kind: "unassign-ipv4", eniId: "eni-3d", addresses: ["198.51.100.160"] },
      { kind: "unassign-ipv6", eniId: "eni-2c", addresses: ["2001:db8:0:1::66"], reason: "release" },
    ]);
  });

  it("placements list every wanted, non-refused address with family, interface, ENI and MAC, already held or not", () => {
    const base = input([
      iface("net2", MAC2, "2001:db8:0:1::8"),
      iface("net1", MAC1.toUpperCase(), "198.51.100.91", "198.51.100.90", "fe80::1", "203.0.113.1"),
    ]);
    const result = plan(withEni(base, { ...ETH1, ipv4s: ["198.51.100.70", "198.51.100.91"] }));
    expect(result.placements).toEqual([
      { address: "198.51.100.90", family: 4, interfaceName: "net1", eniId: "eni-1b", mac: MAC1 },
      { address: "198.51.100.91", family: 4, interfaceName: "net1", eniId: "eni-1b", mac: MAC1 },
      { address: "2001:db8:0:1::8", family: 6, interfaceName: "net2", eniId: "eni-2c", mac: MAC2 },
    ]);
    expect(result.satisfied).toEqual(["198.51.100.91"]);
  });

  it("the order of interfaces and ENIs in the input does not change the plan", () => {
    const interfaces = [
      iface("net1", MAC1, "198.51.100.90", "2001:db8:0:1::5"),
      iface("net2", MAC3, "198.51.100.150", "198.51.100.151"),
      iface("net3", UNKNOWN_MAC, "198.51.100.99"),
    ];
    const forward = input(interfaces);
    const backward = { ...forward, interfaces: [...interfaces].reverse(), enis: [...forward.enis].reverse() };
    expect(plan(backward)).toEqual(plan(forward));
  });

  it("empty input gives an empty plan", () => {
    expect(plan({ interfaces: [], enis: [], policy: { allowedCidrs: [] } })).toEqual({
      actions: [],
      placements: [],
      satisfied: [],
      refusals: [],
      skipped: [],
    });
  });
});

describe("plan: malformed input", () => {
  it("an interface address that is not an address throws InvalidAddressError", () => {
    expect(() => plan(input([iface("net1", MAC1, "10.1")]))).toThrow(InvalidAddressError);
  });

  it("an interface address with a prefix length throws InvalidAddressError", () => {
    expect(() => plan(input([iface("net1", MAC1, "198.51.100.90/26")]))).toThrow(InvalidAddressError);
  });

  it("an invalid allowed CIDR throws InvalidCidrError", () => {
    expect(() => plan({ ...input([]), policy: { allowedCidrs: ["198.51.100.0/33"] } })).toThrow(
      InvalidCidrError,
    );
  });

  it("an invalid ENI subnet CIDR throws InvalidCidrError", () => {
    expect(() => plan(withEni(input([]), { ...ETH1, subnetIpv4Cidrs: ["198.51.100.64"] }))).toThrow(
      InvalidCidrError,
    );
  });
});
