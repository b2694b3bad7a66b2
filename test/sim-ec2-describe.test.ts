import {
  AssignIpv6AddressesCommand,
  AssignPrivateIpAddressesCommand,
  DescribeInstancesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  type Filter,
} from "@aws-sdk/client-ec2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadWorldFile, type SimulatorHandle } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

let sim: SimulatorHandle;
let ec2: EC2Client;

beforeAll(async () => {
  ({ sim, ec2 } = await startWithEc2("examples/world-two-nodes.yaml"));
  await ec2.send(
    new AssignPrivateIpAddressesCommand({
      NetworkInterfaceId: "eni-0n1multus",
      PrivateIpAddresses: ["203.0.113.100"],
    }),
  );
  await ec2.send(
    new AssignIpv6AddressesCommand({
      NetworkInterfaceId: "eni-0n2multus",
      Ipv6Addresses: ["2001:db8:200:1::71"],
    }),
  );
});
afterAll(() => stopWithEc2(sim, ec2));

const ids = async (filters: Filter[]): Promise<string[]> =>
  ((await ec2.send(new DescribeNetworkInterfacesCommand({ Filters: filters }))).NetworkInterfaces ?? []).map(
    (n) => n.NetworkInterfaceId ?? "",
  );

describe("DescribeNetworkInterfaces through the real SDK", () => {
  it("parses every member the tool reads: ids, MAC, attachment, addresses with primary flag, IPv6, tags", async () => {
    const out = await ec2.send(
      new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ["eni-0n1multus"] }),
    );
    expect(out.$metadata.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(out.NetworkInterfaces).toHaveLength(1);
    const eni = out.NetworkInterfaces?.[0];
    expect(eni).toMatchObject({
      NetworkInterfaceId: "eni-0n1multus",
      SubnetId: "subnet-0multus",
      VpcId: "vpc-0two",
      MacAddress: "02:00:00:01:00:01",
      PrivateIpAddress: "203.0.113.70",
      AvailabilityZone: "us-east-1b",
      Status: "in-use",
      Attachment: { InstanceId: "i-0node1", DeviceIndex: 1, Status: "attached" },
      PrivateIpAddresses: [
        { PrivateIpAddress: "203.0.113.70", Primary: true },
        { PrivateIpAddress: "203.0.113.100", Primary: false },
      ],
      Ipv6Addresses: [],
      TagSet: [{ Key: "node.k8s.amazonaws.com/no_manage", Value: "true" }],
    });
    const other = await ec2.send(
      new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ["eni-0n2multus"] }),
    );
    expect(other.NetworkInterfaces?.[0]?.Ipv6Addresses?.map((a) => a.Ipv6Address)).toEqual([
      "2001:db8:200:1::71",
    ]);
  });

  it.each<[string, string[], string[]]>([
    ["attachment.instance-id", ["i-0node2"], ["eni-0n2eth0", "eni-0n2multus"]],
    ["attachment.device-index", ["1"], ["eni-0n1multus", "eni-0n2multus"]],
    ["mac-address", ["02:00:00:02:00:01"], ["eni-0n2multus"]],
    ["subnet-id", ["subnet-0nodes"], ["eni-0n1eth0", "eni-0n2eth0"]],
    ["addresses.private-ip-address", ["203.0.113.100"], ["eni-0n1multus"]],
    ["ipv6-addresses.ipv6-address", ["2001:DB8:200:1:0::71"], ["eni-0n2multus"]],
    ["network-interface-id", ["eni-0n1eth0", "eni-0n2eth0"], ["eni-0n1eth0", "eni-0n2eth0"]],
    ["vpc-id", ["vpc-0two"], ["eni-0n1eth0", "eni-0n1multus", "eni-0n2eth0", "eni-0n2multus"]],
    ["tag:node.k8s.amazonaws.com/no_manage", ["true"], ["eni-0n1multus", "eni-0n2multus"]],
    ["mac-address", ["02:00:00:01:*"], ["eni-0n1eth0", "eni-0n1multus"]],
  ])("filter %s=%s", async (name, values, expected) => {
    expect(await ids([{ Name: name, Values: values }])).toEqual(expected);
  });

  it("ANDs filters", async () => {
    expect(
      await ids([
        { Name: "attachment.instance-id", Values: ["i-0node1"] },
        { Name: "attachment.device-index", Values: ["1"] },
      ]),
    ).toEqual(["eni-0n1multus"]);
  });

  it("refuses an unknown filter name", async () => {
    const error = await ec2Failure(ids([{ Name: "colour", Values: ["blue"] }]));
    expect(error).toEqual({
      code: "InvalidParameterValue",
      message: "The filter 'colour' is invalid",
      status: 400,
    });
  });

  it("pages with MaxResults and NextToken", async () => {
    const first = await ec2.send(new DescribeNetworkInterfacesCommand({ MaxResults: 5 }));
    expect(first.NetworkInterfaces).toHaveLength(4);
    expect(first.NextToken).toBeUndefined();
    const seen: string[] = [];
    let token: string | undefined;
    const world = await loadWorldFile("examples/world-two-nodes.yaml");
    const { sim: many, ec2: client } = await startWithEc2({
      ...world,
      instances: Array.from({ length: 7 }, (_, i) => ({
        id: `i-0n${i}`,
        instanceType: "m5.large",
        enis: [
          {
            id: `eni-0p${i}`,
            mac: `02:00:00:00:00:0${i}`,
            deviceIndex: 0,
            subnet: "subnet-0nodes",
            primaryIpv4: `203.0.113.${10 + i}`,
            secondaryIpv4s: [],
            ipv6s: [],
            tags: {},
          },
        ],
      })),
    });
    try {
      const pages: number[] = [];
      do {
        const page = await client.send(
          new DescribeNetworkInterfacesCommand({ MaxResults: 5, NextToken: token }),
        );
        pages.push(page.NetworkInterfaces?.length ?? 0);
        seen.push(...(page.NetworkInterfaces ?? []).map((n) => n.NetworkInterfaceId ?? ""));
        token = page.NextToken;
      } while (token !== undefined);
      expect(pages).toEqual([5, 2]);
      expect(seen).toEqual(["eni-0p0", "eni-0p1", "eni-0p2", "eni-0p3", "eni-0p4", "eni-0p5", "eni-0p6"]);
      const bad = await ec2Failure(
        client.send(new DescribeNetworkInterfacesCommand({ MaxResults: 5, NextToken: "junk" })),
      );
      expect(bad.code).toBe("InvalidPaginationToken");
    } finally {
      await stopWithEc2(many, client);
    }
  });

  it("refuses MaxResults outside 5..1000, and MaxResults with NetworkInterfaceIds", async () => {
    expect((await ec2Failure(ec2.send(new DescribeNetworkInterfacesCommand({ MaxResults: 4 })))).code).toBe(
      "InvalidParameterValue",
    );
    expect(
      (
        await ec2Failure(
          ec2.send(
            new DescribeNetworkInterfacesCommand({ MaxResults: 5, NetworkInterfaceIds: ["eni-0n1eth0"] }),
          ),
        )
      ).code,
    ).toBe("InvalidParameterCombination");
  });

  it("answers NotFound for an unknown id in NetworkInterfaceIds", async () => {
    const error = await ec2Failure(
      ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ["eni-0n1eth0", "eni-0gone"] })),
    );
    expect(error.code).toBe("InvalidNetworkInterfaceID.NotFound");
    expect(error.message).toContain("eni-0gone");
  });

  it("answers DryRunOperation (412) when DryRun is set", async () => {
    const error = await ec2Failure(ec2.send(new DescribeNetworkInterfacesCommand({ DryRun: true })));
    expect(error).toEqual({
      code: "DryRunOperation",
      message: "Request would have succeeded, but DryRun flag is set.",
      status: 412,
    });
  });
});

describe("DescribeInstances and DescribeSubnets through the real SDK", () => {
  it("lists instances with type, placement and ENIs by device index", async () => {
    const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: ["i-0node1"] }));
    const instance = out.Reservations?.[0]?.Instances?.[0];
    expect(instance).toMatchObject({
      InstanceId: "i-0node1",
      InstanceType: "c5.xlarge",
      PrivateIpAddress: "203.0.113.10",
      Placement: { AvailabilityZone: "us-east-1b" },
      State: { Name: "running" },
    });
    expect(
      instance?.NetworkInterfaces?.map((n) => [
        n.NetworkInterfaceId,
        n.Attachment?.DeviceIndex,
        n.MacAddress,
      ]),
    ).toEqual([
      ["eni-0n1eth0", 0, "02:00:00:01:00:00"],
      ["eni-0n1multus", 1, "02:00:00:01:00:01"],
    ]);
    expect(instance?.NetworkInterfaces?.[1]?.PrivateIpAddresses?.map((a) => a.PrivateIpAddress)).toEqual([
      "203.0.113.70",
      "203.0.113.100",
    ]);
    const all = await ec2.send(new DescribeInstancesCommand({}));
    expect(all.Reservations?.map((r) => r.Instances?.[0]?.InstanceId)).toEqual(["i-0node1", "i-0node2"]);
    const filtered = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [{ Name: "network-interface.mac-address", Values: ["02:00:00:02:00:01"] }],
      }),
    );
    expect(filtered.Reservations?.map((r) => r.Instances?.[0]?.InstanceId)).toEqual(["i-0node2"]);
    expect(
      (await ec2Failure(ec2.send(new DescribeInstancesCommand({ InstanceIds: ["i-0gone"] })))).code,
    ).toBe("InvalidInstanceID.NotFound");
  });

  it("describes subnets with IPv4 and IPv6 CIDRs and zone", async () => {
    const out = await ec2.send(new DescribeSubnetsCommand({ SubnetIds: ["subnet-0multus"] }));
    expect(out.Subnets?.[0]).toMatchObject({
      SubnetId: "subnet-0multus",
      VpcId: "vpc-0two",
      CidrBlock: "203.0.113.64/26",
      AvailabilityZone: "us-east-1b",
      Ipv6CidrBlockAssociationSet: [{ Ipv6CidrBlock: "2001:db8:200:1::/64" }],
      // 64 - 5 AWS-reserved - 2 primaries - 1 secondary
      AvailableIpAddressCount: 56,
    });
    const nodes = await ec2.send(
      new DescribeSubnetsCommand({ Filters: [{ Name: "cidr-block", Values: ["203.0.113.0/26"] }] }),
    );
    expect(nodes.Subnets?.map((s) => [s.SubnetId, s.Ipv6CidrBlockAssociationSet])).toEqual([
      ["subnet-0nodes", []],
    ]);
    expect(
      (await ec2Failure(ec2.send(new DescribeSubnetsCommand({ SubnetIds: ["subnet-0gone"] })))).code,
    ).toBe("InvalidSubnetID.NotFound");
  });
});

describe("request handling", () => {
  it("answers InvalidAction for an unknown action and puts x-amzn-requestid on every answer", async () => {
    const response = await fetch(sim.ec2Endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "Action=RunInstances&Version=2016-11-15",
    });
    const text = await response.text();
    const requestId = response.headers.get("x-amzn-requestid");
    expect(response.status).toBe(400);
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(text).toContain(
      "<Response><Errors><Error><Code>InvalidAction</Code><Message>The action RunInstances is not valid for this web service.</Message></Error></Errors>",
    );
    expect(text).toContain(`<RequestID>${requestId}</RequestID>`);
  });

  it("answers MissingParameter when NetworkInterfaceId is missing", async () => {
    const response = await fetch(sim.ec2Endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "Action=AssignPrivateIpAddresses&Version=2016-11-15&SecondaryPrivateIpAddressCount=1",
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain(
      "<Code>MissingParameter</Code><Message>The request must contain the parameter NetworkInterfaceId</Message>",
    );
  });

  it("escapes XML in answers (tag values, descriptions)", async () => {
    const response = await fetch(sim.ec2Endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "Action=Nope%3C%26%3E&Version=2016-11-15",
    });
    expect(await response.text()).toContain("The action Nope&lt;&amp;&gt; is not valid");
  });
});
