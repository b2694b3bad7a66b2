/**
 * Where a network's ENI is made: its subnet and security groups, from the configuration (ids) or from EC2
 * (tags). Each tag lookup is an EC2 call, and the target is at most 5 calls per ENI for the whole attach, so a
 * network's target is resolved once per process, and again only after a refusal (`forget`): a subnet or
 * group deleted or retagged shows as a refused create, which forgets it. A lookup that finds nothing usable
 * is a `TargetRefusal`, never cached: it is looked up again when the network's backoff ends.
 */

import type { AttachNetwork } from "../../eni/attach-networks.js";
import type { Ec2EniLifecycleApi } from "../../eni/ec2-eni-lifecycle-api.js";

/** The subnet and security groups a network's ENI is made in. */
export interface AttachTarget {
  readonly subnetId: string;
  readonly securityGroupIds: readonly string[];
  /** The subnet's zone, when EC2 told it (tag lookups); undefined for a subnet given by id. */
  readonly availabilityZone?: string;
}

export type TargetRefusalReason = "no-subnet-for-zone" | "subnet-tags" | "security-group-tags";

/** No usable target: `detail` is a sentence naming the network, what was looked for, what was found and the fix. */
export class TargetRefusal {
  constructor(
    readonly reason: TargetRefusalReason,
    readonly detail: string,
  ) {}
}

/** Where the node is: its zone and VPC (IMDS). */
export interface TargetPlace {
  readonly availabilityZone: string;
  readonly vpcId: string;
}

type TargetEc2 = Pick<Ec2EniLifecycleApi, "describeSubnetsByTags" | "describeSecurityGroupsByTags">;

/** Resolves one network's target; throws what EC2 throws (unavailable, permission). */
export async function resolveTarget(
  network: AttachNetwork,
  place: TargetPlace,
  ec2: TargetEc2,
): Promise<AttachTarget | TargetRefusal> {
  const subnet = await resolveSubnet(network, place, ec2);
  if (subnet instanceof TargetRefusal) return subnet;
  const groups = network.securityGroups;
  if ("ids" in groups) return { ...subnet, securityGroupIds: groups.ids };
  const found = await ec2.describeSecurityGroupsByTags(place.vpcId, groups.tags);
  if (found.length === 0) {
    return new TargetRefusal(
      "security-group-tags",
      `network ${network.name}: no security group of VPC ${place.vpcId} carries the tags ${tagsText(groups.tags)}; tag at least one group, or give securityGroups {"ids": [...]}`,
    );
  }
  return { ...subnet, securityGroupIds: found.map((g) => g.groupId).sort() };
}

async function resolveSubnet(
  network: AttachNetwork,
  place: TargetPlace,
  ec2: TargetEc2,
): Promise<{ subnetId: string; availabilityZone?: string } | TargetRefusal> {
  const given = network.subnet;
  const zone = place.availabilityZone;
  if ("byZone" in given) {
    const subnetId = given.byZone[zone];
    if (subnetId !== undefined) return { subnetId };
    const zones = Object.keys(given.byZone).sort().join(", ");
    return new TargetRefusal(
      "no-subnet-for-zone",
      `network ${network.name}: subnet.byZone names no subnet for the node's zone ${zone} (it names ${zones}); add "${zone}": "subnet-..." for a subnet of VPC ${place.vpcId} in ${zone}`,
    );
  }
  const inVpc = await ec2.describeSubnetsByTags(place.vpcId, given.tags);
  const inZone = inVpc.filter((s) => s.availabilityZone === zone);
  const [only, ...more] = inZone;
  if (only !== undefined && more.length === 0)
    return { subnetId: only.subnetId, availabilityZone: only.availabilityZone };
  const elsewhere = inVpc
    .filter((s) => s.availabilityZone !== zone)
    .map((s) => `${s.subnetId} (${s.availabilityZone})`)
    .sort();
  const found =
    only === undefined
      ? `none in ${zone}${elsewhere.length > 0 ? `, only ${elsewhere.join(", ")}` : ""}`
      : `${inZone.length} in ${zone}: ${inZone
          .map((s) => s.subnetId)
          .sort()
          .join(", ")}`;
  return new TargetRefusal(
    "subnet-tags",
    `network ${network.name}: the subnets of VPC ${place.vpcId} tagged ${tagsText(given.tags)} are ${found}; exactly one in the node's zone must carry the tags (tag one, or give subnet {"byZone": {...}})`,
  );
}

function tagsText(tags: Readonly<Record<string, string>>): string {
  return Object.entries(tags)
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(", ");
}

/** Each network's target, resolved once per process and again after `forget` (a refusal). */
export class AttachTargets {
  readonly #resolved = new Map<string, AttachTarget>();

  constructor(private readonly ec2: TargetEc2) {}

  /** The network's target: the one resolved before, or a lookup now (cached when usable). */
  async target(network: AttachNetwork, place: TargetPlace): Promise<AttachTarget | TargetRefusal> {
    const known = this.#resolved.get(network.name);
    if (known !== undefined) return known;
    const target = await resolveTarget(network, place, this.ec2);
    if (!(target instanceof TargetRefusal)) this.#resolved.set(network.name, target);
    return target;
  }

  /** EC2 refused a create in the network's target: look it up again next time. */
  forget(networkName: string): void {
    this.#resolved.delete(networkName);
  }
}
