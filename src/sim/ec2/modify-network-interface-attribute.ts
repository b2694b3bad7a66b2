import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Ec2Handler } from "./ec2-context.js";
import { type EniAttributeChange, modifyEniAttribute } from "./model/eni-attachments.js";
import type { QueryParams } from "./query-params.js";
import { leaf } from "./xml.js";

function booleanOf(params: QueryParams, name: string): boolean {
  const text = params.require(name).toLowerCase();
  if (text !== "true" && text !== "false") {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Value (${text}) for parameter ${name} is invalid. Expected true or false.`,
    );
  }
  return text === "true";
}

/**
 * The one attribute of the request. EC2 changes exactly one per call (API_ModifyNetworkInterfaceAttribute:
 * "You can specify only one attribute at a time"); more than one, or none, is `InvalidParameterCombination`
 * (the code EC2 answers; the messages are the simulator's).
 */
function changeOf(params: QueryParams): EniAttributeChange {
  const given = {
    attachment: params.has("Attachment.AttachmentId") || params.has("Attachment.DeleteOnTermination"),
    sourceDestCheck: params.has("SourceDestCheck.Value"),
    description: params.has("Description.Value"),
    groups: params.list("SecurityGroupId").length > 0,
  };
  const names = Object.entries(given)
    .filter(([, present]) => present)
    .map(([name]) => name);
  if (names.length !== 1) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      names.length === 0
        ? "No attributes specified."
        : `Fields for multiple attribute types specified: ${names.join(", ")}`,
    );
  }
  if (given.attachment) {
    return {
      kind: "attachment",
      attachmentId: params.require("Attachment.AttachmentId"),
      deleteOnTermination: booleanOf(params, "Attachment.DeleteOnTermination"),
    };
  }
  if (given.sourceDestCheck)
    return { kind: "sourceDestCheck", value: booleanOf(params, "SourceDestCheck.Value") };
  if (given.description) return { kind: "description", value: params.get("Description.Value") ?? "" };
  return { kind: "groups", ids: params.list("SecurityGroupId") };
}

/**
 * ModifyNetworkInterfaceAttribute: `NetworkInterfaceId` and one of `Attachment.AttachmentId` with
 * `Attachment.DeleteOnTermination`, `SourceDestCheck.Value`, `Description.Value`, `SecurityGroupId.N`.
 * Answers `return`.
 */
export const modifyNetworkInterfaceAttribute: Ec2Handler = (ctx) => {
  const eniId = ctx.params.require("NetworkInterfaceId");
  const change = changeOf(ctx.params);
  ctx.store.write((draft) => modifyEniAttribute(draft, ctx.topology, eniId, change));
  return leaf("return", true);
};
