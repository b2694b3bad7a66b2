/**
 * `--profile node` with IPMGR_BRIDGE_ATTACH=on: what attach mode needs to give this node its Multus ENIs,
 * checked without changing anything. Each network's subnet and security groups are found by the rules of the
 * bridge's attach/attach-targets.ts, and the limits counted as attach/attach-plan.ts counts them; doctor
 * cannot import those (a command never imports another: test/layout.test.ts), so the few lines are here.
 * Then each action attach mode sends is probed with DryRun, with the request the bridge would send, so that
 * EC2 evaluates the attach policy's conditions. Attach, modify and delete are probed only on an ENI of this
 * cluster attached to this instance: EC2 evaluates aws:ResourceTag on the ENI named, and what it answers to a
 * DryRun on an id that does not exist differs by action (NotFound before the permission check, or
 * DryRunOperation without looking: docs/doctor.md), so such a probe would prove nothing.
 */
import {
  ATTACH_TAGS,
  type AttachNetwork,
  AttachNetworksProblem,
  parseAttachNetworks,
} from "../eni/attach-networks.js";
import type { Ec2Api, PermissionProbe } from "../eni/ec2-api.js";
import { Ec2Error } from "../eni/errors/ec2-error.js";
import type { Ec2EniAttachment, Ec2NetworkInterface } from "../eni/types.js";
import { type CheckResult, problem, skipped } from "./check.js";
import {
  ATTACH_ACTIONS,
  type AttachAction,
  attachLimitChecks,
  attachNotProbed,
  attachPermissionCheck,
  attachProbeUnanswered,
  attachTargetCheck,
} from "./checks/attach.js";
import type { InstanceIdentity } from "./identity.js";
import { attempt } from "./read-permissions.js";

/** The bridge's attach settings, as its container has them. */
export interface AttachDoctorOptions {
  /** IPMGR_BRIDGE_ATTACH. */
  readonly attach: "off" | "on";
  /** IPMGR_BRIDGE_ATTACH_NETWORKS, the JSON text. */
  readonly networks: string;
  /** IPMGR_CLUSTER_NAME. */
  readonly clusterName: string;
}

export type AttachEc2 = Pick<
  Ec2Api,
  | "probePermission"
  | "describeInstanceEnis"
  | "describeInstanceType"
  | "describeSubnets"
  | "describeSubnetsByTags"
  | "describeSecurityGroupsByTags"
>;

type Add = (...r: CheckResult[]) => void;
type Target = { readonly subnetId: string; readonly securityGroupIds: readonly string[] };

/** The attach rows; none when attach mode is off. `noEc2` says why EC2 cannot be asked, if so. */
export async function attachResults(
  ec2: AttachEc2,
  options: AttachDoctorOptions | undefined,
  identity: InstanceIdentity | undefined,
  noEc2: string | undefined,
  add: Add,
): Promise<void> {
  if (options === undefined || options.attach === "off") return;
  const networks = configRows(options, add);
  if (networks === undefined) return;
  if (noEc2 !== undefined || identity === undefined) {
    add(skipped("attach", noEc2 ?? "not checked: the instance is unknown (see instance)."));
    return;
  }
  const enis = await attempt("attach", add, () => ec2.describeInstanceEnis(identity.instanceId));
  if (enis === undefined) return;
  const primary = enis.find((e) => e.attachment?.deviceIndex === 0 && e.attachment.networkCardIndex === 0);
  const vpcId = (primary ?? enis[0])?.vpcId;
  const targets = new Map<string, Target>();
  for (const network of networks) {
    const target = await attempt("attach-subnet", add, () =>
      resolveTarget(ec2, network, identity.availabilityZone, vpcId),
    );
    if (target === undefined) continue;
    add(attachTargetCheck(network.name, target));
    if (typeof target !== "string") targets.set(network.name, target);
  }
  // Wrapped: undefined is a read that failed (its row added), `type` undefined a type EC2 does not know.
  const read = await attempt("attach-limit", add, async () => ({
    type: await ec2.describeInstanceType(identity.instanceType),
  }));
  if (read !== undefined)
    add(...attachLimitChecks(networks, enis, identity.instanceId, read.type, identity.instanceType));
  await permissionRows(ec2, options.clusterName, identity, networks, targets, enis, add);
}

/** The settings attach mode needs; a problem row for each missing or unreadable one. */
function configRows(options: AttachDoctorOptions, add: Add): readonly AttachNetwork[] | undefined {
  const parsed =
    options.networks.trim() === ""
      ? new AttachNetworksProblem("is empty; list this node's Multus networks (docs/attach-mode.md)")
      : parseAttachNetworks(options.networks);
  if (parsed instanceof AttachNetworksProblem) {
    add(
      problem("attach-config", `IPMGR_BRIDGE_ATTACH_NETWORKS ${parsed.problem}: the bridge exits 2.`, {
        fix: "fix IPMGR_BRIDGE_ATTACH_NETWORKS (bridge.attach.networks in the chart's values)",
      }),
    );
  }
  if (options.clusterName === "") {
    add(
      problem(
        "attach-config",
        "IPMGR_CLUSTER_NAME is not set: attach mode tags every ENI it makes with it, and the bridge exits 2 without it.",
        {
          fix: "set IPMGR_CLUSTER_NAME (bridge.attach.clusterName in the chart's values) to the cluster's name",
        },
      ),
    );
  }
  return parsed instanceof AttachNetworksProblem || options.clusterName === "" ? undefined : parsed;
}

/** The network's subnet (by zone, or the one tagged subnet of the node's VPC in its zone) and groups. */
async function resolveTarget(
  ec2: AttachEc2,
  network: AttachNetwork,
  zone: string,
  vpcId: string | undefined,
): Promise<Target | string> {
  const given = network.subnet;
  let subnetId: string;
  if ("byZone" in given) {
    const id = given.byZone[zone];
    if (id === undefined)
      return `network ${network.name}: subnet.byZone names no subnet for the node's zone ${zone} (it names ${Object.keys(given.byZone).sort().join(", ")}).`;
    const [subnet] = await ec2.describeSubnets([id]);
    if (subnet === undefined) return `network ${network.name}: subnet ${id} does not exist.`;
    if (subnet.availabilityZone !== zone)
      return `network ${network.name}: subnet ${id} is in ${subnet.availabilityZone}, not in the node's zone ${zone}.`;
    subnetId = id;
  } else {
    if (vpcId === undefined)
      return `network ${network.name}: the node's VPC is unknown (EC2 lists no ENI of it).`;
    const inZone = (await ec2.describeSubnetsByTags(vpcId, given.tags)).filter(
      (s) => s.availabilityZone === zone,
    );
    const [only, ...more] = inZone;
    if (only === undefined || more.length > 0)
      return `network ${network.name}: ${inZone.length} subnets of VPC ${vpcId} in ${zone} carry the tags ${tagsText(given.tags)} (${
        inZone
          .map((s) => s.subnetId)
          .sort()
          .join(", ") || "none"
      }); exactly one must.`;
    subnetId = only.subnetId;
  }
  const groups = network.securityGroups;
  if ("ids" in groups) return { subnetId, securityGroupIds: groups.ids };
  if (vpcId === undefined)
    return `network ${network.name}: the node's VPC is unknown (EC2 lists no ENI of it).`;
  const found = await ec2.describeSecurityGroupsByTags(vpcId, groups.tags);
  if (found.length === 0)
    return `network ${network.name}: no security group of VPC ${vpcId} carries the tags ${tagsText(groups.tags)}.`;
  return { subnetId, securityGroupIds: found.map((g) => g.groupId).sort() };
}

function tagsText(tags: Readonly<Record<string, string>>): string {
  return Object.entries(tags)
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(", ");
}

/** One row per action: the create on each network's target, the rest on an ENI of this cluster. */
async function permissionRows(
  ec2: AttachEc2,
  cluster: string,
  identity: InstanceIdentity,
  networks: readonly AttachNetwork[],
  targets: ReadonlyMap<string, Target>,
  enis: readonly Ec2NetworkInterface[],
  add: Add,
): Promise<void> {
  const { instanceId } = identity;
  const creates = networks.flatMap((n) => {
    const target = targets.get(n.name);
    if (target === undefined) return [];
    // The tags and description attach mode's create carries (attach/attach-plan.ts).
    const tags = {
      [ATTACH_TAGS.noManage]: "true",
      [ATTACH_TAGS.cluster]: cluster,
      [ATTACH_TAGS.instance]: instanceId,
      [ATTACH_TAGS.network]: n.name,
    };
    const description = `multus-ipmgr ${cluster} ${instanceId} ${n.name}`;
    const probe: PermissionProbe = {
      action: "CreateNetworkInterface",
      request: { ...target, description, tags },
    };
    return [{ on: `network ${n.name} (${target.subnetId})`, probe }];
  });
  if (creates.length === 0)
    add(
      skipped(
        "attach-permission",
        "not probed: no network's subnet and security groups are known (see attach-subnet).",
        {
          subject: "ec2:CreateNetworkInterface",
        },
      ),
    );
  else await probeRow(ec2, "CreateNetworkInterface", creates, cluster, add);

  const ours = enis
    .filter((e) => e.tags[ATTACH_TAGS.cluster] === cluster && e.attachment !== undefined)
    .sort((a, b) => a.eniId.localeCompare(b.eniId))[0];
  for (const action of ENI_ACTIONS) {
    if (ours?.attachment === undefined) add(attachNotProbed(action, cluster));
    else {
      const probe = eniProbe(action, ours, ours.attachment, instanceId);
      await probeRow(ec2, action, [{ on: ours.eniId, probe }], cluster, add);
    }
  }
}

/** The actions probed on an ENI of this cluster, in the order attach mode sends them. */
const ENI_ACTIONS = ATTACH_ACTIONS.filter(
  (a): a is Exclude<AttachAction, "CreateNetworkInterface"> => a !== "CreateNetworkInterface",
);

/** The request attach mode would send on `eni`: attach at its own slot, SourceDestCheck to its own value. */
function eniProbe(
  action: Exclude<AttachAction, "CreateNetworkInterface">,
  eni: Ec2NetworkInterface,
  attachment: Ec2EniAttachment,
  instanceId: string,
): PermissionProbe {
  const { eniId } = eni;
  switch (action) {
    case "AttachNetworkInterface":
      return {
        action,
        eniId,
        instanceId,
        deviceIndex: attachment.deviceIndex,
        networkCardIndex: attachment.networkCardIndex,
      };
    case "ModifyNetworkInterfaceAttribute":
      return { action, eniId, sourceDestCheck: eni.sourceDestCheck ?? false };
    case "DeleteNetworkInterface":
      return { action, eniId };
  }
}

/** Probes each request in turn; the row is the first denial, or allowed on all. */
async function probeRow(
  ec2: AttachEc2,
  action: AttachAction,
  requests: readonly { readonly on: string; readonly probe: PermissionProbe }[],
  cluster: string,
  add: Add,
): Promise<void> {
  for (const { on, probe } of requests) {
    const verdict = await attempt("ec2", add, async () => {
      try {
        return await ec2.probePermission(probe);
      } catch (error) {
        // A refusal that is no verdict (a parameter or state check EC2 made first) is this row's, not ec2's.
        if (error instanceof Ec2Error && error.kind === "refused") return error;
        throw error;
      }
    });
    if (verdict === undefined) return;
    if (verdict instanceof Ec2Error) {
      add(attachProbeUnanswered(action, on, verdict.message));
      return;
    }
    if (!verdict.allowed) {
      add(attachPermissionCheck(action, verdict, on, cluster));
      return;
    }
  }
  add(attachPermissionCheck(action, { allowed: true }, requests.map((r) => r.on).join(", "), cluster));
}
