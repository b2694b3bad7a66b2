import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { bigIntToAddress } from "../ip-math.js";
import type { Ec2Handler } from "./ec2-context.js";
import { tagsFromSpecifications } from "./tag-specifications.js";
import { leaf } from "./xml.js";

/** Parameters EC2 documents for AllocateAddress that choose another pool: refused, never ignored. */
const unmodelled = ["Address", "PublicIpv4Pool", "CustomerOwnedIpv4Pool", "IpamPoolId"];

/**
 * AllocateAddress (`Domain=vpc`, the default since EC2-Classic was retired): the lowest free public IP of the
 * world's pool (203.0.113.0/24 unless the VPC uses it: see publicIpPoolOf), network and broadcast addresses
 * left out. When the pool is used
 * up: `AddressLimitExceeded` (EC2's code for its per-region quota, 5 by default, which the simulator does
 * not impose). Tags from `TagSpecification.N` with ResourceType `elastic-ip`.
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
  const draft = ctx.store.draft();
  const used = new Set(draft.addresses.map((a) => a.publicIp));
  const pool = topology.publicIpPool;
  let publicIp: string | undefined;
  for (let offset = 1n; offset < pool.size - 1n && publicIp === undefined; offset++) {
    const candidate = bigIntToAddress(pool.base + offset, 4);
    if (!used.has(candidate)) publicIp = candidate;
  }
  if (publicIp === undefined) {
    throw new Ec2ApiError("AddressLimitExceeded", "The maximum number of addresses has been reached.");
  }
  const allocationId = ctx.nextId("eipalloc");
  draft.addresses.push({
    allocationId,
    publicIp,
    domain: "vpc",
    associationId: null,
    eniId: null,
    privateIp: null,
    tags,
  });
  ctx.store.commit(draft);
  return (
    leaf("publicIp", publicIp) +
    leaf("allocationId", allocationId) +
    leaf("publicIpv4Pool", "amazon") +
    leaf("networkBorderGroup", topology.region) +
    leaf("domain", "vpc")
  );
};
