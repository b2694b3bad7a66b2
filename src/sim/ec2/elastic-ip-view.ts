import type { SimAddress, SimState } from "../sim-state.js";
import type { Topology } from "../topology.js";
import { documentedAddressFilters } from "./documented-filters.js";
import type { FilterCatalogue } from "./filters.js";
import { leaf, tagSet } from "./xml.js";

/** One Elastic IP as DescribeAddresses sees it: the address and what it reads from its ENI and the account. */
export interface AddressView {
  readonly eip: SimAddress;
  /** The instance the associated ENI is attached to. */
  readonly instanceId: string | undefined;
  readonly topology: Topology;
}

export function addressViewOf(eip: SimAddress, state: SimState, topology: Topology): AddressView {
  const instanceId =
    eip.eniId === null ? undefined : (state.enis.find((e) => e.eniId === eip.eniId)?.instanceId ?? undefined);
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
