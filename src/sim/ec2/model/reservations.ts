import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import { type Cidr, cidrsOverlap, cidrWithin, mustParseCidr } from "../../ip-math.js";
import type { SimReservation, SimState } from "../../sim-state.js";
import type { Topology } from "../../topology.js";
import { requireSubnet } from "./subnets.js";

/**
 * EC2's rules for subnet CIDR reservations. Each write changes a draft state in place and throws Ec2ModelError
 * before any change it would not make. Creating or deleting a reservation never unassigns addresses in use;
 * what a reservation keeps EC2's automatic picks off: free-addresses.ts and prefixes.ts.
 */

export interface ReservationRequest {
  readonly subnetId: string;
  readonly cidr: Cidr;
  readonly type: "explicit" | "prefix";
  readonly description: string | null;
  readonly tags: Record<string, string>;
}

/**
 * CreateSubnetCidrReservation. The CIDR must lie in the subnet's block of its family. Unconfirmed EC2
 * behaviour, decided here: a CIDR outside the subnet, or overlapping another reservation of the subnet, is
 * `InvalidParameterValue`.
 */
export function createReservation(
  state: SimState,
  topology: Topology,
  nextId: (prefix: string) => string,
  request: ReservationRequest,
): SimReservation {
  const subnet = requireSubnet(topology, request.subnetId);
  const block = request.cidr;
  const home = block.family === 4 ? subnet.cidr : subnet.ipv6Cidr;
  if (home === undefined || !cidrWithin(block, home)) {
    throw new Ec2ModelError(
      "InvalidParameterValue",
      `The CIDR ${block.text} is not within the CIDR blocks of subnet ${subnet.id}.`,
    );
  }
  const clash = state.reservations.find(
    (r) => r.subnetId === subnet.id && cidrsOverlap(mustParseCidr(r.cidr), block),
  );
  if (clash !== undefined) {
    throw new Ec2ModelError(
      "InvalidParameterValue",
      `The CIDR ${block.text} overlaps the existing subnet CIDR reservation ${clash.reservationId} (${clash.cidr}).`,
    );
  }
  const reservation: SimReservation = {
    reservationId: nextId("scr"),
    subnetId: subnet.id,
    cidr: block.text,
    type: request.type,
    description: request.description,
    tags: request.tags,
    ownerId: topology.accountId,
  };
  state.reservations.push(reservation);
  return reservation;
}

/** The reservations of a subnet, IPv4 ones first (GetSubnetCidrReservations pages both families together). */
export function reservationsOf(state: SimState, topology: Topology, subnetId: string): SimReservation[] {
  const subnet = requireSubnet(topology, subnetId);
  const mine = state.reservations.filter((r) => r.subnetId === subnet.id);
  return [...mine.filter((r) => !r.cidr.includes(":")), ...mine.filter((r) => r.cidr.includes(":"))];
}

/** DeleteSubnetCidrReservation; returns the deleted reservation. Addresses in use inside it stay assigned. */
export function deleteReservation(state: SimState, id: string): SimReservation {
  const reservation = state.reservations.find((r) => r.reservationId === id);
  if (reservation === undefined) {
    throw new Ec2ModelError(
      "InvalidSubnetCidrReservationID.NotFound",
      `The subnetCidrReservation ID '${id}' does not exist`,
    );
  }
  state.reservations = state.reservations.filter((r) => r.reservationId !== id);
  return reservation;
}
