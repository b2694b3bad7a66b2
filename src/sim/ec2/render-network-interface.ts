import { ipName } from "../aws-names.js";
import type { SecurityGroupRef } from "../topology.js";
import { type EniView, privateDnsNameOf, statusOf } from "./eni-view.js";
import { itemSet, leaf, node, tagSet } from "./xml.js";

/** `groupSet` of `{groupId, groupName}` items, as on ENIs and instances. */
export function groupSet(groups: readonly SecurityGroupRef[]): string {
  return itemSet(
    "groupSet",
    groups.map((g) => leaf("groupId", g.id) + leaf("groupName", g.name)),
  );
}

function privateIpSet(view: EniView): string {
  const { eni, topology } = view;
  return itemSet(
    "privateIpAddressesSet",
    eni.ipv4s.map(
      (a) =>
        leaf("privateIpAddress", a) +
        leaf("privateDnsName", ipName(a, topology.region)) +
        leaf("primary", a === eni.primaryIpv4),
    ),
  );
}

function ipv6Set(view: EniView): string {
  return itemSet(
    "ipv6AddressesSet",
    view.eni.ipv6s.map((a) => leaf("ipv6Address", a) + leaf("isPrimaryIpv6", false)),
  );
}

/** Delegated prefixes: `ipv4PrefixSet/item/ipv4Prefix` and `ipv6PrefixSet/item/ipv6Prefix`. */
function prefixSets(view: EniView): string {
  return (
    itemSet(
      "ipv4PrefixSet",
      view.eni.ipv4Prefixes.map((p) => leaf("ipv4Prefix", p)),
    ) +
    itemSet(
      "ipv6PrefixSet",
      view.eni.ipv6Prefixes.map((p) => leaf("ipv6Prefix", p)),
    )
  );
}

/** The members both forms share, in EC2's order. */
function common(view: EniView): string {
  const { eni, attrs, topology } = view;
  return (
    leaf("networkInterfaceId", eni.eniId) +
    leaf("subnetId", eni.subnetId) +
    leaf("vpcId", topology.vpc.id) +
    leaf("description", attrs.description) +
    leaf("ownerId", topology.accountId)
  );
}

/** One `networkInterfaceSet/item` of DescribeNetworkInterfaces. */
export function renderNetworkInterface(view: EniView): string {
  const { eni, attrs, subnet, topology } = view;
  return (
    common(view) +
    leaf("availabilityZone", subnet.availabilityZone) +
    leaf("availabilityZoneId", subnet.availabilityZoneId) +
    leaf("requesterId", attrs.requesterId) +
    leaf("requesterManaged", attrs.requesterManaged) +
    leaf("status", statusOf(eni)) +
    leaf("macAddress", eni.mac) +
    leaf("privateIpAddress", eni.primaryIpv4) +
    leaf("privateDnsName", privateDnsNameOf(view)) +
    leaf("sourceDestCheck", attrs.sourceDestCheck) +
    groupSet(attrs.securityGroups) +
    // A detached ENI has no attachment element at all.
    (eni.instanceId === null
      ? ""
      : node(
          "attachment",
          leaf("attachmentId", eni.attachmentId) +
            leaf("instanceId", eni.instanceId) +
            leaf("instanceOwnerId", topology.accountId) +
            leaf("deviceIndex", eni.deviceIndex) +
            leaf("networkCardIndex", eni.networkCardIndex) +
            leaf("status", "attached") +
            leaf("attachTime", attrs.attachTime) +
            leaf("deleteOnTermination", attrs.deleteOnTermination),
        )) +
    tagSet(eni.tags) +
    privateIpSet(view) +
    ipv6Set(view) +
    prefixSets(view) +
    leaf("interfaceType", attrs.interfaceType) +
    leaf("ipv6Native", eni.primaryIpv4 === null)
  );
}

/** One `networkInterfaceSet/item` of a DescribeInstances instance. */
export function renderInstanceNetworkInterface(view: EniView): string {
  const { eni, attrs } = view;
  return (
    common(view) +
    leaf("status", statusOf(eni)) +
    leaf("macAddress", eni.mac) +
    leaf("privateIpAddress", eni.primaryIpv4) +
    leaf("privateDnsName", privateDnsNameOf(view)) +
    leaf("sourceDestCheck", attrs.sourceDestCheck) +
    groupSet(attrs.securityGroups) +
    node(
      "attachment",
      leaf("attachmentId", eni.attachmentId) +
        leaf("deviceIndex", eni.deviceIndex) +
        leaf("networkCardIndex", eni.networkCardIndex) +
        leaf("status", "attached") +
        leaf("attachTime", attrs.attachTime) +
        leaf("deleteOnTermination", attrs.deleteOnTermination),
    ) +
    privateIpSet(view) +
    ipv6Set(view) +
    prefixSets(view) +
    leaf("interfaceType", attrs.interfaceType)
  );
}
