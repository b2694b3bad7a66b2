import {
  AssignPrivateIpAddressesCommand,
  CreateSubnetCidrReservationCommand,
  DeleteSubnetCidrReservationCommand,
  type EC2Client,
  GetSubnetCidrReservationsCommand,
} from "@aws-sdk/client-ec2";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SimulatorHandle } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

let sim: SimulatorHandle;
let ec2: EC2Client;

const create = (cidr: string, type: "explicit" | "prefix" = "explicit", subnet = "subnet-0multus") =>
  ec2.send(new CreateSubnetCidrReservationCommand({ SubnetId: subnet, Cidr: cidr, ReservationType: type }));

describe("subnet CIDR reservations", () => {
  beforeEach(async () => {
    ({ sim, ec2 } = await startWithEc2("examples/world-two-nodes.yaml"));
  });
  afterEach(() => stopWithEc2(sim, ec2));

  it("creates a reservation with description and tags, and lists it by family", async () => {
    const out = await ec2.send(
      new CreateSubnetCidrReservationCommand({
        SubnetId: "subnet-0multus",
        Cidr: "2001:db8:200:1::100/120",
        ReservationType: "explicit",
        Description: "pods <v6>",
        TagSpecifications: [
          { ResourceType: "subnet-cidr-reservation", Tags: [{ Key: "owner", Value: "multus-ipmgr" }] },
        ],
      }),
    );
    expect(out.SubnetCidrReservation).toMatchObject({
      SubnetId: "subnet-0multus",
      Cidr: "2001:db8:200:1::100/120",
      ReservationType: "explicit",
      OwnerId: "123456789012",
      Description: "pods <v6>",
      Tags: [{ Key: "owner", Value: "multus-ipmgr" }],
    });
    expect(out.SubnetCidrReservation?.SubnetCidrReservationId).toMatch(/^scr-[0-9a-f]{17}$/);
    const listed = await ec2.send(new GetSubnetCidrReservationsCommand({ SubnetId: "subnet-0multus" }));
    expect(listed.SubnetIpv4CidrReservations?.map((r) => r.Cidr)).toEqual(["203.0.113.96/28"]);
    expect(listed.SubnetIpv6CidrReservations?.map((r) => r.Cidr)).toEqual(["2001:db8:200:1::100/120"]);
    expect(sim.state().reservations).toHaveLength(2);
  });

  it("refuses a CIDR outside the subnet and one overlapping an existing reservation", async () => {
    expect(await ec2Failure(create("203.0.113.0/28"))).toMatchObject({
      code: "InvalidParameterValue",
      status: 400,
    });
    const overlap = await ec2Failure(create("203.0.113.104/29"));
    expect(overlap.code).toBe("InvalidParameterValue");
    expect(overlap.message).toContain("overlaps");
    expect(sim.state().reservations).toHaveLength(1);
  });

  it("refuses an unknown subnet and a bad reservation type", async () => {
    expect((await ec2Failure(create("203.0.113.80/30", "explicit", "subnet-0gone"))).code).toBe(
      "InvalidSubnetID.NotFound",
    );
    expect((await ec2Failure(create("203.0.113.80/30", "bogus" as "prefix"))).code).toBe(
      "InvalidParameterValue",
    );
  });

  it("deletes a reservation; an unknown id is InvalidSubnetCidrReservationID.NotFound", async () => {
    const id = sim.state().reservations[0]?.reservationId;
    const out = await ec2.send(new DeleteSubnetCidrReservationCommand({ SubnetCidrReservationId: id }));
    expect(out.DeletedSubnetCidrReservation?.Cidr).toBe("203.0.113.96/28");
    expect(sim.state().reservations).toEqual([]);
    const error = await ec2Failure(
      ec2.send(new DeleteSubnetCidrReservationCommand({ SubnetCidrReservationId: id })),
    );
    expect(error).toEqual({
      code: "InvalidSubnetCidrReservationID.NotFound",
      message: `The subnetCidrReservation ID '${id}' does not exist`,
      status: 400,
    });
  });

  it("creating a reservation never unassigns addresses in use inside it, but automatic picks avoid it", async () => {
    await ec2.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: "eni-0n1multus",
        PrivateIpAddresses: ["203.0.113.72"],
      }),
    );
    await create("203.0.113.68/30");
    expect(sim.state().enis.find((e) => e.eniId === "eni-0n1multus")?.ipv4s).toContain("203.0.113.72");
    const out = await ec2.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: "eni-0n2multus",
        SecondaryPrivateIpAddressCount: 1,
      }),
    );
    // .68-.71 reserved, .72 used.
    expect(out.AssignedPrivateIpAddresses?.[0]?.PrivateIpAddress).toBe("203.0.113.73");
  });

  it("pages GetSubnetCidrReservations and filters by reservationType", async () => {
    for (const cidr of ["203.0.113.72/30", "203.0.113.76/30", "203.0.113.80/30", "203.0.113.84/30"]) {
      await create(cidr);
    }
    await create("203.0.113.88/30", "prefix");
    const first = await ec2.send(
      new GetSubnetCidrReservationsCommand({ SubnetId: "subnet-0multus", MaxResults: 5 }),
    );
    expect(first.SubnetIpv4CidrReservations).toHaveLength(5);
    const second = await ec2.send(
      new GetSubnetCidrReservationsCommand({
        SubnetId: "subnet-0multus",
        MaxResults: 5,
        NextToken: first.NextToken,
      }),
    );
    expect(second.SubnetIpv4CidrReservations?.map((r) => r.Cidr)).toEqual(["203.0.113.88/30"]);
    expect(second.NextToken).toBeUndefined();
    const prefix = await ec2.send(
      new GetSubnetCidrReservationsCommand({
        SubnetId: "subnet-0multus",
        Filters: [{ Name: "reservationType", Values: ["prefix"] }],
      }),
    );
    expect(prefix.SubnetIpv4CidrReservations?.map((r) => r.Cidr)).toEqual(["203.0.113.88/30"]);
  });

  it("accepts DryRun on the reservation calls (DryRunOperation) and changes nothing", async () => {
    const error = await ec2Failure(
      ec2.send(
        new CreateSubnetCidrReservationCommand({
          SubnetId: "subnet-0multus",
          Cidr: "203.0.113.80/30",
          ReservationType: "explicit",
          DryRun: true,
        }),
      ),
    );
    expect(error.code).toBe("DryRunOperation");
    expect(sim.state().reservations).toHaveLength(1);
    expect(
      (
        await ec2Failure(
          ec2.send(new GetSubnetCidrReservationsCommand({ SubnetId: "subnet-0multus", DryRun: true })),
        )
      ).code,
    ).toBe("DryRunOperation");
  });

  it("requires SubnetId on GetSubnetCidrReservations", async () => {
    const error = await ec2Failure(
      ec2.send(new GetSubnetCidrReservationsCommand({} as { SubnetId: string })),
    );
    expect(error).toEqual({
      code: "MissingParameter",
      message: "The request must contain the parameter SubnetId",
      status: 400,
    });
  });
});
