import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { SimEni } from "../sim-state.js";
import type { TopologyInstance } from "../topology.js";
import { itemSet, leaf, node } from "../xml.js";
import type { Ec2Handler } from "./ec2-context.js";
import { applyFilters, type FilterFields } from "./filters.js";
import { paginate } from "./paging.js";
import { renderInstanceNetworkInterface } from "./render-network-interface.js";

interface InstanceView {
  readonly instance: TopologyInstance;
  /** By device index. */
  readonly enis: readonly SimEni[];
}

const instanceFields: FilterFields<InstanceView> = {
  "instance-id": (v) => [v.instance.id],
  "instance-type": (v) => [v.instance.instanceType],
  "availability-zone": (v) => [v.instance.availabilityZone],
  "instance-state-name": () => ["running"],
  "network-interface.network-interface-id": (v) => v.enis.map((e) => e.eniId),
  "network-interface.mac-address": (v) => v.enis.map((e) => e.mac),
  "network-interface.subnet-id": (v) => v.enis.map((e) => e.subnetId),
  "network-interface.addresses.private-ip-address": (v) => v.enis.flatMap((e) => e.ipv4s),
  "network-interface.ipv6-addresses.ipv6-address": (v) => v.enis.flatMap((e) => e.ipv6s),
  "private-ip-address": (v) => {
    const primary = v.enis.find((e) => e.deviceIndex === 0)?.primaryIpv4;
    return primary === undefined || primary === null ? [] : [primary];
  },
  "subnet-id": (v) => v.enis.filter((e) => e.deviceIndex === 0).map((e) => e.subnetId),
};

/** DescribeInstances: every instance is running, alone in its reservation. */
export const describeInstances: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const ids = params.list("InstanceId");
  for (const id of ids) {
    if (!/^i-[0-9a-z]+$/.test(id)) {
      throw new Ec2ApiError("InvalidInstanceID.Malformed", `Invalid id: "${id}" (expecting "i-...")`);
    }
  }
  if (ids.length > 0 && params.has("MaxResults")) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "The parameter instancesSet cannot be used with the parameter maxResults",
    );
  }
  const unknown = ids.find((id) => !topology.instances.has(id));
  if (unknown !== undefined) {
    throw new Ec2ApiError("InvalidInstanceID.NotFound", `The instance ID '${unknown}' does not exist`);
  }
  const state = ctx.readState();
  const views: InstanceView[] = [...topology.instances.values()]
    .filter((i) => ids.length === 0 || ids.includes(i.id))
    .map((instance) => ({
      instance,
      enis: state.enis
        .filter((e) => e.instanceId === instance.id)
        .sort((a, b) => a.deviceIndex - b.deviceIndex),
    }));
  const fields: FilterFields<InstanceView> = { ...instanceFields, "vpc-id": () => [topology.vpc.id] };
  const matching = applyFilters(views, params.filters(), fields);
  const page = paginate("DescribeInstances", matching, params);
  const reservations = page.items.map(({ instance, enis }) => {
    const primary = enis.find((e) => e.deviceIndex === 0);
    const body =
      leaf("instanceId", instance.id) +
      leaf("imageId", "ami-0123456789abcdef0") +
      node("instanceState", leaf("code", 16) + leaf("name", "running")) +
      leaf("privateIpAddress", primary?.primaryIpv4) +
      leaf("instanceType", instance.instanceType) +
      node("placement", leaf("availabilityZone", instance.availabilityZone) + leaf("tenancy", "default")) +
      leaf("subnetId", primary?.subnetId) +
      leaf("vpcId", topology.vpc.id) +
      leaf("architecture", "x86_64") +
      itemSet(
        "networkInterfaceSet",
        enis.map((e) => renderInstanceNetworkInterface(e, topology)),
      );
    return (
      leaf("reservationId", `r-${instance.id.slice(2)}`) +
      leaf("ownerId", topology.accountId) +
      "<groupSet/>" +
      itemSet("instancesSet", [body])
    );
  });
  return itemSet("reservationSet", reservations) + page.nextTokenXml;
};
