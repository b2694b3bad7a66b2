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
      leaf("ipv4AddressesPerInterface", v.addressesPerEni) +
        leaf("ipv6AddressesPerInterface", v.addressesPerEni) +
        leaf("ipv6Supported", true),
    )
  );
}

/**
 * DescribeInstanceTypes: `InstanceType.N`, answered in one page. Only the members our commands read
 * (`hypervisor`, `networkInfo`'s addresses per interface); filters are not simulated and are refused, so that
 * a caller relying on one learns it here rather than from an answer that ignored it.
 */
export const describeInstanceTypes: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  if (params.filters().length > 0) {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      "The simulator's DescribeInstanceTypes takes InstanceType.N only: filters are not simulated",
    );
  }
  return itemSet(
    "instanceTypeSet",
    instanceTypesNamed(topology, params.list("InstanceType")).map(renderInstanceType),
  );
};
