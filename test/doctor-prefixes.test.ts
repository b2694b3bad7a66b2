/**
 * doctor's prefix mode checks, no I/O: free aligned blocks, Nitro support, explicit (never prefix) reservations and blocks per
 * subnet, this node's slices held as prefixes or not, and reading a node's slices out of a NodeSlicePool list.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  nodeSliceChecks,
  prefixBlockChecks,
  prefixSubnetsOf,
  prefixSupportCheck,
  prefixSupportDenied,
} from "../src/doctor/checks/prefixes.js";
import { reservationChecks } from "../src/doctor/checks/reservations.js";
import { uncoveredParts } from "../src/doctor/cidr-coverage.js";
import { freePrefixBlocks } from "../src/doctor/free-prefix-blocks.js";
import { type NodeSlice, slicesOfNode } from "../src/doctor/node-slices.js";
import { cidrsOverlap } from "../src/eni/ip.js";
import type { Ec2NetworkInterface, EniState, SubnetCidrReservation } from "../src/eni/types.js";

const SUBNET = "subnet-0a";
const ENI_A: EniState = {
  eniId: "eni-0a",
  mac: "02:00:00:00:0a:01",
  deviceIndex: 1,
  subnetId: SUBNET,
  subnetIpv4Cidrs: ["198.51.100.0/25"],
  subnetIpv6Cidrs: ["2001:db8:100:1::/64"],
  primaryIpv4: "198.51.100.11",
  ipv4s: ["198.51.100.11"],
  ipv6s: [],
  ipv4Prefixes: ["198.51.100.64/28"],
  ipv6Prefixes: ["2001:db8:100:1:1::/80"],
};

const described = (eni: EniState, extra: Partial<Ec2NetworkInterface> = {}): Ec2NetworkInterface =>
  ({
    eniId: eni.eniId,
    subnetId: eni.subnetId,
    ipv4s: eni.ipv4s,
    ipv6s: eni.ipv6s,
    ipv4Prefixes: eni.ipv4Prefixes ?? [],
    ipv6Prefixes: eni.ipv6Prefixes ?? [],
    tags: {},
    ...extra,
  }) as Ec2NetworkInterface;

const reservation = (id: string, cidr: string, type: "explicit" | "prefix"): SubnetCidrReservation =>
  ({ reservationId: id, subnetId: SUBNET, cidr, type, description: "", tags: {} }) as SubnetCidrReservation;

const SLICE: NodeSlice = {
  pool: "kube-system/slices",
  poolRange: "198.51.100.64/26",
  sliceRange: "198.51.100.64/28",
};

describe("freePrefixBlocks", () => {
  it.each([
    // area, used, total, free
    // The subnet (198.51.100.0/25) ends in this area: its last address, which AWS keeps, takes .112/28.
    [["198.51.100.64/26"], [], 4n, 3n],
    [["198.51.100.64/26"], ["198.51.100.64/28", "198.51.100.100"], 4n, 1n],
    [["198.51.100.64/26"], ["198.51.100.65", "198.51.100.66"], 4n, 2n],
    [["198.51.100.64/27"], ["198.51.100.65", "198.51.100.66"], 2n, 1n],
    // The subnet's last address (AWS keeps it) takes the last block of a range that ends with the subnet.
    [["198.51.100.96/27"], [], 2n, 1n],
    // The first four addresses AWS keeps take the first block of the subnet.
    [["198.51.100.0/27"], [], 2n, 1n],
    // An area smaller than a block holds none; an unaligned one only its whole blocks.
    [["198.51.100.64/29"], [], 0n, 0n],
    [["198.51.100.72/29", "198.51.100.80/28"], [], 1n, 1n],
    // Addresses outside the area or the subnet count for nothing.
    [["198.51.100.64/28"], ["198.51.100.90", "203.0.113.5", "2001:db8::1"], 1n, 1n],
  ])("IPv4 area %j with %j used: %s blocks, %s free", (area, used, total, free) => {
    expect(freePrefixBlocks({ family: 4, subnetCidr: "198.51.100.0/25", area, used })).toEqual({
      total,
      free,
    });
  });

  it("counts IPv6 /80 blocks of a /64 as numbers (65,536 of them, the first and last with AWS's addresses)", () => {
    expect(
      freePrefixBlocks({
        family: 6,
        subnetCidr: "2001:db8:100:1::/64",
        area: ["2001:db8:100:1::/64"],
        used: ["2001:db8:100:1:1::/80", "2001:db8:100:1:2::5"],
      }),
    ).toEqual({ total: 65_536n, free: 65_536n - 4n });
  });
});

describe("prefix-support", () => {
  it.each([
    [
      "nitro",
      undefined,
      "ok",
      "m5.large is built on the Nitro System (DescribeInstanceTypes: hypervisor nitro)",
    ],
    [
      "xen",
      undefined,
      "ok",
      "m5.large is not built on the Nitro System (DescribeInstanceTypes: hypervisor xen)",
    ],
    ["xen", [SLICE], "warn", "node slices stay in per-address mode here"],
    [undefined, undefined, "warn", "EC2 names no hypervisor for m5.large (bare metal)"],
  ] as const)("hypervisor %s, slices %j: %s", (hypervisor, slices, status, sentence) => {
    const result = prefixSupportCheck(
      "m5.large",
      { instanceType: "m5.large", hypervisor, ipv4AddressesPerEni: 10 },
      slices,
    );
    expect(result.status).toBe(status);
    expect(result.detail).toContain(sentence);
    if (status === "warn") expect(result.fix).toContain("Name=hypervisor,Values=nitro");
  });

  it("is skipped for a type EC2 does not know, and warns with the grant when the read is denied", () => {
    expect(prefixSupportCheck("q9.huge", undefined, undefined).status).toBe("skipped");
    const denied = prefixSupportDenied("m5.large", "You are not authorized to perform this operation.");
    expect(denied).toMatchObject({ name: "prefix-support", status: "warn", subject: "m5.large" });
    expect(denied.fix).toContain("grant ec2:DescribeInstanceTypes");
  });
});

describe("prefix-blocks", () => {
  const subnets = prefixSubnetsOf([
    ENI_A,
    { ...ENI_A, eniId: "eni-0b", deviceIndex: 2, ipv4Prefixes: [], ipv6Prefixes: [] },
  ]);

  it("finds each subnet and family an ENI holds prefixes in", () => {
    expect(subnets.map((s) => [s.subnetId, s.family, s.cidr, [...s.held]])).toEqual([
      [SUBNET, 4, "198.51.100.0/25", [["eni-0a", ["198.51.100.64/28"]]]],
      [SUBNET, 6, "2001:db8:100:1::/64", [["eni-0a", ["2001:db8:100:1:1::/80"]]]],
    ]);
  });

  const create = (cidr: string): string =>
    `aws ec2 create-subnet-cidr-reservation --subnet-id ${SUBNET} --cidr ${cidr} --reservation-type explicit --description "multus-ipmgr node slices"`;

  it("warns without an explicit reservation, naming the node-sliced range to reserve (or a placeholder)", () => {
    const [v4] = prefixBlockChecks(subnets, new Map([[SUBNET, []]]), [described(ENI_A)], [SLICE]);
    expect(v4).toMatchObject({ name: "prefix-blocks", status: "warn", subject: `${SUBNET} IPv4` });
    expect(v4?.detail).toBe(
      `${SUBNET} (198.51.100.0/25): eni-0a holds 198.51.100.64/28, but no IPv4 explicit subnet CIDR reservation ` +
        "covers 198.51.100.64/28: DHCP (new ENIs) and EC2's own picks (SecondaryPrivateIpAddressCount, " +
        "Ipv4PrefixCount: the VPC CNI) may take addresses inside the node-sliced range, and EC2 then refuses the " +
        "prefix of the node whose slice holds one; 5 of 8 aligned /28 blocks free in the subnet.",
    );
    expect(v4?.fix).toBe(create("198.51.100.64/26"));
    const [unknown] = prefixBlockChecks(subnets, new Map([[SUBNET, []]]), [described(ENI_A)], undefined);
    expect(unknown?.fix).toBe(create("<the node-sliced range of the NetworkAttachmentDefinition>"));
  });

  it("warns when the explicit reservations leave a held prefix partly uncovered, and creates only the gaps", () => {
    const [v4] = prefixBlockChecks(
      subnets.filter((s) => s.family === 4),
      new Map([[SUBNET, [reservation("scr-1", "198.51.100.64/29", "explicit")]]]),
      [described(ENI_A)],
      [SLICE],
    );
    expect(v4?.status).toBe("warn");
    expect(v4?.detail).toContain(
      "but the explicit reservation scr-1 (198.51.100.64/29) leaves 198.51.100.72/29 uncovered:",
    );
    expect(v4?.fix).toBe(
      [create("198.51.100.72/29"), create("198.51.100.80/28"), create("198.51.100.96/27")].join("; "),
    );
  });

  it("reports a prefix-type reservation over the node-sliced range, with the delete and the explicit create", () => {
    const [v4] = prefixBlockChecks(
      subnets.filter((s) => s.family === 4),
      new Map([
        [
          SUBNET,
          [
            reservation("scr-1", "198.51.100.64/28", "explicit"),
            reservation("scr-2", "198.51.100.96/27", "prefix"),
          ],
        ],
      ]),
      [described(ENI_A)],
      [SLICE],
    );
    expect(v4).toEqual({
      name: "prefix-blocks",
      subject: `${SUBNET} IPv4`,
      status: "problem",
      detail:
        `${SUBNET} (198.51.100.0/25): eni-0a holds 198.51.100.64/28; the prefix reservation scr-2 (198.51.100.96/27) ` +
        "overlaps the node-sliced range: EC2 takes the blocks it picks for Ipv4PrefixCount (the VPC CNI's prefix " +
        "delegation, on any ENI of the subnet) from prefix reservations first, so another ENI can be given a block " +
        "of some node's slice, which that node's bridge can then never assign; node slices want explicit " +
        "reservations (0 of 1 aligned /28 blocks free in the explicit reservation).",
      fix: [
        "aws ec2 delete-subnet-cidr-reservation --subnet-cidr-reservation-id scr-2",
        create("198.51.100.80/28"),
        create("198.51.100.96/27"),
      ].join("; "),
    });
    // Without this node's slices, a prefix reservation over a held prefix is found all the same.
    const [held] = prefixBlockChecks(
      subnets.filter((s) => s.family === 6),
      new Map([[SUBNET, [reservation("scr-3", "2001:db8:100:1::/76", "prefix")]]]),
      [described(ENI_A)],
      undefined,
    );
    expect(held?.status).toBe("problem");
    expect(held?.detail).toContain(
      "the prefix reservation scr-3 (2001:db8:100:1::/76) overlaps the node-sliced range",
    );
    expect(held?.detail).toContain("Ipv6PrefixCount");
    expect(held?.fix).toContain(create("<the node-sliced range of the NetworkAttachmentDefinition>"));
  });

  it("ignores reservations away from the held prefixes and the node-sliced range", () => {
    const [v4] = prefixBlockChecks(
      subnets.filter((s) => s.family === 4),
      new Map([
        [
          SUBNET,
          [
            reservation("scr-1", "198.51.100.64/26", "explicit"),
            reservation("scr-9", "198.51.100.16/28", "prefix"),
          ],
        ],
      ]),
      [described(ENI_A)],
      [SLICE],
    );
    expect(v4?.status).toBe("ok");
  });

  it("is ok with an explicit reservation that has free blocks, and a problem when none is left", () => {
    const free = prefixBlockChecks(
      subnets.filter((s) => s.family === 4),
      new Map([[SUBNET, [reservation("scr-1", "198.51.100.64/27", "explicit")]]]),
      [described(ENI_A)],
      undefined,
    );
    expect(free).toEqual([
      {
        name: "prefix-blocks",
        subject: `${SUBNET} IPv4`,
        status: "ok",
        detail: `${SUBNET} (198.51.100.0/25): eni-0a holds 198.51.100.64/28; explicit reservation scr-1 (198.51.100.64/27): 1 of 2 aligned /28 blocks free.`,
      },
    ]);
    const crowded = [
      described(ENI_A),
      described({ ...ENI_A, eniId: "eni-0c", ipv4s: ["198.51.100.85"], ipv4Prefixes: [] }),
    ];
    const full = prefixBlockChecks(
      subnets.filter((s) => s.family === 4),
      new Map([[SUBNET, [reservation("scr-1", "198.51.100.64/27", "explicit")]]]),
      crowded,
      [{ ...SLICE, poolRange: "198.51.100.64/27" }],
    );
    expect(full[0]?.status).toBe("problem");
    expect(full[0]?.detail).toContain(
      "the explicit reservation scr-1 (198.51.100.64/27) over the node-sliced range has no free aligned /28 block left (2 in all)",
    );
    // Without the node-sliced range, the rest of it may be reserved apart: a warning, not a verdict.
    const unsure = prefixBlockChecks(
      subnets.filter((s) => s.family === 4),
      new Map([[SUBNET, [reservation("scr-1", "198.51.100.64/27", "explicit")]]]),
      crowded,
      undefined,
    );
    expect(unsure[0]?.status).toBe("warn");
    expect(unsure[0]?.detail).toContain(
      "over this node's prefixes has no free aligned /28 block left (2 in all), and the node-sliced range is unknown (see node-slice)",
    );
    expect(unsure[0]?.fix).toMatch(/^let doctor read the NodeSlicePools \(see node-slice\), or widen/);
  });

  it("is ok only when explicit reservations cover the held prefix and no prefix one touches the sliced range (property)", () => {
    // Reservations as /27, /28 or /29 blocks of the subnet (198.51.100.0/25), each explicit or prefix.
    const block = fc
      .constantFrom(27, 28, 29)
      .chain((length) =>
        fc
          .integer({ min: 0, max: 128 / 2 ** (32 - length) - 1 })
          .map((i) => `198.51.100.${i * 2 ** (32 - length)}/${length}`),
      );
    const reservations = fc.array(fc.tuple(block, fc.constantFrom("explicit" as const, "prefix" as const)), {
      maxLength: 6,
    });
    fc.assert(
      fc.property(reservations, fc.boolean(), (list, known) => {
        const rs = list.map(([cidr, type], i) => reservation(`scr-${i}`, cidr, type));
        const [v4] = prefixBlockChecks(
          subnets.filter((s) => s.family === 4),
          new Map([[SUBNET, rs]]),
          [described(ENI_A)],
          known ? [SLICE] : undefined,
        );
        const watched = known ? ["198.51.100.64/28", SLICE.poolRange] : ["198.51.100.64/28"];
        const touches = (cidr: string): boolean => watched.some((w) => cidrsOverlap(cidr, w));
        const prefixOver = rs.some((r) => r.type === "prefix" && touches(r.cidr));
        if (prefixOver) expect(v4?.status).toBe("problem");
        if (v4?.status === "ok") {
          const explicit = rs.filter((r) => r.type === "explicit").map((r) => r.cidr);
          expect(uncoveredParts("198.51.100.64/28", explicit)).toEqual([]);
        }
        expect(v4?.fix ?? "").not.toContain("--reservation-type prefix");
      }),
    );
  });

  it("never reports a slice pool whose range is not a CIDR block", () => {
    const junk = { ...SLICE, poolRange: "198.51.100.64/99" };
    const [v4] = prefixBlockChecks(subnets, new Map([[SUBNET, []]]), [described(ENI_A)], [junk]);
    expect(v4?.fix).toBe(create("<the node-sliced range of the NetworkAttachmentDefinition>"));
  });
});

describe("node-slice", () => {
  it("says why when the slices could not be read", () => {
    expect(nodeSliceChecks(undefined, "not checked: no Kubernetes API.", [ENI_A])).toEqual([
      { name: "node-slice", status: "skipped", detail: "not checked: no Kubernetes API." },
    ]);
  });

  it("is ok for a slice an ENI holds as prefixes, and warns for one it does not, or one smaller than a prefix", () => {
    const results = nodeSliceChecks(
      [
        SLICE,
        { pool: "kube-system/wide", poolRange: "198.51.100.0/25", sliceRange: "198.51.100.96/27" },
        { pool: "kube-system/small", poolRange: "198.51.100.0/25", sliceRange: "198.51.100.120/29" },
        { pool: "kube-system/v6", poolRange: "2001:db8:100:1::/76", sliceRange: "2001:db8:100:1:1::/80" },
      ],
      "",
      [ENI_A],
    );
    expect(results.map((r) => [r.subject, r.status])).toEqual([
      ["198.51.100.64/28", "ok"],
      ["198.51.100.96/27", "warn"],
      ["198.51.100.120/29", "warn"],
      ["2001:db8:100:1:1::/80", "ok"],
    ]);
    expect(results[0]?.detail).toBe(
      "slice 198.51.100.64/28 of NodeSlicePool kube-system/slices (range 198.51.100.64/26) is held by ENI eni-0a as prefixes: its pods start with no EC2 call.",
    );
    expect(results[1]?.detail).toContain("is not held as prefixes by a Multus ENI of this node yet");
    expect(results[2]?.fix).toContain("node_slice_size to /28 or larger");
  });

  it("takes a slice held as several prefixes as held", () => {
    const two = { ...ENI_A, ipv4Prefixes: ["198.51.100.96/28", "198.51.100.112/28"] };
    const [result] = nodeSliceChecks(
      [{ pool: "kube-system/wide", poolRange: "198.51.100.0/25", sliceRange: "198.51.100.96/27" }],
      "",
      [two],
    );
    expect(result?.status).toBe("ok");
  });
});

describe("slicesOfNode (a NodeSlicePoolList)", () => {
  it("keeps the allocations of the node, sorted, and ignores what is not one", () => {
    const list = {
      kind: "NodeSlicePoolList",
      items: [
        {
          metadata: { namespace: "kube-system", name: "slices6" },
          spec: { range: "2001:db8:100:1::/76", sliceSize: "/80" },
          status: { allocations: [{ nodeName: "node-a", sliceRange: "2001:db8:100:1:1::/80" }] },
        },
        {
          metadata: { namespace: "kube-system", name: "slices" },
          spec: { range: "198.51.100.64/26", sliceSize: "/28" },
          status: {
            allocations: [
              { nodeName: "node-b", sliceRange: "198.51.100.80/28" },
              { nodeName: "node-a", sliceRange: "198.51.100.64/28" },
              { nodeName: "", sliceRange: "198.51.100.96/28" },
              "junk",
            ],
          },
        },
        { metadata: { name: "no-status" }, spec: { range: "198.51.100.0/26" } },
      ],
    };
    expect(slicesOfNode(list, "node-a")).toEqual([
      { pool: "kube-system/slices", poolRange: "198.51.100.64/26", sliceRange: "198.51.100.64/28" },
      { pool: "kube-system/slices6", poolRange: "2001:db8:100:1::/76", sliceRange: "2001:db8:100:1:1::/80" },
    ]);
    expect(slicesOfNode({}, "node-a")).toEqual([]);
  });
});

describe("reservation, in prefix mode", () => {
  const subnet = { subnetId: SUBNET, cidr: "198.51.100.0/25" } as never;

  it("takes an explicit reservation over the node-sliced range as cover, and flags a prefix one over it", () => {
    const range = [{ cidr: "198.51.100.64/26", subnet }];
    const [covered] = reservationChecks(
      range,
      new Map([[SUBNET, [reservation("scr-1", "198.51.100.64/26", "explicit")]]]),
    );
    expect(covered?.detail).toBe(
      `198.51.100.64/26 is covered by the explicit reservation scr-1 (198.51.100.64/26) in ${SUBNET}.`,
    );
    // EC2 takes Ipv4PrefixCount's blocks from a prefix reservation first: another ENI could get a node's slice.
    const [flagged] = reservationChecks(
      range,
      new Map([[SUBNET, [reservation("scr-2", "198.51.100.64/26", "prefix")]]]),
    );
    expect(flagged).toEqual({
      name: "reservation",
      subject: "198.51.100.64/26",
      status: "problem",
      detail: `198.51.100.64/26 overlaps the prefix reservation scr-2 (198.51.100.64/26) in ${SUBNET}: EC2 hands those addresses out as prefixes (the VPC CNI's prefix delegation), to the ENIs of any node.`,
      fix:
        "aws ec2 delete-subnet-cidr-reservation --subnet-cidr-reservation-id scr-2; then aws ec2 create-subnet-cidr-reservation " +
        `--subnet-id ${SUBNET} --cidr 198.51.100.64/26 --reservation-type explicit --description "multus-ipmgr pod range" ` +
        "(and keep prefix delegation's reservations apart from your pod ranges)",
    });
  });
});
