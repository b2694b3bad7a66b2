import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadWorldFile, parseWorld, WorldError } from "../src/sim/index.js";
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

  it("WorldError's message lists every problem", () => {
    const w = base();
    eni(w).mac = "nope";
    w.region = "Mars";
    expect(() => parseWorld(w)).toThrow(
      /^world is invalid: region: must be an AWS region such as us-east-1; /,
    );
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
