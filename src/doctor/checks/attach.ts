/**
 * Attach mode's rows (`--profile node` with IPMGR_BRIDGE_ATTACH=on), pure: the configuration, each network's
 * subnet and security groups, the instance type's ENI limits, and one row per EC2 action attach mode sends,
 * probed with DryRun. The fixes name deploy/iam/iam-policy-attach.json and the statement that grants the
 * action, with its condition.
 */
import type { PermissionVerdict } from "../../eni/ec2-api.js";
import type { Ec2InstanceType, Ec2NetworkInterface } from "../../eni/types.js";
import { type CheckResult, listText, ok, problem, skipped, warn } from "../check.js";

export const ATTACH_POLICY = "deploy/iam/iam-policy-attach.json";

/** The actions attach mode sends, in the order it sends them, each with the row's subject. */
export const ATTACH_ACTIONS = [
  "CreateNetworkInterface",
  "AttachNetworkInterface",
  "ModifyNetworkInterfaceAttribute",
  "DeleteNetworkInterface",
] as const;
export type AttachAction = (typeof ATTACH_ACTIONS)[number];

/** A network's slot, and what the limit check needs of it. */
export interface NetworkSlot {
  readonly name: string;
  readonly deviceIndex: number;
  readonly networkCardIndex: number;
}

/** The policy's statements that grant each action, and the condition EC2 evaluates on the probe. */
function grantOf(action: AttachAction, cluster: string): string {
  const tag = `multus-ipmgr.io/cluster=${cluster}`;
  switch (action) {
    case "CreateNetworkInterface":
      return `statements CreateEnisTaggedForTheCluster (the new ENI, condition aws:RequestTag: the request carries ${tag}), CreateEnisInSubnetsAndSecurityGroups (the subnet and the groups) and TagEnisWhenCreated (ec2:CreateTags with ec2:CreateAction = CreateNetworkInterface)`;
    case "AttachNetworkInterface":
      return `statements AttachModifyDeleteTheClustersEnis (condition aws:ResourceTag: the ENI carries ${tag}) and AttachToInstances (the instance)`;
    case "ModifyNetworkInterfaceAttribute":
    case "DeleteNetworkInterface":
      return `statement AttachModifyDeleteTheClustersEnis (condition aws:ResourceTag: the ENI carries ${tag})`;
  }
}

/** The row of one action's DryRun verdict; `on` says what it was probed on (networks, or an ENI). */
export function attachPermissionCheck(
  action: AttachAction,
  verdict: PermissionVerdict,
  on: string,
  cluster: string,
): CheckResult {
  const subject = `ec2:${action}`;
  if (verdict.allowed) return ok("attach-permission", `allowed on ${on} (probed with DryRun).`, { subject });
  return problem(
    "attach-permission",
    `denied on ${on} (probed with DryRun): attach mode cannot give this node its Multus ENIs. EC2 said: ${verdict.refusal.message}`,
    {
      subject,
      fix: `add ${ATTACH_POLICY} to the bridge's role, with <CLUSTER_NAME> replaced by ${cluster}: its ${grantOf(action, cluster)}`,
    },
  );
}

/** EC2 answered the probe with an error that is no verdict (a state or parameter check came first). */
export function attachProbeUnanswered(action: AttachAction, on: string, message: string): CheckResult {
  return warn(
    "attach-permission",
    `not known: EC2 answered the DryRun on ${on} with an error before it checked the permission: ${message}`,
    {
      subject: `ec2:${action}`,
      fix: `aws iam simulate-principal-policy --policy-source-arn <the bridge's role ARN> --action-names ec2:${action} evaluates the role's policy without calling EC2`,
    },
  );
}

/** Attach, modify and delete need an ENI of this cluster: EC2 evaluates aws:ResourceTag on the ENI named. */
export function attachNotProbed(action: AttachAction, cluster: string): CheckResult {
  return skipped(
    "attach-permission",
    `not probed: no ENI of this cluster yet (none attached to this instance carries multus-ipmgr.io/cluster=${cluster}); the condition is on the ENI's tag, so a DryRun on another ENI or on an id that does not exist proves nothing. Run doctor again once the bridge has made one.`,
    { subject: `ec2:${action}` },
  );
}

/** One network's subnet and groups: found, or the sentence saying why not (the bridge refuses it the same way). */
export function attachTargetCheck(
  network: string,
  target: { readonly subnetId: string; readonly securityGroupIds: readonly string[] } | string,
): CheckResult {
  if (typeof target === "string") {
    return problem("attach-subnet", target, {
      subject: network,
      fix: "fix IPMGR_BRIDGE_ATTACH_NETWORKS or the tags the sentence names (docs/attach-mode.md): the bridge refuses this network the same way, with no EC2 call",
    });
  }
  return ok(
    "attach-subnet",
    `the ENI is made in ${target.subnetId} with ${listText([...target.securityGroupIds])}.`,
    { subject: network },
  );
}

/** Whether the ENI is attached to the instance, and where. */
function slotOf(eni: Ec2NetworkInterface, instanceId: string): NetworkSlot | undefined {
  const a = eni.attachment;
  if (a !== undefined) {
    if (a.status === "detached" || (a.instanceId !== undefined && a.instanceId !== instanceId))
      return undefined;
    return { name: eni.eniId, deviceIndex: a.deviceIndex, networkCardIndex: a.networkCardIndex };
  }
  if (eni.instanceId === instanceId && eni.deviceIndex !== undefined)
    return { name: eni.eniId, deviceIndex: eni.deviceIndex, networkCardIndex: 0 };
  return undefined;
}

const key = (s: NetworkSlot): string => `${s.networkCardIndex}/${s.deviceIndex}`;

/**
 * The instance type's ENI limits (DescribeInstanceTypes' NetworkInfo) against the ENIs attached now (the VPC
 * CNI's included) plus one for each network whose slot is free: a card the type lacks, a device index beyond
 * the card's ENIs, or more ENIs than the card or the instance takes is a problem, as the bridge refuses it.
 */
export function attachLimitChecks(
  networks: readonly NetworkSlot[],
  instanceEnis: readonly Ec2NetworkInterface[],
  instanceId: string,
  type: Ec2InstanceType | undefined,
  instanceType: string,
): CheckResult[] {
  const subject = instanceType;
  if (type === undefined) {
    return [
      warn(
        "attach-limit",
        `EC2 does not know the instance type ${instanceType}: its ENI limits are unknown.`,
        {
          subject,
          fix: `aws ec2 describe-instance-types --instance-types ${instanceType} --query 'InstanceTypes[].NetworkInfo'`,
        },
      ),
    ];
  }
  const attached = instanceEnis.flatMap((e) => slotOf(e, instanceId) ?? []);
  const taken = new Set(attached.map(key));
  const missing = networks.filter((n) => !taken.has(key(n)));
  const cards = type.networkCards ?? [{ index: 0, maxNetworkInterfaces: type.maxNetworkInterfaces ?? 0 }];
  const problems: string[] = [];
  for (const n of networks) {
    const card = cards.find((c) => c.index === n.networkCardIndex);
    if (card === undefined)
      problems.push(
        `network ${n.name} names network card ${n.networkCardIndex}, which ${instanceType} does not have`,
      );
    else if (card.maxNetworkInterfaces > 0 && n.deviceIndex >= card.maxNetworkInterfaces)
      problems.push(
        `network ${n.name} names device ${n.deviceIndex}, but card ${card.index} of ${instanceType} takes ${card.maxNetworkInterfaces} ENIs (devices 0 to ${card.maxNetworkInterfaces - 1})`,
      );
  }
  // One card: the instance's limit says it all.
  for (const card of cards.length > 1 ? cards : []) {
    const now = attached.filter((s) => s.networkCardIndex === card.index).length;
    const more = missing.filter((n) => n.networkCardIndex === card.index).length;
    if (more > 0 && card.maxNetworkInterfaces > 0 && now + more > card.maxNetworkInterfaces)
      problems.push(
        `card ${card.index} would need ${now + more} ENIs (${now} attached now, ${more} to make) but ${instanceType} takes ${card.maxNetworkInterfaces} there`,
      );
  }
  const max = type.maxNetworkInterfaces;
  const total = attached.length + missing.length;
  if (max !== undefined && missing.length > 0 && total > max)
    problems.push(
      `the instance would need ${total} ENIs (${attached.length} attached now, ${missing.length} to make) but ${instanceType} takes ${max}`,
    );
  if (problems.length > 0) {
    return [
      problem(
        "attach-limit",
        `${problems.join("; ")}: the bridge refuses these networks, with no EC2 call.`,
        {
          subject,
          fix: "give the networks free device indexes within the type's limits (MAX_ENI or WARM_ENI_TARGET keep the VPC CNI's ENIs off them, docs/attach-mode.md), or a larger instance type",
        },
      ),
    ];
  }
  return [
    ok(
      "attach-limit",
      `${total} ENIs (${attached.length} attached now, ${missing.length} to make) within ${instanceType}'s ${max ?? "unknown"}.`,
      { subject },
    ),
  ];
}
