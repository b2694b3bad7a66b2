import type { SimEni } from "../sim-state.js";
import type { Topology } from "../topology.js";
import { itemSet, leaf, node, tagSet } from "../xml.js";

const attachmentIdOf = (eni: SimEni): string => `eni-attach-${eni.eniId.slice(4)}`;

function privateIpSet(eni: SimEni): string {
  return itemSet(
    "privateIpAddressesSet",
    eni.ipv4s.map((a) => leaf("privateIpAddress", a) + leaf("primary", a === eni.primaryIpv4)),
  );
}

function ipv6Set(eni: SimEni): string {
  return itemSet(
    "ipv6AddressesSet",
    eni.ipv6s.map((a) => leaf("ipv6Address", a) + leaf("isPrimaryIpv6", false)),
  );
}

/** One `networkInterfaceSet/item` of DescribeNetworkInterfaces. */
export function renderNetworkInterface(eni: SimEni, topology: Topology): string {
  return (
    leaf("networkInterfaceId", eni.eniId) +
    leaf("subnetId", eni.subnetId) +
    leaf("vpcId", topology.vpc.id) +
    leaf("availabilityZone", topology.subnets.get(eni.subnetId)?.availabilityZone) +
    leaf("description", "") +
    leaf("ownerId", topology.accountId) +
    leaf("requesterManaged", false) +
    leaf("status", "in-use") +
    leaf("macAddress", eni.mac) +
    leaf("privateIpAddress", eni.primaryIpv4) +
    leaf("sourceDestCheck", true) +
    "<groupSet/>" +
    node(
      "attachment",
      leaf("attachmentId", attachmentIdOf(eni)) +
        leaf("instanceId", eni.instanceId) +
        leaf("instanceOwnerId", topology.accountId) +
        leaf("deviceIndex", eni.deviceIndex) +
        leaf("networkCardIndex", 0) +
        leaf("status", "attached") +
        leaf("deleteOnTermination", eni.deviceIndex === 0),
    ) +
    tagSet(eni.tags) +
    privateIpSet(eni) +
    ipv6Set(eni) +
    leaf("interfaceType", "interface")
  );
}

/** One `networkInterfaceSet/item` of a DescribeInstances instance. */
export function renderInstanceNetworkInterface(eni: SimEni, topology: Topology): string {
  return (
    leaf("networkInterfaceId", eni.eniId) +
    leaf("subnetId", eni.subnetId) +
    leaf("vpcId", topology.vpc.id) +
    leaf("description", "") +
    leaf("ownerId", topology.accountId) +
    leaf("status", "in-use") +
    leaf("macAddress", eni.mac) +
    leaf("privateIpAddress", eni.primaryIpv4) +
    leaf("sourceDestCheck", true) +
    "<groupSet/>" +
    node(
      "attachment",
      leaf("attachmentId", attachmentIdOf(eni)) +
        leaf("deviceIndex", eni.deviceIndex) +
        leaf("networkCardIndex", 0) +
        leaf("status", "attached") +
        leaf("deleteOnTermination", eni.deviceIndex === 0),
    ) +
    privateIpSet(eni) +
    ipv6Set(eni) +
    leaf("interfaceType", "interface")
  );
}
