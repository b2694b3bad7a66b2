import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import {
  addressesPerEniOf,
  type InstanceNetwork,
  knownInstanceTypes,
  networkOf,
  nitroOf,
} from "../../instance-limits.js";
import type { Topology } from "../../topology.js";

/** What DescribeInstanceTypes says of one type: the facts our commands read, nothing more. */
export interface InstanceTypeView {
  readonly instanceType: string;
  /** `nitro` (takes delegated prefixes) or `xen`: the type's, the same for each of its instances. */
  readonly hypervisor: "nitro" | "xen";
  /** Private IPv4 addresses per ENI, the primary counted; the same bound for IPv6. */
  readonly addressesPerEni: number;
  /** NetworkInfo's MaximumNetworkInterfaces and NetworkCards. */
  readonly network: InstanceNetwork;
}

/**
 * The types the simulator knows: its table (addresses per ENI, Nitro or not), and the types of the world's
 * instances. Nitro is the type's, as prefix delegation sees it (topology: the table's word, or what the world
 * says of a type the table does not know; a world contradicting itself is refused). A world instance's
 * `ipv4AddressesPerEni` overrides the table for its type.
 */
function knownTypes(topology: Topology): Map<string, InstanceTypeView> {
  const types = new Map<string, InstanceTypeView>();
  for (const name of knownInstanceTypes) {
    types.set(name, {
      instanceType: name,
      hypervisor: nitroOf(name) === false ? "xen" : "nitro",
      addressesPerEni: addressesPerEniOf(name) ?? 0,
      network: networkOf(name),
    });
  }
  for (const instance of topology.instances.values()) {
    types.set(instance.instanceType, {
      instanceType: instance.instanceType,
      hypervisor: instance.nitro ? "nitro" : "xen",
      addressesPerEni: instance.addressLimit,
      network: instance.network,
    });
  }
  return types;
}

/**
 * The types named (all known ones, sorted, when none is named). An unknown name fails the whole call with
 * `InvalidInstanceType`, as EC2 answers for a type that does not exist (the code EC2 is seen to answer; its
 * message here is the simulator's).
 */
export function instanceTypesNamed(topology: Topology, names: readonly string[]): InstanceTypeView[] {
  const types = knownTypes(topology);
  if (names.length === 0)
    return [...types.values()].sort((a, b) => a.instanceType.localeCompare(b.instanceType));
  const unknown = names.filter((n) => !types.has(n));
  if (unknown.length > 0) {
    throw new Ec2ModelError(
      "InvalidInstanceType",
      `The following supplied instance types do not exist: [${unknown.join(", ")}]`,
    );
  }
  return [...new Set(names)].map((n) => types.get(n) as InstanceTypeView);
}
