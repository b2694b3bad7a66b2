import { canonicalAddress } from "../ip-math.js";
import type { Ec2Handler } from "./ec2-context.js";
import { addressFilters, addressViewOf, renderAddress } from "./elastic-ip-view.js";
import { applyFilters } from "./filters.js";
import { addressesNamed, checkAllocationId } from "./model/elastic-ips.js";
import { itemSet } from "./xml.js";

/**
 * DescribeAddresses: `AllocationId.N`, `PublicIp.N` (which addresses: addressesNamed) and the filters of
 * addressFilters; no paging (EC2 has none for it). A filter that matches nothing gives an empty set.
 */
export const describeAddresses: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const state = ctx.readState();
  const ids = params.list("AllocationId").map(checkAllocationId);
  const publicIps = params.list("PublicIp").map((ip) => canonicalAddress(ip) ?? ip);
  const addresses = addressesNamed(state, ids, publicIps);
  const views = addresses.map((a) => addressViewOf(a, state, topology));
  const matching = applyFilters(views, params.filters(), addressFilters);
  return itemSet("addressesSet", matching.map(renderAddress));
};
