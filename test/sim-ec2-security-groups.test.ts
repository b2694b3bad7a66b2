/**
 * The simulator's DescribeSecurityGroups through the real SDK: the groups of the world (the VPC's default
 * one with AWS's self-referencing rule, and the listed ones with their inbound rules), EC2's XML shape as
 * the SDK reads it, ids and names, filters, paging, and the world file's checks of the rules.
 */
import { DescribeSecurityGroupsCommand, type EC2Client, type Filter } from "@aws-sdk/client-ec2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { securityGroupFilters } from "../src/sim/ec2/describe-security-groups.js";
import { documentedSecurityGroupFilters } from "../src/sim/ec2/documented-filters.js";
import { parseWorld, type SimulatorHandle, WorldError } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

const VPC = "vpc-0sg";
const DEFAULT = "sg-0sg";
const MULTUS = "sg-0multus";
const WEB = "sg-0web";

function world(change: (w: Record<string, unknown>) => void = () => undefined): Record<string, unknown> {
  const w: Record<string, unknown> = {
    region: "us-east-1",
    vpc: { id: VPC, cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:100::/56" },
    securityGroups: [
      {
        id: MULTUS,
        name: "multus",
        description: "Multus ENIs",
        ingress: [
          {
            protocol: "-1",
            cidrs: ["198.51.100.0/26"],
            ipv6Cidrs: ["2001:db8:100:1::/64"],
            description: "pods",
          },
          { protocol: "icmp", fromPort: -1, toPort: -1, groups: [WEB] },
        ],
      },
      {
        id: WEB,
        name: "web",
        ingress: [{ protocol: "tcp", fromPort: 443, toPort: 443, cidrs: ["192.0.2.0/24"] }],
      },
    ],
    subnets: [
      {
        id: "subnet-0a",
        cidr: "198.51.100.0/26",
        ipv6Cidr: "2001:db8:100:1::/64",
        availabilityZone: "us-east-1a",
      },
    ],
    instances: [
      {
        id: "i-0a",
        instanceType: "m5.large",
        enis: [
          {
            id: "eni-0a0",
            mac: "02:00:00:00:0a:00",
            deviceIndex: 0,
            subnet: "subnet-0a",
            primaryIpv4: "198.51.100.10",
          },
          {
            id: "eni-0a1",
            mac: "02:00:00:00:0a:01",
            deviceIndex: 1,
            subnet: "subnet-0a",
            primaryIpv4: "198.51.100.11",
            securityGroups: [MULTUS],
          },
        ],
      },
    ],
  };
  change(w);
  return w;
}

let sim: SimulatorHandle;
let ec2: EC2Client;
beforeAll(async () => {
  ({ sim, ec2 } = await startWithEc2(parseWorld(world())));
});
afterAll(() => stopWithEc2(sim, ec2));

const groupIds = async (input: { GroupIds?: string[]; GroupNames?: string[]; Filters?: Filter[] }) =>
  ((await ec2.send(new DescribeSecurityGroupsCommand(input))).SecurityGroups ?? []).map((g) => g.GroupId);

describe("DescribeSecurityGroups through the real SDK", () => {
  it("gives the VPC's default group AWS's rules: all traffic from itself in, all traffic out", async () => {
    const out = await ec2.send(new DescribeSecurityGroupsCommand({ GroupIds: [DEFAULT] }));
    expect(out.SecurityGroups).toEqual([
      {
        OwnerId: "123456789012",
        GroupId: DEFAULT,
        GroupName: "default",
        Description: "default VPC security group",
        IpPermissions: [
          {
            IpProtocol: "-1",
            UserIdGroupPairs: [
              {
                UserId: "123456789012",
                GroupId: DEFAULT,
              },
            ],
            IpRanges: [],
            Ipv6Ranges: [],
            PrefixListIds: [],
          },
        ],
        IpPermissionsEgress: [
          {
            IpProtocol: "-1",
            UserIdGroupPairs: [],
            IpRanges: [{ CidrIp: "0.0.0.0/0" }],
            Ipv6Ranges: [],
            PrefixListIds: [],
          },
        ],
        VpcId: VPC,
        SecurityGroupArn: `arn:aws:ec2:us-east-1:123456789012:security-group/${DEFAULT}`,
        Tags: [],
      },
    ]);
  });

  it("gives a listed group its rules: protocols, ports, CIDRs of both families, groups and descriptions", async () => {
    const out = await ec2.send(new DescribeSecurityGroupsCommand({ GroupNames: ["multus"] }));
    const group = out.SecurityGroups?.[0];
    expect(group?.Description).toBe("Multus ENIs");
    expect(group?.IpPermissions).toEqual([
      {
        IpProtocol: "-1",
        UserIdGroupPairs: [],
        IpRanges: [{ CidrIp: "198.51.100.0/26", Description: "pods" }],
        Ipv6Ranges: [{ CidrIpv6: "2001:db8:100:1::/64", Description: "pods" }],
        PrefixListIds: [],
      },
      {
        IpProtocol: "icmp",
        FromPort: -1,
        ToPort: -1,
        UserIdGroupPairs: [{ UserId: "123456789012", GroupId: WEB }],
        IpRanges: [],
        Ipv6Ranges: [],
        PrefixListIds: [],
      },
    ]);
  });

  it("lists every group without ids, in world order, and pages", async () => {
    expect(await groupIds({})).toEqual([DEFAULT, MULTUS, WEB]);
    const first = await ec2.send(new DescribeSecurityGroupsCommand({ MaxResults: 5 }));
    expect(first.SecurityGroups).toHaveLength(3);
    expect(first.NextToken).toBeUndefined();
  });

  it("fails the whole call for an id or a name that does not exist", async () => {
    expect(
      await ec2Failure(ec2.send(new DescribeSecurityGroupsCommand({ GroupIds: [MULTUS, "sg-0nope"] }))),
    ).toMatchObject({
      code: "InvalidGroup.NotFound",
      message: "The security group 'sg-0nope' does not exist",
      status: 400,
    });
    expect(
      await ec2Failure(ec2.send(new DescribeSecurityGroupsCommand({ GroupNames: ["nope"] }))),
    ).toMatchObject({
      code: "InvalidGroup.NotFound",
      message: `The security group 'nope' does not exist in default VPC '${VPC}'`,
    });
  });

  it.each([
    ["group-id", [MULTUS], [MULTUS]],
    ["group-name", ["we*"], [WEB]],
    ["description", ["Multus ENIs"], [MULTUS]],
    ["vpc-id", [VPC], [DEFAULT, MULTUS, WEB]],
    ["vpc-id", ["vpc-0other"], []],
    ["owner-id", ["123456789012"], [DEFAULT, MULTUS, WEB]],
    ["tag-key", ["team"], []],
    ["tag:team", ["net"], []],
    ["ip-permission.cidr", ["198.51.100.0/26"], [MULTUS]],
    ["ip-permission.cidr", ["192.0.2.*"], [WEB]],
    ["ip-permission.ipv6-cidr", ["2001:db8:100:1::/64"], [MULTUS]],
    ["ip-permission.group-id", [DEFAULT], [DEFAULT]],
    ["ip-permission.group-id", [WEB], [MULTUS]],
    ["ip-permission.group-name", ["web"], [MULTUS]],
    ["ip-permission.protocol", ["-1"], [DEFAULT, MULTUS]],
    ["ip-permission.protocol", ["tcp"], [WEB]],
    ["ip-permission.from-port", ["443"], [WEB]],
    ["ip-permission.to-port", ["-1"], [MULTUS]],
    ["ip-permission.user-id", ["123456789012"], [DEFAULT, MULTUS]],
    ["ip-permission.prefix-list-id", ["pl-0123"], []],
    ["egress.ip-permission.cidr", ["0.0.0.0/0"], [DEFAULT, MULTUS, WEB]],
    ["egress.ip-permission.protocol", ["-1"], [DEFAULT, MULTUS, WEB]],
    ["egress.ip-permission.protocol", ["tcp"], []],
    ["egress.ip-permission.from-port", ["443"], []],
    ["egress.ip-permission.to-port", ["443"], []],
    ["egress.ip-permission.group-id", [DEFAULT], []],
    ["egress.ip-permission.group-name", ["default"], []],
    ["egress.ip-permission.ipv6-cidr", ["::/0"], []],
    ["egress.ip-permission.prefix-list-id", ["pl-0123"], []],
    ["egress.ip-permission.user-id", ["123456789012"], []],
  ])("filter %s=%j finds %j", async (name, values, expected) => {
    expect(await groupIds({ Filters: [{ Name: name, Values: values }] })).toEqual(expected);
  });

  it("models every filter EC2 documents for it, and refuses an undocumented one as EC2 does", async () => {
    const modelled = [...Object.keys(securityGroupFilters.fields), "tag:"].sort();
    expect(modelled).toEqual([...documentedSecurityGroupFilters].sort());
    expect(
      await ec2Failure(
        ec2.send(new DescribeSecurityGroupsCommand({ Filters: [{ Name: "colour", Values: ["x"] }] })),
      ),
    ).toMatchObject({
      code: "InvalidParameterValue",
    });
  });
});

describe("security groups in the world file", () => {
  const problem = (change: (w: Record<string, unknown>) => void): string => {
    try {
      parseWorld(world(change));
    } catch (error) {
      if (error instanceof WorldError) return error.message;
      throw error;
    }
    throw new Error("expected a WorldError");
  };
  const firstGroup = (w: Record<string, unknown>) =>
    (w.securityGroups as { ingress: unknown[] }[])[0] as { ingress: unknown[] };

  it("refuses a rule naming an unknown group, a tcp rule without ports, ports on -1, and a rule with no source", () => {
    expect(problem((w) => firstGroup(w).ingress.push({ protocol: "-1", groups: ["sg-0nope"] }))).toContain(
      "unknown security group sg-0nope",
    );
    expect(
      problem((w) => firstGroup(w).ingress.push({ protocol: "tcp", cidrs: ["192.0.2.0/24"] })),
    ).toContain("a tcp rule needs fromPort and toPort, fromPort at most toPort");
    expect(
      problem((w) =>
        firstGroup(w).ingress.push({ protocol: "-1", fromPort: 1, toPort: 2, cidrs: ["192.0.2.0/24"] }),
      ),
    ).toContain("a rule for all protocols (-1) has no ports");
    expect(problem((w) => firstGroup(w).ingress.push({ protocol: "udp", fromPort: 1, toPort: 2 }))).toContain(
      "a rule admits traffic from cidrs, ipv6Cidrs or groups: give at least one",
    );
  });

  it("lets the world replace the default group's rules", async () => {
    const { sim: other, ec2: client } = await startWithEc2(
      parseWorld(
        world((w) => {
          (w.vpc as Record<string, unknown>).defaultSecurityGroupIngress = [];
        }),
      ),
    );
    try {
      const out = await client.send(new DescribeSecurityGroupsCommand({ GroupIds: [DEFAULT] }));
      expect(out.SecurityGroups?.[0]?.IpPermissions).toEqual([]);
    } finally {
      await stopWithEc2(other, client);
    }
  });
});
