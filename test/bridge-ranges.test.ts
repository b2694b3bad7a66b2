import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  addressOfValue,
  addressValue,
  canonical,
  cidrBounds,
  family,
  intervalToCidrs,
} from "../src/eni/ip.js";
import type { EniState, Plan } from "../src/eni/types.js";
import {
  addressesOfReservation,
  readingsOfReservationName,
  reservationName,
} from "../src/ipam-whereabouts-bridge/state/overlapping-range-names.js";
import {
  parseSloppyAddress,
  rangeContains,
  rangesOfNad,
  type WhereaboutsRange,
} from "../src/ipam-whereabouts-bridge/state/whereabouts-ranges.js";
import { overlayRecent, planWave } from "../src/ipam-whereabouts-bridge/waves/wave-plan.js";

const nad = (ipam: unknown, extra: Record<string, unknown> = {}) => ({
  namespace: "cnf",
  name: "n",
  config: JSON.stringify({ type: "ipvlan", ipam, ...extra }),
});

/** The first and the last address whereabouts may hand out from the NAD's only range. */
function firstAndLast(ipam: Record<string, unknown>): [string, string] {
  const { ranges, problems } = rangesOfNad(nad({ type: "whereabouts", ...ipam }));
  expect(problems).toEqual([]);
  const [range] = ranges;
  if (range === undefined || ranges.length !== 1) throw new Error(`not one range: ${JSON.stringify(ranges)}`);
  const excluded = range.exclude.map(cidrBounds);
  // The next candidate in direction `dir`, over an excluded block at once.
  const next = (value: bigint, dir: 1n | -1n): bigint => {
    const block = excluded.find((e) => e.first <= value && value <= e.last);
    if (block === undefined) return value + dir;
    return dir > 0n ? block.last + 1n : block.first - 1n;
  };
  const free = (value: bigint): boolean => rangeContains(range, addressOfValue(range.family, value));
  let first = addressValue(range.first);
  let last = addressValue(range.last);
  for (let n = 0; n < 1000 && first <= last && !free(first); n++) first = next(first, 1n);
  for (let n = 0; n < 1000 && last >= first && !free(last); n++) last = next(last, -1n);
  return [addressOfValue(range.family, first), addressOfValue(range.family, last)];
}

describe("whereabouts ranges of a NAD, as whereabouts reads them", () => {
  // whereabouts' own cases (pkg/iphelpers GetIPRange, pkg/allocate IterateForAssignment, pkg/config,
  // cmd/whereabouts_test.go), moved into the documentation ranges with the same offsets: the input and the
  // first and last address whereabouts hands out.
  it.each([
    ["a /30 (iphelpers)", { range: "198.51.100.100/30" }, "198.51.100.101", "198.51.100.102"],
    ["a /27 with host bits (iphelpers)", { range: "198.51.100.200/27" }, "198.51.100.193", "198.51.100.222"],
    ["a /24 with host bits (iphelpers)", { range: "198.51.100.200/24" }, "198.51.100.1", "198.51.100.254"],
    [
      "range_start inside the block (iphelpers)",
      { range: "198.51.100.200/24", range_start: "198.51.100.23" },
      "198.51.100.23",
      "198.51.100.254",
    ],
    [
      "range_end (iphelpers)",
      { range: "198.51.100.200/24", range_end: "198.51.100.100" },
      "198.51.100.1",
      "198.51.100.100",
    ],
    [
      "range_start and range_end (iphelpers)",
      { range: "198.51.100.200/24", range_start: "198.51.100.50", range_end: "198.51.100.100" },
      "198.51.100.50",
      "198.51.100.100",
    ],
    [
      "range_start and range_end outside the block, ignored (iphelpers)",
      { range: "198.51.100.200/24", range_start: "192.0.2.150", range_end: "203.0.113.100" },
      "198.51.100.1",
      "198.51.100.254",
    ],
    [
      "range_end before range_start, ignored (iphelpers)",
      { range: "198.51.100.200/24", range_start: "198.51.100.100", range_end: "198.51.100.50" },
      "198.51.100.100",
      "198.51.100.254",
    ],
    [
      "a single address (iphelpers)",
      { range: "198.51.100.200/24", range_start: "198.51.100.50", range_end: "198.51.100.50" },
      "198.51.100.50",
      "198.51.100.50",
    ],
    [
      "range_start on the network address, ignored (allocate)",
      { range: "198.51.100.0/29", range_start: "198.51.100.0" },
      "198.51.100.1",
      "198.51.100.6",
    ],
    [
      "range_start and range_end on the network and past the broadcast address, ignored (allocate)",
      { range: "198.51.100.0/29", range_start: "198.51.100.0", range_end: "198.51.100.8" },
      "198.51.100.1",
      "198.51.100.6",
    ],
    ["an IPv6 /116 (iphelpers)", { range: "2001:db8::/116" }, "2001:db8::1", "2001:db8::ffe"],
    [
      "an IPv6 /96 written with leading zeros (iphelpers)",
      { range: "2001:0db8:abcd:0012::0/96" },
      "2001:db8:abcd:12::1",
      "2001:db8:abcd:12::ffff:fffe",
    ],
    [
      "an IPv6 /64 with range_end (iphelpers)",
      { range: "2001:db8:abcd:0012::0/64", range_end: "2001:db8:abcd:0012::100" },
      "2001:db8:abcd:12::1",
      "2001:db8:abcd:12::100",
    ],
    [
      "an IPv6 /64 with range_start and range_end (iphelpers)",
      {
        range: "2001:db8:abcd:0012::0/64",
        range_start: "2001:db8:abcd:0012::50",
        range_end: "2001:db8:abcd:0012::100",
      },
      "2001:db8:abcd:12::50",
      "2001:db8:abcd:12::100",
    ],
    ["an IPv6 /126 (allocate)", { range: "2001:db8::1/126" }, "2001:db8::1", "2001:db8::2"],
    ["an IPv6 /112 (allocate)", { range: "2001:db8::/112" }, "2001:db8::1", "2001:db8::fffe"],
    [
      "exclude of a CIDR (allocate)",
      { range: "198.51.100.0/29", exclude: ["198.51.100.0/30"] },
      "198.51.100.4",
      "198.51.100.6",
    ],
    [
      "exclude of a bare address (allocate, whereabouts v0.6.3)",
      { range: "198.51.100.0/29", exclude: ["198.51.100.1"] },
      "198.51.100.2",
      "198.51.100.6",
    ],
    [
      "IPv6 exclude of a CIDR with host bits (allocate)",
      { range: "2001:db8::2:1/125", exclude: ["2001:db8::2:1/126"] },
      "2001:db8::2:4",
      "2001:db8::2:6",
    ],
    [
      "IPv6 exclude of a bare address (allocate)",
      { range: "2001:db8::2:1/125", exclude: ["2001:db8::2:1"] },
      "2001:db8::2:2",
      "2001:db8::2:6",
    ],
    [
      "unsorted excludes (allocate)",
      {
        range: "198.51.100.0/28",
        exclude: [
          "198.51.100.0/30",
          "198.51.100.14/31",
          "198.51.100.4/30",
          "198.51.100.6/31",
          "198.51.100.8/31",
        ],
      },
      "198.51.100.10",
      "198.51.100.13",
    ],
    [
      "first-last/prefix (config, cmd)",
      { range: "198.51.100.11-198.51.100.23/24" },
      "198.51.100.11",
      "198.51.100.23",
    ],
    [
      "exclude of two /28 (cmd)",
      { range: "198.51.100.0/24", exclude: ["198.51.100.0/28", "198.51.100.16/28"] },
      "198.51.100.32",
      "198.51.100.254",
    ],
    [
      "IPv6 exclude of three /128 (cmd)",
      { range: "2001:db8::1/116", exclude: ["2001:db8::0/128", "2001:db8::1/128", "2001:db8::2/128"] },
      "2001:db8::3",
      "2001:db8::ffe",
    ],
    [
      "IPv6 exclude of the first half, broadcast left out (cmd)",
      { range: "2001:db8::/112", exclude: ["2001:db8::/113"] },
      "2001:db8::8000",
      "2001:db8::fffe",
    ],
    ["a /28 written with host bits (cmd)", { range: "198.51.100.44/28" }, "198.51.100.33", "198.51.100.46"],
    [
      "IPv6 first-last/prefix whose first ends in zeros (cmd)",
      { range: "2001:db8:480:603d:0304:0403:000:0000-2001:db8:480:603d:0304:0403:0000:0004/64" },
      "2001:db8:480:603d:304:403::",
      "2001:db8:480:603d:304:403:0:4",
    ],
    [
      "IPv6 first-last/prefix from the network address (cmd)",
      { range: "2001:db8:5422:0005::-2001:db8:5422:0005:7fff:ffff:ffff:ffff/64" },
      "2001:db8:5422:5::1",
      "2001:db8:5422:5:7fff:ffff:ffff:ffff",
    ],
    [
      "IPv6 first-last/prefix (cmd)",
      { range: "2001:db8:0:10:0:0:3:1-2001:db8:0:10:0:0:3:6/64" },
      "2001:db8:0:10::3:1",
      "2001:db8:0:10::3:6",
    ],
    [
      "range_start and range_end (cmd)",
      { range: "198.51.100.0/24", range_start: "198.51.100.5", range_end: "198.51.100.12" },
      "198.51.100.5",
      "198.51.100.12",
    ],
    [
      "a masked range, then range_start (config)",
      { range: "198.51.100.230/24", range_start: "198.51.100.223" },
      "198.51.100.223",
      "198.51.100.254",
    ],
    [
      "leading zeros in first-last/prefix (config)",
      { range: "00198.0051.00100.5-000000198.51.100.25/24" },
      "198.51.100.5",
      "198.51.100.25",
    ],
    ["leading zeros in a CIDR (config)", { range: "00198.051.100.0/24" }, "198.51.100.1", "198.51.100.254"],
    [
      "leading zeros in range and range_start (config)",
      { range: "00198.051.100.0/24", range_start: "00198.051.100.44" },
      "198.51.100.44",
      "198.51.100.254",
    ],
    [
      "leading zeros in range, range_start and range_end (config)",
      { range: "00198.051.100.0/24", range_start: "00198.051.100.44", range_end: "00198.051.0100.209" },
      "198.51.100.44",
      "198.51.100.209",
    ],
  ])("reads %s", (_what, ipam, first, last) => {
    expect(firstAndLast(ipam)).toEqual([first, last]);
  });

  it("reads an IPv6 range wider than /65 up to the end of its first /65 (whereabouts' README: offsets are 64-bit)", () => {
    expect(firstAndLast({ range: "2001:db8:abcd:0012::0/64" })).toEqual([
      "2001:db8:abcd:12::1",
      "2001:db8:abcd:12:7fff:ffff:ffff:ffff",
    ]);
  });

  it("never counts the network and the broadcast address of the block", () => {
    const [range] = rangesOfNad(nad({ type: "whereabouts", range: "198.51.100.192/27" })).ranges;
    if (range === undefined) throw new Error("no range");
    expect([range.first, range.last]).toEqual(["198.51.100.193", "198.51.100.222"]);
    expect(rangeContains(range, "198.51.100.192")).toBe(false);
    expect(rangeContains(range, "198.51.100.223")).toBe(false);
  });

  it("lets first-last/prefix override range_start and range_end", () => {
    expect(
      firstAndLast({
        range: "198.51.100.5-198.51.100.25/24",
        range_start: "198.51.100.10",
        range_end: "198.51.100.20",
      }),
    ).toEqual(["198.51.100.5", "198.51.100.25"]);
  });

  it('takes a top-level "range": "" beside ipRanges as no top-level range (whereabouts\' dual-stack e2e NAD)', () => {
    const read = rangesOfNad(
      nad({
        type: "whereabouts",
        range: "",
        ipRanges: [{ range: "198.51.100.192/27" }, { range: "2001:db8:100:2::100/120" }],
        network_name: "",
      }),
    );
    expect(read.problems).toEqual([]);
    expect(read.ranges.map((r) => [r.cidr, r.first, r.last, r.networkName])).toEqual([
      ["198.51.100.192/27", "198.51.100.193", "198.51.100.222", ""],
      ["2001:db8:100:2::100/120", "2001:db8:100:2::101", "2001:db8:100:2::1fe", ""],
    ]);
  });

  it("keeps the NAD's network_name on its ranges", () => {
    const read = rangesOfNad(nad({ type: "whereabouts", range: "198.51.100.192/27", network_name: "blue" }));
    expect(read.ranges.map((r) => r.networkName)).toEqual(["blue"]);
  });

  it("with node_slice_size, ignores range_start, range_end and exclude and leaves out every slice's first and last address", () => {
    const read = rangesOfNad(
      nad({
        type: "whereabouts",
        range: "198.51.100.0/24",
        range_start: "198.51.100.100",
        range_end: "198.51.100.120",
        exclude: ["198.51.100.0/28"],
        node_slice_size: "/26",
      }),
    );
    expect(read.problems).toEqual([]);
    const [range] = read.ranges;
    if (range === undefined) throw new Error("no range");
    expect([range.first, range.last, range.exclude, range.slicePrefix]).toEqual([
      "198.51.100.1",
      "198.51.100.254",
      [],
      26,
    ]);
    const inRange = ["198.51.100.1", "198.51.100.5", "198.51.100.62", "198.51.100.65", "198.51.100.130"];
    const outside = ["198.51.100.0", "198.51.100.63", "198.51.100.64", "198.51.100.127", "198.51.100.255"];
    expect(inRange.filter((a) => !rangeContains(range, a))).toEqual([]);
    expect(outside.filter((a) => rangeContains(range, a))).toEqual([]);
    expect(
      firstAndLast({ range: "198.51.100.0/24", node_slice_size: "26", range_start: "198.51.100.9" }),
    ).toEqual(["198.51.100.1", "198.51.100.254"]);
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

  it("excludes the CIDRs and addresses in exclude", () => {
    const [range] = rangesOfNad(
      nad({
        type: "whereabouts",
        range: "198.51.100.192/27",
        exclude: ["198.51.100.192/30", "198.51.100.200"],
      }),
    ).ranges;
    if (range === undefined) throw new Error("no range");
    expect(range.exclude).toEqual(["198.51.100.192/30", "198.51.100.200/32"]);
    expect(rangeContains(range, "198.51.100.193")).toBe(false);
    expect(rangeContains(range, "198.51.100.196")).toBe(true);
    expect(rangeContains(range, "198.51.100.200")).toBe(false);
    expect(rangeContains(range, "198.51.100.224")).toBe(false);
    expect(rangeContains(range, "2001:db8::1")).toBe(false);
  });

  it("reads an IPv6 range with a node slice size as sliced (prefix mode's /80s), though whereabouts' own controller cuts IPv4 only", () => {
    const read = rangesOfNad(
      nad({ type: "whereabouts", range: "2001:db8:0:2:10::/76", node_slice_size: "/80" }),
    );
    expect(read.problems).toEqual([]);
    expect(read.ranges.map((r) => [r.family, r.cidr, r.slicePrefix])).toEqual([
      [6, "2001:db8:0:2:10::/76", 80],
    ]);
  });

  it.each([
    [{ range: "nope" }, 'NAD cnf/n: whereabouts range "nope" is not a CIDR or first-last/prefix'],
    [
      { range: "198.51.100.5-198.51.100.25/28" },
      'NAD cnf/n: whereabouts range "198.51.100.5-198.51.100.25/28" starts outside its block 198.51.100.16/28',
    ],
    [
      { range: "198.51.100.0/31" },
      'NAD cnf/n: whereabouts range "198.51.100.0/31" has no usable address (whereabouts never hands out a block\'s first and last address)',
    ],
    [
      { ipRanges: [{ range: "198.51.100.0/24", range_start: "198.51.100.010" }] },
      'NAD cnf/n: range_start "198.51.100.010" in ipRanges is not an IP address (whereabouts reads it strictly there: no leading zeros), so whereabouts cannot load this configuration',
    ],
    [{ range: "198.51.100.0/24", exclude: ["x"] }, 'NAD cnf/n: exclude "x" is not a CIDR or an address'],
    [
      { range: "198.51.100.0/24", node_slice_size: "/20" },
      'NAD cnf/n: node_slice_size "/20" is not a prefix length from the range\'s own (/24) to /30, so 198.51.100.0/24 cannot be sliced per node',
    ],
    [
      { range: "2001:db8::/76", node_slice_size: "/127" },
      'NAD cnf/n: node_slice_size "/127" is not a prefix length from the range\'s own (/76) to /126, so 2001:db8::/76 cannot be sliced per node',
    ],
  ])("reports %j", (ipam, problem) => {
    expect(rangesOfNad(nad({ type: "whereabouts", ...ipam })).problems).toEqual([problem]);
  });

  it("never counts an address outside the block, nor its network or broadcast address, and starts at range_start when it lies inside", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 24, max: 30 }),
        fc.integer({ min: 0, max: 255 }),
        fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
        fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
        fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 3 }),
        (prefix, host, start, end, excluded) => {
          const at = (n: number): string => `198.51.100.${n}`;
          const read = rangesOfNad(
            nad({
              type: "whereabouts",
              range: `${at(host)}/${prefix}`,
              ...(start === undefined ? {} : { range_start: at(start) }),
              ...(end === undefined ? {} : { range_end: at(end) }),
              exclude: excluded.map(at),
            }),
          );
          expect(read.problems).toEqual([]);
          const [range] = read.ranges;
          if (range === undefined) throw new Error("no range");
          const size = 2 ** (32 - prefix);
          const network = host - (host % size);
          const broadcast = network + size - 1;
          const inside = Array.from({ length: 256 }, (_, n) => n).filter((n) => rangeContains(range, at(n)));
          expect(inside.filter((n) => n <= network || n >= broadcast || excluded.includes(n))).toEqual([]);
          const firstExpected =
            start !== undefined && start > network && start < broadcast ? start : network + 1;
          expect(addressValue(range.first) & 255n).toBe(BigInt(firstExpected));
        },
      ),
      { numRuns: 200 },
    );
  });

  it.each([
    ["198.51.100.7", "198.51.100.7"],
    ["00198.051.0100.007", "198.51.100.7"],
    ["2001:0db8::0001", "2001:db8::1"],
    ["2001:db8::00000001", "2001:db8::1"],
    ["::ffff:198.051.100.7", "::ffff:198.51.100.7"],
    ["198.51.100.256", undefined],
    ["198.51.100", undefined],
    ["2001:db8::10000", undefined],
    ["0x10.0.0.1", undefined],
  ])("reads the address %s as Go's ParseIPSloppy does: %s", (text, expected) => {
    expect(parseSloppyAddress(text)).toBe(expected);
  });
});

const rangeOf = (ipam: Record<string, unknown>): WhereaboutsRange => {
  const [range] = rangesOfNad(nad({ type: "whereabouts", ...ipam })).ranges;
  if (range === undefined) throw new Error("no range");
  return range;
};

describe("OverlappingRangeIPReservation names", () => {
  it.each([
    ["198.51.100.7", "", "198.51.100.7"],
    ["198.51.100.7", "blue", "blue-198.51.100.7"],
    ["2001:db8:100:2::101", "", "2001-db8-100-2--101"],
    ["2001:db8::", "", "2001-db8--0"],
    ["2001:db8:0:1:0:0:0:1", "", "2001-db8-0-1--1"],
    ["2001:db8::", "net-a", "net-a-2001-db8--0"],
  ])("names %s in network %j %s, as whereabouts' NormalizeIP does", (address, networkName, name) => {
    expect(reservationName(canonical(address), networkName)).toBe(name);
  });

  it("reads every way a name could have been written, and only those", () => {
    expect(readingsOfReservationName("blue-net-198.51.100.7")).toEqual([
      { networkName: "blue-net", address: "198.51.100.7" },
    ]);
    expect(readingsOfReservationName("cafe-2001-db8-100-2--101")).toEqual([
      { networkName: "", address: "cafe:2001:db8:100:2::101" },
      { networkName: "cafe", address: "2001:db8:100:2::101" },
      { networkName: "cafe-2001", address: "db8:100:2::101" },
      { networkName: "cafe-2001-db8", address: "100:2::101" },
      { networkName: "cafe-2001-db8-100", address: "2::101" },
    ]);
    // Not whereabouts' spelling of any address: leading zeros, upper case, an uncompressed run.
    expect(readingsOfReservationName("2001-0db8--1")).toEqual([]);
    expect(readingsOfReservationName("2001-DB8--1")).toEqual([]);
    expect(readingsOfReservationName("2001-db8-0-0-0-0-0-1")).toEqual([]);
  });

  it("lets the ranges decide between the readings, and keeps them all when no range decides", () => {
    const cafe = rangeOf({ range: "2001:db8:100:2::100/120", network_name: "cafe" });
    const unnamed = rangeOf({ range: "2001:db8:100:2::100/120" });
    expect(addressesOfReservation("cafe-2001-db8-100-2--101", [cafe])).toEqual(["2001:db8:100:2::101"]);
    expect(addressesOfReservation("2001-db8-100-2--101", [unnamed])).toEqual(["2001:db8:100:2::101"]);
    expect(addressesOfReservation("blue-198.51.100.7", [])).toEqual(["198.51.100.7"]);
    expect(addressesOfReservation("cafe-2001-db8-100-2--101", [unnamed])).toEqual([
      "cafe:2001:db8:100:2::101",
      "2001:db8:100:2::101",
      "db8:100:2::101",
      "100:2::101",
      "2::101",
    ]);
  });

  it("reads back the address and the network of every name it gives", () => {
    const networkName = fc.oneof(
      fc.constant(""),
      fc.stringMatching(/^[a-f0-9][a-f0-9-]{0,20}[a-f0-9]$/),
      fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,20}[a-z0-9]$/),
    );
    const address = fc.oneof(
      fc.bigInt({ min: 0n, max: (1n << 96n) - 1n }).map((v) => addressOfValue(6, (0x20010db8n << 96n) | v)),
      fc
        .bigInt({ min: 0n, max: 255n })
        .map((v) => addressOfValue(4, (198n << 24n) | (51n << 16n) | (100n << 8n) | v)),
    );
    fc.assert(
      fc.property(networkName, address, (net, a) => {
        const name = reservationName(a, net);
        expect(readingsOfReservationName(name)).toContainEqual({ networkName: net, address: a });
        const range: WhereaboutsRange = {
          ...rangeOf({ range: family(a) === 4 ? "198.51.100.0/24" : "2001:db8::/32" }),
          networkName: net,
        };
        expect(addressesOfReservation(name, [range])).toContain(a);
      }),
      { numRuns: 300 },
    );
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

  it("counts each delegated prefix the ENI holds as one slot of the per-ENI limit", () => {
    const wanted = ["198.51.100.200", "198.51.100.201", "198.51.100.202"];
    const wave = planWave({
      plan: planOf(wanted),
      releases: [],
      enis: [{ ...MULTUS, ipv4Prefixes: ["198.51.100.224/28", "198.51.100.240/28"] }],
      multusEniIds: new Set(["eni-0multus"]),
      addressesPerEni: 6,
    });
    // 6 per ENI: 2 addresses (the primary included) and 2 prefixes held, room for 2.
    expect(wave.actions).toEqual([
      expect.objectContaining({ kind: "assign-ipv4", addresses: wanted.slice(0, 2) }),
    ]);
    expect(wave.refusals.map((r) => `${r.address} ${r.reason}`)).toEqual(["198.51.100.202 eni-full"]);
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
