import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Ec2Handler } from "./ec2-context.js";
import { canonicalAddresses, requireEni } from "./lookups.js";
import { unassignPrefixes } from "./prefixes.js";
import { escapeXml, itemSet, leaf } from "./xml.js";

/**
 * UnassignIpv6Addresses, all or nothing. Unconfirmed EC2 behaviour, decided here: an address the ENI does
 * not hold is refused with `InvalidParameterValue`, like UnassignPrivateIpAddresses; so is a prefix
 * (`Ipv6Prefix.N`) it does not hold.
 */
export const unassignIpv6Addresses: Ec2Handler = (ctx) => {
  const draft = ctx.store.draft();
  const eni = requireEni(ctx.params, draft);
  const requested = ctx.params.list("Ipv6Addresses");
  const prefixList = ctx.params.list("Ipv6Prefix");
  if (requested.length === 0 && prefixList.length === 0) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter Ipv6Addresses or Ipv6Prefix",
    );
  }
  const prefixes = prefixList.length > 0 ? unassignPrefixes(eni, 6, prefixList, "Ipv6Prefix") : [];
  const addresses = canonicalAddresses(requested, 6, "Ipv6Addresses");
  const missing = addresses.filter((a) => !eni.ipv6s.includes(a));
  if (missing.length > 0) {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Some of the specified addresses are not assigned to interface ${eni.eniId}: ${missing.join(", ")}`,
    );
  }
  eni.ipv6s = eni.ipv6s.filter((a) => !addresses.includes(a));
  ctx.store.commit(draft);
  return (
    leaf("networkInterfaceId", eni.eniId) +
    itemSet("unassignedIpv6Addresses", addresses.map(escapeXml)) +
    itemSet("unassignedIpv6PrefixSet", prefixes.map(escapeXml))
  );
};
