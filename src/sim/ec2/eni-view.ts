import { ipName } from "../aws-names.js";
import type { SimEni } from "../sim-state.js";
import { createdEniAttrs, type SecurityGroupRef, type Topology, type TopologySubnet } from "../topology.js";
import { type FilterFields, flag } from "./filters.js";
import { subnetOf } from "./model/enis.js";

/** The attributes of an ENI as rendered: the world's fixed ones and the state's current ones. */
export interface EniAttrs {
  readonly description: string;
  readonly securityGroups: readonly SecurityGroupRef[];
  readonly sourceDestCheck: boolean;
  readonly interfaceType: string;
  readonly requesterId: string | undefined;
  readonly requesterManaged: boolean;
  readonly deleteOnTermination: boolean;
  /** Null while detached. */
  readonly attachTime: string | null;
}

/** One ENI as the Describe calls see it: its current addresses and its attributes. */
export interface EniView {
  readonly eni: SimEni;
  readonly attrs: EniAttrs;
  readonly subnet: TopologySubnet;
  readonly topology: Topology;
}

export function eniViewOf(eni: SimEni, topology: Topology): EniView {
  const fixed = topology.enis.get(eni.eniId) ?? createdEniAttrs;
  const attrs: EniAttrs = {
    description: eni.description,
    securityGroups: eni.securityGroupIds.map((id) => ({
      id,
      name: topology.securityGroups.get(id)?.name ?? "",
    })),
    sourceDestCheck: eni.sourceDestCheck,
    interfaceType: fixed.interfaceType,
    requesterId: fixed.requesterId,
    requesterManaged: fixed.requesterManaged,
    deleteOnTermination: eni.deleteOnTermination,
    attachTime: eni.attachTime,
  };
  return { eni, attrs, subnet: subnetOf(topology, eni.subnetId), topology };
}

/** `in-use` while attached, `available` otherwise (attaching and detaching are instant here). */
export const statusOf = (eni: SimEni): "in-use" | "available" =>
  eni.instanceId === null ? "available" : "in-use";

const some = (value: string | number | null): string[] => (value === null ? [] : [String(value)]);

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
  "attachment.attach-time": (v) => some(v.eni.attachTime),
  "attachment.attachment-id": (v) => some(v.eni.attachmentId),
  "attachment.delete-on-termination": (v) =>
    v.eni.instanceId === null ? [] : flag(v.attrs.deleteOnTermination),
  "attachment.device-index": (v) => some(v.eni.deviceIndex),
  "attachment.instance-id": (v) => some(v.eni.instanceId),
  "attachment.instance-owner-id": (v) => (v.eni.instanceId === null ? [] : [v.topology.accountId]),
  "attachment.status": (v) => (v.eni.instanceId === null ? [] : ["attached"]),
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
  status: (v) => [statusOf(v.eni)],
  "subnet-id": (v) => [v.eni.subnetId],
  "tag-key": (v) => Object.keys(v.eni.tags),
  "vpc-id": (v) => [v.topology.vpc.id],
};
