import { ipName } from "../aws-names.js";
import type { SimEni } from "../sim-state.js";
import type { Topology, TopologyEni, TopologySubnet } from "../topology.js";
import { type FilterFields, flag } from "./filters.js";
import { subnetOf } from "./model/enis.js";

/** One ENI as the Describe calls see it: its current addresses and its fixed attributes. */
export interface EniView {
  readonly eni: SimEni;
  readonly attrs: TopologyEni;
  readonly subnet: TopologySubnet;
  readonly topology: Topology;
}

export function eniViewOf(eni: SimEni, topology: Topology): EniView {
  const attrs = topology.enis.get(eni.eniId);
  if (attrs === undefined) throw new Error(`internal: unknown ENI ${eni.eniId}`);
  return { eni, attrs, subnet: subnetOf(topology, eni.subnetId), topology };
}

export const attachmentIdOf = (eni: SimEni): string => `eni-attach-${eni.eniId.slice(4)}`;

/** The ENI's private DNS name, from its primary IPv4 address; none on an IPv6-only ENI. */
export function privateDnsNameOf(view: EniView): string | undefined {
  return view.eni.primaryIpv4 === null ? undefined : ipName(view.eni.primaryIpv4, view.topology.region);
}

/**
 * The filters of DescribeNetworkInterfaces. `private-ip-address` is documented as "the private IPv4
 * address or addresses of the network interface", so it matches secondary addresses too, exactly as
 * `addresses.private-ip-address` does. (DescribeInstances' `private-ip-address` is the primary only: its
 * documentation says so.)
 */
export const networkInterfaceFields: FilterFields<EniView> = {
  "addresses.primary": (v) => v.eni.ipv4s.map((a) => String(a === v.eni.primaryIpv4)),
  "addresses.private-ip-address": (v) => v.eni.ipv4s,
  "attachment.attach-time": (v) => [v.attrs.attachTime],
  "attachment.attachment-id": (v) => [attachmentIdOf(v.eni)],
  "attachment.delete-on-termination": (v) => flag(v.attrs.deleteOnTermination),
  "attachment.device-index": (v) => [String(v.eni.deviceIndex)],
  "attachment.instance-id": (v) => [v.eni.instanceId],
  "attachment.instance-owner-id": (v) => [v.topology.accountId],
  // Every ENI of a world is attached to its instance, for good.
  "attachment.status": () => ["attached"],
  "availability-zone": (v) => [v.subnet.availabilityZone],
  "availability-zone-id": (v) => [v.subnet.availabilityZoneId],
  description: (v) => [v.attrs.description],
  "group-id": (v) => v.attrs.securityGroups.map((g) => g.id),
  "interface-type": (v) => [v.attrs.interfaceType],
  "ipv6-addresses.ipv6-address": (v) => v.eni.ipv6s,
  "mac-address": (v) => [v.eni.mac],
  "network-interface-id": (v) => [v.eni.eniId],
  "owner-id": (v) => [v.topology.accountId],
  "private-dns-name": (v) => {
    const name = privateDnsNameOf(v);
    return name === undefined ? [] : [name];
  },
  "private-ip-address": (v) => v.eni.ipv4s,
  "requester-id": (v) => (v.attrs.requesterId === undefined ? [] : [v.attrs.requesterId]),
  "requester-managed": (v) => flag(v.attrs.requesterManaged),
  "source-dest-check": (v) => flag(v.attrs.sourceDestCheck),
  status: () => ["in-use"],
  "subnet-id": (v) => [v.eni.subnetId],
  "tag-key": (v) => Object.keys(v.eni.tags),
  "vpc-id": (v) => [v.topology.vpc.id],
};
