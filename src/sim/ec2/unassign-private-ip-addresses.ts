import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Ec2Handler } from "./ec2-context.js";
import { dropAssociations } from "./elastic-ip-associations.js";
import { canonicalAddresses, requireEni } from "./lookups.js";
import { unassignPrefixes } from "./prefixes.js";
import { leaf } from "./xml.js";

/**
 * UnassignPrivateIpAddresses, all or nothing. Unconfirmed EC2 behaviour, decided here: the primary address
 * and an address the ENI does not hold are both refused with `InvalidParameterValue` (callers that treat
 * "already gone" as success must check the ENI first, or accept that code). An Elastic IP associated with an
 * unassigned address loses its association (documented). `Ipv4Prefix.N` unassigns prefixes the same way (a
 * prefix the ENI does not hold: `InvalidParameterValue`); addresses and prefixes may come in one request.
 */
export const unassignPrivateIpAddresses: Ec2Handler = (ctx) => {
  const draft = ctx.store.draft();
  const eni = requireEni(ctx.params, draft);
  const requested = ctx.params.list("PrivateIpAddress");
  const prefixes = ctx.params.list("Ipv4Prefix");
  if (requested.length === 0 && prefixes.length === 0) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter PrivateIpAddress or Ipv4Prefix",
    );
  }
  if (prefixes.length > 0) unassignPrefixes(eni, 4, prefixes, "Ipv4Prefix");
  const addresses = canonicalAddresses(requested, 4, "PrivateIpAddress");
  for (const address of addresses) {
    if (address === eni.primaryIpv4) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `Address ${address} is the primary private IP address of ${eni.eniId} and cannot be unassigned.`,
      );
    }
  }
  const missing = addresses.filter((a) => !eni.ipv4s.includes(a));
  if (missing.length > 0) {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Some of the specified addresses are not assigned to interface ${eni.eniId}: ${missing.join(", ")}`,
    );
  }
  eni.ipv4s = eni.ipv4s.filter((a) => !addresses.includes(a));
  dropAssociations(draft, eni.eniId, addresses);
  ctx.store.commit(draft);
  return leaf("return", true);
};
