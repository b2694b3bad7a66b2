/**
 * The simulator's Elastic IPs through the AWS SDK's own client: the world file, AllocateAddress,
 * AssociateAddress, DisassociateAddress, DescribeAddresses with their errors, and associations that follow
 * their private address (reassignment) or end with it (unassign), as EC2 documents.
 */
import {
  AllocateAddressCommand,
  AssignPrivateIpAddressesCommand,
  AssociateAddressCommand,
  DescribeAddressesCommand,
  DisassociateAddressCommand,
  type EC2Client,
  UnassignPrivateIpAddressesCommand,
} from "@aws-sdk/client-ec2";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseWorld, type SimAddress, type SimulatorHandle, WorldError } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";
import { floatingPairWorld } from "./helpers/worlds.js";

/**
 * floatingPairWorld (VPC 198.51.100.0/24: eni-...a001 on i-...1 with 198.51.100.11, eni-...2a001 on i-...2
 * with 198.51.100.21) with 198.51.100.80 on node 1's Multus ENI and three Elastic IPs: eipalloc-0web on it,
 * eipalloc-0db on node 1's eth0 primary address, eipalloc-0spare not associated.
 */
const ENI1 = "eni-0000000000000a001";
const ENI2 = "eni-0000000000002a001";
const ETH0 = "eni-00000000000000100";
const FLOAT = "198.51.100.80";

function world(elasticIps: unknown[]): Record<string, unknown> {
  const base = floatingPairWorld() as { instances: { enis: { id: string; secondaryIpv4s?: string[] }[] }[] };
  const eni1 = base.instances[0]?.enis.find((e) => e.id === ENI1);
  if (eni1 !== undefined) eni1.secondaryIpv4s = [FLOAT];
  return { ...base, elasticIps };
}

const standardEips = [
  {
    allocationId: "eipalloc-0web",
    publicIp: "203.0.113.10",
    association: { eni: ENI1, privateIp: FLOAT },
    tags: { Name: "web" },
  },
  {
    allocationId: "eipalloc-0db",
    publicIp: "203.0.113.11",
    association: { eni: ETH0, privateIp: "198.51.100.150" },
  },
  { allocationId: "eipalloc-0spare", publicIp: "203.0.113.12" },
];

let sim: SimulatorHandle;
let ec2: EC2Client;

beforeEach(async () => {
  ({ sim, ec2 } = await startWithEc2(parseWorld(world(standardEips))));
});
afterEach(() => stopWithEc2(sim, ec2));

const eip = (allocationId: string): SimAddress | undefined =>
  sim.state().addresses.find((a) => a.allocationId === allocationId);
const where = (allocationId: string) => {
  const a = eip(allocationId);
  return a === undefined ? undefined : { eniId: a.eniId, privateIp: a.privateIp };
};
const associate = (input: {
  allocationId?: string;
  eni?: string;
  instance?: string;
  privateIp?: string;
  allowReassociation?: boolean;
  publicIp?: string;
}) =>
  ec2.send(
    new AssociateAddressCommand({
      ...(input.allocationId === undefined ? {} : { AllocationId: input.allocationId }),
      ...(input.eni === undefined ? {} : { NetworkInterfaceId: input.eni }),
      ...(input.instance === undefined ? {} : { InstanceId: input.instance }),
      ...(input.privateIp === undefined ? {} : { PrivateIpAddress: input.privateIp }),
      ...(input.allowReassociation === undefined ? {} : { AllowReassociation: input.allowReassociation }),
      ...(input.publicIp === undefined ? {} : { PublicIp: input.publicIp }),
    }),
  );

describe("Elastic IPs in the world file", () => {
  it("start associated as the world says, with association ids, and show in the control API's state", async () => {
    expect(sim.state().addresses).toEqual([
      {
        allocationId: "eipalloc-0web",
        publicIp: "203.0.113.10",
        domain: "vpc",
        associationId: "eipassoc-00000000000000001",
        eniId: ENI1,
        privateIp: FLOAT,
        tags: { Name: "web" },
      },
      {
        allocationId: "eipalloc-0db",
        publicIp: "203.0.113.11",
        domain: "vpc",
        associationId: "eipassoc-00000000000000002",
        eniId: ETH0,
        privateIp: "198.51.100.150",
        tags: {},
      },
      {
        allocationId: "eipalloc-0spare",
        publicIp: "203.0.113.12",
        domain: "vpc",
        associationId: null,
        eniId: null,
        privateIp: null,
        tags: {},
      },
    ]);
    const state = (await (await fetch(`${sim.controlEndpoint}/state`)).json()) as { addresses: SimAddress[] };
    expect(state.addresses).toEqual(sim.state().addresses);
  });

  it.each<[string, unknown[], string]>([
    [
      "a public IP outside the pool",
      [{ allocationId: "eipalloc-0a", publicIp: "192.0.2.10" }],
      "elasticIps[0].publicIp: 192.0.2.10 is outside 203.0.113.0/24, the documentation range this world's public IPs come from (the first of 203.0.113.0/24, 198.51.100.0/24, 192.0.2.0/24 outside the VPC)",
    ],
    [
      "a malformed allocation id",
      [{ allocationId: "alloc-0a", publicIp: "203.0.113.10" }],
      'elasticIps[0].allocationId: must look like eipalloc-0123abcd (lowercase letters and digits after "eipalloc-")',
    ],
    [
      "a duplicate allocation id and public IP",
      [
        { allocationId: "eipalloc-0a", publicIp: "203.0.113.10" },
        { allocationId: "eipalloc-0a", publicIp: "203.0.113.10" },
      ],
      "elasticIps[1].allocationId: duplicate allocation id eipalloc-0a",
    ],
    [
      "an association with an unknown ENI",
      [
        {
          allocationId: "eipalloc-0a",
          publicIp: "203.0.113.10",
          association: { eni: "eni-0zz", privateIp: FLOAT },
        },
      ],
      "elasticIps[0].association.eni: unknown ENI eni-0zz: list it under an instance's enis",
    ],
    [
      "an association with an address its ENI does not hold",
      [
        {
          allocationId: "eipalloc-0a",
          publicIp: "203.0.113.10",
          association: { eni: ENI2, privateIp: FLOAT },
        },
      ],
      `elasticIps[0].association.privateIp: ${FLOAT} is not a private IPv4 address of ${ENI2}: add it to its primaryIpv4 or secondaryIpv4s, or an ipv4Prefixes block holding it`,
    ],
    [
      "two Elastic IPs on one private address",
      [
        {
          allocationId: "eipalloc-0a",
          publicIp: "203.0.113.10",
          association: { eni: ENI1, privateIp: FLOAT },
        },
        {
          allocationId: "eipalloc-0b",
          publicIp: "203.0.113.11",
          association: { eni: ENI1, privateIp: FLOAT },
        },
      ],
      `elasticIps[1].association: ${FLOAT} on ${ENI1} already has the Elastic IP eipalloc-0a`,
    ],
  ])("refuses %s, naming the field", (_, eips, message) => {
    let error: unknown;
    try {
      parseWorld(world(eips));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(WorldError);
    expect((error as WorldError).message).toContain(message);
  });

  it("accepts an association with an address inside one of the ENI's prefixes", () => {
    const association = { eni: ENI1, privateIp: "198.51.100.110" };
    const w = parseWorld(
      floatingPairWorld({
        node1A1Ipv4Prefixes: ["198.51.100.96/28"],
        elasticIps: [{ allocationId: "eipalloc-0a", publicIp: "203.0.113.10", association }],
      }),
    );
    expect(w.elasticIps[0]?.association).toEqual(association);
  });

  it("takes public IPs from the next documentation range when the VPC uses 203.0.113.0/24", () => {
    const w = parseWorld({
      region: "us-east-1",
      vpc: { id: "vpc-0a", cidr: "203.0.113.0/24" },
      subnets: [{ id: "subnet-0a", cidr: "203.0.113.0/25", availabilityZone: "us-east-1a" }],
      instances: [
        {
          id: "i-0a",
          enis: [
            {
              id: "eni-0a",
              mac: "02:00:00:00:0a:00",
              deviceIndex: 0,
              subnet: "subnet-0a",
              primaryIpv4: "203.0.113.10",
            },
          ],
        },
      ],
      elasticIps: [{ allocationId: "eipalloc-0a", publicIp: "198.51.100.7" }],
    });
    expect(w.elasticIps[0]?.publicIp).toBe("198.51.100.7");
  });
});

describe("AllocateAddress", () => {
  it("allocates the lowest free public IP of the pool in the VPC domain, with tags", async () => {
    const out = await ec2.send(
      new AllocateAddressCommand({
        Domain: "vpc",
        TagSpecifications: [{ ResourceType: "elastic-ip", Tags: [{ Key: "team", Value: "blue" }] }],
      }),
    );
    expect(out.PublicIp).toBe("203.0.113.1");
    expect(out.AllocationId).toMatch(/^eipalloc-[0-9a-f]{17}$/);
    expect(out.Domain).toBe("vpc");
    expect(out.NetworkBorderGroup).toBe("us-east-1");
    const second = await ec2.send(new AllocateAddressCommand({}));
    expect(second.PublicIp).toBe("203.0.113.2");
    expect(eip(out.AllocationId ?? "")).toMatchObject({ associationId: null, tags: { team: "blue" } });
  });

  it("refuses EC2-Classic, a pool it does not model and DryRun as EC2 does", async () => {
    expect((await ec2Failure(ec2.send(new AllocateAddressCommand({ Domain: "standard" })))).code).toBe(
      "InvalidParameterValue",
    );
    expect(
      await ec2Failure(ec2.send(new AllocateAddressCommand({ PublicIpv4Pool: "ipv4pool-ec2-0a" }))),
    ).toEqual({
      code: "UnsupportedOperation",
      message: "The parameter PublicIpv4Pool is documented by EC2 but not modelled by multus-ipmgr sim",
      status: 400,
    });
    expect((await ec2Failure(ec2.send(new AllocateAddressCommand({ DryRun: true })))).code).toBe(
      "DryRunOperation",
    );
    expect(sim.state().addresses).toHaveLength(3);
  });
});

describe("AssociateAddress", () => {
  it("associates with an ENI's secondary address and answers a new association id", async () => {
    const out = await associate({ allocationId: "eipalloc-0spare", eni: ENI2, privateIp: "198.51.100.21" });
    expect(out.AssociationId).toMatch(/^eipassoc-[0-9a-f]{17}$/);
    expect(eip("eipalloc-0spare")).toMatchObject({
      associationId: out.AssociationId,
      eniId: ENI2,
      privateIp: "198.51.100.21",
    });
  });

  it("takes the ENI's primary address when no private address is named", async () => {
    await associate({ allocationId: "eipalloc-0spare", eni: ENI2 });
    expect(where("eipalloc-0spare")).toEqual({ eniId: ENI2, privateIp: "198.51.100.21" });
  });

  it("refuses an Elastic IP associated elsewhere with AllowReassociation=false (Resource.AlreadyAssociated)", async () => {
    expect(
      await ec2Failure(associate({ allocationId: "eipalloc-0web", eni: ENI2, allowReassociation: false })),
    ).toEqual({
      code: "Resource.AlreadyAssociated",
      message: "resource eipalloc-0web is already associated with associate-id eipassoc-00000000000000001",
      status: 400,
    });
    expect(where("eipalloc-0web")).toEqual({ eniId: ENI1, privateIp: FLOAT });
  });

  it("is idempotent: associating again where it points is no error and changes nothing", async () => {
    const again = await associate({
      allocationId: "eipalloc-0web",
      eni: ENI1,
      privateIp: FLOAT,
      allowReassociation: false,
    });
    expect(again.AssociationId).toBe("eipassoc-00000000000000001");
    expect(where("eipalloc-0web")).toEqual({ eniId: ENI1, privateIp: FLOAT });
  });

  it("reassociates automatically without AllowReassociation, as the reference says, and with it", async () => {
    const moved = await associate({ allocationId: "eipalloc-0web", eni: ENI2 });
    expect(moved.AssociationId).not.toBe("eipassoc-00000000000000001");
    expect(where("eipalloc-0web")).toEqual({ eniId: ENI2, privateIp: "198.51.100.21" });
    await associate({ allocationId: "eipalloc-0web", eni: ENI1, privateIp: FLOAT, allowReassociation: true });
    expect(where("eipalloc-0web")).toEqual({ eniId: ENI1, privateIp: FLOAT });
  });

  it("disassociates another Elastic IP from the private address it takes (it stays allocated)", async () => {
    await associate({ allocationId: "eipalloc-0spare", eni: ENI1, privateIp: FLOAT });
    expect(where("eipalloc-0spare")).toEqual({ eniId: ENI1, privateIp: FLOAT });
    expect(eip("eipalloc-0web")).toMatchObject({ associationId: null, eniId: null, privateIp: null });
  });

  it("associates with an address inside a prefix delegated to the ENI, which DescribeAddresses shows", async () => {
    await ec2.send(
      new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: ENI2, Ipv4Prefixes: ["198.51.100.96/28"] }),
    );
    const out = await associate({ allocationId: "eipalloc-0spare", eni: ENI2, privateIp: "198.51.100.101" });
    expect(eip("eipalloc-0spare")).toMatchObject({
      associationId: out.AssociationId,
      eniId: ENI2,
      privateIp: "198.51.100.101",
    });
    const described = await ec2.send(new DescribeAddressesCommand({ AllocationIds: ["eipalloc-0spare"] }));
    expect(described.Addresses?.[0]).toMatchObject({
      AssociationId: out.AssociationId,
      NetworkInterfaceId: ENI2,
      PrivateIpAddress: "198.51.100.101",
    });
    // Another ENI's prefix is not this ENI's address.
    expect(
      await ec2Failure(
        associate({ allocationId: "eipalloc-0spare", eni: ENI1, privateIp: "198.51.100.102" }),
      ),
    ).toEqual({
      code: "InvalidParameterValue",
      message: `The private IP address 198.51.100.102 is not assigned to the network interface ${ENI1}.`,
      status: 400,
    });
  });

  it.each<[string, Parameters<typeof associate>[0], { code: string; message: string }]>([
    [
      "an unknown allocation",
      { allocationId: "eipalloc-0zz", eni: ENI2 },
      { code: "InvalidAllocationID.NotFound", message: "The allocation ID 'eipalloc-0zz' does not exist" },
    ],
    [
      "a malformed allocation id",
      { allocationId: "0zz", eni: ENI2 },
      { code: "InvalidAllocationID.Malformed", message: 'Invalid id: "0zz" (expecting "eipalloc-...")' },
    ],
    [
      "a public IP without an allocation id (VPC)",
      { publicIp: "203.0.113.12", eni: ENI2 },
      {
        code: "InvalidParameterValue",
        message: "You must specify an allocation id when mapping an address to a VPC instance",
      },
    ],
    [
      "an unknown ENI",
      { allocationId: "eipalloc-0spare", eni: "eni-0zz" },
      {
        code: "InvalidNetworkInterfaceID.NotFound",
        message: "The networkInterface ID 'eni-0zz' does not exist",
      },
    ],
    [
      "both an instance and an ENI",
      { allocationId: "eipalloc-0spare", eni: ENI2, instance: "i-00000000000000002" },
      {
        code: "InvalidParameterCombination",
        message: "You can specify either the instance ID or the network interface ID, but not both.",
      },
    ],
    [
      "an instance with two ENIs",
      { allocationId: "eipalloc-0spare", instance: "i-00000000000000002" },
      {
        code: "InvalidInstanceID",
        message:
          "There are multiple interfaces attached to instance 'i-00000000000000002'. Please specify an interface ID for the operation instead.",
      },
    ],
    [
      "a private address the ENI does not hold",
      { allocationId: "eipalloc-0spare", eni: ENI2, privateIp: FLOAT },
      {
        code: "InvalidParameterValue",
        message: `The private IP address ${FLOAT} is not assigned to the network interface ${ENI2}.`,
      },
    ],
  ])("refuses %s", async (_, input, expected) => {
    expect(await ec2Failure(associate(input))).toEqual({ ...expected, status: 400 });
    expect(where("eipalloc-0spare")).toEqual({ eniId: null, privateIp: null });
  });
});

describe("DisassociateAddress", () => {
  it("ends an association; the Elastic IP stays allocated", async () => {
    const out = await ec2.send(
      new DisassociateAddressCommand({ AssociationId: "eipassoc-00000000000000001" }),
    );
    expect(out.$metadata.httpStatusCode).toBe(200);
    expect(eip("eipalloc-0web")).toMatchObject({
      publicIp: "203.0.113.10",
      associationId: null,
      eniId: null,
    });
  });

  it("refuses an unknown association id, and a public IP alone (VPC)", async () => {
    expect(
      await ec2Failure(ec2.send(new DisassociateAddressCommand({ AssociationId: "eipassoc-0zz" }))),
    ).toEqual({
      code: "InvalidAssociationID.NotFound",
      message: "The association ID 'eipassoc-0zz' does not exist",
      status: 400,
    });
    expect(
      (await ec2Failure(ec2.send(new DisassociateAddressCommand({ PublicIp: "203.0.113.10" })))).code,
    ).toBe("InvalidParameterValue");
  });
});

describe("DescribeAddresses", () => {
  it("answers each address as EC2 does", async () => {
    const out = await ec2.send(
      new DescribeAddressesCommand({ AllocationIds: ["eipalloc-0web", "eipalloc-0spare"] }),
    );
    expect(out.Addresses).toEqual([
      {
        PublicIp: "203.0.113.10",
        AllocationId: "eipalloc-0web",
        Domain: "vpc",
        InstanceId: "i-00000000000000001",
        AssociationId: "eipassoc-00000000000000001",
        NetworkInterfaceId: ENI1,
        NetworkInterfaceOwnerId: "123456789012",
        PrivateIpAddress: FLOAT,
        Tags: [{ Key: "Name", Value: "web" }],
        PublicIpv4Pool: "amazon",
        NetworkBorderGroup: "us-east-1",
      },
      {
        PublicIp: "203.0.113.12",
        AllocationId: "eipalloc-0spare",
        Domain: "vpc",
        Tags: [],
        PublicIpv4Pool: "amazon",
        NetworkBorderGroup: "us-east-1",
      },
    ]);
  });

  it("fails the whole call for an unknown allocation id or public IP, but a filter just matches nothing", async () => {
    expect(
      await ec2Failure(
        ec2.send(new DescribeAddressesCommand({ AllocationIds: ["eipalloc-0web", "eipalloc-0zz"] })),
      ),
    ).toEqual({
      code: "InvalidAllocationID.NotFound",
      message: "The allocation ID 'eipalloc-0zz' does not exist",
      status: 400,
    });
    expect(await ec2Failure(ec2.send(new DescribeAddressesCommand({ PublicIps: ["203.0.113.99"] })))).toEqual(
      {
        code: "InvalidAddress.NotFound",
        message: "Address '203.0.113.99' not found.",
        status: 400,
      },
    );
    const filtered = await ec2.send(
      new DescribeAddressesCommand({
        Filters: [{ Name: "allocation-id", Values: ["eipalloc-0web", "eipalloc-0zz"] }],
      }),
    );
    expect(filtered.Addresses?.map((a) => a.AllocationId)).toEqual(["eipalloc-0web"]);
  });

  it("answers DryRun, and is throttled in the read bucket", async () => {
    expect((await ec2Failure(ec2.send(new DescribeAddressesCommand({ DryRun: true })))).code).toBe(
      "DryRunOperation",
    );
    sim.setFaults({ throttleScale: 0.05 });
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i++) {
      outcomes.push(
        await ec2.send(new DescribeAddressesCommand({})).then(
          () => "ok",
          (error: Error) => error.name,
        ),
      );
    }
    // 100 / 20 scaled by 0.05: a burst of 5.
    expect(outcomes.slice(0, 4)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(outcomes.at(-1)).toBe("RequestLimitExceeded");
  });
});

describe("an association follows its private address", () => {
  it("moves with the address when another ENI takes it with AllowReassignment, keeping its association id", async () => {
    await ec2.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: ENI2,
        PrivateIpAddresses: [FLOAT],
        AllowReassignment: true,
      }),
    );
    expect(eip("eipalloc-0web")).toMatchObject({
      associationId: "eipassoc-00000000000000001",
      eniId: ENI2,
      privateIp: FLOAT,
    });
    const described = await ec2.send(new DescribeAddressesCommand({ AllocationIds: ["eipalloc-0web"] }));
    expect(described.Addresses?.[0]).toMatchObject({
      NetworkInterfaceId: ENI2,
      InstanceId: "i-00000000000000002",
    });
  });

  it("is dropped when its private address is unassigned; the Elastic IP stays allocated", async () => {
    await ec2.send(
      new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: ENI1, PrivateIpAddresses: [FLOAT] }),
    );
    expect(eip("eipalloc-0web")).toEqual({
      allocationId: "eipalloc-0web",
      publicIp: "203.0.113.10",
      domain: "vpc",
      associationId: null,
      eniId: null,
      privateIp: null,
      tags: { Name: "web" },
    });
    // Assigned again afterwards, it comes back without its Elastic IP.
    await ec2.send(
      new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: ENI2, PrivateIpAddresses: [FLOAT] }),
    );
    expect(where("eipalloc-0web")).toEqual({ eniId: null, privateIp: null });
  });

  it("is dropped when the prefix holding its private address is unassigned; the Elastic IP stays allocated", async () => {
    await ec2.send(
      new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: ENI2, Ipv4Prefixes: ["198.51.100.96/28"] }),
    );
    await associate({ allocationId: "eipalloc-0spare", eni: ENI2, privateIp: "198.51.100.101" });
    await ec2.send(
      new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: ENI2, Ipv4Prefixes: ["198.51.100.96/28"] }),
    );
    expect(eip("eipalloc-0spare")).toMatchObject({ associationId: null, eniId: null, privateIp: null });
    expect(where("eipalloc-0web")).toEqual({ eniId: ENI1, privateIp: FLOAT });
  });
});
