import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import type { SimEni, SimState } from "../../sim-state.js";
import type { Topology } from "../../topology.js";
import { dropAssociations } from "./elastic-ip-associations.js";
import { eniById } from "./enis.js";
import { checkInstanceId, instancesNamed } from "./instances.js";

/**
 * EC2's rules for an ENI's attachment, its deletion and its attributes (EC2 API reference:
 * API_AttachNetworkInterface, API_DetachNetworkInterface, API_DeleteNetworkInterface,
 * API_ModifyNetworkInterfaceAttribute; error codes from "Error codes for the Amazon EC2 API"). Each write
 * changes a draft state in place and throws Ec2ModelError before any change it would not make. Attaching and
 * detaching are instant here: EC2's `attaching` and `detaching` states are not modelled.
 *
 * Decided here where EC2 documents no code or message: an ENI already attached is
 * `InvalidNetworkInterface.InUse` (the code EC2 documents for an interface "in use and cannot be ... attached to
 * another instance"); an ENI in another zone than the instance is `InvalidParameterCombination`; a device index
 * taken on the same network card is `InvalidParameterValue`; a network card the type does not have is
 * `InvalidParameterValue`. Device indexes are counted per network card.
 */

/** An attach: which ENI, where. */
export interface AttachRequest {
  readonly eniId: string;
  readonly instanceId: string;
  readonly deviceIndex: number;
  readonly networkCardIndex: number;
}

export function attachEni(
  state: SimState,
  topology: Topology,
  nextId: (prefix: string) => string,
  attachTime: string,
  request: AttachRequest,
): SimEni {
  const eni = eniById(state, request.eniId);
  const [instance] = instancesNamed(topology, [checkInstanceId(request.instanceId)]);
  if (instance === undefined) throw new Error(`internal: no instance ${request.instanceId}`);
  if (eni.instanceId !== null) {
    throw new Ec2ModelError(
      "InvalidNetworkInterface.InUse",
      `Interface: [${eni.eniId}] in use. It is attached to ${eni.instanceId} (${eni.attachmentId}).`,
    );
  }
  const subnet = topology.subnets.get(eni.subnetId);
  if (subnet !== undefined && subnet.availabilityZone !== instance.availabilityZone) {
    throw new Ec2ModelError(
      "InvalidParameterCombination",
      `You may not attach a network interface to an instance if they are not in the same availability zone (${eni.eniId} is in ${subnet.availabilityZone}, ${instance.id} in ${instance.availabilityZone}).`,
    );
  }
  const { network } = instance;
  const card = network.networkCards.find((c) => c.index === request.networkCardIndex);
  if (card === undefined) {
    throw new Ec2ModelError(
      "InvalidParameterValue",
      `Invalid value '${request.networkCardIndex}' for NetworkCardIndex: instance type ${instance.instanceType} has network cards ${network.networkCards.map((c) => c.index).join(", ")}.`,
    );
  }
  const attached = state.enis.filter((e) => e.instanceId === instance.id);
  const onCard = attached.filter((e) => (e.networkCardIndex ?? 0) === card.index);
  if (onCard.some((e) => e.deviceIndex === request.deviceIndex)) {
    throw new Ec2ModelError(
      "InvalidParameterValue",
      `Instance '${instance.id}' already has an interface attached at device index '${request.deviceIndex}'.`,
    );
  }
  if (attached.length >= network.maxNetworkInterfaces || onCard.length >= card.maxNetworkInterfaces) {
    const limit =
      attached.length >= network.maxNetworkInterfaces
        ? `${network.maxNetworkInterfaces} network interfaces for instance type ${instance.instanceType}`
        : `${card.maxNetworkInterfaces} network interfaces on network card ${card.index} of ${instance.instanceType}`;
    throw new Ec2ModelError(
      "AttachmentLimitExceeded",
      `Interface count ${attached.length + 1} exceeds the limit: ${limit}.`,
    );
  }
  eni.instanceId = instance.id;
  eni.deviceIndex = request.deviceIndex;
  eni.networkCardIndex = card.index;
  eni.attachmentId = nextId("eni-attach");
  eni.attachTime = attachTime;
  // AttachNetworkInterface makes attachments that survive the instance: DeleteOnTermination false.
  eni.deleteOnTermination = false;
  return eni;
}

function byAttachment(state: SimState, attachmentId: string): SimEni {
  const eni = state.enis.find((e) => e.attachmentId === attachmentId);
  if (eni === undefined) {
    throw new Ec2ModelError(
      "InvalidAttachmentID.NotFound",
      `The attachment ID '${attachmentId}' does not exist`,
    );
  }
  return eni;
}

/** DetachNetworkInterface; returns the ENI as it was attached. `Force` changes nothing here. */
export function detachEni(state: SimState, attachmentId: string): SimEni {
  const eni = byAttachment(state, attachmentId);
  if (eni.deviceIndex === 0 && (eni.networkCardIndex ?? 0) === 0) {
    throw new Ec2ModelError(
      "OperationNotPermitted",
      "The network interface at device index 0 and networkCard index 0 cannot be detached.",
    );
  }
  const before = structuredClone(eni);
  eni.instanceId = null;
  eni.deviceIndex = null;
  eni.networkCardIndex = null;
  eni.attachmentId = null;
  eni.attachTime = null;
  eni.deleteOnTermination = false;
  return before;
}

/**
 * DeleteNetworkInterface. An attached ENI is refused with `InvalidNetworkInterface.InUse`, as EC2 answers;
 * Elastic IPs associated with its addresses are disassociated (they stay allocated).
 */
export function deleteEni(state: SimState, eniId: string): SimEni {
  const eni = eniById(state, eniId);
  if (eni.instanceId !== null) {
    throw new Ec2ModelError(
      "InvalidNetworkInterface.InUse",
      `The network interface '${eni.eniId}' is currently in use.`,
    );
  }
  dropAssociations(state, eni.eniId, eni.ipv4s);
  state.enis = state.enis.filter((e) => e.eniId !== eni.eniId);
  return eni;
}

/** The one attribute a ModifyNetworkInterfaceAttribute call changes. */
export type EniAttributeChange =
  | { readonly kind: "attachment"; readonly attachmentId: string; readonly deleteOnTermination: boolean }
  | { readonly kind: "sourceDestCheck"; readonly value: boolean }
  | { readonly kind: "description"; readonly value: string }
  | { readonly kind: "groups"; readonly ids: readonly string[] };

export function modifyEniAttribute(
  state: SimState,
  topology: Topology,
  eniId: string,
  change: EniAttributeChange,
): SimEni {
  const eni = eniById(state, eniId);
  switch (change.kind) {
    case "attachment":
      if (eni.attachmentId !== change.attachmentId) {
        throw new Ec2ModelError(
          "InvalidAttachmentID.NotFound",
          `The attachment ID '${change.attachmentId}' does not exist`,
        );
      }
      eni.deleteOnTermination = change.deleteOnTermination;
      break;
    case "sourceDestCheck":
      eni.sourceDestCheck = change.value;
      break;
    case "description":
      eni.description = change.value;
      break;
    case "groups": {
      const unknown = change.ids.find((g) => !topology.securityGroups.has(g));
      if (unknown !== undefined) {
        throw new Ec2ModelError("InvalidGroup.NotFound", `The security group '${unknown}' does not exist`);
      }
      eni.securityGroupIds = [...change.ids];
      break;
    }
  }
  return eni;
}
