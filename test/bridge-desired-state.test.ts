import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anyCidrContains } from "../src/eni/ip.js";
import type { EniState } from "../src/eni/types.js";
import type { IpPoolInfo, NadInfo, PodInfo } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import {
  type DesiredInput,
  desiredState,
  unusedKey,
} from "../src/ipam-whereabouts-bridge/state/desired-state.js";
import { podNetworks, skipReasonOf } from "../src/ipam-whereabouts-bridge/state/pod-networks.js";
import { rangeContains } from "../src/ipam-whereabouts-bridge/state/whereabouts-ranges.js";

const MAC = "02:00:00:00:01:01";
const ETH0_MAC = "02:00:00:00:01:00";
const NAD: NadInfo = {
  namespace: "cnf",
  name: "multus-ipvlan",
  config: JSON.stringify({
    type: "ipvlan",
    master: "eth1",
    ipam: {
      type: "whereabouts",
      ipRanges: [{ range: "198.51.100.192/27" }, { range: "2001:db8:100:2::100/120" }],
    },
  }),
};

function eni(overrides: Partial<EniState> = {}): EniState {
  return {
    eniId: "eni-0multus",
    mac: MAC,
    deviceIndex: 1,
    subnetId: "subnet-0multus",
    subnetIpv4Cidrs: ["198.51.100.128/25"],
    subnetIpv6Cidrs: ["2001:db8:100:2::/64"],
    primaryIpv4: "198.51.100.140",
    ipv4s: ["198.51.100.140"],
    ipv6s: [],
    ...overrides,
  };
}

const ETH0: EniState = {
  eniId: "eni-0eth0",
  mac: ETH0_MAC,
  deviceIndex: 0,
  subnetId: "subnet-0nodes",
  subnetIpv4Cidrs: ["198.51.100.0/25"],
  subnetIpv6Cidrs: [],
  primaryIpv4: "198.51.100.10",
  ipv4s: ["198.51.100.10", "198.51.100.11"],
  ipv6s: [],
};

function pod(name: string, ips: string[], extra: Partial<PodInfo> & { mac?: string } = {}): PodInfo {
  const { mac = MAC, ...rest } = extra;
  return {
    namespace: "cnf",
    name,
    uid: `uid-${name}`,
    nodeName: "node-a",
    deleting: false,
    annotations: {
      "k8s.v1.cni.cncf.io/network-status": JSON.stringify([
        { name: "aws-cni", interface: "eth0", ips: ["198.51.100.11"], default: true },
        { name: "cnf/multus-ipvlan", interface: "net1", ips, mac },
      ]),
    },
    containers: [{ name: "app", image: "upf:1", args: [] }],
    ...rest,
  };
}

function pool(range: string, allocations: Record<string, string>): IpPoolInfo {
  return {
    namespace: "kube-system",
    name: range.replaceAll(/[:/]/g, "-"),
    range,
    allocations: Object.fromEntries(
      Object.entries(allocations).map(([offset, podref]) => [
        offset,
        { id: "c0ffee", podref, ifname: "net1" },
      ]),
    ),
  };
}

function input(overrides: Partial<DesiredInput> = {}): DesiredInput {
  return {
    pods: [],
    nads: [NAD],
    ipPools: [],
    overlappingReservations: [],
    enis: [ETH0, eni()],
    multusEniIds: new Set(["eni-0multus"]),
    allowedCidrs: ["198.51.100.192/27", "2001:db8:100:2::/64"],
    now: 1_000_000,
    releaseGraceMs: 60_000,
    unusedSince: new Map(),
    ...overrides,
  };
}

describe("pod networks", () => {
  it("reads the non-default entries with a MAC, in the current or the legacy annotation", () => {
    expect(podNetworks(pod("upf-0", ["198.51.100.193", "2001:DB8:100:2::101"])).attachments).toEqual([
      {
        network: "cnf/multus-ipvlan",
        interfaceName: "net1",
        mac: MAC,
        addresses: ["198.51.100.193", "2001:db8:100:2::101"],
      },
    ]);
    const legacy = pod("upf-0", []);
    const annotations = {
      "k8s.v1.cni.cncf.io/networks-status": JSON.stringify([
        { interface: "net1", mac: MAC, ips: ["198.51.100.200"] },
      ]),
    };
    expect(podNetworks({ ...legacy, annotations }).attachments[0]?.addresses).toEqual(["198.51.100.200"]);
  });

  it("reports an annotation that is not a JSON list, and an entry's address that is not one, keeping the rest", () => {
    const broken = { ...pod("x", []), annotations: { "k8s.v1.cni.cncf.io/network-status": "{" } };
    expect(podNetworks(broken).problems).toEqual([
      "pod cnf/x: the k8s.v1.cni.cncf.io/network-status annotation is not JSON",
    ]);
    const bad = podNetworks(pod("y", ["198.51.100.193", "not-an-ip"]));
    expect(bad.attachments[0]?.addresses).toEqual(["198.51.100.193"]);
    expect(bad.problems).toEqual([
      'pod cnf/y: k8s.v1.cni.cncf.io/network-status entry 1 lists "not-an-ip", which is not an address',
    ]);
  });

  it.each([
    ["the opt-out annotation", { annotations: { "multus-ipmgr.io/managed": "false" } }, "opted-out"],
    ["the sidecar annotation", { annotations: { "multus-ipmgr.io/sidecar": "true" } }, "sidecar"],
    [
      "a multus-ipmgr container running the sidecar",
      {
        containers: [
          {
            name: "ipmgr",
            image: "123.dkr.ecr.us-east-1.amazonaws.com/multus-ipmgr:0.1.0",
            args: ["sidecar"],
          },
        ],
      },
      "sidecar",
    ],
    [
      "a multus-ipmgr init container",
      { containers: [{ name: "ipmgr", image: "multus-ipmgr:0.1.0", args: ["init"] }] },
      undefined,
    ],
    [
      "another image running 'sidecar'",
      { containers: [{ name: "x", image: "envoy:1", args: ["sidecar"] }] },
      undefined,
    ],
  ])("skips a pod with %s: %s", (_what, extra, reason) => {
    expect(skipReasonOf({ ...pod("p", []), ...extra })).toBe(reason);
  });
});

describe("desired state", () => {
  it("places each attachment's addresses on the ENI with its MAC, named by pod and interface", () => {
    const state = desiredState(input({ pods: [pod("upf-0", ["198.51.100.193", "2001:db8:100:2::101"])] }));
    expect(state.interfaces).toEqual([
      { name: "cnf/upf-0/net1", mac: MAC, addresses: ["198.51.100.193", "2001:db8:100:2::101"] },
    ]);
    expect(state.podOfInterface.get("cnf/upf-0/net1")).toEqual({
      namespace: "cnf",
      name: "upf-0",
      uid: "uid-upf-0",
    });
    expect(state.conflicts).toEqual([]);
    expect(state.releases).toEqual([]);
  });

  it("leaves out an attachment whose MAC is on no ENI of this node (macvlan, SR-IOV)", () => {
    const state = desiredState(input({ pods: [pod("m", ["198.51.100.200"], { mac: "0a:58:0a:00:00:01" })] }));
    expect(state.interfaces).toEqual([]);
    expect(state.unmatched).toEqual([
      { pod: { namespace: "cnf", name: "m", uid: "uid-m" }, interfaceName: "net1", mac: "0a:58:0a:00:00:01" },
    ]);
  });

  it("leaves opted-out and sidecar pods to themselves, but never releases what they carry", () => {
    const state = desiredState(
      input({
        pods: [
          pod("own", ["198.51.100.195"], {
            annotations: {
              ...pod("own", ["198.51.100.195"]).annotations,
              "multus-ipmgr.io/managed": "false",
            },
          }),
        ],
        enis: [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.195"] })],
        unusedSince: new Map([[unusedKey("eni-0multus", "198.51.100.195"), 0]]),
      }),
    );
    expect(state.interfaces).toEqual([]);
    expect(state.skippedPods.map((s) => s.reason)).toEqual(["opted-out"]);
    expect(state.releases).toEqual([]);
    expect(state.pending).toEqual([]);
  });

  it("does not move an address whereabouts allocates to another pod, and reports the conflict on both pods", () => {
    const state = desiredState(
      input({
        pods: [pod("upf-0", ["198.51.100.193", "198.51.100.194"])],
        ipPools: [pool("198.51.100.192/27", { "1": "cnf/upf-0", "2": "cnf/upf-9" })],
      }),
    );
    expect(state.interfaces).toEqual([{ name: "cnf/upf-0/net1", mac: MAC, addresses: ["198.51.100.193"] }]);
    expect(state.conflicts).toEqual([
      {
        address: "198.51.100.194",
        pod: { namespace: "cnf", name: "upf-0", uid: "uid-upf-0" },
        other: { namespace: "cnf", name: "upf-9", uid: undefined },
        detail:
          "address 198.51.100.194 on cnf/upf-0 (net1) is allocated by whereabouts to cnf/upf-9 (IPPool kube-system/198.51.100.192-27); " +
          "it is not assigned to any ENI until only one pod claims it: recreate the pod that does not own it, or clean up the stale allocation.",
      },
    ]);
  });

  it("reads owners from OverlappingRangeIPReservations too (IPv6 names with - for :)", () => {
    const state = desiredState(
      input({
        pods: [pod("upf-0", ["2001:db8:100:2::101"])],
        overlappingReservations: [
          { namespace: "kube-system", name: "2001-db8-100-2--101", podref: "cnf/other", containerId: "x" },
        ],
      }),
    );
    expect(state.conflicts.map((c) => `${c.address} ${c.other.name}`)).toEqual(["2001:db8:100:2::101 other"]);
  });

  it("keeps the address that only an OverlappingRangeIPReservation named <network_name>-<ip> gives to a starting pod", () => {
    const nads = [
      {
        ...NAD,
        config: JSON.stringify({
          ipam: { type: "whereabouts", range: "198.51.100.192/27", network_name: "blue" },
        }),
      },
    ];
    const starting: PodInfo = { ...pod("upf-1", []), annotations: {} };
    const enis = [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.200"], ipv6s: ["2001:db8:100:2::105"] })];
    const overlappingReservations = [
      { namespace: "kube-system", name: "blue-198.51.100.200", podref: "cnf/upf-1", containerId: "x" },
    ];
    const first = desiredState(
      input({ nads, pods: [starting], enis, overlappingReservations, now: 1_000_000 }),
    );
    const later = desiredState(
      input({
        nads,
        pods: [starting],
        enis,
        overlappingReservations,
        now: 2_000_000,
        unusedSince: first.unusedSince,
      }),
    );
    expect([...first.pending, ...later.releases]).toEqual([]);
  });

  it("reads a reservation whose network_name is made of hex letters as <network_name>-<IPv6>, not as one IPv6 address", () => {
    const nads = [
      {
        ...NAD,
        config: JSON.stringify({
          ipam: { type: "whereabouts", range: "2001:db8:100:2::100/120", network_name: "cafe" },
        }),
      },
    ];
    const state = desiredState(
      input({
        nads,
        pods: [pod("upf-0", ["2001:db8:100:2::101"])],
        overlappingReservations: [
          {
            namespace: "kube-system",
            name: "cafe-2001-db8-100-2--101",
            podref: "cnf/other",
            containerId: "x",
          },
        ],
      }),
    );
    expect(state.conflicts.map((c) => `${c.address} ${c.other.name}`)).toEqual(["2001:db8:100:2::101 other"]);
  });

  it("reports two pods of this node carrying one address as a conflict on each, and assigns it to neither", () => {
    const state = desiredState(input({ pods: [pod("a", ["198.51.100.200"]), pod("b", ["198.51.100.200"])] }));
    expect(state.interfaces).toEqual([]);
    expect(state.conflicts.map((c) => `${c.pod.name}<>${c.other.name}`)).toEqual(["a<>b", "b<>a"]);
  });

  it("names the other pod of a conflict with its uid when it is a pod of this node (its Event then shows in kubectl describe)", () => {
    const carriedByTwo = desiredState(
      input({ pods: [pod("a", ["198.51.100.200"]), pod("b", ["198.51.100.200"])] }),
    );
    expect(carriedByTwo.conflicts.map((c) => `${c.pod.uid}<>${c.other.uid}`)).toEqual([
      "uid-a<>uid-b",
      "uid-b<>uid-a",
    ]);
    // Whereabouts' owner is an opted-out pod of this node: known by its uid too.
    const ownedByOptedOut = desiredState(
      input({
        pods: [
          pod("intruder", ["198.51.100.200"]),
          pod("owner", [], { annotations: { "multus-ipmgr.io/managed": "false" } }),
        ],
        ipPools: [pool("198.51.100.192/27", { "8": "cnf/owner" })],
      }),
    );
    expect(ownedByOptedOut.conflicts.map((c) => `${c.pod.uid}<>${c.other.uid}`)).toEqual([
      "uid-intruder<>uid-owner",
    ]);
  });

  it("lets a pod being deleted yield its address to a running pod, and keeps it carried (no release)", () => {
    const state = desiredState(
      input({
        pods: [pod("old", ["198.51.100.200"], { deleting: true }), pod("new", ["198.51.100.200"])],
        enis: [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.200"] })],
      }),
    );
    expect(state.interfaces.map((i) => i.name)).toEqual(["cnf/new/net1"]);
    expect(state.conflicts).toEqual([]);
    expect(state.releases).toEqual([]);
  });

  it("keeps the addresses of a pod being deleted placed while it exists", () => {
    const state = desiredState(input({ pods: [pod("going", ["198.51.100.200"], { deleting: true })] }));
    expect(state.interfaces.map((i) => i.name)).toEqual(["cnf/going/net1"]);
  });

  it("releases an unused address of a managed range only after the grace period, with its reason", () => {
    const enis = [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.201"], ipv6s: ["2001:db8:100:2::1fe"] })];
    const first = desiredState(input({ enis, now: 1_000_000 }));
    expect(first.releases).toEqual([]);
    expect(first.pending).toEqual([
      { eniId: "eni-0multus", address: "198.51.100.201", releaseAt: 1_060_000 },
      { eniId: "eni-0multus", address: "2001:db8:100:2::1fe", releaseAt: 1_060_000 },
    ]);
    const later = desiredState(input({ enis, now: 1_060_000, unusedSince: first.unusedSince }));
    expect(later.releases).toEqual([
      {
        eniId: "eni-0multus",
        address: "198.51.100.201",
        family: 4,
        reason:
          "no pod of this node has carried 198.51.100.201 for 60 s (grace 60 s); whereabouts allocates it to no pod; " +
          "it lies in a managed range and is a secondary address of Multus ENI eni-0multus",
      },
      expect.objectContaining({ address: "2001:db8:100:2::1fe", family: 6 }),
    ]);
  });

  it("never releases the network or the broadcast address of a whereabouts block (whereabouts never hands them out)", () => {
    const held = ["198.51.100.140", "198.51.100.192", "198.51.100.223"];
    const enis = [ETH0, eni({ ipv4s: held, ipv6s: ["2001:db8:100:2::100", "2001:db8:100:2::1ff"] })];
    const first = desiredState(input({ enis, now: 1_000_000 }));
    const later = desiredState(input({ enis, now: 2_000_000, unusedSince: first.unusedSince }));
    expect([...first.pending, ...later.releases]).toEqual([]);
  });

  it("releases from a range written with host bits as whereabouts allocates it, from the block's first usable address", () => {
    const nads = [
      { ...NAD, config: JSON.stringify({ ipam: { type: "whereabouts", range: "198.51.100.210/27" } }) },
    ];
    const enis = [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.195"] })];
    const first = desiredState(input({ nads, enis, now: 1_000_000 }));
    expect(first.pending.map((p) => p.address)).toEqual(["198.51.100.195"]);
  });

  it("restarts the grace when a pod carries the address again (a StatefulSet pod restarting)", () => {
    const enis = [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.201"] })];
    const gone = desiredState(input({ enis, now: 1_000_000 }));
    const back = desiredState(
      input({
        enis,
        now: 1_030_000,
        unusedSince: gone.unusedSince,
        pods: [pod("upf-0", ["198.51.100.201"])],
      }),
    );
    expect(back.unusedSince.size).toBe(0);
    const goneAgain = desiredState(input({ enis, now: 1_070_000, unusedSince: back.unusedSince }));
    expect(goneAgain.releases).toEqual([]);
    expect(goneAgain.pending[0]?.releaseAt).toBe(1_130_000);
  });

  it.each([
    ["outside every whereabouts range", ["198.51.100.140", "198.51.100.130"], "eni-0multus"],
    [
      "outside the allowed CIDRs",
      ["198.51.100.140", "198.51.100.201"],
      "eni-0multus",
      ["2001:db8:100:2::/64"],
    ],
    ["the primary", ["198.51.100.193", "198.51.100.140"], "eni-0multus"],
    ["on an ENI that is not a Multus ENI", ["198.51.100.140", "198.51.100.201"], "eni-0other"],
  ])("never releases an address %s", (_what, ipv4s, eniId, allowed = ["198.51.100.192/27"]) => {
    const state = desiredState(
      input({
        enis: [ETH0, eni({ eniId, ipv4s, primaryIpv4: ipv4s[0] })],
        allowedCidrs: allowed,
        now: 10_000_000,
        unusedSince: new Map(ipv4s.map((a) => [unusedKey(eniId, a), 0])),
      }),
    );
    expect(state.releases).toEqual([]);
  });

  it("keeps an address whereabouts allocates to a pod of this node that has no network-status yet", () => {
    const starting: PodInfo = { ...pod("starting", []), annotations: {} };
    const state = desiredState(
      input({
        pods: [starting],
        enis: [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.197"] })],
        ipPools: [pool("198.51.100.192/27", { "5": "cnf/starting" })],
        unusedSince: new Map([[unusedKey("eni-0multus", "198.51.100.197"), 0]]),
      }),
    );
    expect(state.releases).toEqual([]);
  });

  it("releases an address whereabouts still allocates to a pod that is not on this node, naming it", () => {
    const state = desiredState(
      input({
        enis: [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.197"] })],
        ipPools: [pool("198.51.100.192/27", { "5": "cnf/elsewhere" })],
        unusedSince: new Map([[unusedKey("eni-0multus", "198.51.100.197"), 0]]),
      }),
    );
    expect(state.releases.map((r) => r.reason)).toEqual([
      expect.stringContaining(
        "whereabouts allocates it to cnf/elsewhere, which is not a pod of this node (gone, or on another node; IPPool kube-system/198.51.100.192-27)",
      ),
    ]);
  });

  it("reports unreadable NADs and IPPool allocations on their objects, and uses the rest", () => {
    const state = desiredState(
      input({
        nads: [NAD, { namespace: "cnf", name: "bad", uid: "uid-bad", config: "{" }],
        ipPools: [pool("198.51.100.192/27", { x: "cnf/a", "99": "cnf/b" })],
      }),
    );
    expect(state.problems.map((p) => [p.kind, `${p.namespace}/${p.name}`, p.uid])).toEqual([
      ["NetworkAttachmentDefinition", "cnf/bad", "uid-bad"],
      ["IPPool", "kube-system/198.51.100.192-27", undefined],
      ["IPPool", "kube-system/198.51.100.192-27", undefined],
    ]);
    expect(state.problems.map((p) => p.message)).toEqual([
      "NAD cnf/bad: spec.config is not JSON; the bridge keeps what it last read of this NAD (nothing) and its reservations until the NAD reads again or is deleted: fix spec.config",
      'IPPool kube-system/198.51.100.192-27: allocation "99" is not an offset inside 198.51.100.192/27; whereabouts keys allocations by the decimal offset of the address in spec.range: remove or fix the entry',
      'IPPool kube-system/198.51.100.192-27: allocation "x" is not an offset inside 198.51.100.192/27; whereabouts keys allocations by the decimal offset of the address in spec.range: remove or fix the entry',
    ]);
    expect(state.unreadableNads).toEqual(["cnf/bad"]);
    expect(state.ranges.map((r) => r.cidr)).toEqual(["198.51.100.192/27", "2001:db8:100:2::100/120"]);
  });

  it("keeps the ranges a NAD had when it last read while its configuration cannot be read", () => {
    const good = desiredState(input());
    expect(good.rangesByNad.get("cnf/multus-ipvlan")?.map((r) => r.cidr)).toEqual([
      "198.51.100.192/27",
      "2001:db8:100:2::100/120",
    ]);
    const typo = { ...NAD, config: NAD.config.slice(0, -1) };
    const held = eni({ ipv4s: ["198.51.100.140", "198.51.100.199"] });
    const broken = desiredState(
      input({
        nads: [typo],
        enis: [ETH0, held],
        lastGoodRanges: good.rangesByNad,
        unusedSince: new Map([[unusedKey("eni-0multus", "198.51.100.199"), 0]]),
      }),
    );
    expect(broken.unreadableNads).toEqual(["cnf/multus-ipvlan"]);
    expect(broken.ranges.map((r) => r.cidr)).toEqual(["198.51.100.192/27", "2001:db8:100:2::100/120"]);
    // Carried forward again on the next computation, so a typo that stays keeps its ranges.
    expect(broken.rangesByNad).toEqual(good.rangesByNad);
    // Without a last good reading the ranges are unknown: nothing in them is released.
    const unknown = desiredState(
      input({
        nads: [typo],
        enis: [ETH0, held],
        unusedSince: new Map([[unusedKey("eni-0multus", "198.51.100.199"), 0]]),
      }),
    );
    expect(unknown.releases).toEqual([]);
  });

  it("lists a live pod whose network-status cannot be read, and not a finished one", () => {
    const unreadable = { ...pod("upf-1", []), annotations: { "k8s.v1.cni.cncf.io/network-status": "[{" } };
    const state = desiredState(
      input({
        pods: [unreadable, { ...unreadable, name: "job-0", uid: "uid-job-0", phase: "Succeeded" }],
      }),
    );
    expect(state.unreadablePods).toEqual(["cnf/upf-1"]);
    expect(state.problems.map((p) => [p.kind, p.name, p.uid])).toEqual([["Pod", "upf-1", "uid-upf-1"]]);
  });
});

describe("finished pods", () => {
  it("carry nothing: a Succeeded or Failed pod's address is released after the grace", () => {
    for (const phase of ["Succeeded", "Failed"]) {
      const state = desiredState(
        input({
          pods: [pod("job-0", ["198.51.100.199"], { phase })],
          enis: [ETH0, eni({ ipv4s: ["198.51.100.140", "198.51.100.199"] })],
          ipPools: [pool("198.51.100.192/27", { "7": "cnf/job-0" })],
          unusedSince: new Map([[unusedKey("eni-0multus", "198.51.100.199"), 0]]),
        }),
      );
      expect(state.interfaces).toEqual([]);
      expect(state.releases.map((r) => r.address)).toEqual(["198.51.100.199"]);
    }
  });

  it("do not block the address's next owner: the running pod whereabouts names gets it, with no conflict", () => {
    const state = desiredState(
      input({
        pods: [
          pod("job-0", ["198.51.100.199"], { phase: "Succeeded" }),
          pod("upf-1", ["198.51.100.199"], { phase: "Running" }),
        ],
        ipPools: [pool("198.51.100.192/27", { "7": "cnf/upf-1" })],
      }),
    );
    expect(state.conflicts).toEqual([]);
    expect(state.interfaces.map((i) => [i.name, i.addresses])).toEqual([
      ["cnf/upf-1/net1", ["198.51.100.199"]],
    ]);
  });

  it("whereabouts' owner wins a tie between two running pods of this node", () => {
    const state = desiredState(
      input({
        pods: [pod("upf-0", ["198.51.100.199"]), pod("upf-1", ["198.51.100.199"])],
        ipPools: [pool("198.51.100.192/27", { "7": "cnf/upf-1" })],
      }),
    );
    expect(state.interfaces.map((i) => i.name)).toEqual(["cnf/upf-1/net1"]);
    expect(state.conflicts.map((c) => [c.pod.name, c.other.name])).toEqual([["upf-0", "upf-1"]]);
  });
});

// ---- Properties ---------------------------------------------------------------------------------------

const RANGE_V4 = ["198.51.100.192/27", "198.51.100.224/28"];
const ENI_IDS = ["eni-0multus", "eni-0other", "eni-0eth0"];
const addressArb = fc.oneof(
  fc.integer({ min: 128, max: 255 }).map((n) => `198.51.100.${n}`),
  fc.integer({ min: 0x100, max: 0x1ff }).map((n) => `2001:db8:100:2::${n.toString(16)}`),
);

const worldArb = fc.record({
  pods: fc.array(
    fc.record({
      name: fc.constantFrom("a", "b", "c", "d"),
      ips: fc.uniqueArray(addressArb, { maxLength: 3 }),
      deleting: fc.boolean(),
      optOut: fc.boolean(),
    }),
    { maxLength: 4 },
  ),
  held: fc.array(fc.tuple(fc.constantFrom(...ENI_IDS), addressArb), { maxLength: 10 }),
  allowed: fc.subarray(["198.51.100.192/27", "198.51.100.128/25", "2001:db8:100:2::/64"]),
  ranges: fc.subarray(RANGE_V4),
  elapsed: fc.integer({ min: 0, max: 200_000 }),
  owners: fc.array(fc.tuple(fc.integer({ min: 0, max: 31 }), fc.constantFrom("cnf/a", "cnf/b", "cnf/x")), {
    maxLength: 5,
  }),
});

function enisOf(held: readonly (readonly [string, string])[]): EniState[] {
  return ENI_IDS.map((eniId, index) => {
    const mine = [...new Set(held.filter(([e]) => e === eniId).map(([, a]) => a))];
    const primary = `198.51.100.${140 + index}`;
    return eni({
      eniId,
      mac: `02:00:00:00:01:0${index + 1}`,
      deviceIndex: index + 1,
      primaryIpv4: primary,
      ipv4s: [primary, ...mine.filter((a) => !a.includes(":") && a !== primary)],
      ipv6s: mine.filter((a) => a.includes(":")),
    });
  });
}

type WorldValue = typeof worldArb extends fc.Arbitrary<infer W> ? W : never;

function inputOf(world: WorldValue): DesiredInput {
  const uniquePods = new Map(world.pods.map((p) => [p.name, p]));
  return input({
    pods: [...uniquePods.values()].map((p) => {
      const base = pod(p.name, p.ips, { deleting: p.deleting });
      return p.optOut
        ? { ...base, annotations: { ...base.annotations, "multus-ipmgr.io/managed": "false" } }
        : base;
    }),
    nads: [
      {
        namespace: "cnf",
        name: "n",
        config: JSON.stringify({
          type: "ipvlan",
          ipam: {
            type: "whereabouts",
            ipRanges: [...world.ranges.map((range) => ({ range })), { range: "2001:db8:100:2::100/120" }],
          },
        }),
      },
    ],
    ipPools: [pool("198.51.100.192/27", Object.fromEntries(world.owners.map(([o, p]) => [String(o), p])))],
    enis: enisOf(world.held),
    multusEniIds: new Set(["eni-0multus", "eni-0other"]),
    allowedCidrs: world.allowed,
    now: 1_000_000 + world.elapsed,
    releaseGraceMs: 100_000,
    unusedSince: new Map(world.held.map(([e, a]) => [unusedKey(e, a), 1_000_000])),
  });
}

describe("desired state, properties", () => {
  it("never releases a primary, an address a pod of the node carries, one outside the managed ranges, or one of a non-Multus ENI; and only after the grace", () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const given = inputOf(world);
        const state = desiredState(given);
        const carried = new Set(
          given.pods.flatMap((p) => podNetworks(p).attachments.flatMap((a) => a.addresses)),
        );
        for (const release of state.releases) {
          const eniState = given.enis.find((e) => e.eniId === release.eniId);
          expect(eniState?.primaryIpv4).not.toBe(release.address);
          expect(carried.has(release.address)).toBe(false);
          expect(given.multusEniIds.has(release.eniId)).toBe(true);
          expect(state.ranges.some((r) => rangeContains(r, release.address))).toBe(true);
          expect(anyCidrContains(given.allowedCidrs, release.address)).toBe(true);
          const since = given.unusedSince.get(unusedKey(release.eniId, release.address)) ?? given.now;
          expect(given.now - since).toBeGreaterThanOrEqual(given.releaseGraceMs);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("does not depend on the order of its inputs", () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const given = inputOf(world);
        const reversed = desiredState({
          ...given,
          pods: [...given.pods].reverse(),
          enis: [...given.enis].reverse(),
          ipPools: [...given.ipPools].reverse(),
        });
        const straight = desiredState(given);
        expect(reversed.interfaces).toEqual(straight.interfaces);
        expect(reversed.conflicts).toEqual(straight.conflicts);
        expect(reversed.releases).toEqual(straight.releases);
      }),
      { numRuns: 200 },
    );
  });

  it("never places an address in conflict, and places each address for one pod at most", () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const state = desiredState(inputOf(world));
        const placed = state.interfaces.flatMap((i) => i.addresses);
        expect(new Set(placed).size).toBe(placed.length);
        for (const conflict of state.conflicts) expect(placed).not.toContain(conflict.address);
      }),
      { numRuns: 300 },
    );
  });
});
