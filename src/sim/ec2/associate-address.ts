import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddress } from "../ip-math.js";
import type { SimEni, SimState } from "../sim-state.js";
import type { Ec2Context, Ec2Handler } from "./ec2-context.js";
import { requireAllocation } from "./elastic-ip-view.js";
import { checkEniId, eniNotFound } from "./model/enis.js";
import { leaf } from "./xml.js";

/** The ENI named by `NetworkInterfaceId`, or the only ENI of `InstanceId`; exactly one of the two. */
function targetEni(ctx: Ec2Context, state: SimState): SimEni {
  const { params } = ctx;
  const eniId = params.get("NetworkInterfaceId");
  const instanceId = params.get("InstanceId");
  if (eniId !== undefined && instanceId !== undefined) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "You can specify either the instance ID or the network interface ID, but not both.",
    );
  }
  if (eniId !== undefined) {
    const eni = state.enis.find((e) => e.eniId === checkEniId(eniId));
    if (eni === undefined) throw eniNotFound(eniId);
    return eni;
  }
  if (instanceId === undefined) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter InstanceId or NetworkInterfaceId",
    );
  }
  if (!ctx.topology.instances.has(instanceId)) {
    throw new Ec2ApiError("InvalidInstanceID.NotFound", `The instance ID '${instanceId}' does not exist`);
  }
  const enis = state.enis.filter((e) => e.instanceId === instanceId);
  if (enis.length !== 1 || enis[0] === undefined) {
    throw new Ec2ApiError(
      "InvalidInstanceID",
      `There are multiple interfaces attached to instance '${instanceId}'. Please specify an interface ID for the operation instead.`,
    );
  }
  return enis[0];
}

/**
 * AssociateAddress (VPC): `AllocationId` with `NetworkInterfaceId` or `InstanceId` (an instance with exactly
 * one ENI), `PrivateIpAddress` (default: the ENI's primary), `AllowReassociation`. Answers an
 * `associationId`. As the API reference documents: reassociation is automatic, and `AllowReassociation=false`
 * makes an Elastic IP associated with another ENI or address fail (`Resource.AlreadyAssociated`); the call is
 * idempotent (associating again where it already points is no error); another Elastic IP on the same private
 * address is disassociated from it (it stays allocated); an unknown allocation is
 * `InvalidAllocationID.NotFound`; a `PublicIp` alone is refused for a VPC address.
 *
 * Unconfirmed EC2 behaviour, decided here: a private address the ENI does not hold is `InvalidParameterValue`;
 * associating again where it already points keeps the association id (nothing changes); a move gets a new one.
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
  const draft = ctx.store.draft();
  const eip = requireAllocation(draft, allocationId);
  const eni = targetEni(ctx, draft);
  const requested = params.get("PrivateIpAddress");
  let privateIp: string;
  if (requested === undefined) {
    if (eni.primaryIpv4 === null) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `The network interface ${eni.eniId} has no private IPv4 address to associate with.`,
      );
    }
    privateIp = eni.primaryIpv4;
  } else {
    const canonical = canonicalAddress(requested);
    if (canonical === undefined || canonical.includes(":")) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `Invalid value '${requested}' for PrivateIpAddress: not a valid IPv4 address`,
      );
    }
    privateIp = canonical;
  }
  if (!eni.ipv4s.includes(privateIp)) {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `The private IP address ${privateIp} is not assigned to the network interface ${eni.eniId}.`,
    );
  }
  if (eip.associationId !== null && eip.eniId === eni.eniId && eip.privateIp === privateIp) {
    return leaf("associationId", eip.associationId);
  }
  if (eip.associationId !== null && params.get("AllowReassociation")?.toLowerCase() === "false") {
    throw new Ec2ApiError(
      "Resource.AlreadyAssociated",
      `resource ${eip.allocationId} is already associated with associate-id ${eip.associationId}`,
    );
  }
  for (const other of draft.addresses) {
    if (other !== eip && other.eniId === eni.eniId && other.privateIp === privateIp) {
      other.associationId = null;
      other.eniId = null;
      other.privateIp = null;
    }
  }
  eip.associationId = ctx.nextId("eipassoc");
  eip.eniId = eni.eniId;
  eip.privateIp = privateIp;
  ctx.store.commit(draft);
  return leaf("associationId", eip.associationId);
};
