import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddress } from "../ip-math.js";
import type { Ec2Handler } from "./ec2-context.js";
import { addressFilters, addressViewOf, renderAddress } from "./elastic-ip-view.js";
import { applyFilters } from "./filters.js";
import { checkAllocationId } from "./model/elastic-ips.js";
import { itemSet } from "./xml.js";

/**
 * DescribeAddresses: `AllocationId.N`, `PublicIp.N` and the filters of addressFilters; no paging (EC2 has
 * none for it). A listed allocation id or public IP that does not exist fails the whole call, as in EC2
 * (`InvalidAllocationID.NotFound`, `InvalidAddress.NotFound`); a filter that matches nothing gives an empty set.
 */
export const describeAddresses: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const state = ctx.readState();
  let addresses = state.addresses;
  const ids = params.list("AllocationId").map(checkAllocationId);
  if (ids.length > 0) {
    const unknown = ids.find((id) => !addresses.some((a) => a.allocationId === id));
    if (unknown !== undefined) {
      throw new Ec2ApiError("InvalidAllocationID.NotFound", `The allocation ID '${unknown}' does not exist`);
    }
    addresses = addresses.filter((a) => ids.includes(a.allocationId));
  }
  const publicIps = params.list("PublicIp").map((ip) => canonicalAddress(ip) ?? ip);
  if (publicIps.length > 0) {
    const unknown = publicIps.find((ip) => !state.addresses.some((a) => a.publicIp === ip));
    if (unknown !== undefined)
      throw new Ec2ApiError("InvalidAddress.NotFound", `Address '${unknown}' not found.`);
    addresses = addresses.filter((a) => publicIps.includes(a.publicIp));
  }
  const views = addresses.map((a) => addressViewOf(a, state, topology));
  const matching = applyFilters(views, params.filters(), addressFilters);
  return itemSet("addressesSet", matching.map(renderAddress));
};
