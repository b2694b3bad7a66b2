import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddresses } from "./address-params.js";
import type { Ec2Handler } from "./ec2-context.js";
import { unassignPrivateIps } from "./model/eni-addresses.js";
import { canonicalPrefixes } from "./prefix-params.js";
import { leaf } from "./xml.js";

/** UnassignPrivateIpAddresses: `PrivateIpAddress.N` and/or `Ipv4Prefix.N`. EC2's rules: unassignPrivateIps. */
export const unassignPrivateIpAddresses: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const eniId = params.require("NetworkInterfaceId");
  const requested = params.list("PrivateIpAddress");
  const prefixList = params.list("Ipv4Prefix");
  if (requested.length === 0 && prefixList.length === 0) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter PrivateIpAddress or Ipv4Prefix",
    );
  }
  const prefixes = canonicalPrefixes(prefixList, 4, "Ipv4Prefix").map((p) => p.text);
  const addresses = canonicalAddresses(requested, 4, "PrivateIpAddress");
  ctx.store.write((draft) => unassignPrivateIps(draft, eniId, addresses, prefixes));
  return leaf("return", true);
};
