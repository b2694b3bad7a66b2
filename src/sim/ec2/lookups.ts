import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { addressFamily, canonicalAddress } from "../ip-math.js";
import type { SimEni, SimState } from "../sim-state.js";
import type { Topology, TopologyInstance, TopologySubnet } from "../topology.js";
import type { QueryParams } from "./query-params.js";

/**
 * Real ids are `eni-` and 8 or 17 hex digits; world files use readable ids such as `eni-0multus`, so the
 * simulator only calls an id malformed when it lacks the prefix or has other characters.
 */
const eniIdPattern = /^eni-[0-9a-z]+$/;

export function checkEniId(id: string): string {
  if (!eniIdPattern.test(id)) {
    throw new Ec2ApiError("InvalidNetworkInterfaceId.Malformed", `Invalid id: "${id}" (expecting "eni-...")`);
  }
  return id;
}

export function eniNotFound(id: string): Ec2ApiError {
  return new Ec2ApiError(
    "InvalidNetworkInterfaceID.NotFound",
    `The networkInterface ID '${id}' does not exist`,
  );
}

/** The ENI named by the required `NetworkInterfaceId` parameter, in `state` (normally a draft). */
export function requireEni(params: QueryParams, state: SimState): SimEni {
  const id = checkEniId(params.require("NetworkInterfaceId"));
  const eni = state.enis.find((e) => e.eniId === id);
  if (eni === undefined) throw eniNotFound(id);
  return eni;
}

export function subnetOf(topology: Topology, subnetId: string): TopologySubnet {
  const subnet = topology.subnets.get(subnetId);
  if (subnet === undefined) throw new Error(`internal: unknown subnet ${subnetId}`);
  return subnet;
}

export function instanceOf(topology: Topology, instanceId: string): TopologyInstance {
  const instance = topology.instances.get(instanceId);
  if (instance === undefined) throw new Error(`internal: unknown instance ${instanceId}`);
  return instance;
}

/** Canonical, de-duplicated addresses of one family; a malformed one fails the whole request. */
export function canonicalAddresses(values: readonly string[], family: 4 | 6, parameter: string): string[] {
  const out: string[] = [];
  for (const value of values) {
    const canonical = addressFamily(value) === family ? canonicalAddress(value) : undefined;
    if (canonical === undefined) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `Invalid value '${value}' for ${parameter}: not a valid IPv${family} address`,
      );
    }
    if (!out.includes(canonical)) out.push(canonical);
  }
  return out;
}
