import { cidrContains } from "../ip-math.js";
import type { SimState } from "../sim-state.js";
import type { Topology, TopologySubnet } from "../topology.js";
import { documentedSubnetFilters } from "./documented-filters.js";
import type { Ec2Handler } from "./ec2-context.js";
import { applyFilters, type FilterCatalogue, type FilterFields, flag } from "./filters.js";
import { subnetsNamed } from "./model/subnets.js";
import { paginate } from "./paging.js";
import { itemSet, leaf, node, tagSet } from "./xml.js";

export interface SubnetView {
  readonly subnet: TopologySubnet;
  readonly topology: Topology;
  /** Counts AWS's five reserved addresses and every held address as used. */
  readonly availableIpAddressCount: number;
}

function subnetViewOf(subnet: TopologySubnet, topology: Topology, state: SimState): SubnetView {
  const held = state.enis.flatMap((e) => e.ipv4s).filter((a) => cidrContains(subnet.cidr, a)).length;
  return { subnet, topology, availableIpAddressCount: Number(subnet.cidr.size) - 5 - held };
}

const associationIdOf = (s: TopologySubnet): string => `subnet-cidr-assoc-${s.id.slice(7)}`;
const arnOf = (v: SubnetView): string =>
  `arn:aws:ec2:${v.topology.region}:${v.topology.accountId}:subnet/${v.subnet.id}`;

const zone = (v: SubnetView): string[] => [v.subnet.availabilityZone];
const zoneId = (v: SubnetView): string[] => [v.subnet.availabilityZoneId];
const cidrBlock = (v: SubnetView): string[] => [v.subnet.cidr.text];
const defaultForAz = (v: SubnetView): string[] => flag(v.subnet.defaultForAz);
const ipv6 = <T>(v: SubnetView, value: T): T[] => (v.subnet.ipv6Cidr === undefined ? [] : [value]);

const subnetFields: FilterFields<SubnetView> = {
  "availability-zone": zone,
  availabilityZone: zone,
  "availability-zone-id": zoneId,
  availabilityZoneId: zoneId,
  "available-ip-address-count": (v) => [String(v.availableIpAddressCount)],
  "cidr-block": cidrBlock,
  cidr: cidrBlock,
  cidrBlock,
  "default-for-az": defaultForAz,
  defaultForAz,
  "enable-dns64": (v) => flag(v.subnet.enableDns64),
  "ipv6-cidr-block-association.association-id": (v) => ipv6(v, associationIdOf(v.subnet)),
  "ipv6-cidr-block-association.ipv6-cidr-block": (v) => ipv6(v, v.subnet.ipv6Cidr?.text ?? ""),
  "ipv6-cidr-block-association.state": (v) => ipv6(v, "associated"),
  // A world subnet always has an IPv4 CIDR, so none is IPv6-only.
  "ipv6-native": () => flag(false),
  // Customer-owned addresses exist only on Outposts, which worlds do not have.
  "map-customer-owned-ip-on-launch": () => flag(false),
  "map-public-ip-on-launch": (v) => flag(v.subnet.mapPublicIpOnLaunch),
  "owner-id": (v) => [v.topology.accountId],
  "private-dns-name-options-on-launch.enable-resource-name-dns-a-record": (v) =>
    flag(v.subnet.privateDnsNameOptionsOnLaunch.enableResourceNameDnsARecord),
  "private-dns-name-options-on-launch.enable-resource-name-dns-aaaa-record": (v) =>
    flag(v.subnet.privateDnsNameOptionsOnLaunch.enableResourceNameDnsAAAARecord),
  "private-dns-name-options-on-launch.hostname-type": (v) => [
    v.subnet.privateDnsNameOptionsOnLaunch.hostnameType,
  ],
  state: () => ["available"],
  "subnet-arn": (v) => [arnOf(v)],
  "subnet-id": (v) => [v.subnet.id],
  "tag-key": (v) => Object.keys(v.subnet.tags),
  "vpc-id": (v) => [v.topology.vpc.id],
};

export const subnetFilters: FilterCatalogue<SubnetView> = {
  documented: documentedSubnetFilters,
  fields: subnetFields,
  tags: (v) => v.subnet.tags,
};

function renderSubnet(v: SubnetView): string {
  const { subnet: s, topology } = v;
  const dns = s.privateDnsNameOptionsOnLaunch;
  const ipv6Associations = ipv6(
    v,
    leaf("ipv6CidrBlock", s.ipv6Cidr?.text) +
      leaf("associationId", associationIdOf(s)) +
      node("ipv6CidrBlockState", leaf("state", "associated")),
  );
  return (
    leaf("subnetId", s.id) +
    leaf("subnetArn", arnOf(v)) +
    leaf("state", "available") +
    leaf("vpcId", topology.vpc.id) +
    leaf("ownerId", topology.accountId) +
    leaf("cidrBlock", s.cidr.text) +
    leaf("availableIpAddressCount", v.availableIpAddressCount) +
    leaf("availabilityZone", s.availabilityZone) +
    leaf("availabilityZoneId", s.availabilityZoneId) +
    leaf("defaultForAz", s.defaultForAz) +
    leaf("mapPublicIpOnLaunch", s.mapPublicIpOnLaunch) +
    leaf("mapCustomerOwnedIpOnLaunch", false) +
    leaf("assignIpv6AddressOnCreation", false) +
    itemSet("ipv6CidrBlockAssociationSet", ipv6Associations) +
    tagSet(s.tags) +
    leaf("enableDns64", s.enableDns64) +
    leaf("ipv6Native", false) +
    node(
      "privateDnsNameOptionsOnLaunch",
      leaf("hostnameType", dns.hostnameType) +
        leaf("enableResourceNameDnsARecord", dns.enableResourceNameDnsARecord) +
        leaf("enableResourceNameDnsAAAARecord", dns.enableResourceNameDnsAAAARecord),
    )
  );
}

/** DescribeSubnets: ids, the filters of subnetFilters, paging. */
export const describeSubnets: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const state = ctx.readState();
  const views = subnetsNamed(topology, params.list("SubnetId")).map((s) => subnetViewOf(s, topology, state));
  const page = paginate("DescribeSubnets", applyFilters(views, params.filters(), subnetFilters), params);
  return itemSet("subnetSet", page.items.map(renderSubnet)) + page.nextTokenXml;
};
