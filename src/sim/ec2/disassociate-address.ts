import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Ec2Handler } from "./ec2-context.js";
import { leaf } from "./xml.js";

/**
 * DisassociateAddress (VPC): `AssociationId`; the Elastic IP stays allocated. An unknown association id is
 * `InvalidAssociationID.NotFound`; a `PublicIp` alone is refused for a VPC address, as EC2 refuses it.
 */
export const disassociateAddress: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const associationId = params.get("AssociationId");
  if (associationId === undefined || associationId === "") {
    if (params.has("PublicIp")) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        "You must specify an association id when unmapping an address from a VPC instance",
      );
    }
    throw new Ec2ApiError("MissingParameter", "The request must contain the parameter AssociationId");
  }
  const draft = ctx.store.draft();
  const eip = draft.addresses.find((a) => a.associationId === associationId);
  if (eip === undefined) {
    throw new Ec2ApiError(
      "InvalidAssociationID.NotFound",
      `The association ID '${associationId}' does not exist`,
    );
  }
  eip.associationId = null;
  eip.eniId = null;
  eip.privateIp = null;
  ctx.store.commit(draft);
  return leaf("return", true);
};
