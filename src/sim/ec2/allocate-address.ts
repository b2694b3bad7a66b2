import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Ec2Handler } from "./ec2-context.js";
import { allocateAddress as allocate } from "./model/elastic-ips.js";
import { tagsFromSpecifications } from "./tag-specifications.js";
import { leaf } from "./xml.js";

/** Parameters EC2 documents for AllocateAddress that choose another pool: refused, never ignored. */
const unmodelled = ["Address", "PublicIpv4Pool", "CustomerOwnedIpv4Pool", "IpamPoolId"];

/**
 * AllocateAddress (`Domain=vpc`, the default since EC2-Classic was retired), tags from `TagSpecification.N`
 * with ResourceType `elastic-ip`. Which address: model/elastic-ips.ts.
 */
export const allocateAddress: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const domain = params.get("Domain");
  if (domain !== undefined && domain !== "vpc") {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Value (${domain}) for parameter Domain is invalid. EC2-Classic is retired: use vpc.`,
    );
  }
  for (const name of unmodelled) {
    if (params.has(name)) {
      throw new Ec2ApiError(
        "UnsupportedOperation",
        `The parameter ${name} is documented by EC2 but not modelled by multus-ipmgr sim`,
      );
    }
  }
  const borderGroup = params.get("NetworkBorderGroup");
  if (borderGroup !== undefined && borderGroup !== topology.region) {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `The network border group ${borderGroup} is not valid in ${topology.region}.`,
    );
  }
  const tags = tagsFromSpecifications(params, "elastic-ip");
  const { publicIp, allocationId } = ctx.store.write((draft) => allocate(draft, topology, ctx.nextId, tags));
  return (
    leaf("publicIp", publicIp) +
    leaf("allocationId", allocationId) +
    leaf("publicIpv4Pool", "amazon") +
    leaf("networkBorderGroup", topology.region) +
    leaf("domain", "vpc")
  );
};
