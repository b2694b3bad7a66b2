import {
  AssignIpv6AddressesCommand,
  type EC2Client,
  UnassignIpv6AddressesCommand,
} from "@aws-sdk/client-ec2";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SimulatorHandle } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

let sim: SimulatorHandle;
let ec2: EC2Client;

const ipv6sOf = (eniId: string): string[] => sim.state().enis.find((e) => e.eniId === eniId)?.ipv6s ?? [];
const assign = (eni: string, addresses: string[]) =>
  ec2.send(new AssignIpv6AddressesCommand({ NetworkInterfaceId: eni, Ipv6Addresses: addresses }));

describe("IPv6 assignment (Multus subnet 2001:db8:200:1::/64)", () => {
  beforeEach(async () => {
    ({ sim, ec2 } = await startWithEc2("examples/world-two-nodes.yaml"));
  });
  afterEach(() => stopWithEc2(sim, ec2));

  it("assigns named addresses and stores and answers them canonical (lowercase, compressed)", async () => {
    const out = await assign("eni-0n1multus", ["2001:DB8:200:1:0:0:0:50"]);
    expect(out.AssignedIpv6Addresses).toEqual(["2001:db8:200:1::50"]);
    expect(out.NetworkInterfaceId).toBe("eni-0n1multus");
    expect(ipv6sOf("eni-0n1multus")).toEqual(["2001:db8:200:1::50"]);
  });

  it("refuses an IPv6 address in use on another ENI with InvalidParameterValue, without naming the holder", async () => {
    await assign("eni-0n1multus", ["2001:db8:200:1::50"]);
    const error = await ec2Failure(assign("eni-0n2multus", ["2001:db8:200:1::50"]));
    expect(error).toEqual({
      code: "InvalidParameterValue",
      message: "Address 2001:db8:200:1::50 is in use.",
      status: 400,
    });
    expect(ipv6sOf("eni-0n2multus")).toEqual([]);
  });

  it("moves an IPv6 address only after it is unassigned from its holder", async () => {
    await assign("eni-0n1multus", ["2001:db8:200:1::50"]);
    await ec2.send(
      new UnassignIpv6AddressesCommand({
        NetworkInterfaceId: "eni-0n1multus",
        Ipv6Addresses: ["2001:db8:200:1::50"],
      }),
    );
    await assign("eni-0n2multus", ["2001:db8:200:1::50"]);
    expect(ipv6sOf("eni-0n1multus")).toEqual([]);
    expect(ipv6sOf("eni-0n2multus")).toEqual(["2001:db8:200:1::50"]);
  });

  it("treats an IPv6 address the ENI already holds as assigned", async () => {
    await assign("eni-0n1multus", ["2001:db8:200:1::50"]);
    await assign("eni-0n1multus", ["2001:db8:200:1::50", "2001:db8:200:1::51"]);
    expect(ipv6sOf("eni-0n1multus")).toEqual(["2001:db8:200:1::50", "2001:db8:200:1::51"]);
  });

  it("refuses an address outside the subnet's IPv6 CIDR, all or nothing", async () => {
    const error = await ec2Failure(assign("eni-0n1multus", ["2001:db8:200:1::52", "2001:db8:200:2::1"]));
    expect(error.code).toBe("InvalidParameterValue");
    expect(error.message).toContain("2001:db8:200:2::1");
    expect(ipv6sOf("eni-0n1multus")).toEqual([]);
  });

  it("refuses IPv6 on an ENI whose subnet has no IPv6 CIDR", async () => {
    const error = await ec2Failure(assign("eni-0n1eth0", ["2001:db8:200:1::50"]));
    expect(error).toEqual({
      code: "InvalidParameterValue",
      message: "Subnet subnet-0nodes has no IPv6 CIDR block",
      status: 400,
    });
  });

  it("Ipv6AddressCount picks free addresses after the AWS-reserved ones", async () => {
    const out = await ec2.send(
      new AssignIpv6AddressesCommand({ NetworkInterfaceId: "eni-0n1multus", Ipv6AddressCount: 2 }),
    );
    expect(out.AssignedIpv6Addresses).toEqual(["2001:db8:200:1::4", "2001:db8:200:1::5"]);
  });

  it("bounds IPv6 addresses per ENI by the instance type's limit", async () => {
    const error = await ec2Failure(
      ec2.send(new AssignIpv6AddressesCommand({ NetworkInterfaceId: "eni-0n1multus", Ipv6AddressCount: 16 })),
    );
    expect(error.code).toBe("InvalidParameterValue");
    expect(error.message).toContain("exceed limit");
  });

  it("unassigns, and refuses an address the ENI does not hold", async () => {
    await assign("eni-0n1multus", ["2001:db8:200:1::50"]);
    const error = await ec2Failure(
      ec2.send(
        new UnassignIpv6AddressesCommand({
          NetworkInterfaceId: "eni-0n1multus",
          Ipv6Addresses: ["2001:db8:200:1::51"],
        }),
      ),
    );
    expect(error.code).toBe("InvalidParameterValue");
    const out = await ec2.send(
      new UnassignIpv6AddressesCommand({
        NetworkInterfaceId: "eni-0n1multus",
        Ipv6Addresses: ["2001:db8:200:1:0::50"],
      }),
    );
    expect(out.UnassignedIpv6Addresses).toEqual(["2001:db8:200:1::50"]);
    expect(ipv6sOf("eni-0n1multus")).toEqual([]);
  });
});
