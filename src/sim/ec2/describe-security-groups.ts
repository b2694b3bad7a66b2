import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Topology, TopologySecurityGroup } from "../topology.js";
import type { IngressRule } from "../world.js";
import { documentedSecurityGroupFilters } from "./documented-filters.js";
import type { Ec2Handler } from "./ec2-context.js";
import { applyFilters, type FilterCatalogue, type FilterFields } from "./filters.js";
import { paginate } from "./paging.js";
import { itemSet, leaf, tagSet } from "./xml.js";

/** One group as DescribeSecurityGroups sees it, with the world it belongs to. */
interface GroupView {
  readonly group: TopologySecurityGroup;
  readonly topology: Topology;
}

/** Every group's outbound rule, as AWS creates it with the group: all traffic to anywhere (IPv4). */
const EGRESS_ALL: IngressRule = { protocol: "-1", cidrs: ["0.0.0.0/0"], ipv6Cidrs: [], groups: [] };

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
const egress = (): readonly IngressRule[] => [EGRESS_ALL];
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
    // World groups carry no tags.
    "tag-key": () => [],
    "vpc-id": (v) => [v.topology.vpc.id],
    ...permissionFields("", ingress),
    ...permissionFields("egress.", egress),
  },
  tags: () => ({}),
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
    itemSet("ipPermissionsEgress", [renderPermission(EGRESS_ALL, v)]) +
    leaf("vpcId", topology.vpc.id) +
    leaf("securityGroupArn", arnOf(v)) +
    tagSet({})
  );
}

/**
 * DescribeSecurityGroups: `GroupId.N`, `GroupName.N` (the groups of the world's one VPC), the filters of
 * securityGroupFilters, paging. An id or name that does not exist fails the whole call
 * (`InvalidGroup.NotFound`), as in EC2.
 */
export const describeSecurityGroups: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const groups = [...topology.securityGroups.values()];
  const ids = params.list("GroupId");
  const names = params.list("GroupName");
  const unknownId = ids.find((id) => !topology.securityGroups.has(id));
  if (unknownId !== undefined) {
    throw new Ec2ApiError("InvalidGroup.NotFound", `The security group '${unknownId}' does not exist`);
  }
  const unknownName = names.find((name) => !groups.some((g) => g.name === name));
  if (unknownName !== undefined) {
    throw new Ec2ApiError(
      "InvalidGroup.NotFound",
      `The security group '${unknownName}' does not exist in default VPC '${topology.vpc.id}'`,
    );
  }
  const views = groups
    .filter((g) => (ids.length === 0 || ids.includes(g.id)) && (names.length === 0 || names.includes(g.name)))
    .map((group) => ({ group, topology }));
  const page = paginate(
    "DescribeSecurityGroups",
    applyFilters(views, params.filters(), securityGroupFilters),
    params,
  );
  return itemSet("securityGroupInfo", page.items.map(renderGroup)) + page.nextTokenXml;
};
