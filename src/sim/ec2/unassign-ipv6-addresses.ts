import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddresses } from "./address-params.js";
import type { Ec2Handler } from "./ec2-context.js";
import { unassignIpv6s } from "./model/eni-addresses.js";
import { canonicalPrefixes } from "./prefix-params.js";
import { escapeXml, itemSet, leaf } from "./xml.js";

/** UnassignIpv6Addresses: `Ipv6Addresses.N` and/or `Ipv6Prefix.N`. EC2's rules: unassignIpv6s. */
export const unassignIpv6Addresses: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const eniId = params.require("NetworkInterfaceId");
  const requested = params.list("Ipv6Addresses");
  const prefixList = params.list("Ipv6Prefix");
  if (requested.length === 0 && prefixList.length === 0) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter Ipv6Addresses or Ipv6Prefix",
    );
  }
  const prefixes = canonicalPrefixes(prefixList, 6, "Ipv6Prefix").map((p) => p.text);
  const addresses = canonicalAddresses(requested, 6, "Ipv6Addresses");
  ctx.store.write((draft) => unassignIpv6s(draft, eniId, addresses, prefixes));
  return (
    leaf("networkInterfaceId", eniId) +
    itemSet("unassignedIpv6Addresses", addresses.map(escapeXml)) +
    itemSet("unassignedIpv6PrefixSet", prefixes.map(escapeXml))
  );
};
