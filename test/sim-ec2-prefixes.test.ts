import {
  AssignIpv6AddressesCommand,
  AssignPrivateIpAddressesCommand,
  DescribeInstancesCommand,
  DescribeNetworkInterfacesCommand,
  type EC2Client,
  UnassignIpv6AddressesCommand,
  UnassignPrivateIpAddressesCommand,
} from "@aws-sdk/client-ec2";
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../src/eni/process/clock.js";
import { parseWorld, type SimulatorHandle, type WorldError } from "../src/sim/index.js";
import {
  ec2Failure,
  imdsEndpointOf,
  standardWorld,
  startWithEc2,
  stopWithEc2,
} from "./helpers/sim-fixtures.js";

/**
 * Prefixes (prefix delegation) on the simulator, through the AWS SDK's own client. World: standardWorld,
 * subnet-a 198.51.100.0/25 (2001:db8::/64) with eni-0a (.10, device 0) and eni-0b (.20) on i-1 (m5.large,
 * 10 addresses per ENI), plus i-2 (m5.large, or another type when a test says so) with eni-0z (.30).
 */

let sim: SimulatorHandle | undefined;
let ec2: EC2Client;

afterEach(async () => {
  if (sim !== undefined) await stopWithEc2(sim, ec2);
  sim = undefined;
});

interface Setup {
  /** i-2's type. Default m5.large. */
  instanceType?: string;
  ipv4AddressesPerEni?: number;
  reservations?: unknown[];
  clock?: Clock;
}

async function start(setup: Setup = {}): Promise<void> {
  const world = standardWorld({
    ...(setup.ipv4AddressesPerEni === undefined ? {} : { ipv4AddressesPerEni: setup.ipv4AddressesPerEni }),
    reservations: setup.reservations ?? [],
    moreInstances: [
      {
        id: "i-2",
        instanceType: setup.instanceType ?? "m5.large",
        enis: [
          {
            id: "eni-0z",
            mac: "02:00:00:00:0f:01",
            deviceIndex: 0,
            subnet: "subnet-a",
            primaryIpv4: "198.51.100.30",
          },
        ],
      },
    ],
  });
  ({ sim, ec2 } = await startWithEc2(world, setup.clock === undefined ? {} : { clock: setup.clock }));
}

const eniState = (eniId: string) => {
  const eni = sim?.state().enis.find((e) => e.eniId === eniId);
  if (eni === undefined) throw new Error(`no ${eniId}`);
  return eni;
};

const assign4 = (
  eni: string,
  input: { prefixes?: string[]; count?: number; addresses?: string[]; reassign?: boolean },
) =>
  ec2.send(
    new AssignPrivateIpAddressesCommand({
      NetworkInterfaceId: eni,
      ...(input.prefixes === undefined ? {} : { Ipv4Prefixes: input.prefixes }),
      ...(input.count === undefined ? {} : { Ipv4PrefixCount: input.count }),
      ...(input.addresses === undefined ? {} : { PrivateIpAddresses: input.addresses }),
      ...(input.reassign === undefined ? {} : { AllowReassignment: input.reassign }),
    }),
  );

const assign6 = (eni: string, input: { prefixes?: string[]; count?: number; addresses?: string[] }) =>
  ec2.send(
    new AssignIpv6AddressesCommand({
      NetworkInterfaceId: eni,
      ...(input.prefixes === undefined ? {} : { Ipv6Prefixes: input.prefixes }),
      ...(input.count === undefined ? {} : { Ipv6PrefixCount: input.count }),
      ...(input.addresses === undefined ? {} : { Ipv6Addresses: input.addresses }),
    }),
  );

describe("IPv4 prefixes: AssignPrivateIpAddresses with Ipv4Prefix.N / Ipv4PrefixCount", () => {
  it("assigns a named /28, answers it in assignedIpv4PrefixSet, and Describe shows it in ipv4PrefixSet", async () => {
    await start();
    const out = await assign4("eni-0b", { prefixes: ["198.51.100.32/28"] });
    expect(out.AssignedIpv4Prefixes).toEqual([{ Ipv4Prefix: "198.51.100.32/28" }]);
    expect(out.AssignedPrivateIpAddresses).toEqual([]);
    expect(eniState("eni-0b").ipv4Prefixes).toEqual(["198.51.100.32/28"]);
    expect(eniState("eni-0b").ipv4s).toEqual(["198.51.100.20"]);
    const described = await ec2.send(
      new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ["eni-0b"] }),
    );
    expect(described.NetworkInterfaces?.[0]?.Ipv4Prefixes).toEqual([{ Ipv4Prefix: "198.51.100.32/28" }]);
    expect(described.NetworkInterfaces?.[0]?.Ipv6Prefixes).toEqual([]);
    const instances = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [{ Name: "network-interface.ipv4-prefixes.ipv4-prefix", Values: ["198.51.100.32/28"] }],
      }),
    );
    const nics = instances.Reservations?.flatMap((r) => r.Instances ?? []).flatMap(
      (i) => i.NetworkInterfaces ?? [],
    );
    expect(nics?.find((n) => n.NetworkInterfaceId === "eni-0b")?.Ipv4Prefixes).toEqual([
      { Ipv4Prefix: "198.51.100.32/28" },
    ]);
  });

  it("the control API's GET /state shows each ENI's prefixes", async () => {
    await start();
    await assign4("eni-0b", { prefixes: ["198.51.100.32/28"] });
    await assign6("eni-0b", { prefixes: ["2001:db8:0:0:1::/80"] });
    const state = (await (await fetch(`${sim?.controlEndpoint}/state`)).json()) as {
      enis: { eniId: string; ipv4Prefixes: string[]; ipv6Prefixes: string[] }[];
    };
    expect(state.enis.map((e) => [e.eniId, e.ipv4Prefixes, e.ipv6Prefixes])).toEqual([
      ["eni-0a", [], []],
      ["eni-0b", ["198.51.100.32/28"], ["2001:db8:0:0:1::/80"]],
      ["eni-0c", [], []],
      ["eni-0z", [], []],
    ]);
  });

  it("treats a prefix the ENI already holds as assigned, without duplicating it", async () => {
    await start();
    await assign4("eni-0b", { prefixes: ["198.51.100.32/28"] });
    const out = await assign4("eni-0b", { prefixes: ["198.51.100.32/28"] });
    expect(out.AssignedIpv4Prefixes).toEqual([{ Ipv4Prefix: "198.51.100.32/28" }]);
    expect(eniState("eni-0b").ipv4Prefixes).toEqual(["198.51.100.32/28"]);
  });

  it("Ipv4PrefixCount picks the lowest free aligned /28: not the one with AWS's reserved addresses, not one holding an address", async () => {
    await start();
    // .0/28 holds the subnet's reserved addresses, .16/28 holds eni-0b's primary .20: the first free one is .32/28.
    const out = await assign4("eni-0b", { count: 2 });
    expect(out.AssignedIpv4Prefixes?.map((p) => p.Ipv4Prefix)).toEqual([
      "198.51.100.32/28",
      "198.51.100.48/28",
    ]);
  });

  it("Ipv4PrefixCount takes from a prefix-type reservation first and never from an explicit one", async () => {
    await start({
      reservations: [
        { subnet: "subnet-a", cidr: "198.51.100.32/28", type: "explicit" },
        { subnet: "subnet-a", cidr: "198.51.100.96/27", type: "prefix" },
      ],
    });
    const out = await assign4("eni-0b", { count: 3 });
    expect(out.AssignedIpv4Prefixes?.map((p) => p.Ipv4Prefix)).toEqual([
      "198.51.100.96/28",
      "198.51.100.48/28",
      "198.51.100.64/28",
    ]);
  });

  it("refuses a count no free aligned block can satisfy (InsufficientCidrBlocks), changing nothing", async () => {
    await start();
    // Free: .32, .48, .64, .80, .96 (/28s); .112/28 holds the broadcast address.
    const error = await ec2Failure(assign4("eni-0b", { count: 6 }));
    expect(error).toEqual({
      code: "InsufficientCidrBlocks",
      message: "The specified subnet does not have enough free cidr blocks to satisfy the request.",
      status: 400,
    });
    expect(eniState("eni-0b").ipv4Prefixes).toEqual([]);
  });

  it("refuses Ipv4Prefix.N and Ipv4PrefixCount together, and addresses with prefixes (InvalidParameterCombination)", async () => {
    await start();
    const both = await ec2Failure(assign4("eni-0b", { prefixes: ["198.51.100.32/28"], count: 1 }));
    expect(both).toEqual({
      code: "InvalidParameterCombination",
      message: "The parameters Ipv4Prefix and Ipv4PrefixCount cannot be used together",
      status: 400,
    });
    const mixed = await ec2Failure(
      assign4("eni-0b", { prefixes: ["198.51.100.32/28"], addresses: ["198.51.100.50"] }),
    );
    expect(mixed.code).toBe("InvalidParameterCombination");
    expect(eniState("eni-0b").ipv4Prefixes).toEqual([]);
  });

  it.each([
    ["a /27 (wrong length)", "198.51.100.32/27", "an IPv4 prefix must be a /28"],
    ["an unaligned /28", "198.51.100.36/28", "has host bits set (the network address is 198.51.100.32/28)"],
    ["an address without a length", "198.51.100.32", "must be a CIDR block"],
    [
      "a /28 outside the subnet",
      "198.51.100.128/28",
      "does not fall within the subnet's address range (198.51.100.0/25)",
    ],
    ["the /28 holding AWS's reserved addresses", "198.51.100.0/28", "is in subnet's reserved address range"],
  ])("refuses %s with InvalidParameterValue", async (_name, prefix, words) => {
    await start();
    const error = await ec2Failure(assign4("eni-0b", { prefixes: [prefix] }));
    expect(error.code).toBe("InvalidParameterValue");
    expect(error.message).toContain(words);
    expect(eniState("eni-0b").ipv4Prefixes).toEqual([]);
  });

  it("refuses a prefix overlapping an address or another ENI's prefix in the subnet, all or nothing", async () => {
    await start();
    await assign4("eni-0a", { addresses: ["198.51.100.40"] });
    const overAddress = await ec2Failure(
      assign4("eni-0b", { prefixes: ["198.51.100.64/28", "198.51.100.32/28"] }),
    );
    expect(overAddress).toEqual({
      code: "InvalidParameterValue",
      message: "Prefix 198.51.100.32/28 overlaps address 198.51.100.40, already assigned in the subnet.",
      status: 400,
    });
    expect(eniState("eni-0b").ipv4Prefixes).toEqual([]);
    await assign4("eni-0z", { prefixes: ["198.51.100.64/28"] });
    const overPrefix = await ec2Failure(assign4("eni-0b", { prefixes: ["198.51.100.64/28"] }));
    expect(overPrefix.message).toBe(
      "Prefix 198.51.100.64/28 overlaps prefix 198.51.100.64/28, already assigned in the subnet.",
    );
    expect(eniState("eni-0z").ipv4Prefixes).toEqual(["198.51.100.64/28"]);
  });

  it("counts each prefix as one address slot (PrivateIpAddressLimitExceeded past the limit)", async () => {
    await start({ ipv4AddressesPerEni: 3 });
    await assign4("eni-0b", { prefixes: ["198.51.100.32/28", "198.51.100.48/28"] });
    const error = await ec2Failure(assign4("eni-0b", { prefixes: ["198.51.100.64/28"] }));
    expect(error).toEqual({
      code: "PrivateIpAddressLimitExceeded",
      message: "Number of private addresses will exceed limit. The limit is 3 per network interface.",
      status: 400,
    });
    const address = await ec2Failure(assign4("eni-0b", { addresses: ["198.51.100.100"] }));
    expect(address.code).toBe("PrivateIpAddressLimitExceeded");
  });

  it("refuses prefixes on an instance type that is not Nitro", async () => {
    await start({ instanceType: "m4.large" });
    const error = await ec2Failure(assign4("eni-0z", { prefixes: ["198.51.100.32/28"] }));
    expect(error).toEqual({
      code: "InvalidParameterValue",
      message:
        "Prefix delegation is not supported for instance type m4.large: it is not built on the Nitro System.",
      status: 400,
    });
    // Addresses still work there.
    await assign4("eni-0z", { addresses: ["198.51.100.33"] });
    expect(eniState("eni-0z").ipv4s).toEqual(["198.51.100.30", "198.51.100.33"]);
  });

  it("refuses a single address inside a prefix, another ENI's or its own, even with AllowReassignment", async () => {
    await start();
    await assign4("eni-0z", { prefixes: ["198.51.100.32/28"] });
    for (const [eni, reassign] of [
      ["eni-0b", true],
      ["eni-0b", false],
      ["eni-0z", false],
    ] as const) {
      const error = await ec2Failure(assign4(eni, { addresses: ["198.51.100.40"], reassign }));
      expect(error).toEqual({
        code: "InvalidParameterValue",
        message: "Address 198.51.100.40 is in use.",
        status: 400,
      });
    }
    expect(eniState("eni-0z").ipv4s).toEqual(["198.51.100.30"]);
    expect(eniState("eni-0b").ipv4s).toEqual(["198.51.100.20"]);
  });

  it("SecondaryPrivateIpAddressCount skips the addresses inside prefixes", async () => {
    await start({ ipv4AddressesPerEni: 30 });
    await assign4("eni-0z", { prefixes: ["198.51.100.32/28"] });
    // Free below the prefix: .4-.9, .11-.19, .21-.29 and .31 (25 addresses); the last four come after it.
    const picked = await ec2.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: "eni-0a",
        SecondaryPrivateIpAddressCount: 29,
      }),
    );
    const addresses = picked.AssignedPrivateIpAddresses?.map((a) => a.PrivateIpAddress) ?? [];
    expect(addresses.slice(-5)).toEqual([
      "198.51.100.31",
      "198.51.100.48",
      "198.51.100.49",
      "198.51.100.50",
      "198.51.100.51",
    ]);
  });

  it("UnassignPrivateIpAddresses with Ipv4Prefix.N removes the prefix; one the ENI does not hold is refused", async () => {
    await start();
    await assign4("eni-0b", { prefixes: ["198.51.100.32/28", "198.51.100.48/28"] });
    await ec2.send(
      new UnassignPrivateIpAddressesCommand({
        NetworkInterfaceId: "eni-0b",
        Ipv4Prefixes: ["198.51.100.32/28"],
      }),
    );
    expect(eniState("eni-0b").ipv4Prefixes).toEqual(["198.51.100.48/28"]);
    const error = await ec2Failure(
      ec2.send(
        new UnassignPrivateIpAddressesCommand({
          NetworkInterfaceId: "eni-0b",
          Ipv4Prefixes: ["198.51.100.48/28", "198.51.100.64/28"],
        }),
      ),
    );
    expect(error).toEqual({
      code: "InvalidParameterValue",
      message: "Some of the specified prefixes are not assigned to interface eni-0b: 198.51.100.64/28",
      status: 400,
    });
    expect(eniState("eni-0b").ipv4Prefixes).toEqual(["198.51.100.48/28"]);
  });
});

describe("IPv6 prefixes: AssignIpv6Addresses / UnassignIpv6Addresses with Ipv6Prefix.N / Ipv6PrefixCount", () => {
  it("assigns a named /80 and a counted one, answered in assignedIpv6PrefixSet and shown by Describe", async () => {
    await start();
    const named = await assign6("eni-0b", { prefixes: ["2001:DB8:0:0:1::/80"] });
    expect(named.AssignedIpv6Prefixes).toEqual(["2001:db8:0:0:1::/80"]);
    const counted = await assign6("eni-0b", { count: 1 });
    // The first /80 holds AWS's reserved addresses (2001:db8::..3), the second is taken: the third is picked.
    expect(counted.AssignedIpv6Prefixes).toEqual(["2001:db8:0:0:2::/80"]);
    const described = await ec2.send(
      new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ["eni-0b"] }),
    );
    expect(described.NetworkInterfaces?.[0]?.Ipv6Prefixes).toEqual([
      { Ipv6Prefix: "2001:db8:0:0:1::/80" },
      { Ipv6Prefix: "2001:db8:0:0:2::/80" },
    ]);
  });

  it("refuses a /64, both forms at once, and an address inside a held prefix", async () => {
    await start();
    const wrong = await ec2Failure(assign6("eni-0b", { prefixes: ["2001:db8::/64"] }));
    expect(wrong.code).toBe("InvalidParameterValue");
    expect(wrong.message).toContain("an IPv6 prefix must be a /80");
    const both = await ec2Failure(assign6("eni-0b", { prefixes: ["2001:db8:0:0:1::/80"], count: 1 }));
    expect(both.code).toBe("InvalidParameterCombination");
    await assign6("eni-0z", { prefixes: ["2001:db8:0:0:1::/80"] });
    const inside = await ec2Failure(assign6("eni-0b", { addresses: ["2001:db8:0:0:1::5"] }));
    expect(inside).toEqual({
      code: "InvalidParameterValue",
      message: "Address 2001:db8::1:0:0:5 is in use.",
      status: 400,
    });
  });

  it("unassigns a prefix and answers it in unassignedIpv6PrefixSet", async () => {
    await start();
    await assign6("eni-0b", { prefixes: ["2001:db8:0:0:1::/80"] });
    const out = await ec2.send(
      new UnassignIpv6AddressesCommand({
        NetworkInterfaceId: "eni-0b",
        Ipv6Prefixes: ["2001:db8:0:0:1::/80"],
      }),
    );
    expect(out.UnassignedIpv6Prefixes).toEqual(["2001:db8:0:0:1::/80"]);
    expect(eniState("eni-0b").ipv6Prefixes).toEqual([]);
  });
});

describe("IMDS ipv4-prefix / ipv6-prefix and the world file", () => {
  async function imdsGet(path: string): Promise<{ status: number; text: string }> {
    const base = imdsEndpointOf(sim as SimulatorHandle, "i-1");
    const token = await (
      await fetch(`${base}/latest/api/token`, {
        method: "PUT",
        headers: { "X-aws-ec2-metadata-token-ttl-seconds": "60" },
      })
    ).text();
    const response = await fetch(
      `${base}/latest/meta-data/network/interfaces/macs/02:00:00:00:0b:01/${path}`,
      {
        headers: { "X-aws-ec2-metadata-token": token },
      },
    );
    return { status: response.status, text: await response.text() };
  }

  it("lists the prefixes per MAC, 404 while there are none, late under staleReadsMs", async () => {
    let now = 1_000_000;
    await start({ clock: { now: () => now, sleep: () => Promise.resolve() } });
    expect((await imdsGet("ipv4-prefix")).status).toBe(404);
    expect((await imdsGet("ipv6-prefix")).status).toBe(404);
    sim?.setFaults({ staleReadsMs: 2_000 });
    now += 5_000;
    await assign4("eni-0b", { prefixes: ["198.51.100.32/28", "198.51.100.64/28"] });
    await assign6("eni-0b", { prefixes: ["2001:db8:0:0:1::/80"] });
    expect((await imdsGet("ipv4-prefix")).status).toBe(404);
    now += 2_000;
    expect(await imdsGet("ipv4-prefix")).toEqual({ status: 200, text: "198.51.100.32/28\n198.51.100.64/28" });
    expect(await imdsGet("ipv6-prefix")).toEqual({ status: 200, text: "2001:db8:0:0:1::/80" });
  });

  it("loads prefixes from the world file, and names a bad one by its path", async () => {
    sim = undefined;
    const good = standardWorld({ eni0b: { ipv4Prefixes: ["198.51.100.32/28"] } });
    expect(good.instances[0]?.enis[1]?.ipv4Prefixes).toEqual(["198.51.100.32/28"]);
    const bad = (eni: Record<string, unknown>, instance: Record<string, unknown> = {}) => {
      try {
        parseWorld({
          region: "us-east-1",
          vpc: { id: "vpc-1", cidr: "198.51.100.0/24" },
          subnets: [{ id: "subnet-a", cidr: "198.51.100.0/25", availabilityZone: "us-east-1a" }],
          instances: [
            {
              id: "i-1",
              ...instance,
              enis: [
                {
                  id: "eni-0a",
                  mac: "02:00:00:00:0a:01",
                  deviceIndex: 0,
                  subnet: "subnet-a",
                  primaryIpv4: "198.51.100.10",
                  ...eni,
                },
              ],
            },
          ],
        });
      } catch (error) {
        return (error as WorldError).message;
      }
      throw new Error("expected a WorldError");
    };
    expect(bad({ ipv4Prefixes: ["198.51.100.32/27"] })).toContain(
      "instances[0].enis[0].ipv4Prefixes[0]: 198.51.100.32/27 must be a /28, the only prefix length EC2 delegates",
    );
    expect(bad({ secondaryIpv4s: ["198.51.100.40"], ipv4Prefixes: ["198.51.100.32/28"] })).toContain(
      "instances[0].enis[0].ipv4Prefixes[0]: 198.51.100.32/28 overlaps 198.51.100.40, held by eni-0a",
    );
    expect(bad({ ipv4Prefixes: ["198.51.100.32/28"] }, { instanceType: "m4.large" })).toContain(
      "instances[0].enis[0].ipv4Prefixes[0]: 198.51.100.32/28: instance i-1 is not Nitro (m4.large), and only Nitro instances take prefixes",
    );
    expect(bad({ ipv4Prefixes: ["198.51.100.112/28"] })).toContain(
      "198.51.100.112/28 holds addresses AWS reserves in 198.51.100.0/25 (the first four and the last)",
    );
  });
});
