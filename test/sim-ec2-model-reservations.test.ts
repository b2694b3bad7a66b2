import { describe, expect, it } from "vitest";
import { assignPrivateIps } from "../src/sim/ec2/model/eni-addresses.js";
import { createReservation, deleteReservation, reservationsOf } from "../src/sim/ec2/model/reservations.js";
import { mustParseCidr } from "../src/sim/ip-math.js";
import { freshModel, refusal } from "./helpers/ec2-model-world.js";

// EC2's subnet CIDR reservation rules in the simulator's model, without HTTP. The world reserves
// 198.51.100.96/28 (explicit, scr-00000000000000001) in subnet-0multus (198.51.100.64/26, 2001:db8:200:1::/64).
const request = (cidr: string, subnetId = "subnet-0multus") => ({
  subnetId,
  cidr: mustParseCidr(cidr),
  type: "prefix" as const,
  description: null,
  tags: {},
});

describe("EC2 model: subnet CIDR reservations", () => {
  it("creates a reservation inside the subnet, with a fresh id and the account as owner", () => {
    const { state, topology, nextId } = freshModel();
    const created = createReservation(state, topology, nextId, request("198.51.100.112/28"));
    expect(created).toEqual({
      reservationId: "scr-00000000000000003",
      subnetId: "subnet-0multus",
      cidr: "198.51.100.112/28",
      type: "prefix",
      description: null,
      tags: {},
      ownerId: topology.accountId,
    });
    expect(state.reservations).toHaveLength(2);
  });

  it("refuses a CIDR outside the subnet's block of its family, and one overlapping another reservation", () => {
    const { state, topology, nextId } = freshModel();
    expect(refusal(() => createReservation(state, topology, nextId, request("198.51.100.0/28")))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidParameterValue",
      message: "The CIDR 198.51.100.0/28 is not within the CIDR blocks of subnet subnet-0multus.",
    });
    expect(
      refusal(() => createReservation(state, topology, nextId, request("2001:db8:200:2::/80"))).message,
    ).toBe("The CIDR 2001:db8:200:2::/80 is not within the CIDR blocks of subnet subnet-0multus.");
    expect(
      refusal(() => createReservation(state, topology, nextId, request("198.51.100.96/27"))).message,
    ).toBe(
      "The CIDR 198.51.100.96/27 overlaps the existing subnet CIDR reservation scr-00000000000000001 (198.51.100.96/28).",
    );
  });

  it("refuses an unknown subnet (InvalidSubnetID.NotFound)", () => {
    const { state, topology, nextId } = freshModel();
    expect(
      refusal(() => createReservation(state, topology, nextId, request("198.51.100.112/28", "subnet-0gone"))),
    ).toEqual({
      name: "Ec2ModelError",
      code: "InvalidSubnetID.NotFound",
      message: "The subnet ID 'subnet-0gone' does not exist",
    });
    expect(refusal(() => reservationsOf(state, topology, "subnet-0gone")).code).toBe(
      "InvalidSubnetID.NotFound",
    );
  });

  it("lists a subnet's reservations IPv4 first", () => {
    const { state, topology, nextId } = freshModel();
    createReservation(state, topology, nextId, request("2001:db8:200:1::/80"));
    createReservation(state, topology, nextId, request("198.51.100.112/28"));
    expect(reservationsOf(state, topology, "subnet-0multus").map((r) => r.cidr)).toEqual([
      "198.51.100.96/28",
      "198.51.100.112/28",
      "2001:db8:200:1::/80",
    ]);
    expect(reservationsOf(state, topology, "subnet-0nodes")).toEqual([]);
  });

  it("deletes a reservation and leaves the addresses inside it assigned; an unknown id is refused", () => {
    const { state, topology } = freshModel();
    assignPrivateIps(state, topology, "eni-0n2multus", { addresses: ["198.51.100.97"] });
    const deleted = deleteReservation(state, "scr-00000000000000001");
    expect(deleted.cidr).toBe("198.51.100.96/28");
    expect(state.reservations).toEqual([]);
    expect(state.enis.find((e) => e.eniId === "eni-0n2multus")?.ipv4s).toContain("198.51.100.97");
    expect(refusal(() => deleteReservation(state, "scr-00000000000000001"))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidSubnetCidrReservationID.NotFound",
      message: "The subnetCidrReservation ID 'scr-00000000000000001' does not exist",
    });
  });
});
