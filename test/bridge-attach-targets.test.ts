import { describe, expect, it } from "vitest";
import type { AttachNetwork } from "../src/eni/attach-networks.js";
import {
  AttachTargets,
  resolveTarget,
  TargetRefusal,
} from "../src/ipam-whereabouts-bridge/attach/attach-targets.js";
import { MemoryEniLifecycle } from "./helpers/memory-eni-lifecycle.js";

const PLACE = { availabilityZone: "us-west-2a", vpcId: "vpc-0a" };

function network(overrides: Partial<AttachNetwork> = {}): AttachNetwork {
  return {
    name: "multus1",
    deviceIndex: 1,
    networkCardIndex: 0,
    subnet: { tags: { "multus-ipmgr.io/net": "multus1" } },
    securityGroups: { tags: { "multus-ipmgr.io/net": "multus1" } },
    mtu: 9001,
    sourceDestCheck: false,
    ...overrides,
  };
}

function world(): MemoryEniLifecycle {
  const ec2 = new MemoryEniLifecycle();
  const subnet = (subnetId: string, zone: string, vpcId = "vpc-0a", tagged = true) => {
    ec2.subnets.push({ subnetId, vpcId, availabilityZone: zone, ipv4Cidr: "198.51.100.0/26", ipv6Cidrs: [] });
    if (tagged) ec2.subnetTags.set(subnetId, { "multus-ipmgr.io/net": "multus1" });
  };
  subnet("subnet-0a", "us-west-2a");
  subnet("subnet-0b", "us-west-2b");
  subnet("subnet-0c", "us-west-2a", "vpc-0other");
  subnet("subnet-0d", "us-west-2a", "vpc-0a", false);
  ec2.securityGroups.push(
    {
      groupId: "sg-0b",
      groupName: "b",
      ingress: [],
      vpcId: "vpc-0a",
      tags: { "multus-ipmgr.io/net": "multus1" },
    },
    {
      groupId: "sg-0a",
      groupName: "a",
      ingress: [],
      vpcId: "vpc-0a",
      tags: { "multus-ipmgr.io/net": "multus1" },
    },
    {
      groupId: "sg-0c",
      groupName: "c",
      ingress: [],
      vpcId: "vpc-0other",
      tags: { "multus-ipmgr.io/net": "multus1" },
    },
  );
  return ec2;
}

describe("resolveTarget", () => {
  it("ids and byZone: no call", async () => {
    const ec2 = world();
    const target = await resolveTarget(
      network({ subnet: { byZone: { "us-west-2a": "subnet-0a" } }, securityGroups: { ids: ["sg-0a"] } }),
      PLACE,
      ec2,
    );
    expect(target).toEqual({ subnetId: "subnet-0a", securityGroupIds: ["sg-0a"] });
    expect(ec2.calls).toEqual([]);
  });

  it("tags: the one subnet of the node's VPC in its zone, every group of the VPC with the tags", async () => {
    const ec2 = world();
    expect(await resolveTarget(network(), PLACE, ec2)).toEqual({
      subnetId: "subnet-0a",
      availabilityZone: "us-west-2a",
      securityGroupIds: ["sg-0a", "sg-0b"],
    });
    expect(ec2.calls).toEqual(["DescribeSubnets vpc-0a", "DescribeSecurityGroups vpc-0a"]);
  });

  it("byZone without the node's zone: refused, naming the zones it has and the fix", async () => {
    const target = await resolveTarget(
      network({ subnet: { byZone: { "us-west-2b": "subnet-0b", "us-west-2c": "subnet-0e" } } }),
      PLACE,
      world(),
    );
    expect(target).toEqual(
      new TargetRefusal(
        "no-subnet-for-zone",
        'network multus1: subnet.byZone names no subnet for the node\'s zone us-west-2a (it names us-west-2b, us-west-2c); add "us-west-2a": "subnet-..." for a subnet of VPC vpc-0a in us-west-2a',
      ),
    );
  });

  it("tags matching no subnet in the zone: refused, naming those found elsewhere", async () => {
    const target = await resolveTarget(network(), { ...PLACE, availabilityZone: "us-west-2c" }, world());
    expect(target).toEqual(
      new TargetRefusal(
        "subnet-tags",
        'network multus1: the subnets of VPC vpc-0a tagged multus-ipmgr.io/net=multus1 are none in us-west-2c, only subnet-0a (us-west-2a), subnet-0b (us-west-2b); exactly one in the node\'s zone must carry the tags (tag one, or give subnet {"byZone": {...}})',
      ),
    );
  });

  it("tags matching two subnets in the zone: refused, naming both", async () => {
    const ec2 = world();
    ec2.subnetTags.set("subnet-0d", { "multus-ipmgr.io/net": "multus1" });
    const target = await resolveTarget(network(), PLACE, ec2);
    expect(target).toBeInstanceOf(TargetRefusal);
    expect((target as TargetRefusal).detail).toContain("are 2 in us-west-2a: subnet-0a, subnet-0d;");
  });

  it("tags matching no security group: refused", async () => {
    const target = await resolveTarget(
      network({ securityGroups: { tags: { team: "none" } } }),
      PLACE,
      world(),
    );
    expect(target).toEqual(
      new TargetRefusal(
        "security-group-tags",
        'network multus1: no security group of VPC vpc-0a carries the tags team=none; tag at least one group, or give securityGroups {"ids": [...]}',
      ),
    );
  });
});

describe("AttachTargets", () => {
  it("looks a network up once per process, again after forget; a refusal is not kept", async () => {
    const ec2 = world();
    const targets = new AttachTargets(ec2);
    await targets.target(network(), PLACE);
    await targets.target(network(), PLACE);
    expect(ec2.calls).toHaveLength(2);
    targets.forget("multus1");
    await targets.target(network(), PLACE);
    expect(ec2.calls).toHaveLength(4);
    const refused = network({ name: "multus2", securityGroups: { tags: { team: "none" } } });
    await targets.target(refused, PLACE);
    await targets.target(refused, PLACE);
    expect(ec2.calls).toHaveLength(8);
  });
});
