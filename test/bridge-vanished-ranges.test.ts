/**
 * A NAD that named a whereabouts range before and names none now (spec.config emptied, `ipRanges` spelt
 * `ipRange`, `"type": "whereabout"`, the ipam block removed): a problem on the NAD, and its range kept while a
 * pod carries an address in it. Pure here; the keeper deleting no reservation over it against the simulator:
 * test/bridge-vanished-ranges-sim.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { EniState } from "../src/eni/types.js";
import type { NadInfo, PodInfo } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { type DesiredInput, desiredState } from "../src/ipam-whereabouts-bridge/state/desired-state.js";
import {
  rangesOfNad,
  whyNoWhereaboutsRange,
} from "../src/ipam-whereabouts-bridge/state/whereabouts-ranges.js";

const MAC = "02:00:00:00:01:01";
const IPVLAN = { cniVersion: "0.3.1", type: "ipvlan", master: "eth1" };
const GOOD = { ...IPVLAN, ipam: { type: "whereabouts", range: "198.51.100.192/27" } };

const nad = (config: unknown): NadInfo => ({
  namespace: "cnf",
  name: "multus-ipvlan",
  uid: "uid-nad",
  config: typeof config === "string" ? config : JSON.stringify(config),
});

function pod(name: string, ips: string[]): PodInfo {
  return {
    namespace: "cnf",
    name,
    uid: `uid-${name}`,
    nodeName: "node-a",
    deleting: false,
    annotations: {
      "k8s.v1.cni.cncf.io/network-status": JSON.stringify([
        { name: "cnf/multus-ipvlan", interface: "net1", ips, mac: MAC },
      ]),
    },
    containers: [{ name: "app", image: "upf:1", args: [] }],
  };
}

const ENI: EniState = {
  eniId: "eni-0multus",
  mac: MAC,
  deviceIndex: 1,
  subnetId: "subnet-0multus",
  subnetIpv4Cidrs: ["198.51.100.128/25"],
  subnetIpv6Cidrs: [],
  primaryIpv4: "198.51.100.140",
  ipv4s: ["198.51.100.140", "198.51.100.193"],
  ipv6s: [],
};

function input(overrides: Partial<DesiredInput>): DesiredInput {
  return {
    pods: [],
    nads: [nad(GOOD)],
    ipPools: [],
    overlappingReservations: [],
    enis: [ENI],
    multusEniIds: new Set([ENI.eniId]),
    allowedCidrs: ["198.51.100.192/27"],
    now: 1_000_000,
    releaseGraceMs: 60_000,
    unusedSince: new Map(),
    ...overrides,
  };
}

const lastGood = desiredState(input({})).rangesByNad;

/** The typos of issue 27 that leave a NAD naming no whereabouts range, and why the bridge says it names none. */
const VANISHING: [string, unknown, string][] = [
  ["spec.config empty", "", "its spec.config is empty"],
  [
    '"type": "whereabout"',
    { ...IPVLAN, ipam: { type: "whereabout", range: "198.51.100.192/27" } },
    'its ipam type is "whereabout", not "whereabouts"',
  ],
  ["the ipam block removed", IPVLAN, 'it has no "ipam" block'],
  [
    "the ipam block removed from a plugin list",
    { cniVersion: "0.3.1", name: "n", plugins: [IPVLAN, { type: "tuning" }] },
    'it has no "ipam" block',
  ],
];

describe("a NAD that named a whereabouts range and names none now", () => {
  it.each(VANISHING)(
    "with %s: kept, and reported on the NAD, while a pod of this node carries an address in it",
    (_what, config, why) => {
      const state = desiredState(
        input({ nads: [nad(config)], pods: [pod("upf-0", ["198.51.100.193"])], lastGoodRanges: lastGood }),
      );
      expect(state.ranges.map((r) => r.cidr)).toEqual(["198.51.100.192/27"]);
      expect(state.rangesByNad.get("cnf/multus-ipvlan")?.map((r) => r.cidr)).toEqual(["198.51.100.192/27"]);
      expect(state.problems).toEqual([
        {
          kind: "NetworkAttachmentDefinition",
          namespace: "cnf",
          name: "multus-ipvlan",
          uid: "uid-nad",
          message:
            `NAD cnf/multus-ipvlan named the whereabouts range 198.51.100.192/27 and names none now (${why}), while pods still carry ` +
            "addresses in it (198.51.100.193 on cnf/upf-0); the bridge keeps the range and its subnet CIDR reservations while a pod " +
            "carries an address in it: fix spec.config, or delete those pods if the NAD is meant to leave whereabouts",
        },
      ]);
    },
  );

  it.each(VANISHING)(
    "with %s: kept while whereabouts allocates an address in it to a pod of any node",
    (_what, config) => {
      const state = desiredState(
        input({
          nads: [nad(config)],
          ipPools: [
            {
              namespace: "kube-system",
              name: "198.51.100.192-27",
              range: "198.51.100.192/27",
              allocations: { "9": { id: "c0ffee", podref: "cnf/upf-elsewhere", ifname: "net1" } },
            },
          ],
          lastGoodRanges: lastGood,
        }),
      );
      expect(state.ranges.map((r) => r.cidr)).toEqual(["198.51.100.192/27"]);
      expect(state.problems.map((p) => p.message)).toEqual([
        expect.stringContaining("(198.51.100.201 on cnf/upf-elsewhere)"),
      ]);
    },
  );

  it.each(VANISHING)(
    "with %s: goes, with no problem, once no pod carries an address in it",
    (_what, config) => {
      const state = desiredState(
        input({ nads: [nad(config)], pods: [pod("other", ["203.0.113.9"])], lastGoodRanges: lastGood }),
      );
      expect(state.ranges).toEqual([]);
      expect(state.rangesByNad.get("cnf/multus-ipvlan")).toEqual([]);
      expect(state.problems).toEqual([]);
      // And stays gone: a NAD never read with ranges names none, which is no problem.
      const next = desiredState(
        input({
          nads: [nad(config)],
          pods: [pod("upf-0", ["198.51.100.193"])],
          lastGoodRanges: state.rangesByNad,
        }),
      );
      expect(next.ranges).toEqual([]);
      expect(next.problems).toEqual([]);
    },
  );

  it("keeps, of several ranges it named, only those a pod carries an address in", () => {
    const dual = nad({
      ...IPVLAN,
      ipam: {
        type: "whereabouts",
        ipRanges: [{ range: "198.51.100.192/27" }, { range: "198.51.100.224/27" }],
      },
    });
    const before = desiredState(input({ nads: [dual] })).rangesByNad;
    const state = desiredState(
      input({ nads: [nad(IPVLAN)], pods: [pod("upf-0", ["198.51.100.230"])], lastGoodRanges: before }),
    );
    expect(state.ranges.map((r) => r.cidr)).toEqual(["198.51.100.224/27"]);
  });

  it("does not release a carried address meanwhile, and releases an unused one of the kept range after the grace", () => {
    const enis = [{ ...ENI, ipv4s: ["198.51.100.140", "198.51.100.193", "198.51.100.199"] }];
    const first = desiredState(
      input({ nads: [nad("")], enis, pods: [pod("upf-0", ["198.51.100.193"])], lastGoodRanges: lastGood }),
    );
    const later = desiredState(
      input({
        nads: [nad("")],
        enis,
        pods: [pod("upf-0", ["198.51.100.193"])],
        lastGoodRanges: first.rangesByNad,
        unusedSince: first.unusedSince,
        now: 2_000_000,
      }),
    );
    expect(later.releases.map((r) => r.address)).toEqual(["198.51.100.199"]);
  });
});

describe("the addresses pods carry, for the reservations keeper", () => {
  it("are this node's pods' (skipped ones too) and those whereabouts gives a pod of any node, sorted, once each", () => {
    const state = desiredState(
      input({
        nads: [nad("")],
        pods: [
          pod("upf-1", ["198.51.100.199", "2001:db8::5"]),
          {
            ...pod("opted", ["198.51.100.193"]),
            annotations: {
              ...pod("opted", ["198.51.100.193"]).annotations,
              "multus-ipmgr.io/managed": "false",
            },
          },
        ],
        ipPools: [
          {
            namespace: "kube-system",
            name: "198.51.100.192-27",
            range: "198.51.100.192/27",
            allocations: {
              "7": { id: "c0ffee", podref: "cnf/upf-1", ifname: "net1" },
              "9": { id: "c0ffee", podref: "cnf/upf-elsewhere", ifname: "net1" },
            },
          },
        ],
      }),
    );
    expect(state.carried).toEqual(["198.51.100.193", "198.51.100.199", "198.51.100.201", "2001:db8::5"]);
  });
});

describe("a whereabouts ipam that names no range", () => {
  it.each<[string, Record<string, unknown>, string]>([
    [
      "ipRanges spelt ipRange",
      { type: "whereabouts", ipRange: [{ range: "198.51.100.192/27" }] },
      '"type", "ipRange"',
    ],
    ["range spelt ranges", { type: "whereabouts", ranges: "198.51.100.192/27" }, '"type", "ranges"'],
    ["an empty ipRanges", { type: "whereabouts", ipRanges: [] }, '"type", "ipRanges"'],
    ['"range": "" and no ipRanges', { type: "whereabouts", range: "" }, '"type", "range"'],
  ])("with %s is a problem (whereabouts cannot allocate from it)", (_what, ipam, keys) => {
    expect(rangesOfNad(nad({ ...IPVLAN, ipam }))).toEqual({
      ranges: [],
      problems: [
        `NAD cnf/multus-ipvlan: its whereabouts ipam names no range (no "range", no "ipRanges"; its keys are ${keys}), so whereabouts cannot allocate from it`,
      ],
    });
  });

  it("keeps the range it had as an unreadable NAD does, with the NAD listed: no reservation is pruned", () => {
    const typo = nad({ ...IPVLAN, ipam: { type: "whereabouts", ipRange: [{ range: "198.51.100.192/27" }] } });
    const state = desiredState(input({ nads: [typo], lastGoodRanges: lastGood }));
    expect(state.unreadableNads).toEqual(["cnf/multus-ipvlan"]);
    expect(state.ranges.map((r) => r.cidr)).toEqual(["198.51.100.192/27"]);
    expect(state.problems.map((p) => p.kind)).toEqual(["NetworkAttachmentDefinition"]);
  });
});

describe("why a NAD names no whereabouts range", () => {
  it.each<[string, string, string]>([
    ["an empty spec.config", "", "its spec.config is empty"],
    ["a blank spec.config", "  ", "its spec.config is empty"],
    ["a JSON list", "[]", 'it has no "ipam" block'],
    ["a JSON string", '"x"', "its spec.config is not a JSON object"],
    [
      "host-local",
      JSON.stringify({ ...IPVLAN, ipam: { type: "host-local" } }),
      'its ipam type is "host-local", not "whereabouts"',
    ],
    [
      "an ipam without type",
      JSON.stringify({ ...IPVLAN, ipam: { range: "198.51.100.192/27" } }),
      'its ipam type is unset, not "whereabouts"',
    ],
  ])("%s", (_what, config, why) => {
    expect(rangesOfNad(nad(config)).ranges).toEqual([]);
    expect(whyNoWhereaboutsRange(nad(config))).toBe(why);
  });
});
