import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { SimAddress, SimState } from "../sim-state.js";
import type { Topology } from "../topology.js";
import { documentedAddressFilters } from "./documented-filters.js";
import type { FilterCatalogue } from "./filters.js";
import { leaf, tagSet } from "./xml.js";

/**
 * Real ids are `eipalloc-` and 8 or 17 hex digits; world files use readable ids such as `eipalloc-0web`, so
 * the simulator only calls an id malformed when it lacks the prefix or has other characters (as for ENIs).
 */
const allocationIdPattern = /^eipalloc-[0-9a-z]+$/;

export function checkAllocationId(id: string): string {
  if (!allocationIdPattern.test(id)) {
    throw new Ec2ApiError("InvalidAllocationID.Malformed", `Invalid id: "${id}" (expecting "eipalloc-...")`);
  }
  return id;
}

export function allocationNotFound(id: string): Ec2ApiError {
  return new Ec2ApiError("InvalidAllocationID.NotFound", `The allocation ID '${id}' does not exist`);
}

/** The Elastic IP named by `id`, in `state` (a draft for writes). */
export function requireAllocation(state: SimState, id: string): SimAddress {
  const eip = state.addresses.find((a) => a.allocationId === checkAllocationId(id));
  if (eip === undefined) throw allocationNotFound(id);
  return eip;
}

/** One Elastic IP as DescribeAddresses sees it: the address and what it reads from its ENI and the account. */
export interface AddressView {
  readonly eip: SimAddress;
  /** The instance the associated ENI is attached to. */
  readonly instanceId: string | undefined;
  readonly topology: Topology;
}

export function addressViewOf(eip: SimAddress, state: SimState, topology: Topology): AddressView {
  const instanceId =
    eip.eniId === null ? undefined : state.enis.find((e) => e.eniId === eip.eniId)?.instanceId;
  return { eip, instanceId, topology };
}

/** One `addressesSet/item` of DescribeAddresses, members in EC2's order. */
export function renderAddress(view: AddressView): string {
  const { eip, topology } = view;
  return (
    leaf("publicIp", eip.publicIp) +
    leaf("allocationId", eip.allocationId) +
    leaf("domain", eip.domain) +
    leaf("instanceId", view.instanceId) +
    leaf("associationId", eip.associationId) +
    leaf("networkInterfaceId", eip.eniId) +
    leaf("networkInterfaceOwnerId", eip.associationId === null ? undefined : topology.accountId) +
    leaf("privateIpAddress", eip.privateIp) +
    tagSet(eip.tags) +
    leaf("publicIpv4Pool", "amazon") +
    leaf("networkBorderGroup", topology.region)
  );
}

const some = (value: string | null | undefined): string[] => (value == null ? [] : [value]);

/** The filters of DescribeAddresses: every documented one, and `domain` (see documentedAddressFilters). */
export const addressFilters: FilterCatalogue<AddressView> = {
  documented: documentedAddressFilters,
  fields: {
    "allocation-id": (v) => [v.eip.allocationId],
    "association-id": (v) => some(v.eip.associationId),
    domain: (v) => [v.eip.domain],
    "instance-id": (v) => some(v.instanceId),
    "network-border-group": (v) => [v.topology.region],
    "network-interface-id": (v) => some(v.eip.eniId),
    "network-interface-owner-id": (v) => (v.eip.associationId === null ? [] : [v.topology.accountId]),
    "private-ip-address": (v) => some(v.eip.privateIp),
    "public-ip": (v) => [v.eip.publicIp],
    "tag-key": (v) => Object.keys(v.eip.tags),
  },
  tags: (v) => v.eip.tags,
};
