import { type Cidr, mustParseCidr } from "./ip-math.js";
import type { SimState } from "./sim-state.js";
import { addressLimitOf, type World } from "./world.js";

/** The parts of the world that never change while the simulator runs. */
export interface Topology {
  readonly region: string;
  readonly accountId: string;
  readonly vpc: { readonly id: string; readonly cidr: Cidr; readonly ipv6Cidr: Cidr | undefined };
  /** By subnet id, in world order. */
  readonly subnets: ReadonlyMap<string, TopologySubnet>;
  /** By instance id, in world order. */
  readonly instances: ReadonlyMap<string, TopologyInstance>;
  readonly httpTokens: "required" | "optional";
}

export interface TopologySubnet {
  readonly id: string;
  readonly cidr: Cidr;
  readonly ipv6Cidr: Cidr | undefined;
  readonly availabilityZone: string;
}

export interface TopologyInstance {
  readonly id: string;
  readonly instanceType: string;
  /** Addresses per ENI and family, the primary counted. */
  readonly addressLimit: number;
  readonly availabilityZone: string;
}

export function topologyOf(world: World): Topology {
  const subnets = new Map<string, TopologySubnet>();
  for (const s of world.subnets) {
    subnets.set(s.id, {
      id: s.id,
      cidr: mustParseCidr(s.cidr),
      ipv6Cidr: s.ipv6Cidr === undefined ? undefined : mustParseCidr(s.ipv6Cidr),
      availabilityZone: s.availabilityZone,
    });
  }
  const instances = new Map<string, TopologyInstance>();
  for (const instance of world.instances) {
    const primary = instance.enis.find((e) => e.deviceIndex === 0) ?? instance.enis[0];
    instances.set(instance.id, {
      id: instance.id,
      instanceType: instance.instanceType,
      addressLimit: addressLimitOf(instance),
      availabilityZone: subnets.get(primary?.subnet ?? "")?.availabilityZone ?? `${world.region}a`,
    });
  }
  return {
    region: world.region,
    accountId: world.accountId,
    vpc: {
      id: world.vpc.id,
      cidr: mustParseCidr(world.vpc.cidr),
      ipv6Cidr: world.vpc.ipv6Cidr === undefined ? undefined : mustParseCidr(world.vpc.ipv6Cidr),
    },
    subnets,
    instances,
    httpTokens: world.imds.httpTokens,
  };
}

/** The initial mutable state of a world. Reservation ids are numbered from 1 by `nextId`. */
export function initialStateOf(world: World, nextId: (prefix: string) => string): SimState {
  return {
    enis: world.instances.flatMap((instance) =>
      [...instance.enis]
        .sort((a, b) => a.deviceIndex - b.deviceIndex)
        .map((eni) => ({
          eniId: eni.id,
          mac: eni.mac,
          instanceId: instance.id,
          deviceIndex: eni.deviceIndex,
          subnetId: eni.subnet,
          primaryIpv4: eni.primaryIpv4 ?? null,
          ipv4s: [...(eni.primaryIpv4 === undefined ? [] : [eni.primaryIpv4]), ...eni.secondaryIpv4s],
          ipv6s: [...eni.ipv6s],
          tags: { ...eni.tags },
        })),
    ),
    reservations: world.reservations.map((r) => ({
      reservationId: nextId("scr"),
      subnetId: r.subnet,
      cidr: r.cidr,
      type: r.type,
      description: r.description ?? null,
      tags: {},
      ownerId: world.accountId,
    })),
  };
}
