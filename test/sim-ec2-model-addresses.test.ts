import { describe, expect, it } from "vitest";
import {
  assignIpv6s,
  assignPrivateIps,
  unassignIpv6s,
  unassignPrivateIps,
} from "../src/sim/ec2/model/eni-addresses.js";
import type { SimState } from "../src/sim/sim-state.js";
import { StateStore } from "../src/sim/state-store.js";
import { freshModel, refusal } from "./helpers/ec2-model-world.js";
import { ManualClock } from "./helpers/manual-clock.js";

// EC2's address rules in the simulator's model, without HTTP: the functions change a draft state in place.
const eni = (state: SimState, id: string) => {
  const found = state.enis.find((e) => e.eniId === id);
  if (found === undefined) throw new Error(`no ${id} in the state`);
  return found;
};
const invalid = (message: string) => ({ name: "Ec2ModelError", code: "InvalidParameterValue", message });

describe("EC2 model: private IPv4 addresses", () => {
  it("assigns named addresses after the ENI's own and answers them", () => {
    const { state, topology } = freshModel();
    const result = assignPrivateIps(state, topology, "eni-0n2multus", {
      addresses: ["198.51.100.80", "198.51.100.81"],
    });
    expect(result).toEqual({
      eniId: "eni-0n2multus",
      addresses: ["198.51.100.80", "198.51.100.81"],
      prefixes: [],
    });
    expect(eni(state, "eni-0n2multus").ipv4s).toEqual(["198.51.100.71", "198.51.100.80", "198.51.100.81"]);
  });

  it("counts an address the ENI already holds as assigned, without a duplicate", () => {
    const { state, topology } = freshModel();
    assignPrivateIps(state, topology, "eni-0n1multus", { addresses: ["198.51.100.100"] });
    expect(eni(state, "eni-0n1multus").ipv4s).toEqual(["198.51.100.70", "198.51.100.100"]);
  });

  it("refuses another ENI's address without AllowReassignment and changes nothing", () => {
    const { state, topology } = freshModel();
    const before = structuredClone(state);
    expect(
      refusal(() => assignPrivateIps(state, topology, "eni-0n2multus", { addresses: ["198.51.100.100"] })),
    ).toEqual(invalid("Address 198.51.100.100 is in use."));
    expect(state).toEqual(before);
  });

  it("moves another ENI's address with AllowReassignment, and its Elastic IP follows with the same association", () => {
    const { state, topology } = freshModel();
    const associationId = state.addresses[0]?.associationId;
    assignPrivateIps(state, topology, "eni-0n2multus", { addresses: ["198.51.100.100"] }, true);
    expect(eni(state, "eni-0n1multus").ipv4s).toEqual(["198.51.100.70"]);
    expect(eni(state, "eni-0n2multus").ipv4s).toEqual(["198.51.100.71", "198.51.100.100"]);
    expect(state.addresses[0]).toMatchObject({
      associationId,
      eniId: "eni-0n2multus",
      privateIp: "198.51.100.100",
    });
  });

  it("never reassigns another ENI's primary address", () => {
    const { state, topology } = freshModel();
    expect(
      refusal(() =>
        assignPrivateIps(state, topology, "eni-0n2multus", { addresses: ["198.51.100.70"] }, true),
      ),
    ).toEqual(
      invalid(
        "Address 198.51.100.70 is the primary private IP address of a network interface and cannot be reassigned.",
      ),
    );
  });

  it("refuses an address outside the ENI's subnet and one of AWS's five reserved addresses", () => {
    const { state, topology } = freshModel();
    expect(
      refusal(() => assignPrivateIps(state, topology, "eni-0n2multus", { addresses: ["198.51.100.20"] })),
    ).toEqual(
      invalid("Address 198.51.100.20 does not fall within the subnet's address range (198.51.100.64/26)"),
    );
    expect(
      refusal(() => assignPrivateIps(state, topology, "eni-0n2multus", { addresses: ["198.51.100.127"] })),
    ).toEqual(invalid("Address 198.51.100.127 is in subnet's reserved address range"));
  });

  it("picks the lowest free addresses for a count, skipping used ones and the reservation", () => {
    const { state, topology } = freshModel();
    const result = assignPrivateIps(state, topology, "eni-0n2multus", { count: 3 });
    expect(result.addresses).toEqual(["198.51.100.68", "198.51.100.69", "198.51.100.72"]);
  });

  it("refuses a count the subnet cannot give (InsufficientFreeAddressesInSubnet)", () => {
    const { state, topology } = freshModel();
    // 64 addresses: 5 AWS-reserved, 16 reserved by the world (198.51.100.100 among them), 2 primaries: 41 free.
    assignPrivateIps(state, topology, "eni-0n1multus", { count: 13 });
    assignPrivateIps(state, topology, "eni-0n2multus", { count: 14 });
    state.enis.push({ ...structuredClone(eni(state, "eni-0n2multus")), eniId: "eni-0extra", ipv4s: [] });
    expect(refusal(() => assignPrivateIps(state, topology, "eni-0extra", { count: 15 }))).toEqual({
      name: "Ec2ModelError",
      code: "InsufficientFreeAddressesInSubnet",
      message:
        "The specified subnet subnet-0multus does not have enough free addresses to satisfy the request.",
    });
  });

  it("refuses to go over the instance type's per-ENI limit, the primary counted", () => {
    const { state, topology } = freshModel();
    expect(refusal(() => assignPrivateIps(state, topology, "eni-0n1multus", { count: 14 }))).toEqual({
      name: "Ec2ModelError",
      code: "PrivateIpAddressLimitExceeded",
      message: "Number of private addresses will exceed limit. The limit is 15 per network interface.",
    });
    assignPrivateIps(state, topology, "eni-0n1multus", { count: 13 });
    expect(eni(state, "eni-0n1multus").ipv4s).toHaveLength(15);
  });

  it("refuses unknown and malformed ENI ids", () => {
    const { state, topology } = freshModel();
    expect(refusal(() => assignPrivateIps(state, topology, "eni-0gone", { count: 1 }))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidNetworkInterfaceID.NotFound",
      message: "The networkInterface ID 'eni-0gone' does not exist",
    });
    expect(refusal(() => unassignPrivateIps(state, "nic-1", [], [])).code).toBe(
      "InvalidNetworkInterfaceId.Malformed",
    );
  });

  it("unassigns a secondary address and ends the association of its Elastic IP, which stays allocated", () => {
    const { state } = freshModel();
    unassignPrivateIps(state, "eni-0n1multus", ["198.51.100.100"], []);
    expect(eni(state, "eni-0n1multus").ipv4s).toEqual(["198.51.100.70"]);
    expect(state.addresses).toEqual([
      expect.objectContaining({
        allocationId: "eipalloc-0web",
        associationId: null,
        eniId: null,
        privateIp: null,
      }),
    ]);
  });

  it("refuses to unassign the primary address or an address the ENI does not hold", () => {
    const { state } = freshModel();
    expect(refusal(() => unassignPrivateIps(state, "eni-0n1multus", ["198.51.100.70"], []))).toEqual(
      invalid(
        "Address 198.51.100.70 is the primary private IP address of eni-0n1multus and cannot be unassigned.",
      ),
    );
    expect(refusal(() => unassignPrivateIps(state, "eni-0n2multus", ["198.51.100.100"], []))).toEqual(
      invalid("Some of the specified addresses are not assigned to interface eni-0n2multus: 198.51.100.100"),
    );
  });
});

describe("EC2 model: IPv4 prefixes", () => {
  it("picks a free aligned /28 outside the reservation and AWS's reserved addresses for a count", () => {
    const { state, topology } = freshModel();
    const result = assignPrivateIps(state, topology, "eni-0n2multus", { prefixes: { count: 1 } });
    expect(result).toEqual({ eniId: "eni-0n2multus", addresses: [], prefixes: ["198.51.100.80/28"] });
    expect(eni(state, "eni-0n2multus").ipv4Prefixes).toEqual(["198.51.100.80/28"]);
  });

  it("refuses an address inside a delegated prefix, even with AllowReassignment", () => {
    const { state, topology } = freshModel();
    assignPrivateIps(state, topology, "eni-0n2multus", { prefixes: { count: 1 } });
    expect(
      refusal(() =>
        assignPrivateIps(state, topology, "eni-0n1multus", { addresses: ["198.51.100.81"] }, true),
      ),
    ).toEqual(invalid("Address 198.51.100.81 is in use."));
  });

  it("unassigns a held prefix and refuses one the ENI does not hold", () => {
    const { state, topology } = freshModel();
    assignPrivateIps(state, topology, "eni-0n2multus", { prefixes: { count: 1 } });
    expect(refusal(() => unassignPrivateIps(state, "eni-0n1multus", [], ["198.51.100.80/28"]))).toEqual(
      invalid("Some of the specified prefixes are not assigned to interface eni-0n1multus: 198.51.100.80/28"),
    );
    unassignPrivateIps(state, "eni-0n2multus", [], ["198.51.100.80/28"]);
    expect(eni(state, "eni-0n2multus").ipv4Prefixes).toEqual([]);
  });
});

describe("EC2 model: IPv6 addresses", () => {
  it("assigns named and counted addresses in the subnet's IPv6 block", () => {
    const { state, topology } = freshModel();
    assignIpv6s(state, topology, "eni-0n1multus", { addresses: ["2001:db8:200:1::10"] });
    const counted = assignIpv6s(state, topology, "eni-0n2multus", { count: 2 });
    expect(counted.addresses).toEqual(["2001:db8:200:1::4", "2001:db8:200:1::5"]);
    expect(eni(state, "eni-0n1multus").ipv6s).toEqual(["2001:db8:200:1::10"]);
  });

  it("has no reassignment: another ENI's address is refused", () => {
    const { state, topology } = freshModel();
    assignIpv6s(state, topology, "eni-0n1multus", { addresses: ["2001:db8:200:1::10"] });
    expect(
      refusal(() => assignIpv6s(state, topology, "eni-0n2multus", { addresses: ["2001:db8:200:1::10"] })),
    ).toEqual(invalid("Address 2001:db8:200:1::10 is in use."));
  });

  it("refuses an ENI whose subnet has no IPv6 block", () => {
    const { state, topology } = freshModel();
    expect(refusal(() => assignIpv6s(state, topology, "eni-0n1eth0", { count: 1 }))).toEqual(
      invalid("Subnet subnet-0nodes has no IPv6 CIDR block"),
    );
  });

  it("unassigns a held address and refuses one the ENI does not hold", () => {
    const { state, topology } = freshModel();
    assignIpv6s(state, topology, "eni-0n1multus", { addresses: ["2001:db8:200:1::10"] });
    expect(refusal(() => unassignIpv6s(state, "eni-0n2multus", ["2001:db8:200:1::10"], []))).toEqual(
      invalid(
        "Some of the specified addresses are not assigned to interface eni-0n2multus: 2001:db8:200:1::10",
      ),
    );
    unassignIpv6s(state, "eni-0n1multus", ["2001:db8:200:1::10"], []);
    expect(eni(state, "eni-0n1multus").ipv6s).toEqual([]);
  });
});

describe("EC2 model writes through the state store", () => {
  it("commits the draft a model call changed, and nothing when the model refuses", () => {
    const { state, topology } = freshModel();
    const store = new StateStore(state, new ManualClock());
    store.write((draft) =>
      assignPrivateIps(draft, topology, "eni-0n2multus", { addresses: ["198.51.100.80"] }),
    );
    const after = store.current();
    expect(eni(after, "eni-0n2multus").ipv4s).toEqual(["198.51.100.71", "198.51.100.80"]);
    expect(eni(state, "eni-0n2multus").ipv4s).toEqual(["198.51.100.71"]);
    // Two addresses, the second in use elsewhere: the first must not stay assigned.
    refusal(() =>
      store.write((draft) =>
        assignPrivateIps(draft, topology, "eni-0n2multus", {
          addresses: ["198.51.100.81", "198.51.100.100"],
        }),
      ),
    );
    expect(store.current()).toBe(after);
  });
});
