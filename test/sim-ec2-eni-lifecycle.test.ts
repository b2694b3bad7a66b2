import {
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  type CreateNetworkInterfaceCommandInput,
  DeleteNetworkInterfaceCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  DetachNetworkInterfaceCommand,
  type EC2Client,
  ModifyNetworkInterfaceAttributeCommand,
} from "@aws-sdk/client-ec2";
import { afterEach, describe, expect, it } from "vitest";
import { parseWorld, type SimulatorHandle } from "../src/sim/index.js";
import { ec2Failure, imdsEndpointOf, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

/**
 * The ENI lifecycle on the simulator through the AWS SDK's own client: CreateNetworkInterface,
 * AttachNetworkInterface, DetachNetworkInterface, DeleteNetworkInterface, ModifyNetworkInterfaceAttribute, and
 * what the reads and IMDS show of them. World: VPC vpc-1 (198.51.100.0/24, 2001:db8::/56); subnet-a
 * 198.51.100.0/25 (2001:db8::/64, us-east-1a, tagged multus=yes), subnet-b 198.51.100.128/25 (us-east-1b);
 * groups sg-0multus (tagged multus=yes) beside the default sg-1; i-1 (m5.large: 3 ENIs) with eni-0a
 * (.10, device 0) in us-east-1a; i-2 (c6in.32xlarge: two network cards of 8) with eni-0z (.20).
 */

let sim: SimulatorHandle | undefined;
let ec2: EC2Client;
let now = 1_700_000_000_000;

afterEach(async () => {
  if (sim !== undefined) await stopWithEc2(sim, ec2);
  sim = undefined;
});

async function start(extra: Record<string, unknown> = {}): Promise<void> {
  now = 1_700_000_000_000;
  const world = parseWorld({
    region: "us-east-1",
    vpc: { id: "vpc-1", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8::/56" },
    securityGroups: [{ id: "sg-0multus", name: "multus", tags: { multus: "yes" } }],
    subnets: [
      {
        id: "subnet-a",
        cidr: "198.51.100.0/25",
        ipv6Cidr: "2001:db8::/64",
        availabilityZone: "us-east-1a",
        tags: { multus: "yes" },
      },
      { id: "subnet-b", cidr: "198.51.100.128/25", availabilityZone: "us-east-1b" },
    ],
    instances: [
      {
        id: "i-1",
        instanceType: "m5.large",
        enis: [
          {
            id: "eni-0a",
            mac: "02:00:00:00:0a:01",
            deviceIndex: 0,
            subnet: "subnet-a",
            primaryIpv4: "198.51.100.10",
          },
        ],
      },
      {
        id: "i-2",
        instanceType: "c6in.32xlarge",
        enis: [
          {
            id: "eni-0z",
            mac: "02:00:00:00:0f:01",
            deviceIndex: 0,
            subnet: "subnet-a",
            primaryIpv4: "198.51.100.20",
          },
        ],
      },
    ],
    ...extra,
  });
  ({ sim, ec2 } = await startWithEc2(world, { clock: { now: () => now, sleep: () => Promise.resolve() } }));
}

const tagged = (tags: Record<string, string>): CreateNetworkInterfaceCommandInput["TagSpecifications"] => [
  { ResourceType: "network-interface", Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
];

async function create(input: Partial<CreateNetworkInterfaceCommandInput> = {}): Promise<string> {
  const out = await ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: "subnet-a", ...input }));
  return out.NetworkInterface?.NetworkInterfaceId ?? "";
}

async function attach(
  eniId: string,
  instanceId: string,
  deviceIndex: number,
  card?: number,
): Promise<string> {
  const out = await ec2.send(
    new AttachNetworkInterfaceCommand({
      NetworkInterfaceId: eniId,
      InstanceId: instanceId,
      DeviceIndex: deviceIndex,
      ...(card === undefined ? {} : { NetworkCardIndex: card }),
    }),
  );
  return out.AttachmentId ?? "";
}

async function describe1(eniId: string) {
  const out = await ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [eniId] }));
  return out.NetworkInterfaces?.[0];
}

async function imdsGet(instanceId: string, path: string): Promise<{ status: number; text: string }> {
  const base = imdsEndpointOf(sim as SimulatorHandle, instanceId);
  const token = await (
    await fetch(`${base}/latest/api/token`, {
      method: "PUT",
      headers: { "x-aws-ec2-metadata-token-ttl-seconds": "60" },
    })
  ).text();
  const res = await fetch(`${base}/latest/meta-data/${path}`, {
    headers: { "x-aws-ec2-metadata-token": token },
  });
  return { status: res.status, text: await res.text() };
}

describe("CreateNetworkInterface", () => {
  it("makes an available ENI in the subnet: a primary IPv4 from it, a MAC, the groups, the description, tags set at creation", async () => {
    await start();
    const out = await ec2.send(
      new CreateNetworkInterfaceCommand({
        SubnetId: "subnet-a",
        Groups: ["sg-0multus"],
        Description: "multus net1",
        TagSpecifications: tagged({
          "node.k8s.amazonaws.com/no_manage": "true",
          "multus-ipmgr.io/cluster": "c1",
        }),
      }),
    );
    const eni = out.NetworkInterface;
    expect(eni).toMatchObject({
      Status: "available",
      SubnetId: "subnet-a",
      VpcId: "vpc-1",
      AvailabilityZone: "us-east-1a",
      Description: "multus net1",
      // The lowest free address: .0-.3 are AWS's, .10 is eni-0a's, so .4.
      PrivateIpAddress: "198.51.100.4",
      SourceDestCheck: true,
      Groups: [{ GroupId: "sg-0multus", GroupName: "multus" }],
      TagSet: [
        { Key: "node.k8s.amazonaws.com/no_manage", Value: "true" },
        { Key: "multus-ipmgr.io/cluster", Value: "c1" },
      ],
    });
    expect(eni?.Attachment).toBeUndefined();
    expect(eni?.MacAddress).toMatch(/^02(:[0-9a-f]{2}){5}$/);
    expect(await describe1(eni?.NetworkInterfaceId ?? "")).toEqual(eni);
  });

  it("takes the VPC's default group when none is named, and refuses an unknown group or subnet", async () => {
    await start();
    expect((await describe1(await create()))?.Groups).toEqual([{ GroupId: "sg-1", GroupName: "default" }]);
    expect(await ec2Failure(create({ Groups: ["sg-0nope"] }))).toEqual({
      code: "InvalidGroup.NotFound",
      message: "The security group 'sg-0nope' does not exist",
      status: 400,
    });
    expect((await ec2Failure(create({ SubnetId: "subnet-0nope" }))).code).toBe("InvalidSubnetID.NotFound");
  });

  it("answers the same ENI for the same ClientToken and parameters, and IdempotentParameterMismatch for others", async () => {
    await start();
    const input = { ClientToken: "multus-ipmgr-0123", Description: "net1" };
    const first = await create(input);
    expect(await create(input)).toBe(first);
    expect(sim?.state().enis.filter((e) => e.subnetId === "subnet-a" && e.instanceId === null)).toHaveLength(
      1,
    );
    expect(await ec2Failure(create({ ...input, Description: "net2" }))).toEqual({
      code: "IdempotentParameterMismatch",
      message:
        "Arguments on this idempotent request are inconsistent with arguments used in previous request(s).",
      status: 400,
    });
    expect((await ec2Failure(create({ ClientToken: "x".repeat(65) }))).code).toBe("InvalidParameterValue");
    // The token still answers its ENI once that ENI is gone: the caller learns it was deleted from a read.
    await ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: first }));
    expect(await create(input)).toBe(first);
    expect(sim?.state().enis.some((e) => e.eniId === first)).toBe(false);
  });

  it("holds prefixes from creation: named IPv4 ones, counted IPv6 ones", async () => {
    await start();
    const out = await ec2.send(
      new CreateNetworkInterfaceCommand({
        SubnetId: "subnet-a",
        Ipv4Prefixes: [{ Ipv4Prefix: "198.51.100.48/28" }],
        Ipv6PrefixCount: 1,
      }),
    );
    expect(out.NetworkInterface?.Ipv4Prefixes).toEqual([{ Ipv4Prefix: "198.51.100.48/28" }]);
    expect(out.NetworkInterface?.Ipv6Prefixes?.map((p) => p.Ipv6Prefix)).toEqual(["2001:db8:0:0:1::/80"]);
    const clash = await ec2Failure(
      ec2.send(
        new CreateNetworkInterfaceCommand({
          SubnetId: "subnet-a",
          Ipv4Prefixes: [{ Ipv4Prefix: "198.51.100.48/28" }],
        }),
      ),
    );
    expect(clash.code).toBe("InvalidParameterValue");
    // All or nothing: the refused create left no ENI behind.
    expect(sim?.state().enis).toHaveLength(3);
  });
});

describe("AttachNetworkInterface", () => {
  it("attaches at the device index: attachment id, in-use, the attachment as DescribeNetworkInterfaces shows it", async () => {
    await start();
    const eniId = await create();
    const out = await ec2.send(
      new AttachNetworkInterfaceCommand({ NetworkInterfaceId: eniId, InstanceId: "i-1", DeviceIndex: 1 }),
    );
    expect(out.AttachmentId).toMatch(/^eni-attach-[0-9a-f]+$/);
    expect(out.NetworkCardIndex).toBe(0);
    const eni = await describe1(eniId);
    expect(eni?.Status).toBe("in-use");
    expect(eni?.Attachment).toEqual({
      AttachmentId: out.AttachmentId,
      InstanceId: "i-1",
      InstanceOwnerId: "123456789012",
      DeviceIndex: 1,
      NetworkCardIndex: 0,
      Status: "attached",
      AttachTime: new Date(now),
      DeleteOnTermination: false,
    });
    const byAttachment = await ec2.send(
      new DescribeNetworkInterfacesCommand({
        Filters: [{ Name: "attachment.attachment-id", Values: [out.AttachmentId ?? ""] }],
      }),
    );
    expect(byAttachment.NetworkInterfaces?.map((e) => e.NetworkInterfaceId)).toEqual([eniId]);
  });

  it("refuses a device index in use, a second attach, an unknown ENI or instance, another zone", async () => {
    await start();
    const eniId = await create();
    expect(await ec2Failure(attach(eniId, "i-1", 0))).toEqual({
      code: "InvalidParameterValue",
      message: "Instance 'i-1' already has an interface attached at device index '0'.",
      status: 400,
    });
    await attach(eniId, "i-1", 1);
    expect((await ec2Failure(attach(eniId, "i-1", 2))).code).toBe("InvalidNetworkInterface.InUse");
    expect(await ec2Failure(attach("eni-0nope", "i-1", 2))).toEqual({
      code: "InvalidNetworkInterfaceID.NotFound",
      message: "The networkInterface ID 'eni-0nope' does not exist",
      status: 400,
    });
    expect(await ec2Failure(attach(await create(), "i-0nope", 2))).toEqual({
      code: "InvalidInstanceID.NotFound",
      message: "The instance ID 'i-0nope' does not exist",
      status: 400,
    });
    const elsewhere = await create({ SubnetId: "subnet-b" });
    expect((await ec2Failure(attach(elsewhere, "i-1", 2))).code).toBe("InvalidParameterCombination");
  });

  it("refuses past the instance type's ENIs (m5.large: 3) with AttachmentLimitExceeded", async () => {
    await start();
    await attach(await create(), "i-1", 1);
    await attach(await create(), "i-1", 2);
    const refused = await ec2Failure(attach(await create(), "i-1", 3));
    expect(refused.code).toBe("AttachmentLimitExceeded");
    expect(refused.message).toBe(
      "Interface count 4 exceeds the limit: 3 network interfaces for instance type m5.large.",
    );
  });

  it("counts each network card on its own (c6in.32xlarge: 8 per card) and refuses a card the type lacks", async () => {
    await start();
    for (let device = 0; device < 8; device++) await attach(await create(), "i-2", device, 1);
    const refused = await ec2Failure(attach(await create(), "i-2", 8, 1));
    expect(refused).toMatchObject({ code: "AttachmentLimitExceeded", status: 400 });
    expect(refused.message).toContain("8 network interfaces on network card 1 of c6in.32xlarge");
    // Card 0 still has room: device indexes are counted per card.
    await attach(await create(), "i-2", 1, 0);
    expect((await ec2Failure(attach(await create(), "i-1", 1, 1))).code).toBe("InvalidParameterValue");
  });
});

describe("DetachNetworkInterface and DeleteNetworkInterface", () => {
  it("detaches back to available, refuses the primary ENI and an unknown attachment", async () => {
    await start();
    const eniId = await create();
    const attachmentId = await attach(eniId, "i-1", 1);
    await ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: attachmentId, Force: true }));
    const eni = await describe1(eniId);
    expect(eni?.Status).toBe("available");
    expect(eni?.Attachment).toBeUndefined();
    expect(
      await ec2Failure(ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: attachmentId }))),
    ).toEqual({
      code: "InvalidAttachmentID.NotFound",
      message: `The attachment ID '${attachmentId}' does not exist`,
      status: 400,
    });
    expect(
      await ec2Failure(ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: "eni-attach-0a" }))),
    ).toEqual({
      code: "OperationNotPermitted",
      message: "The network interface at device index 0 and networkCard index 0 cannot be detached.",
      status: 400,
    });
    // Attached again, it gets a new attachment id.
    expect(await attach(eniId, "i-1", 1)).not.toBe(attachmentId);
  });

  it("refuses to delete an attached ENI with InvalidNetworkInterface.InUse, deletes it detached, then NotFound", async () => {
    await start();
    const eniId = await create();
    const attachmentId = await attach(eniId, "i-1", 1);
    const remove = () => ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: eniId }));
    expect(await ec2Failure(remove())).toEqual({
      code: "InvalidNetworkInterface.InUse",
      message: `The network interface '${eniId}' is currently in use.`,
      status: 400,
    });
    await ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: attachmentId }));
    await remove();
    expect(sim?.state().enis.some((e) => e.eniId === eniId)).toBe(false);
    expect((await ec2Failure(remove())).code).toBe("InvalidNetworkInterfaceID.NotFound");
  });
});

describe("ModifyNetworkInterfaceAttribute", () => {
  it("changes one attribute per call: DeleteOnTermination, SourceDestCheck, Description, groups", async () => {
    await start();
    const eniId = await create();
    const attachmentId = await attach(eniId, "i-1", 1);
    const modify = (input: Record<string, unknown>) =>
      ec2.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: eniId, ...input }));
    await modify({ Attachment: { AttachmentId: attachmentId, DeleteOnTermination: true } });
    await modify({ SourceDestCheck: { Value: false } });
    await modify({ Description: { Value: "net1 of i-1" } });
    await modify({ Groups: ["sg-0multus", "sg-1"] });
    const eni = await describe1(eniId);
    expect(eni?.Attachment?.DeleteOnTermination).toBe(true);
    expect(eni?.SourceDestCheck).toBe(false);
    expect(eni?.Description).toBe("net1 of i-1");
    expect(eni?.Groups?.map((g) => g.GroupId)).toEqual(["sg-0multus", "sg-1"]);
    expect(
      await ec2Failure(modify({ SourceDestCheck: { Value: true }, Description: { Value: "two at once" } })),
    ).toEqual({
      code: "InvalidParameterCombination",
      message: "Fields for multiple attribute types specified: sourceDestCheck, description",
      status: 400,
    });
    expect((await describe1(eniId))?.SourceDestCheck).toBe(false);
    expect(
      (
        await ec2Failure(
          modify({ Attachment: { AttachmentId: "eni-attach-0nope", DeleteOnTermination: true } }),
        )
      ).code,
    ).toBe("InvalidAttachmentID.NotFound");
    expect((await ec2Failure(modify({}))).code).toBe("InvalidParameterCombination");
  });
});

describe("the lifecycle calls pass the checks every call does", () => {
  it("answers DryRunOperation to each, and changes nothing", async () => {
    await start();
    const eniId = await create();
    const before = sim?.state();
    const dry = [
      ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: "subnet-a", DryRun: true })),
      ec2.send(
        new AttachNetworkInterfaceCommand({
          NetworkInterfaceId: eniId,
          InstanceId: "i-1",
          DeviceIndex: 1,
          DryRun: true,
        }),
      ),
      ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: "eni-attach-0a", DryRun: true })),
      ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: eniId, DryRun: true })),
      ec2.send(
        new ModifyNetworkInterfaceAttributeCommand({
          NetworkInterfaceId: eniId,
          SourceDestCheck: { Value: false },
          DryRun: true,
        }),
      ),
    ];
    for (const call of dry) expect((await ec2Failure(call)).code).toBe("DryRunOperation");
    expect(sim?.state()).toEqual(before);
  });

  it("throttles with the bucket of other mutating calls (burst 50), and takes scripted failures and denials", async () => {
    await start();
    sim?.setFaults({
      failNext: [{ action: "AttachNetworkInterface", code: "InternalError", status: 500, count: 1 }],
    });
    const eniId = await create();
    expect((await ec2Failure(attach(eniId, "i-1", 1))).code).toBe("InternalError");
    await attach(eniId, "i-1", 1);
    sim?.setFaults({ deny: ["DeleteNetworkInterface"] });
    expect(
      (await ec2Failure(ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: eniId })))).code,
    ).toBe("UnauthorizedOperation");
    sim?.setFaults({ deny: [] });
    const codes: string[] = [];
    for (let i = 0; i < 51; i++) {
      codes.push(
        await ec2
          .send(
            new ModifyNetworkInterfaceAttributeCommand({
              NetworkInterfaceId: eniId,
              SourceDestCheck: { Value: false },
            }),
          )
          .then(
            () => "ok",
            (e: Error) => e.name,
          ),
      );
    }
    expect(codes.slice(0, 50).every((c) => c === "ok")).toBe(true);
    expect(codes[50]).toBe("RequestLimitExceeded");
  });
});

describe("EC2's eventual consistency and IMDS's lag", () => {
  it("answers NotFound for a new ENI named by id for ec2ReadLagMs, then shows it", async () => {
    await start({ ec2ReadLagMs: 2000 });
    const eniId = await create({ ClientToken: "lag-1" });
    expect((await ec2Failure(describe1(eniId))).code).toBe("InvalidNetworkInterfaceID.NotFound");
    expect((await ec2Failure(attach(eniId, "i-1", 1))).code).toBe("InvalidNetworkInterfaceID.NotFound");
    // Reads that do not name it already list it.
    const listed = await ec2.send(
      new DescribeNetworkInterfacesCommand({ Filters: [{ Name: "status", Values: ["available"] }] }),
    );
    expect(listed.NetworkInterfaces?.map((e) => e.NetworkInterfaceId)).toEqual([eniId]);
    now += 2000;
    expect((await describe1(eniId))?.Status).toBe("available");
    await attach(eniId, "i-1", 1);
  });

  it("shows an attach and a detach in IMDS's macs/ only imdsAttachmentLagMs later, with the network card", async () => {
    await start({ imdsAttachmentLagMs: 1500 });
    const eniId = await create();
    const mac = sim?.state().enis.find((e) => e.eniId === eniId)?.mac ?? "";
    const attachmentId = await attach(eniId, "i-2", 1, 1);
    expect((await imdsGet("i-2", "network/interfaces/macs/")).text).toBe("02:00:00:00:0f:01/");
    now += 1500;
    expect((await imdsGet("i-2", "network/interfaces/macs/")).text.split("\n")).toEqual(
      ["02:00:00:00:0f:01/", `${mac}/`].sort(),
    );
    expect(await imdsGet("i-2", `network/interfaces/macs/${mac}/network-card`)).toEqual({
      status: 200,
      text: "1",
    });
    expect((await imdsGet("i-2", `network/interfaces/macs/${mac}/device-number`)).text).toBe("1");
    await ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: attachmentId }));
    expect((await imdsGet("i-2", `network/interfaces/macs/${mac}/device-number`)).status).toBe(200);
    now += 1500;
    expect((await imdsGet("i-2", `network/interfaces/macs/${mac}/device-number`)).status).toBe(404);
  });
});

describe("the reads attach mode selects with", () => {
  it("filters ENIs by status, tag:KEY, tag-key and vpc-id", async () => {
    await start();
    const ours = await create({ TagSpecifications: tagged({ "multus-ipmgr.io/cluster": "c1" }) });
    const other = await create();
    await attach(other, "i-1", 1);
    const ids = async (Filters: { Name: string; Values: string[] }[]) =>
      (await ec2.send(new DescribeNetworkInterfacesCommand({ Filters }))).NetworkInterfaces?.map(
        (e) => e.NetworkInterfaceId,
      );
    expect(await ids([{ Name: "status", Values: ["available"] }])).toEqual([ours]);
    expect(await ids([{ Name: "tag:multus-ipmgr.io/cluster", Values: ["c1"] }])).toEqual([ours]);
    expect(await ids([{ Name: "tag-key", Values: ["multus-ipmgr.io/cluster"] }])).toEqual([ours]);
    expect(
      await ids([
        { Name: "status", Values: ["in-use"] },
        { Name: "vpc-id", Values: ["vpc-1"] },
      ]),
    ).toEqual(["eni-0a", "eni-0z", other]);
  });

  it("filters subnets by tag:KEY, vpc-id and availability-zone, and groups by tag:KEY and vpc-id", async () => {
    await start();
    const subnets = await ec2.send(
      new DescribeSubnetsCommand({
        Filters: [
          { Name: "tag:multus", Values: ["yes"] },
          { Name: "vpc-id", Values: ["vpc-1"] },
          { Name: "availability-zone", Values: ["us-east-1a"] },
        ],
      }),
    );
    expect(subnets.Subnets?.map((s) => s.SubnetId)).toEqual(["subnet-a"]);
    const groups = await ec2.send(
      new DescribeSecurityGroupsCommand({
        Filters: [
          { Name: "tag:multus", Values: ["yes"] },
          { Name: "vpc-id", Values: ["vpc-1"] },
        ],
      }),
    );
    expect(groups.SecurityGroups?.map((g) => [g.GroupId, g.Tags])).toEqual([
      ["sg-0multus", [{ Key: "multus", Value: "yes" }]],
    ]);
  });
});
