import type { Ec2Handler } from "./ec2-context.js";
import { attachEni } from "./model/eni-attachments.js";
import { leaf } from "./xml.js";

/**
 * AttachNetworkInterface: `NetworkInterfaceId`, `InstanceId`, `DeviceIndex`, `NetworkCardIndex` (default 0).
 * Answers `attachmentId` and `networkCardIndex`. EC2's rules: model/eni-attachments.ts.
 */
export const attachNetworkInterface: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const eniId = params.require("NetworkInterfaceId");
  const instanceId = params.require("InstanceId");
  params.require("DeviceIndex");
  const request = {
    eniId,
    instanceId,
    deviceIndex: params.int("DeviceIndex", 0, 31) ?? 0,
    networkCardIndex: params.int("NetworkCardIndex", 0, 31) ?? 0,
  };
  const attachTime = new Date(ctx.now()).toISOString();
  const eni = ctx.store.write((draft) => attachEni(draft, ctx.topology, ctx.nextId, attachTime, request));
  ctx.attachments({
    kind: "attach",
    instanceId,
    mac: eni.mac,
    deviceIndex: request.deviceIndex,
    networkCardIndex: request.networkCardIndex,
  });
  return leaf("attachmentId", eni.attachmentId) + leaf("networkCardIndex", eni.networkCardIndex);
};
