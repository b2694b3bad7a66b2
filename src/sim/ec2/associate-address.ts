import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddress } from "../ip-math.js";
import type { Ec2Handler } from "./ec2-context.js";
import { type AssociationTarget, associateAddress as associate } from "./model/elastic-ips.js";
import type { QueryParams } from "./query-params.js";
import { leaf } from "./xml.js";

/** `NetworkInterfaceId` or `InstanceId`, exactly one of the two. */
function targetOf(params: QueryParams): AssociationTarget {
  const eniId = params.get("NetworkInterfaceId");
  const instanceId = params.get("InstanceId");
  if (eniId !== undefined && instanceId !== undefined) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "You can specify either the instance ID or the network interface ID, but not both.",
    );
  }
  if (eniId !== undefined) return { eniId };
  if (instanceId === undefined) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter InstanceId or NetworkInterfaceId",
    );
  }
  return { instanceId };
}

/**
 * AssociateAddress (VPC): `AllocationId` with `NetworkInterfaceId` or `InstanceId` (an instance with exactly
 * one ENI), `PrivateIpAddress` (default: the ENI's primary), `AllowReassociation`; a `PublicIp` alone is
 * refused for a VPC address. Answers an `associationId`. EC2's rules: model/elastic-ips.ts.
 */
export const associateAddress: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const allocationId = params.get("AllocationId");
  if (allocationId === undefined || allocationId === "") {
    if (params.has("PublicIp")) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        "You must specify an allocation id when mapping an address to a VPC instance",
      );
    }
    throw new Ec2ApiError("MissingParameter", "The request must contain the parameter AllocationId");
  }
  const target = targetOf(params);
  const requested = params.get("PrivateIpAddress");
  let privateIp: string | undefined;
  if (requested !== undefined) {
    privateIp = canonicalAddress(requested);
    if (privateIp === undefined || privateIp.includes(":")) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `Invalid value '${requested}' for PrivateIpAddress: not a valid IPv4 address`,
      );
    }
  }
  const allowReassociation = params.get("AllowReassociation")?.toLowerCase() !== "false";
  const associationId = ctx.store.write((draft) =>
    associate(draft, ctx.topology, ctx.nextId, { allocationId, target, privateIp, allowReassociation }),
  );
  return leaf("associationId", associationId);
};
