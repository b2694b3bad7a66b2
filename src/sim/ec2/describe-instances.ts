import { ipName, resourceName } from "../aws-names.js";
import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Topology, TopologyInstance } from "../topology.js";
import { documentedInstanceFilters } from "./documented-filters.js";
import type { Ec2Handler } from "./ec2-context.js";
import { type EniView, eniViewOf, networkInterfaceFields, privateDnsNameOf } from "./eni-view.js";
import { applyFilters, type FilterCatalogue, type FilterFields, flag } from "./filters.js";
import { checkInstanceId, enisOfInstance, instancesNamed } from "./model/instances.js";
import { paginate } from "./paging.js";
import { groupSet, renderInstanceNetworkInterface } from "./render-network-interface.js";
import { itemSet, leaf, node, tagSet } from "./xml.js";

export interface InstanceView {
  readonly instance: TopologyInstance;
  /** By device index. */
  readonly enis: readonly EniView[];
  readonly topology: Topology;
}

const primaryOf = (v: InstanceView): EniView | undefined => v.enis.find((e) => e.eni.deviceIndex === 0);

/** The instance's hostname: from the primary address (ip-name) or the instance id (resource-name). */
function privateDnsNameOfInstance(v: InstanceView): string | undefined {
  if (v.instance.privateDnsNameOptions.hostnameType === "resource-name") {
    return resourceName(v.instance.id, v.topology.region);
  }
  const primary = primaryOf(v);
  return primary === undefined ? undefined : privateDnsNameOf(primary);
}

const reservationIdOf = (instance: TopologyInstance): string => `r-${instance.id.slice(2)}`;

/** `network-interface.X` filters that read the ENI as DescribeNetworkInterfaces' filter X does. */
const sameAsNetworkInterfaces = [
  "addresses.primary",
  "addresses.private-ip-address",
  "attachment.attach-time",
  "attachment.attachment-id",
  "attachment.delete-on-termination",
  "attachment.device-index",
  "attachment.instance-id",
  "attachment.instance-owner-id",
  "attachment.status",
  "availability-zone",
  "description",
  "group-id",
  "ipv6-addresses.ipv6-address",
  "mac-address",
  "network-interface-id",
  "owner-id",
  "private-dns-name",
  "requester-id",
  "requester-managed",
  "source-dest-check",
  "status",
  "subnet-id",
  "tag-key",
  "vpc-id",
] as const;

/** The ENI filters only DescribeInstances has, or that mean something else there. */
const instanceEniFields: FilterFields<EniView> = {
  ...Object.fromEntries(
    sameAsNetworkInterfaces.map((name) => {
      const read = networkInterfaceFields[name];
      if (read === undefined) throw new Error(`internal: no network interface filter ${name}`);
      return [name, read];
    }),
  ),
  "addresses.private-dns-name": (v) => v.eni.ipv4s.map((a) => ipName(a, v.topology.region)),
  "attachment.network-card-index": () => ["0"],
  "group-name": (v) => v.attrs.securityGroups.map((g) => g.name),
  "ipv4-prefixes.ipv4-prefix": (v) => v.eni.ipv4Prefixes,
  "ipv6-address": (v) => v.eni.ipv6s,
  "ipv6-prefixes.ipv6-prefix": (v) => v.eni.ipv6Prefixes,
  // Primary IPv6 addresses are not modelled: isPrimaryIpv6 is false on every address.
  "ipv6-addresses.is-primary-ipv6": (v) => v.eni.ipv6s.map(() => "false"),
  "ipv6-native": (v) => flag(v.eni.primaryIpv4 === null),
  // Documented as "the private IPv4 address": the ENI's privateIpAddress, its primary.
  "private-ip-address": (v) => (v.eni.primaryIpv4 === null ? [] : [v.eni.primaryIpv4]),
  "tag-value": (v) => Object.values(v.eni.tags),
};

const onPrimary =
  (read: (v: EniView) => readonly string[]) =>
  (v: InstanceView): readonly string[] => {
    const primary = primaryOf(v);
    return primary === undefined ? [] : read(primary);
  };

const instanceFields: FilterFields<InstanceView> = {
  architecture: (v) => [v.instance.architecture],
  "availability-zone": (v) => [v.instance.availabilityZone],
  "availability-zone-id": (v) => [v.instance.availabilityZoneId],
  "image-id": (v) => [v.instance.imageId],
  "instance-id": (v) => [v.instance.id],
  // Every instance of a world is running.
  "instance-state-code": () => ["16"],
  "instance-state-name": () => ["running"],
  "instance-type": (v) => [v.instance.instanceType],
  // An instance's groups are those of its primary ENI.
  "instance.group-id": onPrimary((e) => e.attrs.securityGroups.map((g) => g.id)),
  "instance.group-name": onPrimary((e) => e.attrs.securityGroups.map((g) => g.name)),
  // "The IPv6 address of the instance": any IPv6 address on any of its ENIs (EC2's exact rule is unconfirmed).
  "ipv6-address": (v) => v.enis.flatMap((e) => e.eni.ipv6s),
  "launch-time": (v) => [v.instance.launchTime],
  "metadata-options.http-endpoint": () => ["enabled"],
  "metadata-options.http-tokens": (v) => [v.topology.httpTokens],
  "metadata-options.state": () => ["applied"],
  "owner-id": (v) => [v.topology.accountId],
  "private-dns-name": (v) => {
    const name = privateDnsNameOfInstance(v);
    return name === undefined ? [] : [name];
  },
  "private-dns-name-options.enable-resource-name-dns-a-record": (v) =>
    flag(v.instance.privateDnsNameOptions.enableResourceNameDnsARecord),
  "private-dns-name-options.enable-resource-name-dns-aaaa-record": (v) =>
    flag(v.instance.privateDnsNameOptions.enableResourceNameDnsAAAARecord),
  "private-dns-name-options.hostname-type": (v) => [v.instance.privateDnsNameOptions.hostnameType],
  // Documented: "only ... the primary IP address of the network interface attached to the instance".
  "private-ip-address": onPrimary((e) => (e.eni.primaryIpv4 === null ? [] : [e.eni.primaryIpv4])),
  "reservation-id": (v) => [reservationIdOf(v.instance)],
  "source-dest-check": onPrimary((e) => flag(e.attrs.sourceDestCheck)),
  "subnet-id": onPrimary((e) => [e.eni.subnetId]),
  "tag-key": (v) => Object.keys(v.instance.tags),
  tenancy: () => ["default"],
  "vpc-id": (v) => [v.topology.vpc.id],
  ...Object.fromEntries(
    Object.entries(instanceEniFields).map(([name, read]) => [
      `network-interface.${name}`,
      (v: InstanceView) => v.enis.flatMap(read),
    ]),
  ),
};

export const instanceFilters: FilterCatalogue<InstanceView> = {
  documented: documentedInstanceFilters,
  fields: instanceFields,
  tags: (v) => v.instance.tags,
};

function renderInstance(v: InstanceView): string {
  const { instance, enis, topology } = v;
  const primary = primaryOf(v);
  const dns = instance.privateDnsNameOptions;
  return (
    leaf("instanceId", instance.id) +
    leaf("imageId", instance.imageId) +
    node("instanceState", leaf("code", 16) + leaf("name", "running")) +
    leaf("privateDnsName", privateDnsNameOfInstance(v)) +
    leaf("amiLaunchIndex", 0) +
    leaf("instanceType", instance.instanceType) +
    leaf("launchTime", instance.launchTime) +
    node(
      "placement",
      leaf("availabilityZone", instance.availabilityZone) +
        leaf("availabilityZoneId", instance.availabilityZoneId) +
        leaf("tenancy", "default"),
    ) +
    leaf("privateIpAddress", primary?.eni.primaryIpv4) +
    leaf("subnetId", primary?.eni.subnetId) +
    leaf("vpcId", topology.vpc.id) +
    leaf("sourceDestCheck", primary?.attrs.sourceDestCheck) +
    groupSet(primary?.attrs.securityGroups ?? []) +
    leaf("architecture", instance.architecture) +
    tagSet(instance.tags) +
    itemSet("networkInterfaceSet", enis.map(renderInstanceNetworkInterface)) +
    node(
      "metadataOptions",
      leaf("state", "applied") + leaf("httpTokens", topology.httpTokens) + leaf("httpEndpoint", "enabled"),
    ) +
    node(
      "privateDnsNameOptions",
      leaf("hostnameType", dns.hostnameType) +
        leaf("enableResourceNameDnsARecord", dns.enableResourceNameDnsARecord) +
        leaf("enableResourceNameDnsAAAARecord", dns.enableResourceNameDnsAAAARecord),
    )
  );
}

/** DescribeInstances: every instance is running, alone in its reservation. */
export const describeInstances: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const ids = params.list("InstanceId").map(checkInstanceId);
  if (ids.length > 0 && params.has("MaxResults")) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "The parameter instancesSet cannot be used with the parameter maxResults",
    );
  }
  const state = ctx.readState();
  const views: InstanceView[] = instancesNamed(topology, ids).map((instance) => ({
    instance,
    enis: enisOfInstance(state, instance.id).map((e) => eniViewOf(e, topology)),
    topology,
  }));
  const matching = applyFilters(views, params.filters(), instanceFilters);
  const page = paginate("DescribeInstances", matching, params);
  const reservations = page.items.map(
    (v) =>
      leaf("reservationId", reservationIdOf(v.instance)) +
      leaf("ownerId", topology.accountId) +
      "<groupSet/>" +
      itemSet("instancesSet", [renderInstance(v)]),
  );
  return itemSet("reservationSet", reservations) + page.nextTokenXml;
};
