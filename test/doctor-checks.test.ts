/**
 * doctor's pure parts, without I/O: CIDR coverage (table and properties), the per-ENI limits, the checks that
 * the simulator tests do not reach (warnings, edge cases) and the renderer. Plus SysfsLinks on a scratch tree.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { CheckResult } from "../src/doctor/check.js";
import { addressChecks } from "../src/doctor/checks/addresses.js";
import { allowedCidrChecks, multusSubnets } from "../src/doctor/checks/allowed-cidrs.js";
import { capacityChecks } from "../src/doctor/checks/capacity.js";
import { imdsCheck } from "../src/doctor/checks/imds.js";
import { eniMatchChecks, linkChecks } from "../src/doctor/checks/interfaces.js";
import { ipCommandCheck } from "../src/doctor/checks/ip-command.js";
import { onHostNetwork, rpFilterChecks } from "../src/doctor/checks/node-links.js";
import { reservationChecks } from "../src/doctor/checks/reservations.js";
import { cidrRelation, uncoveredParts } from "../src/doctor/cidr-coverage.js";
import { SysfsLinks } from "../src/doctor/links.js";
import type { MultusEni } from "../src/doctor/multus-enis.js";
import { renderJson, renderText } from "../src/doctor/render.js";
import { ProcRpFilter } from "../src/doctor/rp-filter.js";
import { addressesPerEniOf } from "../src/eni/instance-limits.js";
import { cidrContains, cidrSize, parseCidr } from "../src/eni/ip.js";
import { plan } from "../src/eni/planner.js";
import type { EniState, SubnetCidrReservation } from "../src/eni/types.js";
import {
  knownInstanceTypes,
  nitroOf,
  addressesPerEniOf as simAddressesPerEniOf,
} from "../src/sim/instance-limits.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

function eni(overrides: Partial<EniState> = {}): EniState {
  return {
    eniId: "eni-0a",
    mac: "02:00:00:00:0a:01",
    deviceIndex: 1,
    subnetId: "subnet-a",
    subnetIpv4Cidrs: ["198.51.100.0/26"],
    subnetIpv6Cidrs: ["2001:db8::/64"],
    primaryIpv4: "198.51.100.10",
    ipv4s: ["198.51.100.10"],
    ipv6s: [],
    ...overrides,
  };
}

const multusOf = (state: EniState, interfaces = ["net1"]): MultusEni => ({ eni: state, interfaces });

describe("uncoveredParts", () => {
  it.each([
    ["198.51.100.32/27", [], ["198.51.100.32/27"]],
    ["198.51.100.32/27", ["198.51.100.32/27"], []],
    ["198.51.100.32/27", ["198.51.100.0/24"], []],
    ["198.51.100.32/27", ["198.51.100.32/28"], ["198.51.100.48/28"]],
    ["198.51.100.32/27", ["198.51.100.40/29"], ["198.51.100.32/29", "198.51.100.48/28"]],
    [
      "198.51.100.32/27",
      ["198.51.100.33/32", "198.51.100.62/31"],
      [
        "198.51.100.32/32",
        "198.51.100.34/31",
        "198.51.100.36/30",
        "198.51.100.40/29",
        "198.51.100.48/29",
        "198.51.100.56/30",
        "198.51.100.60/31",
      ],
    ],
    ["198.51.100.32/27", ["198.51.100.64/27", "2001:db8::/64"], ["198.51.100.32/27"]],
    ["2001:db8::100/120", ["2001:db8::100/121"], ["2001:db8::180/121"]],
  ])("%s minus %j is %j", (cidr, covers, expected) => {
    expect(uncoveredParts(cidr, covers)).toEqual(expected);
  });

  it("leaves exactly the addresses no cover holds, in aligned blocks that do not overlap", () => {
    const block = fc.integer({ min: 24, max: 32 }).chain((prefix) =>
      fc.integer({ min: 0, max: 2 ** (32 - 24) - 1 }).map((n) => {
        const size = 2 ** (32 - prefix);
        const start = Math.floor(n / size) * size;
        return `198.51.100.${start}/${prefix}`;
      }),
    );
    fc.assert(
      fc.property(block, fc.array(block, { maxLength: 6 }), (cidr, covers) => {
        const parts = uncoveredParts(cidr, covers);
        for (const part of parts) {
          expect(cidrRelation(part, cidr)).not.toBe("disjoint");
          expect(`${parseCidr(part).network}/${parseCidr(part).prefix}`).toBe(part);
        }
        for (let offset = 0; offset < Number(cidrSize(cidr)); offset++) {
          const address = `198.51.100.${Number(parseCidr(cidr).network.split(".")[3]) + offset}`;
          const covered = covers.some((c) => cidrContains(c, address));
          const inParts = parts.filter((p) => cidrContains(p, address)).length;
          expect(inParts).toBe(covered ? 0 : 1);
        }
      }),
    );
  });
});

describe("addressesPerEniOf", () => {
  it.each([
    ["m5.large", 10],
    ["c5.xlarge", 15],
    ["t3.medium", 6],
    ["m6g.medium", 4],
    ["c5n.9xlarge", 30],
    ["m5zn.12xlarge", 50],
    ["c7i.metal-48xl", 50],
    ["x2idn.32xlarge", undefined],
    ["m5", undefined],
    ["m5.toString", undefined],
  ])("%s: %s", (type, limit) => {
    expect(addressesPerEniOf(type)).toBe(limit);
  });

  it("agrees with the simulator on every Nitro type the simulator knows (its Xen ones are older than our table)", () => {
    for (const type of knownInstanceTypes.filter((t) => nitroOf(t) === true))
      expect([type, addressesPerEniOf(type)]).toEqual([type, simAddressesPerEniOf(type)]);
  });
});

describe("checks", () => {
  it("names any other status of the token request", () => {
    const result = imdsCheck(
      { kind: "status", status: 500 },
      { endpoint: "http://imds", timeoutMs: 1000, instanceId: undefined },
    );
    expect(result).toMatchObject({
      status: "problem",
      detail: "IMDS at http://imds answered HTTP 500 to the token request.",
    });
  });

  it("warns about a pod interface on the instance's primary ENI", () => {
    const [result] = eniMatchChecks(
      [{ name: "net1", mac: "02:00:00:00:0a:01", addresses: [] }],
      [eni({ deviceIndex: 0 })],
    );
    expect(result?.status).toBe("warn");
    expect(result?.detail).toContain("the instance's primary ENI, which the VPC CNI manages");
  });

  it("reports a link the network-status file names but the pod lacks, and a MAC that disagrees", () => {
    const pods = [
      { name: "net1", mac: "02:00:00:00:0a:01", addresses: [] },
      { name: "net2", mac: "02:00:00:00:0b:01", addresses: [] },
    ];
    const links = new Map([
      ["net1", undefined],
      ["net2", { name: "net2", adminUp: true, operState: "up", mtu: 1500, mac: "02:00:00:00:0c:01" }],
    ]);
    expect(linkChecks(["net1", "net2"], pods, links).map((r) => r.status)).toEqual(["problem", "warn"]);
  });

  it.each([
    ["outside-eni-subnet", ["198.51.100.70"], "inside the subnet of the ENI"],
    ["eni-primary-address", ["198.51.100.10"], "whereabouts: exclude"],
  ])("gives each planner refusal its fix: %s", (reason, addresses, fix) => {
    const planned = plan({
      interfaces: [{ name: "net1", mac: "02:00:00:00:0a:01", addresses }],
      enis: [eni()],
      policy: { allowedCidrs: ["198.51.100.0/24"] },
    });
    const [result] = addressChecks(planned, new Map());
    expect(planned.refusals[0]?.reason).toBe(reason);
    expect(result?.status).toBe("problem");
    expect(result?.fix).toContain(fix);
  });

  it("names a refused address once in the text report, not as a subject before a detail that names it", () => {
    const planned = plan({
      interfaces: [{ name: "net1", mac: "02:00:00:00:0a:01", addresses: ["198.51.100.200"] }],
      enis: [eni()],
      policy: { allowedCidrs: ["198.51.100.32/28"] },
    });
    const results = addressChecks(planned, new Map());
    expect(results.map((r) => [r.subject, r.status])).toEqual([["198.51.100.200", "problem"]]);
    const [line] = renderText(results, 10).split("\n");
    expect(line).toBe(
      "PROBLEM  addresses  address 198.51.100.200 on net1 is outside the allowed CIDRs [198.51.100.32/28]; " +
        "add its range to IPMGR_ALLOWED_CIDRS if it is a pod address; init and the sidecar refuse it and exit 6.",
    );
  });

  it("says an address is not held, and that EC2 could not be asked who holds it, in one clause", () => {
    const planned = plan({
      interfaces: [{ name: "net1", mac: "02:00:00:00:0a:01", addresses: ["198.51.100.40"] }],
      enis: [eni()],
      policy: { allowedCidrs: ["198.51.100.32/28"] },
    });
    expect(addressChecks(planned, undefined).map((r) => r.detail)).toEqual([
      "198.51.100.40 on net1 is not held by eni-0a (EC2 could not be asked who holds it); traffic for it does not reach this pod.",
    ]);
    expect(addressChecks(planned, new Map()).map((r) => r.detail)).toEqual([
      "198.51.100.40 on net1 is not held by eni-0a, and no ENI holds it; traffic for it does not reach this pod.",
    ]);
  });

  it("reports an address two interfaces on different ENIs claim", () => {
    const planned = plan({
      interfaces: [
        { name: "net1", mac: "02:00:00:00:0a:01", addresses: ["198.51.100.40"] },
        { name: "net2", mac: "02:00:00:00:0a:02", addresses: ["198.51.100.40"] },
      ],
      enis: [
        eni(),
        eni({
          eniId: "eni-0b",
          mac: "02:00:00:00:0a:02",
          primaryIpv4: "198.51.100.11",
          ipv4s: ["198.51.100.11"],
        }),
      ],
      policy: { allowedCidrs: ["198.51.100.32/28"] },
    });
    const results = addressChecks(planned, new Map());
    expect(results.map((r) => r.status)).toEqual(["problem", "problem"]);
    expect(results[0]?.fix).toContain("one address can be held by one ENI only");
  });

  it("does not check the capacity of an instance type it does not know", () => {
    const planned = plan({ interfaces: [], enis: [], policy: { allowedCidrs: [] } });
    const [result] = capacityChecks("x2idn.32xlarge", [multusOf(eni())], planned);
    expect(result?.status).toBe("skipped");
    expect(result?.fix).toContain("aws ec2 describe-instance-types --instance-types x2idn.32xlarge");
  });

  describe("allowed CIDRs", () => {
    const subnets = multusSubnets([
      multusOf(eni()),
      multusOf(
        eni({
          eniId: "eni-0b",
          subnetId: "subnet-b",
          subnetIpv4Cidrs: ["198.51.100.64/26"],
          subnetIpv6Cidrs: [],
          primaryIpv4: "198.51.100.70",
        }),
        [],
      ),
    ]);
    const statusOf = (cidrs: string[]) => allowedCidrChecks(cidrs, subnets).map((r) => [r.subject, r.status]);

    it("accepts a range inside a subnet, also of a secondary ENI no pod interface uses", () => {
      expect(statusOf(["198.51.100.32/28", "198.51.100.96/28", "2001:db8::100/120"])).toEqual([
        ["198.51.100.32/28", "ok"],
        ["198.51.100.96/28", "ok"],
        ["2001:db8::100/120", "ok"],
      ]);
    });

    it("warns about a range holding AWS's reserved addresses or an ENI's primary, one larger than a subnet, and one in another subnet", () => {
      expect(statusOf(["198.51.100.0/29", "198.51.100.0/25", "203.0.113.0/24", "198.51.100.32/28"])).toEqual([
        ["198.51.100.0/29", "warn"],
        ["198.51.100.0/25", "warn"],
        ["203.0.113.0/24", "warn"],
        ["198.51.100.32/28", "ok"],
      ]);
      const [reserved] = allowedCidrChecks(["198.51.100.0/28"], subnets);
      expect(reserved?.detail).toContain(
        "198.51.100.0, 198.51.100.1, 198.51.100.2 and 198.51.100.3, which AWS reserves and the ENI primary address 198.51.100.10",
      );
    });
  });

  it("accepts a range covered by several explicit reservations", () => {
    const [subnet] = multusSubnets([multusOf(eni())]);
    if (subnet === undefined) throw new Error("no subnet");
    const reservation = (cidr: string, n: number): SubnetCidrReservation => ({
      reservationId: `scr-${n}`,
      subnetId: "subnet-a",
      cidr,
      type: "explicit",
      description: undefined,
      tags: {},
    });
    const [result] = reservationChecks(
      [{ cidr: "198.51.100.32/28", subnet }],
      new Map([["subnet-a", [reservation("198.51.100.32/29", 1), reservation("198.51.100.40/29", 2)]]]),
    );
    expect(result?.status).toBe("ok");
    expect(result?.detail).toContain("scr-1 (198.51.100.32/29) and scr-2 (198.51.100.40/29)");
  });

  it("skips the ip command when the sidecar would not run it", () => {
    expect(ipCommandCheck(undefined, "poll", "interfaces").status).toBe("skipped");
    expect(ipCommandCheck(undefined, "auto", "network-status").status).toBe("skipped");
  });
});

describe("renderers", () => {
  const results: CheckResult[] = [
    { name: "imds", status: "ok", detail: "IMDSv2 at http://imds issued a token in 2 ms." },
    {
      name: "permission",
      subject: "ec2:DescribeNetworkInterfaces",
      status: "problem",
      detail: "denied.",
      fix: "grant it",
    },
    { name: "eni-tag", subject: "eni-0a", status: "skipped", detail: "eni-0a: not checked." },
  ];

  it("prints one line per result, the fix under it, and a summary", () => {
    expect(renderText(results, 10)).toBe(
      [
        "ok       imds        IMDSv2 at http://imds issued a token in 2 ms.",
        "PROBLEM  permission  ec2:DescribeNetworkInterfaces: denied.",
        "                     fix: grant it",
        "skipped  eni-tag     eni-0a: not checked.",
        "",
        "multus-ipmgr doctor: 1 problem, 0 warnings, 1 ok, 1 skipped (exit 10).",
        "",
      ].join("\n"),
    );
  });

  it("writes one JSON document for tools", () => {
    expect(JSON.parse(renderJson(results, 10))).toEqual({
      ok: false,
      exitCode: 10,
      summary: { ok: 1, warn: 0, problem: 1, skipped: 1 },
      checks: results,
    });
  });
});

describe("SysfsLinks", () => {
  let root: string | undefined;
  afterEach(() => {
    removeTempDir(root);
    root = undefined;
  });

  function link(name: string, files: Record<string, string>): void {
    if (root === undefined) throw new Error("no root");
    mkdirSync(join(root, name));
    for (const [file, text] of Object.entries(files)) writeFileSync(join(root, name, file), `${text}\n`);
  }

  it("reads a link's flags, operational state, MTU and MAC, and knows when there is none", async () => {
    root = makeTempDir("ipmgr-sysfs-");
    link("net1", { flags: "0x1003", operstate: "up", mtu: "9001", address: "02:00:00:00:0A:01" });
    link("net2", { flags: "0x1002", operstate: "down", mtu: "1500", address: "02:00:00:00:0b:01" });
    const links = new SysfsLinks(root);
    expect(await links.names()).toEqual(["net1", "net2"]);
    expect(await links.read("net1")).toEqual({
      name: "net1",
      adminUp: true,
      operState: "up",
      mtu: 9001,
      mac: "02:00:00:00:0a:01",
    });
    expect((await links.read("net2"))?.adminUp).toBe(false);
    expect(await links.read("net3")).toBeUndefined();
    expect(await links.read("../net1")).toBeUndefined();
  });

  it("reads each link's rp_filter from /proc/sys, all's too, and none for a link that has none", async () => {
    root = makeTempDir("ipmgr-sysfs-");
    link("all", { rp_filter: "1" });
    link("ens6", { rp_filter: "2" });
    const rp = new ProcRpFilter(root);
    expect(await rp.read("all")).toBe(1);
    expect(await rp.read("ens6")).toBe(2);
    expect(await rp.read("ens7")).toBeUndefined();
    expect(await rp.read("../all")).toBeUndefined();
  });
});

describe("node links (pure)", () => {
  const eni = (eniId: string, mac: string, deviceIndex: number): EniState => ({
    eniId,
    mac,
    deviceIndex,
    subnetId: "subnet-0a",
    subnetIpv4Cidrs: ["198.51.100.0/26"],
    subnetIpv6Cidrs: [],
    primaryIpv4: undefined,
    ipv4s: [],
    ipv6s: [],
  });
  const info = (name: string, mac: string) => ({ name, adminUp: true, operState: "up", mtu: 1500, mac });

  it("tells the node's namespace by the primary ENI's MAC on a link, never by a Multus ENI's", () => {
    const enis = [eni("eni-0", "02:00:00:00:00:00", 0), eni("eni-1", "02:00:00:00:00:01", 1)];
    expect(onHostNetwork([info("ens5", "02:00:00:00:00:00")], enis)).toBe(true);
    // A pod: eth0 a veth of its own, net1 an ipvlan child carrying the Multus ENI's MAC.
    expect(onHostNetwork([info("eth0", "0a:58:0a:00:00:05"), info("net1", "02:00:00:00:00:01")], enis)).toBe(
      false,
    );
  });

  it("takes the kernel's rule: the larger of the link's rp_filter and all's", () => {
    const multus = [eni("eni-1", "02:00:00:00:00:01", 1)];
    const links = [info("ens6", "02:00:00:00:00:01")];
    const status = (own: number, all: number) =>
      rpFilterChecks(
        multus,
        links,
        new Map([
          ["all", all],
          ["ens6", own],
        ]),
      )[0]?.status;
    expect([status(0, 0), status(2, 0), status(2, 1), status(0, 2), status(1, 0), status(0, 1)]).toEqual([
      "ok",
      "ok",
      "ok",
      "ok",
      "problem",
      "problem",
    ]);
  });
});
