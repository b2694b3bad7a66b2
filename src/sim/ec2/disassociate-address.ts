import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Ec2Handler } from "./ec2-context.js";
import { disassociateAddress as disassociate } from "./model/elastic-ips.js";
import { leaf } from "./xml.js";

/**
 * DisassociateAddress (VPC): `AssociationId`; a `PublicIp` alone is refused for a VPC address, as EC2 refuses
 * it. EC2's rules: model/elastic-ips.ts.
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
  ctx.store.write((draft) => disassociate(draft, associationId));
  return leaf("return", true);
};
