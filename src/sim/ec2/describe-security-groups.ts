import type { Topology, TopologySecurityGroup } from "../topology.js";
import type { IngressRule } from "../world.js";
import { documentedSecurityGroupFilters } from "./documented-filters.js";
import type { Ec2Handler } from "./ec2-context.js";
import { applyFilters, type FilterCatalogue, type FilterFields } from "./filters.js";
import { egressRules, securityGroupsNamed } from "./model/security-groups.js";
import { paginate } from "./paging.js";
import { itemSet, leaf, tagSet } from "./xml.js";

/** One group as DescribeSecurityGroups sees it, with the world it belongs to. */
interface GroupView {
  readonly group: TopologySecurityGroup;
  readonly topology: Topology;
}

const arnOf = (v: GroupView): string =>
  `arn:aws:ec2:${v.topology.region}:${v.topology.accountId}:security-group/${v.group.id}`;

const ports = (rule: IngressRule, key: "fromPort" | "toPort"): string[] =>
  rule[key] === undefined ? [] : [String(rule[key])];

/** The values of one part of every rule in one direction. */
const each =
  (
    rules: (v: GroupView) => readonly IngressRule[],
    part: (rule: IngressRule, v: GroupView) => readonly string[],
  ) =>
  (v: GroupView): string[] =>
    rules(v).flatMap((rule) => part(rule, v));

const ingress = (v: GroupView): readonly IngressRule[] => v.group.ingress;
const egress = (v: GroupView): readonly IngressRule[] => egressRules(v.group);
const groupNames = (rule: IngressRule, v: GroupView): string[] =>
  rule.groups.map((id) => v.topology.securityGroups.get(id)?.name ?? "");
const owners = (rule: IngressRule, v: GroupView): string[] =>
  rule.groups.length > 0 ? [v.topology.accountId] : [];

function permissionFields(
  prefix: string,
  rules: (v: GroupView) => readonly IngressRule[],
): FilterFields<GroupView> {
  return {
    [`${prefix}ip-permission.cidr`]: each(rules, (r) => r.cidrs),
    [`${prefix}ip-permission.from-port`]: each(rules, (r) => ports(r, "fromPort")),
    [`${prefix}ip-permission.group-id`]: each(rules, (r) => r.groups),
    [`${prefix}ip-permission.group-name`]: each(rules, groupNames),
    [`${prefix}ip-permission.ipv6-cidr`]: each(rules, (r) => r.ipv6Cidrs),
    // Worlds have no managed prefix lists.
    [`${prefix}ip-permission.prefix-list-id`]: () => [],
    [`${prefix}ip-permission.protocol`]: each(rules, (r) => [r.protocol]),
    [`${prefix}ip-permission.to-port`]: each(rules, (r) => ports(r, "toPort")),
    [`${prefix}ip-permission.user-id`]: each(rules, owners),
  };
}

export const securityGroupFilters: FilterCatalogue<GroupView> = {
  documented: documentedSecurityGroupFilters,
  fields: {
    description: (v) => [v.group.description],
    "group-id": (v) => [v.group.id],
    "group-name": (v) => [v.group.name],
    "owner-id": (v) => [v.topology.accountId],
    "tag-key": (v) => Object.keys(v.group.tags),
    "vpc-id": (v) => [v.topology.vpc.id],
    ...permissionFields("", ingress),
    ...permissionFields("egress.", egress),
  },
  tags: (v) => v.group.tags,
};

/** One `item` of ipPermissions or ipPermissionsEgress, members in EC2's order. */
function renderPermission(rule: IngressRule, v: GroupView): string {
  const described = (description: string | undefined) => leaf("description", description);
  const withPorts = rule.protocol !== "-1";
  return (
    leaf("ipProtocol", rule.protocol) +
    (withPorts ? leaf("fromPort", rule.fromPort ?? -1) : "") +
    (withPorts ? leaf("toPort", rule.toPort ?? -1) : "") +
    itemSet(
      "groups",
      rule.groups.map(
        (id) => described(rule.description) + leaf("userId", v.topology.accountId) + leaf("groupId", id),
      ),
    ) +
    itemSet(
      "ipRanges",
      rule.cidrs.map((cidr) => leaf("cidrIp", cidr) + described(rule.description)),
    ) +
    itemSet(
      "ipv6Ranges",
      rule.ipv6Cidrs.map((cidr) => leaf("cidrIpv6", cidr) + described(rule.description)),
    ) +
    itemSet("prefixListIds", [])
  );
}

function renderGroup(v: GroupView): string {
  const { group, topology } = v;
  return (
    leaf("ownerId", topology.accountId) +
    leaf("groupId", group.id) +
    leaf("groupName", group.name) +
    leaf("groupDescription", group.description) +
    itemSet(
      "ipPermissions",
      group.ingress.map((rule) => renderPermission(rule, v)),
    ) +
    itemSet(
      "ipPermissionsEgress",
      egressRules(group).map((rule) => renderPermission(rule, v)),
    ) +
    leaf("vpcId", topology.vpc.id) +
    leaf("securityGroupArn", arnOf(v)) +
    tagSet(group.tags)
  );
}

/**
 * DescribeSecurityGroups: `GroupId.N`, `GroupName.N` (which groups: securityGroupsNamed), the filters of
 * securityGroupFilters, paging.
 */
export const describeSecurityGroups: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const views = securityGroupsNamed(topology, params.list("GroupId"), params.list("GroupName")).map(
    (group) => ({ group, topology }),
  );
  const page = paginate(
    "DescribeSecurityGroups",
    applyFilters(views, params.filters(), securityGroupFilters),
    params,
  );
  return itemSet("securityGroupInfo", page.items.map(renderGroup)) + page.nextTokenXml;
};
