import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import type { SimEni, SimState } from "../../sim-state.js";
import type { Topology, TopologyInstance, TopologySubnet } from "../../topology.js";

/**
 * Real ids are `eni-` and 8 or 17 hex digits; world files use readable ids such as `eni-0multus`, so the
 * simulator only calls an id malformed when it lacks the prefix or has other characters.
 */
const eniIdPattern = /^eni-[0-9a-z]+$/;

export function checkEniId(id: string): string {
  if (!eniIdPattern.test(id)) {
    throw new Ec2ModelError(
      "InvalidNetworkInterfaceId.Malformed",
      `Invalid id: "${id}" (expecting "eni-...")`,
    );
  }
  return id;
}

export function eniNotFound(id: string): Ec2ModelError {
  return new Ec2ModelError(
    "InvalidNetworkInterfaceID.NotFound",
    `The networkInterface ID '${id}' does not exist`,
  );
}

/** The ENI `id` in `state` (a draft for writes): malformed and unknown ids are refused. */
export function eniById(state: SimState, id: string): SimEni {
  const eni = state.enis.find((e) => e.eniId === checkEniId(id));
  if (eni === undefined) throw eniNotFound(id);
  return eni;
}

export function subnetOf(topology: Topology, subnetId: string): TopologySubnet {
  const subnet = topology.subnets.get(subnetId);
  if (subnet === undefined) throw new Error(`internal: unknown subnet ${subnetId}`);
  return subnet;
}

/** What bounds an ENI's addresses and prefixes: its instance's type, or, while detached, the simulator's choice. */
export type AddressHost = Pick<TopologyInstance, "instanceType" | "addressLimit" | "nitro">;

/**
 * EC2 takes addresses on a detached ENI and checks its instance's limit only when it is attached; the simulator
 * bounds a detached ENI by 50 (the largest per-ENI limit EC2 documents) and takes prefixes on it (its choice).
 */
const detachedHost: AddressHost = { instanceType: "(detached)", addressLimit: 50, nitro: true };

export function addressHostOf(topology: Topology, eni: SimEni): AddressHost {
  return eni.instanceId === null ? detachedHost : instanceOf(topology, eni.instanceId);
}

export function instanceOf(topology: Topology, instanceId: string): TopologyInstance {
  const instance = topology.instances.get(instanceId);
  if (instance === undefined) throw new Error(`internal: unknown instance ${instanceId}`);
  return instance;
}

/** The ENIs named by `ids` (checked ids; every ENI when empty); an unknown id fails the whole call. */
export function enisNamed(state: SimState, ids: readonly string[]): SimEni[] {
  if (ids.length === 0) return state.enis;
  const unknown = ids.find((id) => !state.enis.some((e) => e.eniId === id));
  if (unknown !== undefined) throw eniNotFound(unknown);
  return state.enis.filter((e) => ids.includes(e.eniId));
}
