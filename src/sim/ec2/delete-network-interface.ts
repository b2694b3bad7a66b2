import type { Ec2Handler } from "./ec2-context.js";
import { deleteEni } from "./model/eni-attachments.js";
import { leaf } from "./xml.js";

/** DeleteNetworkInterface: `NetworkInterfaceId`. Answers `return`. EC2's rules: model/eni-attachments.ts. */
export const deleteNetworkInterface: Ec2Handler = (ctx) => {
  const eniId = ctx.params.require("NetworkInterfaceId");
  ctx.store.write((draft) => deleteEni(draft, eniId));
  return leaf("return", true);
};
