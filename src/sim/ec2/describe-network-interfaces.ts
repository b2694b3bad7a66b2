import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { SimEni } from "../sim-state.js";
import { itemSet } from "../xml.js";
import type { Ec2Handler } from "./ec2-context.js";
import { applyFilters, type FilterFields } from "./filters.js";
import { checkEniId, eniNotFound } from "./lookups.js";
import { paginate } from "./paging.js";
import { renderNetworkInterface } from "./render-network-interface.js";

const eniFields: FilterFields<SimEni> = {
  "network-interface-id": (e) => [e.eniId],
  "attachment.instance-id": (e) => [e.instanceId],
  "attachment.device-index": (e) => [String(e.deviceIndex)],
  "attachment.status": () => ["attached"],
  "attachment.attachment-id": (e) => [`eni-attach-${e.eniId.slice(4)}`],
  "mac-address": (e) => [e.mac],
  "subnet-id": (e) => [e.subnetId],
  "addresses.private-ip-address": (e) => e.ipv4s,
  "private-ip-address": (e) => (e.primaryIpv4 === null ? [] : [e.primaryIpv4]),
  "ipv6-addresses.ipv6-address": (e) => e.ipv6s,
  status: () => ["in-use"],
  "interface-type": () => ["interface"],
};

/** DescribeNetworkInterfaces: ids, filters (see eniFields, plus vpc-id, availability-zone, tag:KEY), paging. */
export const describeNetworkInterfaces: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const ids = params.list("NetworkInterfaceId").map(checkEniId);
  if (ids.length > 0 && params.has("MaxResults")) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "The parameter NetworkInterfaceIds cannot be used with the parameter MaxResults",
    );
  }
  let enis = ctx.readState().enis;
  if (ids.length > 0) {
    const unknown = ids.find((id) => !enis.some((e) => e.eniId === id));
    if (unknown !== undefined) throw eniNotFound(unknown);
    enis = enis.filter((e) => ids.includes(e.eniId));
  }
  const fields: FilterFields<SimEni> = {
    ...eniFields,
    "vpc-id": () => [topology.vpc.id],
    "availability-zone": (e) => [topology.subnets.get(e.subnetId)?.availabilityZone ?? ""],
    "owner-id": () => [topology.accountId],
  };
  const matching = applyFilters(enis, params.filters(), fields, (e) => e.tags);
  const page = paginate("DescribeNetworkInterfaces", matching, params);
  return (
    itemSet(
      "networkInterfaceSet",
      page.items.map((e) => renderNetworkInterface(e, topology)),
    ) + page.nextTokenXml
  );
};
