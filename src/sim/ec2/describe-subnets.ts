import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { cidrContains } from "../ip-math.js";
import type { TopologySubnet } from "../topology.js";
import { itemSet, leaf, node } from "../xml.js";
import type { Ec2Handler } from "./ec2-context.js";
import { applyFilters, type FilterFields } from "./filters.js";
import { paginate } from "./paging.js";

const subnetFields: FilterFields<TopologySubnet> = {
  "subnet-id": (s) => [s.id],
  "availability-zone": (s) => [s.availabilityZone],
  "cidr-block": (s) => [s.cidr.text],
  cidrBlock: (s) => [s.cidr.text],
  cidr: (s) => [s.cidr.text],
  "ipv6-cidr-block-association.ipv6-cidr-block": (s) => (s.ipv6Cidr === undefined ? [] : [s.ipv6Cidr.text]),
  state: () => ["available"],
};

/** DescribeSubnets; `availableIpAddressCount` counts AWS's five reserved and every held address as used. */
export const describeSubnets: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const ids = params.list("SubnetId");
  const unknown = ids.find((id) => !topology.subnets.has(id));
  if (unknown !== undefined) {
    throw new Ec2ApiError("InvalidSubnetID.NotFound", `The subnet ID '${unknown}' does not exist`);
  }
  const state = ctx.readState();
  const subnets = [...topology.subnets.values()].filter((s) => ids.length === 0 || ids.includes(s.id));
  const fields: FilterFields<TopologySubnet> = { ...subnetFields, "vpc-id": () => [topology.vpc.id] };
  const page = paginate("DescribeSubnets", applyFilters(subnets, params.filters(), fields), params);
  const items = page.items.map((s) => {
    const held = state.enis.flatMap((e) => e.ipv4s).filter((a) => cidrContains(s.cidr, a)).length;
    const ipv6 =
      s.ipv6Cidr === undefined
        ? []
        : [
            leaf("ipv6CidrBlock", s.ipv6Cidr.text) +
              leaf("associationId", `subnet-cidr-assoc-${s.id.slice(7)}`) +
              node("ipv6CidrBlockState", leaf("state", "associated")),
          ];
    return (
      leaf("subnetId", s.id) +
      leaf("subnetArn", `arn:aws:ec2:${topology.region}:${topology.accountId}:subnet/${s.id}`) +
      leaf("state", "available") +
      leaf("vpcId", topology.vpc.id) +
      leaf("ownerId", topology.accountId) +
      leaf("cidrBlock", s.cidr.text) +
      leaf("availableIpAddressCount", Number(s.cidr.size) - 5 - held) +
      leaf("availabilityZone", s.availabilityZone) +
      leaf("defaultForAz", false) +
      leaf("mapPublicIpOnLaunch", false) +
      leaf("assignIpv6AddressOnCreation", false) +
      itemSet("ipv6CidrBlockAssociationSet", ipv6) +
      "<tagSet/>"
    );
  });
  return itemSet("subnetSet", items) + page.nextTokenXml;
};
