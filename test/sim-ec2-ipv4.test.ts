import {
  AssignPrivateIpAddressesCommand,
  type EC2Client,
  UnassignPrivateIpAddressesCommand,
} from "@aws-sdk/client-ec2";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseWorld, type SimulatorHandle, type World } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

let sim: SimulatorHandle;
let ec2: EC2Client;

const ipv4sOf = (eniId: string): string[] => sim.state().enis.find((e) => e.eniId === eniId)?.ipv4s ?? [];

const assign = (input: { eni: string; addresses?: string[]; count?: number; allowReassignment?: boolean }) =>
  ec2.send(
    new AssignPrivateIpAddressesCommand({
      NetworkInterfaceId: input.eni,
      ...(input.addresses === undefined ? {} : { PrivateIpAddresses: input.addresses }),
      ...(input.count === undefined ? {} : { SecondaryPrivateIpAddressCount: input.count }),
      ...(input.allowReassignment === undefined ? {} : { AllowReassignment: input.allowReassignment }),
    }),
  );

describe("IPv4 assignment on two nodes sharing a Multus subnet (203.0.113.64/26)", () => {
  beforeEach(async () => {
    ({ sim, ec2 } = await startWithEc2("examples/world-two-nodes.yaml"));
  });
  afterEach(() => stopWithEc2(sim, ec2));

  it("assigns named addresses and answers them in assignedPrivateIpAddressesSet", async () => {
    const out = await assign({ eni: "eni-0n1multus", addresses: ["203.0.113.100", "203.0.113.101"] });
    expect(out.NetworkInterfaceId).toBe("eni-0n1multus");
    expect(out.AssignedPrivateIpAddresses?.map((a) => a.PrivateIpAddress)).toEqual([
      "203.0.113.100",
      "203.0.113.101",
    ]);
    expect(ipv4sOf("eni-0n1multus")).toEqual(["203.0.113.70", "203.0.113.100", "203.0.113.101"]);
  });

  it("treats an address the ENI already holds as assigned, without duplicating it", async () => {
    await assign({ eni: "eni-0n1multus", addresses: ["203.0.113.100"] });
    const out = await assign({ eni: "eni-0n1multus", addresses: ["203.0.113.100"] });
    expect(out.AssignedPrivateIpAddresses?.map((a) => a.PrivateIpAddress)).toEqual(["203.0.113.100"]);
    expect(ipv4sOf("eni-0n1multus")).toEqual(["203.0.113.70", "203.0.113.100"]);
  });

  it("refuses an address held by another ENI without AllowReassignment (InvalidParameterValue, in use)", async () => {
    await assign({ eni: "eni-0n1multus", addresses: ["203.0.113.100"] });
    const error = await ec2Failure(assign({ eni: "eni-0n2multus", addresses: ["203.0.113.100"] }));
    expect(error).toEqual({
      code: "InvalidParameterValue",
      message: "Address 203.0.113.100 is in use.",
      status: 400,
    });
    expect(ipv4sOf("eni-0n1multus")).toContain("203.0.113.100");
  });

  it("assign moves an IPv4 address held by another ENI only with AllowReassignment", async () => {
    await assign({ eni: "eni-0n1multus", addresses: ["203.0.113.100"] });
    await assign({ eni: "eni-0n2multus", addresses: ["203.0.113.100"], allowReassignment: true });
    expect(ipv4sOf("eni-0n1multus")).toEqual(["203.0.113.70"]);
    expect(ipv4sOf("eni-0n2multus")).toEqual(["203.0.113.71", "203.0.113.100"]);
  });

  it("never moves another ENI's primary address, even with AllowReassignment", async () => {
    const error = await ec2Failure(
      assign({ eni: "eni-0n2multus", addresses: ["203.0.113.70"], allowReassignment: true }),
    );
    expect(error.code).toBe("InvalidParameterValue");
    expect(error.message).toContain("primary");
    expect(ipv4sOf("eni-0n1multus")).toEqual(["203.0.113.70"]);
  });

  it("is all or nothing: one bad address leaves every address where it was", async () => {
    const error = await ec2Failure(
      assign({ eni: "eni-0n1multus", addresses: ["203.0.113.100", "203.0.113.10"], allowReassignment: true }),
    );
    expect(error.code).toBe("InvalidParameterValue");
    expect(error.message).toContain("does not fall within the subnet");
    expect(ipv4sOf("eni-0n1multus")).toEqual(["203.0.113.70"]);
  });

  it("refuses addresses outside the ENI's subnet", async () => {
    const error = await ec2Failure(assign({ eni: "eni-0n1multus", addresses: ["203.0.113.130"] }));
    expect(error.message).toBe(
      "Address 203.0.113.130 does not fall within the subnet's address range (203.0.113.64/26)",
    );
  });

  it.each([["203.0.113.64"], ["203.0.113.65"], ["203.0.113.66"], ["203.0.113.67"], ["203.0.113.127"]])(
    "refuses AWS-reserved address %s (first four and last of the subnet)",
    async (address) => {
      const error = await ec2Failure(assign({ eni: "eni-0n1multus", addresses: [address] }));
      expect(error).toEqual({
        code: "InvalidParameterValue",
        message: `Address ${address} is in subnet's reserved address range`,
        status: 400,
      });
    },
  );

  it("allows naming an address inside an explicit reservation (only automatic picks avoid it)", async () => {
    await assign({ eni: "eni-0n1multus", addresses: ["203.0.113.97"] });
    expect(ipv4sOf("eni-0n1multus")).toContain("203.0.113.97");
  });

  it("SecondaryPrivateIpAddressCount picks the lowest free addresses, skipping reserved, used and explicit reservations", async () => {
    await assign({ eni: "eni-0n1multus", addresses: ["203.0.113.68"] });
    const out = await assign({ eni: "eni-0n2multus", count: 3 });
    // .64-.67 AWS, .68 used, .70/.71 primaries; the explicit reservation is .96/28.
    expect(out.AssignedPrivateIpAddresses?.map((a) => a.PrivateIpAddress)).toEqual([
      "203.0.113.69",
      "203.0.113.72",
      "203.0.113.73",
    ]);
  });

  it("refuses PrivateIpAddress together with SecondaryPrivateIpAddressCount", async () => {
    const error = await ec2Failure(assign({ eni: "eni-0n1multus", addresses: ["203.0.113.100"], count: 1 }));
    expect(error.code).toBe("InvalidParameterCombination");
  });

  it("asks for PrivateIpAddress or SecondaryPrivateIpAddressCount when both are missing", async () => {
    const error = await ec2Failure(assign({ eni: "eni-0n1multus" }));
    expect(error).toEqual({
      code: "MissingParameter",
      message: "The request must contain the parameter PrivateIpAddress or SecondaryPrivateIpAddressCount",
      status: 400,
    });
  });

  it("answers PrivateIpAddressLimitExceeded past the per-ENI limit (c5.xlarge: 15, primary counted)", async () => {
    const fourteen = Array.from({ length: 14 }, (_, i) => `203.0.113.${80 + i}`);
    await assign({ eni: "eni-0n1multus", addresses: fourteen });
    const error = await ec2Failure(assign({ eni: "eni-0n1multus", addresses: ["203.0.113.110"] }));
    expect(error.code).toBe("PrivateIpAddressLimitExceeded");
    expect(ipv4sOf("eni-0n1multus")).toHaveLength(15);
    expect((await ec2Failure(assign({ eni: "eni-0n1multus", count: 1 }))).code).toBe(
      "PrivateIpAddressLimitExceeded",
    );
  });

  it("answers InvalidNetworkInterfaceID.NotFound for an unknown ENI and .Malformed for a bad id", async () => {
    expect(await ec2Failure(assign({ eni: "eni-0nothere", count: 1 }))).toEqual({
      code: "InvalidNetworkInterfaceID.NotFound",
      message: "The networkInterface ID 'eni-0nothere' does not exist",
      status: 400,
    });
    expect((await ec2Failure(assign({ eni: "eth1", count: 1 }))).code).toBe(
      "InvalidNetworkInterfaceId.Malformed",
    );
  });

  it("refuses an address that is not IPv4", async () => {
    const error = await ec2Failure(assign({ eni: "eni-0n1multus", addresses: ["203.0.113.999"] }));
    expect(error.code).toBe("InvalidParameterValue");
  });
});

describe("IPv4 unassignment", () => {
  beforeEach(async () => {
    ({ sim, ec2 } = await startWithEc2("examples/world-two-nodes.yaml"));
    await assign({ eni: "eni-0n1multus", addresses: ["203.0.113.100", "203.0.113.101"] });
  });
  afterEach(() => stopWithEc2(sim, ec2));

  const unassign = (eni: string, addresses: string[]) =>
    ec2.send(
      new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eni, PrivateIpAddresses: addresses }),
    );

  it("releases secondary addresses", async () => {
    await unassign("eni-0n1multus", ["203.0.113.100"]);
    expect(ipv4sOf("eni-0n1multus")).toEqual(["203.0.113.70", "203.0.113.101"]);
  });

  it("refuses to release the primary address (InvalidParameterValue), changing nothing", async () => {
    const error = await ec2Failure(unassign("eni-0n1multus", ["203.0.113.101", "203.0.113.70"]));
    expect(error.code).toBe("InvalidParameterValue");
    expect(error.message).toContain("primary");
    expect(ipv4sOf("eni-0n1multus")).toEqual(["203.0.113.70", "203.0.113.100", "203.0.113.101"]);
  });

  it("refuses an address the ENI does not hold (InvalidParameterValue, not assigned), changing nothing", async () => {
    const error = await ec2Failure(unassign("eni-0n1multus", ["203.0.113.100", "203.0.113.102"]));
    expect(error).toEqual({
      code: "InvalidParameterValue",
      message: "Some of the specified addresses are not assigned to interface eni-0n1multus: 203.0.113.102",
      status: 400,
    });
    expect(ipv4sOf("eni-0n1multus")).toHaveLength(3);
  });
});

describe("subnet exhaustion", () => {
  const tiny: World = parseWorld({
    region: "us-east-1",
    vpc: { id: "vpc-0tiny", cidr: "192.0.2.0/24" },
    subnets: [{ id: "subnet-0tiny", cidr: "192.0.2.0/29", availabilityZone: "us-east-1a" }],
    instances: [
      {
        id: "i-0tiny",
        instanceType: "m5.large",
        enis: [
          {
            id: "eni-0tiny",
            mac: "02:00:00:00:00:01",
            deviceIndex: 0,
            subnet: "subnet-0tiny",
            primaryIpv4: "192.0.2.4",
          },
        ],
      },
    ],
  });

  it("answers InsufficientFreeAddressesInSubnet when a /29 has fewer free addresses than asked", async () => {
    ({ sim, ec2 } = await startWithEc2(tiny));
    try {
      // /29: .0-.3 and .7 reserved by AWS, .4 is the primary: .5 and .6 remain.
      const error = await ec2Failure(assign({ eni: "eni-0tiny", count: 3 }));
      expect(error.code).toBe("InsufficientFreeAddressesInSubnet");
      expect(ipv4sOf("eni-0tiny")).toEqual(["192.0.2.4"]);
      await assign({ eni: "eni-0tiny", count: 2 });
      expect(ipv4sOf("eni-0tiny")).toEqual(["192.0.2.4", "192.0.2.5", "192.0.2.6"]);
    } finally {
      await stopWithEc2(sim, ec2);
    }
  });
});
