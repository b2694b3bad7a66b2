import type { Ec2Handler } from "./ec2-context.js";
import { detachEni } from "./model/eni-attachments.js";
import { leaf } from "./xml.js";

/** DetachNetworkInterface: `AttachmentId`, `Force` (accepted; detaching is instant here). Answers `return`. */
export const detachNetworkInterface: Ec2Handler = (ctx) => {
  const attachmentId = ctx.params.require("AttachmentId");
  const was = ctx.store.write((draft) => detachEni(draft, attachmentId));
  ctx.attachments({ kind: "detach", instanceId: was.instanceId ?? "", mac: was.mac });
  return leaf("return", true);
};
