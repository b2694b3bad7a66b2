import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import type { SimEni, SimState } from "../../sim-state.js";
import type { Topology, TopologyInstance } from "../../topology.js";

/** The instances of the world (read-only: worlds declare them; every one is running). */

export function checkInstanceId(id: string): string {
  if (!/^i-[0-9a-z]+$/.test(id)) {
    throw new Ec2ModelError("InvalidInstanceID.Malformed", `Invalid id: "${id}" (expecting "i-...")`);
  }
  return id;
}

/** The instances named by `ids` (checked), in the world's order (all when empty); an unknown id fails the call. */
export function instancesNamed(topology: Topology, ids: readonly string[]): TopologyInstance[] {
  const unknown = ids.find((id) => !topology.instances.has(id));
  if (unknown !== undefined) {
    throw new Ec2ModelError("InvalidInstanceID.NotFound", `The instance ID '${unknown}' does not exist`);
  }
  return [...topology.instances.values()].filter((i) => ids.length === 0 || ids.includes(i.id));
}

/** The ENIs attached to an instance, by device index. */
export function enisOfInstance(state: SimState, instanceId: string): SimEni[] {
  return state.enis
    .filter((e) => e.instanceId === instanceId)
    .sort((a, b) => (a.deviceIndex ?? 0) - (b.deviceIndex ?? 0));
}
