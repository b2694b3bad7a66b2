import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defaultZoneId, ipName, regionShortName, resourceName } from "../src/sim/aws-names.js";
import { eniViewOf } from "../src/sim/ec2/eni-view.js";
import { loadWorldFile, parseWorld, WorldError } from "../src/sim/index.js";
import { initialStateOf, topologyOf } from "../src/sim/topology.js";
import type { World } from "../src/sim/world.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const base = () => ({
  region: "us-east-1",
  vpc: { id: "vpc-0w", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:100::/56" },
  subnets: [
    {
      id: "subnet-0a",
      cidr: "198.51.100.0/25",
      ipv6Cidr: "2001:db8:100:1::/64",
      availabilityZone: "us-east-1a",
    },
  ],
  instances: [
    {
      id: "i-0w",
      instanceType: "m5.large",
      enis: [
        {
          id: "eni-0w0",
          mac: "02:00:00:00:00:01",
          deviceIndex: 0,
          subnet: "subnet-0a",
          primaryIpv4: "198.51.100.10",
          secondaryIpv4s: [] as string[],
          ipv6s: [] as string[],
          tags: {} as Record<string, unknown>,
        },
      ],
    },
  ],
});
type Base = ReturnType<typeof base>;

function problemsOf(change: (w: Base) => void): string[] {
  const world = base();
  change(world);
  try {
    parseWorld(world);
  } catch (error) {
    expect(error).toBeInstanceOf(WorldError);
    return [...(error as WorldError).problems];
  }
  throw new Error("expected the world to be refused");
}

const eni = (w: Base) => w.instances[0]?.enis[0] as Base["instances"][number]["enis"][number];
/** The same object, open to the optional fields `base()` leaves out. */
const loose = (value: unknown) => value as Record<string, unknown>;
/** A second subnet, in us-east-1b. */
const second = () =>
  ({ id: "subnet-0b", cidr: "198.51.100.128/25", availabilityZone: "us-east-1b" }) as Base["subnets"][number];

describe("world validation", () => {
  it("fills defaults and canonicalizes IPv6", () => {
    const w = base();
    eni(w).ipv6s = ["2001:DB8:100:1:0:0:0:10"];
    eni(w).tags = { "node.k8s.amazonaws.com/no_manage": true };
    const world = parseWorld(w);
    expect(world.accountId).toBe("123456789012");
    expect(world.imds.httpTokens).toBe("required");
    expect(world.reservations).toEqual([]);
    expect(world.instances[0]?.enis[0]?.ipv6s).toEqual(["2001:db8:100:1::10"]);
    expect(world.instances[0]?.enis[0]?.tags).toEqual({ "node.k8s.amazonaws.com/no_manage": "true" });
  });

  it.each<[string, (w: Base) => void, string]>([
    [
      "an uppercase MAC",
      (w) => {
        eni(w).mac = "02:00:00:00:0A:01";
      },
      "instances[0].enis[0].mac: must be lowercase and colon-separated, e.g. 02:00:00:00:0a:01",
    ],
    [
      "an address outside its subnet",
      (w) => {
        eni(w).secondaryIpv4s = ["198.51.100.200"];
      },
      "instances[0].enis[0].secondaryIpv4s[0]: 198.51.100.200 is outside subnet subnet-0a (198.51.100.0/25)",
    ],
    [
      "an AWS-reserved address",
      (w) => {
        eni(w).secondaryIpv4s = ["198.51.100.127"];
      },
      "instances[0].enis[0].secondaryIpv4s[0]: 198.51.100.127 is one of the five addresses AWS reserves in 198.51.100.0/25",
    ],
    [
      "a duplicate address",
      (w) => {
        eni(w).secondaryIpv4s = ["198.51.100.10"];
      },
      "instances[0].enis[0].secondaryIpv4s[0]: 198.51.100.10 is already held by eni-0w0",
    ],
    [
      "an unknown instance type without ipv4AddressesPerEni",
      (w) => {
        (w.instances[0] as { instanceType: string }).instanceType = "x9.huge";
      },
      "instances[0].instanceType: unknown instance type x9.huge: set ipv4AddressesPerEni, or use one of",
    ],
    [
      "an unknown subnet",
      (w) => {
        eni(w).subnet = "subnet-0zz";
      },
      "instances[0].enis[0].subnet: unknown subnet subnet-0zz: list it under subnets",
    ],
    [
      "a subnet outside the VPC",
      (w) => {
        (w.subnets[0] as { cidr: string }).cidr = "203.0.113.0/25";
      },
      "subnets[0].cidr: 203.0.113.0/25 is outside the VPC 198.51.100.0/24",
    ],
    [
      "a CIDR with host bits",
      (w) => {
        w.vpc.cidr = "198.51.100.1/24";
      },
      "vpc.cidr: must be an IPv4 CIDR block such as 198.51.100.0/24",
    ],
    [
      "a misspelt field",
      (w) => {
        (w as Record<string, unknown>).subnet = [];
      },
      "(top level): Unrecognized key",
    ],
    [
      "no device 0",
      (w) => {
        eni(w).deviceIndex = 1;
      },
      "instances[0].enis: needs the primary ENI, with deviceIndex 0",
    ],
    [
      "more addresses than the instance type allows",
      (w) => {
        eni(w).secondaryIpv4s = Array.from({ length: 10 }, (_, i) => `198.51.100.${20 + i}`);
      },
      "instances[0].enis[0]: holds more addresses than the 10 per ENI of m5.large",
    ],
    [
      "an ENI in a security group the world does not list",
      (w) => {
        loose(eni(w)).securityGroups = ["sg-0nowhere"];
      },
      "instances[0].enis[0].securityGroups[0]: unknown security group sg-0nowhere: list it under securityGroups",
    ],
    [
      "a listed group with the default group's id",
      (w) => {
        loose(w).securityGroups = [{ id: "sg-0w", name: "nodes" }];
      },
      "securityGroups[0].id: duplicate security group id sg-0w",
    ],
    [
      "a listed group named default",
      (w) => {
        loose(w).securityGroups = [{ id: "sg-0nodes", name: "default" }];
      },
      "securityGroups[0].name: the VPC's own group is named default: set vpc.defaultSecurityGroupId instead",
    ],
    [
      "two subnets of one zone with different zone ids",
      (w) => {
        loose(w.subnets[0]).availabilityZoneId = "use1-az4";
        w.subnets.push({ ...second(), availabilityZone: "us-east-1a" });
        loose(w.subnets[1]).availabilityZoneId = "use1-az5";
      },
      "subnets[1].availabilityZoneId: use1-az5 differs from use1-az4, the id another subnet gives us-east-1a",
    ],
    [
      "two zones with one zone id",
      (w) => {
        loose(w.subnets[0]).availabilityZoneId = "use1-az2";
        w.subnets.push(second());
      },
      "subnets[1].availabilityZoneId: zones us-east-1a and us-east-1b would both have the id use1-az2; set availabilityZoneId on their subnets",
    ],
    [
      "a malformed zone id",
      (w) => {
        loose(w.subnets[0]).availabilityZoneId = "us-east-1a";
      },
      "subnets[0].availabilityZoneId: must be a zone id such as use1-az1",
    ],
    [
      "a launch time that is not ISO 8601",
      (w) => {
        loose(w.instances[0]).launchTime = "yesterday";
      },
      'instances[0].launchTime: must be an ISO 8601 time such as 2024-01-01T00:00:00Z, got "yesterday"',
    ],
    [
      "an interface type an instance cannot carry",
      (w) => {
        loose(eni(w)).interfaceType = "nat_gateway";
      },
      "instances[0].enis[0].interfaceType: Invalid option",
    ],
  ])("refuses %s, naming the field", (_, change, expected) => {
    const problems = problemsOf(change);
    expect(problems.some((p) => p.startsWith(expected))).toBe(true);
  });

  it("refuses a second ENI with a duplicate MAC and id", () => {
    const problems = problemsOf((w) => {
      w.instances[0]?.enis.push({ ...eni(w), deviceIndex: 1, primaryIpv4: "198.51.100.11" });
    });
    expect(problems).toEqual([
      "instances[0].enis[1].id: duplicate ENI id eni-0w0",
      "instances[0].enis[1].mac: duplicate MAC 02:00:00:00:00:01",
    ]);
  });

  it.each<[string, (w: Base) => void, string]>([
    [
      "nitro: false on a Nitro type",
      (w) => {
        loose(w.instances[0]).nitro = false;
      },
      "instances[0].nitro: instance i-0w says nitro: false, but m5.large is built on the Nitro System, and EC2 answers that per instance type (DescribeInstanceTypes): remove nitro, or use a type that is not Nitro (t2.micro, t2.small, t2.medium, t2.large, m4.large, m4.xlarge, c4.large, c4.xlarge, r4.large)",
    ],
    [
      "nitro: true on a Xen type",
      (w) => {
        Object.assign(loose(w.instances[0]), { instanceType: "m4.large", nitro: true });
      },
      "instances[0].nitro: instance i-0w says nitro: true, but m4.large is not built on the Nitro System, and EC2 answers that per instance type (DescribeInstanceTypes): remove nitro, or use a Nitro type (m5.large, c5.xlarge, ...)",
    ],
    [
      "two instances of a type the table does not know that disagree on nitro",
      (w) => {
        const first = loose(w.instances[0]);
        Object.assign(first, { instanceType: "x9.large", ipv4AddressesPerEni: 10, nitro: false });
        const other = structuredClone(w.instances[0]) as Base["instances"][number];
        other.id = "i-0w2";
        Object.assign(other.enis[0] ?? {}, {
          id: "eni-0w2",
          mac: "02:00:00:00:00:02",
          primaryIpv4: "198.51.100.12",
        });
        w.instances.push(Object.assign(other, { nitro: true }));
      },
      "instances[1].nitro: instance i-0w2 says nitro: true, but instance i-0w of the same type x9.large says nitro: false, and EC2 answers that per instance type (DescribeInstanceTypes): give every instance of x9.large the same nitro",
    ],
  ])("refuses %s, naming the instance, the type and the fix", (_, change, expected) => {
    expect(problemsOf(change)).toEqual([expected]);
  });

  it("takes Nitro from the instance type: the table's, or what the world says of a type it does not know", () => {
    const w = base();
    const xen = structuredClone(w.instances[0]) as Base["instances"][number];
    Object.assign(xen, { id: "i-0xen", instanceType: "m4.large" });
    Object.assign(xen.enis[0] ?? {}, {
      id: "eni-0x",
      mac: "02:00:00:00:00:02",
      primaryIpv4: "198.51.100.12",
    });
    const custom = structuredClone(w.instances[0]) as Base["instances"][number];
    Object.assign(custom, { id: "i-0c", instanceType: "x9.large", ipv4AddressesPerEni: 10, nitro: false });
    Object.assign(custom.enis[0] ?? {}, {
      id: "eni-0c",
      mac: "02:00:00:00:00:03",
      primaryIpv4: "198.51.100.13",
    });
    const sameType = structuredClone(custom);
    Object.assign(sameType, { id: "i-0d", nitro: undefined });
    Object.assign(sameType.enis[0] ?? {}, {
      id: "eni-0d",
      mac: "02:00:00:00:00:04",
      primaryIpv4: "198.51.100.14",
    });
    delete loose(sameType).nitro;
    w.instances.push(xen, custom, sameType);
    loose(w.instances[0]).nitro = true;
    const instances = topologyOf(parseWorld(w)).instances;
    expect([...instances.values()].map((i) => [i.id, i.nitro])).toEqual([
      ["i-0w", true],
      ["i-0xen", false],
      ["i-0c", false],
      ["i-0d", false],
    ]);
  });

  it("WorldError's message lists every problem", () => {
    const w = base();
    eni(w).mac = "nope";
    w.region = "Mars";
    expect(() => parseWorld(w)).toThrow(
      /^world is invalid: region: must be an AWS region such as us-east-1; /,
    );
  });
});

/** The attributes of a world ENI as DescribeNetworkInterfaces renders them (fixed ones and state's ones). */
function attrsOf(world: World, eniId: string): unknown {
  const topology = topologyOf(world);
  const eni = initialStateOf(world, (p) => `${p}-1`).enis.find((e) => e.eniId === eniId);
  if (eni === undefined) throw new Error(`no ${eniId}`);
  return eniViewOf(eni, topology).attrs;
}

describe("the attributes EC2 derives or defaults", () => {
  it("gives an ENI, its subnet and its instance EC2's defaults when the world is silent", () => {
    const topology = topologyOf(parseWorld(base()));
    expect(attrsOf(parseWorld(base()), "eni-0w0")).toEqual({
      description: "",
      securityGroups: [{ id: "sg-0w", name: "default" }],
      sourceDestCheck: true,
      interfaceType: "interface",
      requesterId: undefined,
      requesterManaged: false,
      deleteOnTermination: true,
      attachTime: "2024-01-01T00:00:00.000Z",
    });
    expect(topology.subnets.get("subnet-0a")).toMatchObject({
      availabilityZoneId: "use1-az1",
      defaultForAz: false,
      mapPublicIpOnLaunch: false,
      enableDns64: false,
      privateDnsNameOptionsOnLaunch: {
        hostnameType: "ip-name",
        enableResourceNameDnsARecord: false,
        enableResourceNameDnsAAAARecord: false,
      },
      tags: {},
    });
    expect(topology.instances.get("i-0w")).toMatchObject({
      availabilityZoneId: "use1-az1",
      architecture: "x86_64",
      imageId: "ami-0123456789abcdef0",
      launchTime: "2024-01-01T00:00:00.000Z",
      tags: {},
    });
  });

  it("takes what the world sets, launch time in EC2's form and ENI attach time from it", () => {
    const w = base();
    loose(w.vpc).defaultSecurityGroupId = "sg-0vpcdefault";
    loose(w).securityGroups = [{ id: "sg-0nodes", name: "eks-nodes" }];
    loose(w.instances[0]).launchTime = "2025-03-04T05:06:07+01:00";
    Object.assign(eni(w), {
      description: "aws-K8S-i-0w",
      securityGroups: ["sg-0nodes", "sg-0vpcdefault"],
      sourceDestCheck: false,
      interfaceType: "efa",
      requesterId: "AROAEXAMPLE:i-0w",
      requesterManaged: true,
      deleteOnTermination: false,
    });
    expect(attrsOf(parseWorld(w), "eni-0w0")).toEqual({
      description: "aws-K8S-i-0w",
      securityGroups: [
        { id: "sg-0nodes", name: "eks-nodes" },
        { id: "sg-0vpcdefault", name: "default" },
      ],
      sourceDestCheck: false,
      interfaceType: "efa",
      requesterId: "AROAEXAMPLE:i-0w",
      requesterManaged: true,
      deleteOnTermination: false,
      attachTime: "2025-03-04T04:06:07.000Z",
    });
  });

  it("gives every subnet of a zone the zone id one of them sets", () => {
    const w = base();
    w.subnets.push({ ...second(), availabilityZone: "us-east-1a" });
    loose(w.subnets[1]).availabilityZoneId = "use1-az6";
    const topology = topologyOf(parseWorld(w));
    expect([...topology.subnets.values()].map((s) => s.availabilityZoneId)).toEqual(["use1-az6", "use1-az6"]);
  });

  it.each([
    ["us-east-1", "use1"],
    ["us-west-2", "usw2"],
    ["eu-central-1", "euc1"],
    ["ap-southeast-2", "apse2"],
    ["ap-northeast-3", "apne3"],
    ["sa-east-1", "sae1"],
    ["us-gov-west-1", "usgw1"],
  ])("shortens region %s to %s, as zone ids do", (region, short) => {
    expect(regionShortName(region)).toBe(short);
    expect(defaultZoneId(region, `${region}c`)).toBe(`${short}-az3`);
  });

  it.each([
    ["us-east-1", "ip-198-51-100-10.ec2.internal", "i-0w.ec2.internal"],
    ["eu-west-1", "ip-198-51-100-10.eu-west-1.compute.internal", "i-0w.eu-west-1.compute.internal"],
  ])("names hosts in %s as EC2 does", (region, ip, resource) => {
    expect(ipName("198.51.100.10", region)).toBe(ip);
    expect(resourceName("i-0w", region)).toBe(resource);
  });
});

describe("world files", () => {
  let dir: string | undefined;
  afterEach(() => {
    removeTempDir(dir);
    dir = undefined;
  });

  it("loads both example worlds", async () => {
    const demo = await loadWorldFile("examples/world-demo.yaml");
    expect(demo.instances.map((i) => i.id)).toEqual(["i-0demo1"]);
    const two = await loadWorldFile("examples/world-two-nodes.yaml");
    expect(two.instances.map((i) => i.enis.length)).toEqual([2, 2]);
  });

  it("reads JSON as well as YAML, and names the file in errors", async () => {
    dir = makeTempDir("sim-world-");
    const json = join(dir, "world.json");
    await writeFile(json, JSON.stringify(base()));
    expect((await loadWorldFile(json)).region).toBe("us-east-1");
    const broken = join(dir, "broken.yaml");
    await writeFile(broken, "region: [unclosed\n");
    await expect(loadWorldFile(broken)).rejects.toThrow(`world file ${broken} is invalid: is not valid YAML`);
    const invalid = join(dir, "invalid.json");
    await writeFile(invalid, JSON.stringify({ ...base(), region: "moon" }));
    await expect(loadWorldFile(invalid)).rejects.toThrow(
      `world file ${invalid} is invalid: region: must be an AWS region`,
    );
    await expect(loadWorldFile(join(dir, "missing.yaml"))).rejects.toThrow("cannot be read (no such file)");
  });
});
