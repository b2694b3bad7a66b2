import { describe, expect, it } from "vitest";
import type { Ec2NetworkInterface, EniState } from "../src/eni/types.js";
import {
  PrefixRefusalMemory,
  sliceFingerprint,
} from "../src/ipam-whereabouts-bridge/prefixes/prefix-refusal-memory.js";
import { takenInside } from "../src/ipam-whereabouts-bridge/prefixes/prefix-swap-check.js";

const SLICE = "198.51.100.160/28";
const at = (fingerprint = "") => ({ eniId: "eni-0a1", slice: SLICE, fingerprint });
const KEY = `eni-0a1 ${SLICE}`;

function eni(overrides: Partial<EniState> = {}): EniState {
  return {
    eniId: "eni-0a1",
    mac: "02:00:00:00:01:01",
    deviceIndex: 1,
    subnetId: "subnet-0multus",
    subnetIpv4Cidrs: ["198.51.100.128/25"],
    subnetIpv6Cidrs: [],
    primaryIpv4: "198.51.100.140",
    ipv4s: ["198.51.100.140"],
    ipv6s: [],
    ipv4Prefixes: [],
    ipv6Prefixes: [],
    ...overrides,
  };
}

describe("PrefixRefusalMemory", () => {
  it("withholds a refused slice until its backoff ends, with the cause, the retry and the fix in one sentence", () => {
    const memory = new PrefixRefusalMemory({ baseMs: 60_000, maxMs: 1_800_000 }, () => 0);
    expect(
      memory.refused(at(), "ec2-refused", "EC2 refused the prefixes 198.51.100.160/28 on ENI eni-0a1: no", 0),
    ).toBe(60_000);
    expect(memory.withheld(59_999, () => "")).toEqual(
      new Map([
        [
          KEY,
          {
            reason: "ec2-refused",
            detail:
              "EC2 refused the prefixes 198.51.100.160/28 on ENI eni-0a1: no; nothing is unassigned or assigned for the slice 198.51.100.160/28 on ENI eni-0a1 again until the prefixes its ENI holds there change, or for 60 s: fix what EC2's message names (a non-Nitro instance type, an address of another ENI or a reservation inside the slice), or set IPMGR_BRIDGE_PREFIX_MODE=defer",
          },
        ],
      ]),
    );
    expect(memory.nextAt(59_999)).toBe(60_000);
    expect(memory.withheld(60_000, () => "").size).toBe(0);
    expect(memory.nextAt(60_000)).toBeUndefined();
  });

  it("a slice refused again after its backoff waits twice as long, up to the cap", () => {
    const memory = new PrefixRefusalMemory({ baseMs: 1_000, maxMs: 3_000 }, () => 0);
    const delays = [0, 1, 2, 3].map((i) => memory.refused(at(), "held-in-subnet", "taken", i * 10_000));
    expect(delays).toEqual([1_000, 2_000, 3_000, 3_000]);
  });

  it("forgets a slice, backoff included, once the prefixes its ENI holds inside change", () => {
    const memory = new PrefixRefusalMemory({ baseMs: 1_000, maxMs: 60_000 }, () => 0);
    memory.refused(at(""), "ec2-refused", "refused", 0);
    memory.refused(at(""), "ec2-refused", "refused", 5_000);
    expect(memory.withheld(5_001, () => "198.51.100.160/28").size).toBe(0);
    // Started over: the next refusal waits the base again.
    expect(memory.refused(at("198.51.100.160/28"), "ec2-refused", "refused", 6_000)).toBe(1_000);
  });

  it("the fingerprint is the ENI's prefixes inside the slice, not its single addresses (a new pod adds one)", () => {
    const before = sliceFingerprint(
      [eni({ ipv4s: ["198.51.100.140", "198.51.100.165"] })],
      "eni-0a1",
      4,
      SLICE,
    );
    const morePods = sliceFingerprint(
      [eni({ ipv4s: ["198.51.100.140", "198.51.100.165", "198.51.100.161"] })],
      "eni-0a1",
      4,
      SLICE,
    );
    const prefixed = sliceFingerprint(
      [eni({ ipv4Prefixes: ["198.51.100.160/28", "198.51.100.176/28"] })],
      "eni-0a1",
      4,
      SLICE,
    );
    expect(morePods).toBe(before);
    expect(prefixed).toBe("198.51.100.160/28");
    expect(sliceFingerprint([], "eni-0a1", 4, SLICE)).toBe("no ENI");
  });
});

describe("takenInside", () => {
  const other = (overrides: Partial<Ec2NetworkInterface>): Ec2NetworkInterface => ({
    eniId: "eni-0b1",
    mac: "02:00:00:00:02:01",
    subnetId: "subnet-0multus",
    vpcId: "vpc-0kube",
    instanceId: "i-0b",
    deviceIndex: 1,
    primaryIpv4: "198.51.100.150",
    ipv4s: ["198.51.100.150"],
    ipv6s: [],
    ipv4Prefixes: [],
    ipv6Prefixes: [],
    tags: {},
    ...overrides,
  });
  const cases: [string, Ec2NetworkInterface[], string[]][] = [
    ["nothing of another ENI inside", [other({})], []],
    [
      "an address of another instance's ENI inside",
      [other({ ipv4s: ["198.51.100.150", "198.51.100.170"] })],
      ["address 198.51.100.170 on eni-0b1 (i-0b)"],
    ],
    [
      "a prefix of an unattached ENI overlapping",
      [other({ instanceId: undefined, ipv4Prefixes: ["198.51.100.160/28"] })],
      ["prefix 198.51.100.160/28 on eni-0b1 (not attached)"],
    ],
    [
      "the ENI's own singles do not count (the swap unassigns them)",
      [other({ eniId: "eni-0a1", ipv4s: ["198.51.100.140", "198.51.100.165"] })],
      [],
    ],
    ["an address just outside", [other({ ipv4s: ["198.51.100.176"] })], []],
  ];
  for (const [name, interfaces, expected] of cases) {
    it(name, () => {
      expect(takenInside(interfaces, "eni-0a1", 4, [SLICE])).toEqual(expected);
    });
  }
});
