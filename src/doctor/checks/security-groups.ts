/**
 * Whether the Multus ENIs' security groups let pod traffic in. Pods on two nodes talk through their nodes'
 * Multus ENIs, and EC2 drops what no inbound rule of the receiving ENI's groups admits: the VPC CNI's own
 * pods are fine (the node's groups admit them), the Multus pods are not unless a rule admits the Multus
 * subnet or the group itself (every address of an ENI in the group, its secondary ones included). Pure.
 */
import type { Ec2NetworkInterface, Ec2SecurityGroup, SecurityGroupRule } from "../../eni/types.js";
import { type CheckResult, listText, ok, problem, skipped, warn } from "../check.js";
import { cidrRelation } from "../cidr-coverage.js";
import { eniLabel, type MultusEni } from "../multus-enis.js";

/** The AWS CLI line that admits all traffic from the group itself (what docs/install-eks.md, "Security groups", says). */
export function selfIngressCommand(groupId: string): string {
  return `aws ec2 authorize-security-group-ingress --group-id ${groupId} --ip-permissions 'IpProtocol=-1,UserIdGroupPairs=[{GroupId=${groupId},Description=multus-ipmgr pods}]'`;
}

/** "all traffic", "tcp 443", "udp 1000-2000", "icmp" */
function trafficOf(rule: SecurityGroupRule): string {
  if (rule.protocol === "-1") return "all traffic";
  const ported = rule.protocol === "tcp" || rule.protocol === "udp";
  if (!ported || rule.fromPort === undefined) return rule.protocol;
  return rule.fromPort === rule.toPort || rule.toPort === undefined
    ? `${rule.protocol} ${rule.fromPort}`
    : `${rule.protocol} ${rule.fromPort}-${rule.toPort}`;
}

/** What a rule of `group` admits from the Multus side: a source named, or undefined. */
function admittedSource(
  rule: SecurityGroupRule,
  memberOf: ReadonlySet<string>,
  subnetCidrs: readonly string[],
): string | undefined {
  const group = rule.groupIds.find((id) => memberOf.has(id));
  if (group !== undefined) return `the group ${group}`;
  for (const subnet of subnetCidrs) {
    const cidrs = [...rule.ipv4Cidrs, ...rule.ipv6Cidrs];
    const covering = cidrs.find((c) => {
      const relation = cidrRelation(subnet, c);
      return relation === "inside" || relation === "equal";
    });
    if (covering !== undefined) return `${covering} (the Multus subnet ${subnet})`;
  }
  return undefined;
}

export function securityGroupChecks(
  multus: readonly MultusEni[],
  described: readonly Ec2NetworkInterface[],
  groups: readonly Ec2SecurityGroup[],
): CheckResult[] {
  const byEni = new Map(described.map((e) => [e.eniId, e]));
  const byGroup = new Map(groups.map((g) => [g.groupId, g]));
  return multus.map((m) => {
    const subject = m.eni.eniId;
    const groupIds = byEni.get(m.eni.eniId)?.securityGroupIds ?? [];
    if (groupIds.length === 0) {
      return skipped("security-group", `${eniLabel(m)}: EC2 named no security group of it (see eni-tag).`, {
        subject,
      });
    }
    const memberOf = new Set(groupIds);
    const subnets = [...m.eni.subnetIpv4Cidrs, ...m.eni.subnetIpv6Cidrs];
    const admitting: { group: string; rule: SecurityGroupRule; source: string }[] = [];
    for (const id of groupIds) {
      for (const rule of byGroup.get(id)?.ingress ?? []) {
        const source = admittedSource(rule, memberOf, subnets);
        if (source !== undefined) admitting.push({ group: id, rule, source });
      }
    }
    const first = groupIds[0] ?? "";
    const all = admitting.find((a) => a.rule.protocol === "-1");
    if (all !== undefined) {
      return ok(
        "security-group",
        `${eniLabel(m)}: ${all.group} admits all traffic from ${all.source}, so pods on other nodes reach this node's pods.`,
        { subject },
      );
    }
    if (admitting.length > 0) {
      return warn(
        "security-group",
        `${eniLabel(m)}: its groups (${listText(groupIds)}) admit only ${listText(admitting.map((a) => `${trafficOf(a.rule)} from ${a.source}`))}: other pod traffic (a ping is ICMP) is dropped.`,
        { subject, fix: `if the pods need more, ${selfIngressCommand(first)}` },
      );
    }
    return problem(
      "security-group",
      `${eniLabel(m)}: no inbound rule of ${listText(groupIds)} admits traffic from the Multus subnet (${listText(subnets)}) or from the group itself: EC2 drops what pods on other nodes send to this node's pods.`,
      {
        subject,
        fix: `${selfIngressCommand(first)} (every Multus ENI in ${first}), or admit the Multus subnets with --cidr`,
      },
    );
  });
}
