/**
 * The simulator's DescribeInstanceTypes through the real SDK: the hypervisor (nitro or xen, which decides
 * prefix delegation) and the addresses per interface, from its own table and the world's instances.
 */
import { type _InstanceType, DescribeInstanceTypesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWorld, type SimulatorHandle } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";
import { twoNodeWorld } from "./helpers/worlds.js";

let sim: SimulatorHandle;
let ec2: EC2Client;

beforeAll(async () => {
  // Node 2 on a Xen type of the simulator's table, node 1 on a type it does not know, declared Nitro.
  const world = twoNodeWorld() as { instances: Record<string, unknown>[] };
  const [node1, node2] = world.instances;
  ({ sim, ec2 } = await startWithEc2(
    parseWorld({
      ...world,
      instances: [
        { ...node1, instanceType: "z9.large", ipv4AddressesPerEni: 10, nitro: true },
        { ...node2, instanceType: "c4.large" },
      ],
    }),
  ));
});
afterAll(() => stopWithEc2(sim, ec2));

describe("DescribeInstanceTypes through the real SDK", () => {
  it("answers hypervisor nitro and the addresses per interface of a Nitro type", async () => {
    const out = await ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: ["m5.xlarge"] }));
    expect(out.InstanceTypes).toEqual([
      {
        InstanceType: "m5.xlarge",
        CurrentGeneration: true,
        Hypervisor: "nitro",
        NetworkInfo: {
          MaximumNetworkInterfaces: 4,
          MaximumNetworkCards: 1,
          DefaultNetworkCardIndex: 0,
          NetworkCards: [{ NetworkCardIndex: 0, MaximumNetworkInterfaces: 4 }],
          Ipv4AddressesPerInterface: 15,
          Ipv6AddressesPerInterface: 15,
          Ipv6Supported: true,
        },
      },
    ]);
  });

  it("answers the ENIs per instance and per network card, two cards for c6in.32xlarge", async () => {
    const out = await ec2.send(
      new DescribeInstanceTypesCommand({ InstanceTypes: ["m5.large", "c6in.32xlarge" as _InstanceType] }),
    );
    expect(
      out.InstanceTypes?.map((t) => [
        t.InstanceType,
        t.NetworkInfo?.MaximumNetworkInterfaces,
        t.NetworkInfo?.NetworkCards?.map((c) => [c.NetworkCardIndex, c.MaximumNetworkInterfaces]),
      ]),
    ).toEqual([
      ["m5.large", 3, [[0, 3]]],
      [
        "c6in.32xlarge",
        16,
        [
          [0, 8],
          [1, 8],
        ],
      ],
    ]);
  });

  it("answers each type's hypervisor, the table's or the world's, and several types in one call", async () => {
    const out = await ec2.send(
      new DescribeInstanceTypesCommand({
        InstanceTypes: ["c4.large", "t3.small", "c4.large", "m4.xlarge", "z9.large" as _InstanceType],
      }),
    );
    expect(out.InstanceTypes?.map((t) => [t.InstanceType, t.Hypervisor])).toEqual([
      ["c4.large", "xen"],
      ["t3.small", "nitro"],
      ["m4.xlarge", "xen"],
      ["z9.large", "nitro"],
    ]);
  });

  it("lists every type it knows when none is named", async () => {
    const out = await ec2.send(new DescribeInstanceTypesCommand({}));
    const names = out.InstanceTypes?.map((t) => t.InstanceType) ?? [];
    expect(names).toContain("m5.large");
    expect(names).toEqual([...names].sort());
  });

  it("refuses an unknown type with InvalidInstanceType, naming it", async () => {
    const failure = await ec2Failure(
      ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: ["m5.large", "q9.huge" as _InstanceType] })),
    );
    expect(failure).toMatchObject({ code: "InvalidInstanceType", status: 400 });
    expect(failure.message).toContain("q9.huge");
  });

  it("refuses filters, which it does not model", async () => {
    const failure = await ec2Failure(
      ec2.send(new DescribeInstanceTypesCommand({ Filters: [{ Name: "hypervisor", Values: ["nitro"] }] })),
    );
    expect(failure).toMatchObject({ code: "UnsupportedOperation" });
    expect(failure.message).toContain("The filter 'hypervisor' is not modelled by multus-ipmgr sim");
  });

  it("answers DryRunOperation to a DryRun call", async () => {
    const failure = await ec2Failure(
      ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: ["m5.large"], DryRun: true })),
    );
    expect(failure.code).toBe("DryRunOperation");
  });
});
