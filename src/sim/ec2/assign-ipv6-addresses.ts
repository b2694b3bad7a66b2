import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddresses } from "./address-params.js";
import type { Ec2Handler } from "./ec2-context.js";
import { type AssignRequest, assignIpv6s } from "./model/eni-addresses.js";
import { prefixRequestOf } from "./prefix-params.js";
import { escapeXml, itemSet, leaf } from "./xml.js";

/**
 * AssignIpv6Addresses: `Ipv6Addresses.N`, `Ipv6AddressCount` or prefixes (`Ipv6Prefix.N`, `Ipv6PrefixCount`),
 * one kind per request (`InvalidParameterCombination` otherwise). EC2's rules: assignIpv6s.
 */
export const assignIpv6Addresses: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const requested = params.list("Ipv6Addresses");
  const countText = params.get("Ipv6AddressCount");
  if (requested.length > 0 && countText !== undefined) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "The parameters Ipv6Addresses and Ipv6AddressCount cannot be used together",
    );
  }
  const prefixes = prefixRequestOf(
    params.list("Ipv6Prefix"),
    params.get("Ipv6PrefixCount"),
    () => params.int("Ipv6PrefixCount", 1, 1000),
    6,
    "Ipv6Prefix",
    "Ipv6PrefixCount",
  );
  if (prefixes !== undefined && (requested.length > 0 || countText !== undefined)) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "IPv6 addresses and IPv6 prefixes cannot be assigned in the same request",
    );
  }
  const eniId = params.require("NetworkInterfaceId");
  if (requested.length === 0 && countText === undefined && prefixes === undefined) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter Ipv6Addresses or Ipv6AddressCount",
    );
  }
  const request: AssignRequest =
    prefixes !== undefined
      ? { prefixes }
      : requested.length > 0
        ? { addresses: canonicalAddresses(requested, 6, "Ipv6Addresses") }
        : { count: params.int("Ipv6AddressCount", 1, 1000) ?? 0 };
  const result = ctx.store.write((draft) => assignIpv6s(draft, ctx.topology, eniId, request));
  const addressSet = itemSet("assignedIpv6Addresses", result.addresses.map(escapeXml));
  if (prefixes === undefined) return addressSet + leaf("networkInterfaceId", result.eniId);
  return (
    addressSet +
    itemSet("assignedIpv6PrefixSet", result.prefixes.map(escapeXml)) +
    leaf("networkInterfaceId", result.eniId)
  );
};
