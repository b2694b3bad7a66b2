/**
 * whereabouts' owners keyed by network: two whereabouts networks over one range (a NAD with `network_name`,
 * one without) have separate IPPools and may hand one address to a pod in each; each pod is checked against
 * its own network's owner only, whichever pool name sorts first. Pure.
 */
import { describe, expect, it } from "vitest";
import type { EniState } from "../src/eni/types.js";
import type {
  IpPoolInfo,
  NadInfo,
  OverlappingReservationInfo,
  PodInfo,
} from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { type DesiredInput, desiredState } from "../src/ipam-whereabouts-bridge/state/desired-state.js";
import { whereaboutsOwners } from "../src/ipam-whereabouts-bridge/state/whereabouts-owners.js";
import type { WhereaboutsRange } from "../src/ipam-whereabouts-bridge/state/whereabouts-ranges.js";

const MAC = "02:00:00:00:01:01";
const RANGE = "198.51.100.192/27";
const ADDRESS = "198.51.100.200";

const nad = (name: string, networkName?: string): NadInfo => ({
  namespace: "cnf",
  name,
  config: JSON.stringify({
    type: "ipvlan",
    ipam: {
      type: "whereabouts",
      range: RANGE,
      ...(networkName === undefined ? {} : { network_name: networkName }),
    },
  }),
});
const NADS = [nad("multus-blue", "blue"), nad("multus-plain")];

function pod(name: string, network: string): PodInfo {
  return {
    namespace: "cnf",
    name,
    uid: `uid-${name}`,
    nodeName: "node-a",
    deleting: false,
    annotations: {
      "k8s.v1.cni.cncf.io/network-status": JSON.stringify([
        { name: network, interface: "net1", ips: [ADDRESS], mac: MAC },
      ]),
    },
    containers: [{ name: "app", image: "upf:1", args: [] }],
  };
}

/** whereabouts' IPPool of `networkName` ("" unnamed) over RANGE, giving ADDRESS (offset 8) to `podref`. */
const pool = (networkName: string, podref: string): IpPoolInfo => ({
  namespace: "kube-system",
  name: networkName === "" ? "198.51.100.192-27" : `${networkName}-198.51.100.192-27`,
  range: RANGE,
  allocations: { "8": { id: "c0ffee", podref, ifname: "net1" } },
});

const ENI: EniState = {
  eniId: "eni-0multus",
  mac: MAC,
  deviceIndex: 1,
  subnetId: "subnet-0multus",
  subnetIpv4Cidrs: ["198.51.100.128/25"],
  subnetIpv6Cidrs: [],
  primaryIpv4: "198.51.100.140",
  ipv4s: ["198.51.100.140"],
  ipv6s: [],
};

function input(overrides: Partial<DesiredInput>): DesiredInput {
  return {
    pods: [],
    nads: NADS,
    ipPools: [],
    overlappingReservations: [],
    enis: [ENI],
    multusEniIds: new Set([ENI.eniId]),
    allowedCidrs: [RANGE],
    now: 1_000_000,
    releaseGraceMs: 60_000,
    unusedSince: new Map(),
    ...overrides,
  };
}

const placed = (state: ReturnType<typeof desiredState>) =>
  state.interfaces.map((i) => `${i.name} ${i.addresses.join(",")}`);
const conflicts = (state: ReturnType<typeof desiredState>) =>
  state.conflicts.map((c) => `${c.pod.name}<>${c.other.name}`);

describe("whereabouts owners, by network", () => {
  // Pool names sort "0net-…" before "198.51.100.192-27", and "blue-…" after: both orders are covered.
  it.each<[string, string, string, string]>([
    ["the named network's pod (its pool sorts after the unnamed one's)", "blue", "cnf/multus-blue", "blue-0"],
    ["the unnamed network's pod", "blue", "cnf/multus-plain", "plain-0"],
    ["the named network's pod (its pool sorts before the unnamed one's)", "a", "cnf/multus-a", "a-0"],
    ["a pod naming its network without the namespace", "blue", "multus-blue", "blue-0"],
  ])(
    "places %s, which its own network's IPPool gives the address to, with no conflict",
    (_what, named, network, name) => {
      const nads = [nad(`multus-${named}`, named), nad("multus-plain")];
      const owner = (n: string) => `cnf/${n === "" ? "plain" : named}-0`;
      const state = desiredState(
        input({
          nads,
          pods: [pod(name, network)],
          ipPools: [pool(named, owner(named)), pool("", owner(""))],
        }),
      );
      expect(conflicts(state)).toEqual([]);
      expect(placed(state)).toEqual([`cnf/${name}/net1 ${ADDRESS}`]);
    },
  );

  it("reports a conflict with the owner of the pod's own network only", () => {
    const state = desiredState(
      input({
        pods: [pod("intruder", "cnf/multus-blue")],
        ipPools: [pool("", "cnf/plain-0"), pool("blue", "cnf/blue-0")],
      }),
    );
    expect(conflicts(state)).toEqual(["intruder<>blue-0"]);
    expect(state.conflicts[0]?.detail).toContain("(IPPool kube-system/blue-198.51.100.192-27)");
    expect(placed(state)).toEqual([]);
  });

  it("does not hold a pod to another network's allocation of the same address", () => {
    const state = desiredState(
      input({ pods: [pod("blue-0", "cnf/multus-blue")], ipPools: [pool("", "cnf/plain-9")] }),
    );
    expect(conflicts(state)).toEqual([]);
    expect(placed(state)).toEqual([`cnf/blue-0/net1 ${ADDRESS}`]);
  });

  it("reads an OverlappingRangeIPReservation's network from its name", () => {
    const reservation = (name: string, podref: string): OverlappingReservationInfo => ({
      namespace: "kube-system",
      name,
      podref,
      containerId: "x",
    });
    const blueOnly = desiredState(
      input({
        pods: [pod("plain-0", "cnf/multus-plain")],
        overlappingReservations: [reservation(`blue-${ADDRESS}`, "cnf/blue-0")],
      }),
    );
    expect(conflicts(blueOnly)).toEqual([]);
    const plain = desiredState(
      input({
        pods: [pod("plain-0", "cnf/multus-plain")],
        overlappingReservations: [reservation(ADDRESS, "cnf/plain-9")],
      }),
    );
    expect(conflicts(plain)).toEqual(["plain-0<>plain-9"]);
  });

  it("holds a pod whose NAD it does not know to every network's owners, as before", () => {
    const state = desiredState(
      input({ pods: [pod("lost-0", "cnf/multus-gone")], ipPools: [pool("blue", "cnf/blue-0")] }),
    );
    expect(conflicts(state)).toEqual(["lost-0<>blue-0"]);
  });

  it("keeps an address that whereabouts gives to a pod of this node in either network (no release)", () => {
    const enis = [{ ...ENI, ipv4s: ["198.51.100.140", ADDRESS] }];
    const starting: PodInfo = { ...pod("blue-0", "cnf/multus-blue"), annotations: {} };
    const state = desiredState(
      input({
        enis,
        pods: [starting],
        ipPools: [pool("", "cnf/plain-9"), pool("blue", "cnf/blue-0")],
        now: 10_000_000,
        unusedSince: new Map([[`eni-0multus ${ADDRESS}`, 0]]),
      }),
    );
    expect(state.releases).toEqual([]);
    expect(state.pending).toEqual([]);
  });
});

describe("whereaboutsOwners", () => {
  const range = (networkName: string): WhereaboutsRange => ({
    nad: `cnf/${networkName}`,
    family: 4,
    cidr: RANGE,
    first: "198.51.100.193",
    last: "198.51.100.222",
    exclude: [],
    networkName,
    slicePrefix: undefined,
  });

  it.each<[string, string[], string, string | undefined]>([
    ["one network over the range: any network", ["blue"], "blue-198.51.100.192-27", undefined],
    ["two networks, the named one's pool", ["blue", ""], "blue-198.51.100.192-27", "blue"],
    ["two networks, the unnamed one's pool", ["blue", ""], "198.51.100.192-27", ""],
    ["two networks, a node slice's unnamed pool", ["blue", ""], "node-a-198.51.100.192-27", ""],
    ["the longest network name that fits", ["blue", "blue-2"], "blue-2-198.51.100.192-27", "blue-2"],
    ["two named networks, a pool neither names", ["blue", "red"], "green-198.51.100.192-27", undefined],
  ])("reads an IPPool's network: %s", (_what, networks, name, network) => {
    const owners = whereaboutsOwners(
      [{ ...pool("", "cnf/p"), name }],
      [],
      networks.map(range),
      () => undefined,
    );
    expect(owners.of(ADDRESS)).toEqual([{ podref: "cnf/p", source: `IPPool kube-system/${name}`, network }]);
  });
});
