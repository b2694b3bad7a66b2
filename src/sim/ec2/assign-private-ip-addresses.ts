import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddresses } from "./address-params.js";
import type { Ec2Handler } from "./ec2-context.js";
import { type AssignRequest, assignPrivateIps } from "./model/eni-addresses.js";
import { prefixRequestOf } from "./prefix-params.js";
import { itemSet, leaf } from "./xml.js";

/**
 * AssignPrivateIpAddresses: `PrivateIpAddress.N`, `SecondaryPrivateIpAddressCount` or prefixes
 * (`Ipv4Prefix.N`, `Ipv4PrefixCount`), one kind per request (`InvalidParameterCombination` otherwise), and
 * `AllowReassignment`. EC2's rules: assignPrivateIps.
 */
export const assignPrivateIpAddresses: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const requested = params.list("PrivateIpAddress");
  const countText = params.get("SecondaryPrivateIpAddressCount");
  if (requested.length > 0 && countText !== undefined) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "The parameters PrivateIpAddress and SecondaryPrivateIpAddressCount cannot be used together",
    );
  }
  const prefixes = prefixRequestOf(
    params.list("Ipv4Prefix"),
    params.get("Ipv4PrefixCount"),
    () => params.int("Ipv4PrefixCount", 1, 1000),
    4,
    "Ipv4Prefix",
    "Ipv4PrefixCount",
  );
  if (prefixes !== undefined && (requested.length > 0 || countText !== undefined)) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "Private IP addresses and IPv4 prefixes cannot be assigned in the same request",
    );
  }
  const eniId = params.require("NetworkInterfaceId");
  if (requested.length === 0 && countText === undefined && prefixes === undefined) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter PrivateIpAddress or SecondaryPrivateIpAddressCount",
    );
  }
  const request: AssignRequest =
    prefixes !== undefined
      ? { prefixes }
      : requested.length > 0
        ? { addresses: canonicalAddresses(requested, 4, "PrivateIpAddress") }
        : { count: params.int("SecondaryPrivateIpAddressCount", 1, 1000) ?? 0 };
  const allowReassignment = params.bool("AllowReassignment");
  const result = ctx.store.write((draft) =>
    assignPrivateIps(draft, ctx.topology, eniId, request, allowReassignment),
  );
  const addressSet = itemSet(
    "assignedPrivateIpAddressesSet",
    result.addresses.map((a) => leaf("privateIpAddress", a)),
  );
  if (prefixes === undefined) return leaf("networkInterfaceId", result.eniId) + addressSet;
  return (
    leaf("networkInterfaceId", result.eniId) +
    addressSet +
    itemSet(
      "assignedIpv4PrefixSet",
      result.prefixes.map((p) => leaf("ipv4Prefix", p)),
    )
  );
};
