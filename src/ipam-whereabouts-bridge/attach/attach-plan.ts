/**
 * Attach mode's plan: from the node's configured networks and the instance's ENIs as EC2 shows them, what to
 * do for each network. Pure: no I/O, no clock; the output does not depend on the order of the ENI lists.
 *
 * For each network, by its slot (network card, device index):
 * - an ENI is attached there: nothing to make (`none`). If it is not ours (no `multus-ipmgr.io/cluster` tag
 *   naming this cluster, or ours but made for another network or instance), it is `foreign`: reported, never
 *   touched. If it is ours and its DeleteOnTermination is false, or its SourceDestCheck differs from the
 *   network's, one call each sets it;
 * - an ENI is leaving or arriving there (attachment detaching or attaching): `wait`, nothing called;
 * - the slot is free: an available ENI of ours made for this instance and this network, in the network's
 *   subnet, is attached again (`reattach`, the lowest id when there are several); otherwise one is made
 *   (`create-and-attach`);
 * - refused before any call, with a sentence: no usable subnet or security groups (attach-targets.ts), a
 *   subnet outside the node's zone, a network card the instance type does not have, a device index beyond the
 *   card's ENIs, or one ENI more than the type takes on the card or on the instance (the ENIs attached now,
 *   the VPC CNI's included, count; networks are given room in (card, device) order).
 */

import { ATTACH_TAGS, type AttachNetwork } from "../../eni/attach-networks.js";
import type { Ec2InstanceType, Ec2NetworkInterface } from "../../eni/types.js";
import type { AttachTarget, TargetRefusal } from "./attach-targets.js";
import { type AttachSlot, slotKey } from "./client-token.js";

/** The instance the plan is for. */
export interface AttachInstance {
  readonly instanceId: string;
  readonly availabilityZone: string;
  readonly vpcId: string;
  /** DescribeInstanceTypes' NetworkInfo; undefined (or its limits absent): no limit checked, EC2 refuses. */
  readonly type?: Pick<Ec2InstanceType, "instanceType" | "maxNetworkInterfaces" | "networkCards">;
}

export interface AttachPlanInput {
  readonly clusterName: string;
  readonly instance: AttachInstance;
  readonly networks: readonly AttachNetwork[];
  /** The instance's ENIs (describeInstanceEnis). */
  readonly instanceEnis: readonly Ec2NetworkInterface[];
  /** ENIs of ours made for this instance and not attached (describeEnisByTags, status available). */
  readonly availableEnis: readonly Ec2NetworkInterface[];
  /** Per network name, where its ENI is made; needed only for a network whose slot is free. */
  readonly targets: ReadonlyMap<string, AttachTarget | TargetRefusal>;
}

export type AttachRefusalReason =
  | TargetRefusal["reason"]
  | "no-target"
  | "subnet-zone"
  | "network-card"
  | "device-index"
  | "card-limit"
  | "instance-limit";

export type AttachAction =
  | {
      readonly kind: "none";
      readonly eni: Ec2NetworkInterface;
      /** Set when the ENI at the slot is not this network's: the sentence reported. */
      readonly foreign?: string;
    }
  | { readonly kind: "wait"; readonly eniId: string; readonly detail: string }
  | { readonly kind: "reattach"; readonly eni: Ec2NetworkInterface }
  | {
      readonly kind: "create-and-attach";
      readonly subnetId: string;
      readonly securityGroupIds: readonly string[];
      readonly description: string;
      readonly tags: Readonly<Record<string, string>>;
    }
  | { readonly kind: "set-delete-on-termination"; readonly eniId: string; readonly attachmentId: string }
  | { readonly kind: "set-source-dest-check"; readonly eniId: string; readonly sourceDestCheck: boolean }
  | { readonly kind: "refuse"; readonly reason: AttachRefusalReason; readonly detail: string };

/** A network's actions, in order: one of none, wait, reattach, create-and-attach or refuse, or the sets. */
export interface NetworkPlan {
  readonly network: AttachNetwork;
  readonly slot: AttachSlot;
  readonly actions: readonly AttachAction[];
}

/** The tags an ENI attach mode makes for `network` carries from its creation. */
export function attachTags(
  clusterName: string,
  instanceId: string,
  networkName: string,
): Record<string, string> {
  return {
    [ATTACH_TAGS.noManage]: "true",
    [ATTACH_TAGS.cluster]: clusterName,
    [ATTACH_TAGS.instance]: instanceId,
    [ATTACH_TAGS.network]: networkName,
  };
}

/** The ENI's description: "multus-ipmgr <cluster> <instance> <network>". */
export function attachDescription(clusterName: string, instanceId: string, networkName: string): string {
  return `multus-ipmgr ${clusterName} ${instanceId} ${networkName}`;
}

/** Whether the ENI carries this cluster's ownership tag: the only ENIs attach mode ever calls EC2 on. */
export function isOurs(eni: Ec2NetworkInterface, clusterName: string): boolean {
  return eni.tags[ATTACH_TAGS.cluster] === clusterName;
}

/** The card and device an ENI is attached at on the instance; undefined when it is not attached there. */
export function attachedSlot(eni: Ec2NetworkInterface, instanceId: string): AttachSlot | undefined {
  const a = eni.attachment;
  if (a !== undefined) {
    if (a.status === "detached" || (a.instanceId !== undefined && a.instanceId !== instanceId))
      return undefined;
    return { networkCardIndex: a.networkCardIndex, deviceIndex: a.deviceIndex };
  }
  if (eni.instanceId === instanceId && eni.deviceIndex !== undefined)
    return { networkCardIndex: 0, deviceIndex: eni.deviceIndex };
  return undefined;
}

/** The ENI attached at the network's slot, if any (the lowest id, should EC2 show two). */
export function slotOccupant(
  network: AttachNetwork,
  instanceEnis: readonly Ec2NetworkInterface[],
  instanceId: string,
): Ec2NetworkInterface | undefined {
  const key = slotKey(network);
  return instanceEnis
    .filter((e) => {
      const slot = attachedSlot(e, instanceId);
      return slot !== undefined && slotKey(slot) === key;
    })
    .sort((a, b) => a.eniId.localeCompare(b.eniId))[0];
}

export function planAttach(input: AttachPlanInput): NetworkPlan[] {
  const { instance } = input;
  const counts = attachedCounts(input.instanceEnis, instance.instanceId);
  const available = [...input.availableEnis].sort((a, b) => a.eniId.localeCompare(b.eniId));
  const ordered = [...input.networks].sort(
    (a, b) => a.networkCardIndex - b.networkCardIndex || a.deviceIndex - b.deviceIndex,
  );
  const plans = new Map<string, NetworkPlan>();
  for (const network of ordered) {
    const slot = { networkCardIndex: network.networkCardIndex, deviceIndex: network.deviceIndex };
    const occupant = slotOccupant(network, input.instanceEnis, instance.instanceId);
    const actions =
      occupant !== undefined ? occupied(input, network, occupant) : free(input, network, counts, available);
    plans.set(network.name, { network, slot, actions });
  }
  return input.networks.map((n) => plans.get(n.name) as NetworkPlan);
}

/** The ENIs attached now, per card and in all. */
function attachedCounts(
  enis: readonly Ec2NetworkInterface[],
  instanceId: string,
): { total: number; perCard: Map<number, number> } {
  const perCard = new Map<number, number>();
  let total = 0;
  for (const eni of enis) {
    const slot = attachedSlot(eni, instanceId);
    if (slot === undefined) continue;
    total += 1;
    perCard.set(slot.networkCardIndex, (perCard.get(slot.networkCardIndex) ?? 0) + 1);
  }
  return { total, perCard };
}

function occupied(input: AttachPlanInput, network: AttachNetwork, eni: Ec2NetworkInterface): AttachAction[] {
  const { clusterName, instance } = input;
  const status = eni.attachment?.status;
  const at = `card ${network.networkCardIndex} device ${network.deviceIndex}`;
  const mine =
    isOurs(eni, clusterName) &&
    eni.tags[ATTACH_TAGS.network] === network.name &&
    eni.tags[ATTACH_TAGS.instance] === instance.instanceId;
  if (!mine) {
    const whose = isOurs(eni, clusterName)
      ? `made by this cluster for network ${eni.tags[ATTACH_TAGS.network] ?? "(none)"} of instance ${eni.tags[ATTACH_TAGS.instance] ?? "(none)"}`
      : `not made by multus-ipmgr for cluster ${clusterName} (no ${ATTACH_TAGS.cluster}=${clusterName} tag)`;
    return [
      {
        kind: "none",
        eni,
        foreign: `network ${network.name}: ENI ${eni.eniId} at ${at} is ${whose}; it is left alone. Give the network a free device index, or detach that ENI yourself`,
      },
    ];
  }
  if (status === "detaching" || status === "attaching") {
    return [
      {
        kind: "wait",
        eniId: eni.eniId,
        detail: `network ${network.name}: ENI ${eni.eniId} at ${at} is ${status}; looked at again at the next pass`,
      },
    ];
  }
  const actions: AttachAction[] = [{ kind: "none", eni }];
  if (eni.attachment !== undefined && !eni.attachment.deleteOnTermination)
    actions.push({
      kind: "set-delete-on-termination",
      eniId: eni.eniId,
      attachmentId: eni.attachment.attachmentId,
    });
  if (eni.sourceDestCheck !== undefined && eni.sourceDestCheck !== network.sourceDestCheck)
    actions.push({
      kind: "set-source-dest-check",
      eniId: eni.eniId,
      sourceDestCheck: network.sourceDestCheck,
    });
  return actions;
}

function free(
  input: AttachPlanInput,
  network: AttachNetwork,
  counts: { total: number; perCard: Map<number, number> },
  available: readonly Ec2NetworkInterface[],
): AttachAction[] {
  const { clusterName, instance } = input;
  const target = input.targets.get(network.name);
  if (target === undefined)
    return [
      {
        kind: "refuse",
        reason: "no-target",
        detail: `network ${network.name}: its subnet and security groups were not looked up; tried again at the next pass`,
      },
    ];
  if (!("subnetId" in target)) return [{ kind: "refuse", reason: target.reason, detail: target.detail }];
  if (target.availabilityZone !== undefined && target.availabilityZone !== instance.availabilityZone)
    return [
      {
        kind: "refuse",
        reason: "subnet-zone",
        detail: `network ${network.name}: subnet ${target.subnetId} is in ${target.availabilityZone}, the node in ${instance.availabilityZone}; an ENI attaches only to an instance of its subnet's zone: give a subnet of ${instance.availabilityZone}`,
      },
    ];
  const limit = overLimit(network, instance, counts);
  if (limit !== undefined) return [limit];
  counts.total += 1;
  counts.perCard.set(network.networkCardIndex, (counts.perCard.get(network.networkCardIndex) ?? 0) + 1);
  const ours = available.find(
    (e) =>
      isOurs(e, clusterName) &&
      e.tags[ATTACH_TAGS.instance] === instance.instanceId &&
      e.tags[ATTACH_TAGS.network] === network.name &&
      e.attachment === undefined &&
      (e.status === undefined || e.status === "available") &&
      e.subnetId === target.subnetId,
  );
  if (ours !== undefined) return [{ kind: "reattach", eni: ours }];
  return [
    {
      kind: "create-and-attach",
      subnetId: target.subnetId,
      securityGroupIds: target.securityGroupIds,
      description: attachDescription(clusterName, instance.instanceId, network.name),
      tags: attachTags(clusterName, instance.instanceId, network.name),
    },
  ];
}

/** The refusal of one more ENI at the network's slot under the instance type's limits; undefined: it fits. */
function overLimit(
  network: AttachNetwork,
  instance: AttachInstance,
  counts: { total: number; perCard: Map<number, number> },
): AttachAction | undefined {
  const type = instance.type;
  if (type === undefined) return undefined;
  const name = type.instanceType;
  const card = network.networkCardIndex;
  const cards = type.networkCards;
  const refuse = (reason: AttachRefusalReason, why: string): AttachAction => ({
    kind: "refuse",
    reason,
    detail: `network ${network.name}: ${why}`,
  });
  if (cards !== undefined && cards.length > 0) {
    const own = cards.find((c) => c.index === card);
    if (own === undefined)
      return refuse(
        "network-card",
        `instance type ${name} has network cards ${cards.map((c) => c.index).join(", ")}, not ${card}; give a networkCardIndex it has (0 unless it has several)`,
      );
    if (network.deviceIndex >= own.maxNetworkInterfaces)
      return refuse(
        "device-index",
        `instance type ${name} takes ${own.maxNetworkInterfaces} ENIs on network card ${card} (device indexes 0 to ${own.maxNetworkInterfaces - 1}), not device ${network.deviceIndex}; give a lower deviceIndex`,
      );
    const onCard = counts.perCard.get(card) ?? 0;
    if (onCard + 1 > own.maxNetworkInterfaces)
      return refuse(
        "card-limit",
        `instance type ${name} takes ${own.maxNetworkInterfaces} ENIs on network card ${card} and ${onCard} are attached there (the VPC CNI's counted); lower the VPC CNI's MAX_ENI or WARM_ENI_TARGET, use another card, or a larger type`,
      );
  }
  const max = type.maxNetworkInterfaces;
  if (max !== undefined && counts.total + 1 > max)
    return refuse(
      "instance-limit",
      `instance type ${name} takes ${max} ENIs and ${counts.total} are attached (the VPC CNI's counted, and the networks before this one); lower the VPC CNI's MAX_ENI or WARM_ENI_TARGET, or use a larger type`,
    );
  return undefined;
}
