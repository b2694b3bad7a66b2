import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import type { Topology, TopologySubnet } from "../../topology.js";

/** The subnets of the world (read-only: worlds declare them). */

export function subnetNotFound(id: string): Ec2ModelError {
  return new Ec2ModelError("InvalidSubnetID.NotFound", `The subnet ID '${id}' does not exist`);
}

export function requireSubnet(topology: Topology, id: string): TopologySubnet {
  const subnet = topology.subnets.get(id);
  if (subnet === undefined) throw subnetNotFound(id);
  return subnet;
}

/** The subnets named by `ids`, in the world's order (all of them when empty); an unknown id fails the call. */
export function subnetsNamed(topology: Topology, ids: readonly string[]): TopologySubnet[] {
  const unknown = ids.find((id) => !topology.subnets.has(id));
  if (unknown !== undefined) throw subnetNotFound(unknown);
  return [...topology.subnets.values()].filter((s) => ids.length === 0 || ids.includes(s.id));
}
