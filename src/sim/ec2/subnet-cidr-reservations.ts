import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { cidrsOverlap, cidrWithin, mustParseCidr, parseCidr } from "../ip-math.js";
import type { SimReservation } from "../sim-state.js";
import type { Topology, TopologySubnet } from "../topology.js";
import type { Ec2Handler } from "./ec2-context.js";
import { applyFilters, type FilterCatalogue, type FilterFields } from "./filters.js";
import { paginate } from "./paging.js";
import type { QueryParams } from "./query-params.js";
import { tagsFromSpecifications } from "./tag-specifications.js";
import { itemSet, leaf, node, tagSet } from "./xml.js";

function requireSubnet(params: QueryParams, topology: Topology): TopologySubnet {
  const id = params.require("SubnetId");
  const subnet = topology.subnets.get(id);
  if (subnet === undefined)
    throw new Ec2ApiError("InvalidSubnetID.NotFound", `The subnet ID '${id}' does not exist`);
  return subnet;
}

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

/**
 * CreateSubnetCidrReservation. The CIDR must lie in the subnet's block of its family. Unconfirmed EC2
 * behaviour, decided here: a CIDR outside the subnet, or overlapping another reservation of the subnet, is
 * `InvalidParameterValue`. Creating a reservation never unassigns addresses already in use.
 */
export const createSubnetCidrReservation: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const subnet = requireSubnet(params, topology);
  const cidrText = params.require("Cidr");
  const type = params.require("ReservationType");
  if (type !== "explicit" && type !== "prefix") {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Value (${type}) for parameter ReservationType is invalid. Expected explicit or prefix.`,
    );
  }
  const block = parseCidr(cidrText);
  if (typeof block === "string") {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Value (${cidrText}) for parameter Cidr is invalid: ${block}`,
    );
  }
  const home = block.family === 4 ? subnet.cidr : subnet.ipv6Cidr;
  if (home === undefined || !cidrWithin(block, home)) {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `The CIDR ${block.text} is not within the CIDR blocks of subnet ${subnet.id}.`,
    );
  }
  const draft = ctx.store.draft();
  const clash = draft.reservations.find(
    (r) => r.subnetId === subnet.id && cidrsOverlap(mustParseCidr(r.cidr), block),
  );
  if (clash !== undefined) {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `The CIDR ${block.text} overlaps the existing subnet CIDR reservation ${clash.reservationId} (${clash.cidr}).`,
    );
  }
  const reservation: SimReservation = {
    reservationId: ctx.nextId("scr"),
    subnetId: subnet.id,
    cidr: block.text,
    type,
    description: params.get("Description") ?? null,
    tags: tagsFromSpecifications(params, "subnet-cidr-reservation"),
    ownerId: topology.accountId,
  };
  draft.reservations.push(reservation);
  ctx.store.commit(draft);
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
  const { params, topology } = ctx;
  const subnet = requireSubnet(params, topology);
  const mine = ctx.readState().reservations.filter((r) => r.subnetId === subnet.id);
  const ordered = [...mine.filter((r) => !r.cidr.includes(":")), ...mine.filter((r) => r.cidr.includes(":"))];
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

/** DeleteSubnetCidrReservation; addresses in use inside the block stay assigned. */
export const deleteSubnetCidrReservation: Ec2Handler = (ctx) => {
  const id = ctx.params.require("SubnetCidrReservationId");
  const draft = ctx.store.draft();
  const reservation = draft.reservations.find((r) => r.reservationId === id);
  if (reservation === undefined) {
    throw new Ec2ApiError(
      "InvalidSubnetCidrReservationID.NotFound",
      `The subnetCidrReservation ID '${id}' does not exist`,
    );
  }
  draft.reservations = draft.reservations.filter((r) => r.reservationId !== id);
  ctx.store.commit(draft);
  return node("deletedSubnetCidrReservation", renderReservation(reservation));
};
