import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import type { Topology, TopologySecurityGroup } from "../../topology.js";
import type { IngressRule } from "../../world.js";

/**
 * EC2's rules for the security groups of the world's one VPC (read-only: worlds declare them). An id or name
 * that does not exist fails the whole call (`InvalidGroup.NotFound`), as in EC2.
 */

/** Every group's outbound rule, as AWS creates it with the group: all traffic to anywhere (IPv4). */
export const EGRESS_ALL: IngressRule = { protocol: "-1", cidrs: ["0.0.0.0/0"], ipv6Cidrs: [], groups: [] };

/** The outbound rules of a group: worlds declare none, so AWS's default one. */
export function egressRules(_group: TopologySecurityGroup): readonly IngressRule[] {
  return [EGRESS_ALL];
}

/** The groups named by `ids` and `names` (every group when both are empty), in the world's order. */
export function securityGroupsNamed(
  topology: Topology,
  ids: readonly string[],
  names: readonly string[],
): TopologySecurityGroup[] {
  const groups = [...topology.securityGroups.values()];
  const unknownId = ids.find((id) => !topology.securityGroups.has(id));
  if (unknownId !== undefined) {
    throw new Ec2ModelError("InvalidGroup.NotFound", `The security group '${unknownId}' does not exist`);
  }
  const unknownName = names.find((name) => !groups.some((g) => g.name === name));
  if (unknownName !== undefined) {
    throw new Ec2ModelError(
      "InvalidGroup.NotFound",
      `The security group '${unknownName}' does not exist in default VPC '${topology.vpc.id}'`,
    );
  }
  return groups.filter(
    (g) => (ids.length === 0 || ids.includes(g.id)) && (names.length === 0 || names.includes(g.name)),
  );
}
