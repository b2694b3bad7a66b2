import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { parseCidr } from "../ip-math.js";
import type { SimReservation } from "../sim-state.js";
import type { Ec2Handler } from "./ec2-context.js";
import { applyFilters, type FilterCatalogue, type FilterFields } from "./filters.js";
import { createReservation, deleteReservation, reservationsOf } from "./model/reservations.js";
import { paginate } from "./paging.js";
import { tagsFromSpecifications } from "./tag-specifications.js";
import { itemSet, leaf, node, tagSet } from "./xml.js";

function renderReservation(r: SimReservation): string {
  return (
    leaf("subnetCidrReservationId", r.reservationId) +
    leaf("subnetId", r.subnetId) +
    leaf("cidr", r.cidr) +
    leaf("reservationType", r.type) +
    leaf("ownerId", r.ownerId) +
    leaf("description", r.description) +
    tagSet(r.tags)
  );
}

/** CreateSubnetCidrReservation: `SubnetId`, `Cidr`, `ReservationType`, `Description`, `TagSpecification.N`. */
export const createSubnetCidrReservation: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const subnetId = params.require("SubnetId");
  const cidrText = params.require("Cidr");
  const type = params.require("ReservationType");
  if (type !== "explicit" && type !== "prefix") {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Value (${type}) for parameter ReservationType is invalid. Expected explicit or prefix.`,
    );
  }
  const cidr = parseCidr(cidrText);
  if (typeof cidr === "string") {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Value (${cidrText}) for parameter Cidr is invalid: ${cidr}`,
    );
  }
  const request = {
    subnetId,
    cidr,
    type,
    description: params.get("Description") ?? null,
    tags: tagsFromSpecifications(params, "subnet-cidr-reservation"),
  } as const;
  const reservation = ctx.store.write((draft) => createReservation(draft, ctx.topology, ctx.nextId, request));
  return node("subnetCidrReservation", renderReservation(reservation));
};

const reservationFields: FilterFields<SimReservation> = {
  reservationType: (r) => [r.type],
  "reservation-type": (r) => [r.type],
  "subnet-id": (r) => [r.subnetId],
  cidr: (r) => [r.cidr],
  "owner-id": (r) => [r.ownerId],
  "subnet-cidr-reservation-id": (r) => [r.reservationId],
  "tag-key": (r) => Object.keys(r.tags),
};

/** EC2 documents reservationType, subnet-id, tag:KEY and tag-key; the other names are the simulator's own. */
const reservationFilters: FilterCatalogue<SimReservation> = {
  documented: [...Object.keys(reservationFields), "tag:"],
  fields: reservationFields,
  tags: (r) => r.tags,
};

/** GetSubnetCidrReservations: both families, paged together (IPv4 first). */
export const getSubnetCidrReservations: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const ordered = reservationsOf(ctx.readState(), ctx.topology, params.require("SubnetId"));
  const matching = applyFilters(ordered, params.filters(), reservationFilters);
  const page = paginate("GetSubnetCidrReservations", matching, params);
  const ipv4 = page.items.filter((r) => !r.cidr.includes(":")).map(renderReservation);
  const ipv6 = page.items.filter((r) => r.cidr.includes(":")).map(renderReservation);
  return (
    itemSet("subnetIpv4CidrReservationSet", ipv4) +
    itemSet("subnetIpv6CidrReservationSet", ipv6) +
    page.nextTokenXml
  );
};

/** DeleteSubnetCidrReservation: `SubnetCidrReservationId`. */
export const deleteSubnetCidrReservation: Ec2Handler = (ctx) => {
  const id = ctx.params.require("SubnetCidrReservationId");
  const reservation = ctx.store.write((draft) => deleteReservation(draft, id));
  return node("deletedSubnetCidrReservation", renderReservation(reservation));
};
