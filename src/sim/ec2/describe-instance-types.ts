import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Ec2Handler } from "./ec2-context.js";
import { type InstanceTypeView, instanceTypesNamed } from "./model/instance-types.js";
import { itemSet, leaf, node } from "./xml.js";

function renderInstanceType(v: InstanceTypeView): string {
  return (
    leaf("instanceType", v.instanceType) +
    leaf("currentGeneration", true) +
    leaf("hypervisor", v.hypervisor) +
    node(
      "networkInfo",
      leaf("maximumNetworkInterfaces", v.network.maxNetworkInterfaces) +
        leaf("maximumNetworkCards", v.network.networkCards.length) +
        leaf("defaultNetworkCardIndex", 0) +
        itemSet(
          "networkCards",
          v.network.networkCards.map(
            (c) =>
              leaf("networkCardIndex", c.index) + leaf("maximumNetworkInterfaces", c.maxNetworkInterfaces),
          ),
        ) +
        leaf("ipv4AddressesPerInterface", v.addressesPerEni) +
        leaf("ipv6AddressesPerInterface", v.addressesPerEni) +
        leaf("ipv6Supported", true),
    )
  );
}

/**
 * DescribeInstanceTypes: `InstanceType.N`, answered in one page. Only the members our commands read
 * (`hypervisor`, `networkInfo`'s addresses per interface, ENIs per instance and per network card). Filters are not modelled and are refused with
 * `UnsupportedOperation`, as the other Describe calls refuse a filter they do not model, so that a caller
 * relying on one learns it here rather than from an answer that ignored it.
 */
export const describeInstanceTypes: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const filter = params.filters()[0];
  if (filter !== undefined) {
    throw new Ec2ApiError(
      "UnsupportedOperation",
      `The filter '${filter.name}' is not modelled by multus-ipmgr sim: its DescribeInstanceTypes takes InstanceType.N only`,
    );
  }
  return itemSet(
    "instanceTypeSet",
    instanceTypesNamed(topology, params.list("InstanceType")).map(renderInstanceType),
  );
};
