/**
 * The kubelet stand-in could not set up a pod's network (a missing or unreadable NetworkAttachmentDefinition,
 * a networks annotation Multus refuses, a full range). The message is what the pod's Warning Event says.
 */
export class SandboxError extends Error {
  override name = "SandboxError";
}
