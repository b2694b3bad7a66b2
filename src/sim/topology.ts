import { defaultSecurityGroupIdOf } from "./aws-names.js";
import { type InstanceNetwork, networkOf } from "./instance-limits.js";
import { type Cidr, mustParseCidr } from "./ip-math.js";
import type { SimState } from "./sim-state.js";
import { addressLimitOf, type IngressRule, publicIpPoolOf, type World, zoneIdsOf } from "./world.js";
import { typeIsNitro } from "./world-nitro.js";

/** The parts of the world that never change while the simulator runs. */
export interface Topology {
  readonly region: string;
  readonly accountId: string;
  readonly vpc: { readonly id: string; readonly cidr: Cidr; readonly ipv6Cidr: Cidr | undefined };
  /** By subnet id, in world order. */
  readonly subnets: ReadonlyMap<string, TopologySubnet>;
  /** By instance id, in world order. */
  readonly instances: ReadonlyMap<string, TopologyInstance>;
  /** The attributes of each ENI that no simulated call changes, by ENI id. */
  readonly enis: ReadonlyMap<string, TopologyEni>;
  readonly httpTokens: "required" | "optional";
  /** Where AllocateAddress picks public IPs: a documentation range outside the VPC (publicIpPoolOf). */
  readonly publicIpPool: Cidr;
  /** The VPC's default group first, then the world's, by id. */
  readonly securityGroups: ReadonlyMap<string, TopologySecurityGroup>;
  /** After CreateNetworkInterface, calls naming the new ENI answer NotFound this long (ms). */
  readonly ec2ReadLagMs: number;
  /** IMDS's macs/ tree follows attachments this long after them (ms). */
  readonly imdsAttachmentLagMs: number;
}

export interface TopologySecurityGroup extends SecurityGroupRef {
  readonly description: string;
  /** Inbound rules, in world order; each rule's sources in world order. */
  readonly ingress: readonly IngressRule[];
  readonly tags: Readonly<Record<string, string>>;
}

export interface SecurityGroupRef {
  readonly id: string;
  readonly name: string;
}

export interface TopologySubnet {
  readonly id: string;
  readonly cidr: Cidr;
  readonly ipv6Cidr: Cidr | undefined;
  readonly availabilityZone: string;
  /** Set in the world, or derived from the region and zone letter (use1-az1 for us-east-1a). */
  readonly availabilityZoneId: string;
  /** Default false. */
  readonly defaultForAz: boolean;
  /** Default false. */
  readonly mapPublicIpOnLaunch: boolean;
  /** Default false. */
  readonly enableDns64: boolean;
  /** What instances launched here get as privateDnsNameOptions; default ip-name, no resource-name records. */
  readonly privateDnsNameOptionsOnLaunch: PrivateDnsNameOptions;
  readonly tags: Readonly<Record<string, string>>;
}

export interface PrivateDnsNameOptions {
  readonly hostnameType: "ip-name" | "resource-name";
  readonly enableResourceNameDnsARecord: boolean;
  readonly enableResourceNameDnsAAAARecord: boolean;
}

export interface TopologyInstance {
  readonly id: string;
  readonly instanceType: string;
  /** Addresses per ENI and family, the primary counted; each delegated prefix takes one. */
  readonly addressLimit: number;
  /** Built on the Nitro System, so it takes prefixes (prefix delegation): its type's word (world-nitro.ts). */
  readonly nitro: boolean;
  /** The zone of the primary ENI's subnet. */
  readonly availabilityZone: string;
  readonly availabilityZoneId: string;
  /** Default x86_64. */
  readonly architecture: string;
  /** Default ami-0123456789abcdef0. */
  readonly imageId: string;
  /** ISO 8601, milliseconds, UTC; default 2024-01-01T00:00:00.000Z. */
  readonly launchTime: string;
  /** The primary ENI's subnet options at launch. */
  readonly privateDnsNameOptions: PrivateDnsNameOptions;
  readonly tags: Readonly<Record<string, string>>;
  /** The network namespace where attachments show as links (hotplug.ts); none by default. */
  readonly netns: string | undefined;
  /** DescribeInstanceTypes' NetworkInfo for its type: ENIs in all, and per network card. */
  readonly network: InstanceNetwork;
}

/**
 * The attributes of a world ENI that no simulated call changes. Those ModifyNetworkInterfaceAttribute and
 * the attachment calls change (description, groups, SourceDestCheck, attachment) live in SimEni; an ENI
 * CreateNetworkInterface made has no entry here and takes the defaults below.
 */
export interface TopologyEni {
  readonly id: string;
  /** Default `interface`. */
  readonly interfaceType: string;
  /** Default none: EC2 shows requesterId only for ENIs created on your behalf. */
  readonly requesterId: string | undefined;
  /** Default false. */
  readonly requesterManaged: boolean;
}

/** What an ENI made by CreateNetworkInterface has. */
export const createdEniAttrs: Omit<TopologyEni, "id"> = {
  interfaceType: "interface",
  requesterId: undefined,
  requesterManaged: false,
};

const defaultImageId = "ami-0123456789abcdef0";
/** The same instant as IMDS's identity document `pendingTime`. */
const defaultLaunchTime = "2024-01-01T00:00:00.000Z";

export function topologyOf(world: World): Topology {
  const zoneIds = zoneIdsOf(world);
  const subnets = new Map<string, TopologySubnet>();
  for (const s of world.subnets) {
    const dns = s.privateDnsNameOptionsOnLaunch;
    subnets.set(s.id, {
      id: s.id,
      cidr: mustParseCidr(s.cidr),
      ipv6Cidr: s.ipv6Cidr === undefined ? undefined : mustParseCidr(s.ipv6Cidr),
      availabilityZone: s.availabilityZone,
      availabilityZoneId: zoneIds.get(s.availabilityZone) ?? "",
      defaultForAz: s.defaultForAz ?? false,
      mapPublicIpOnLaunch: s.mapPublicIpOnLaunch ?? false,
      enableDns64: s.enableDns64 ?? false,
      privateDnsNameOptionsOnLaunch: {
        hostnameType: dns?.hostnameType ?? "ip-name",
        enableResourceNameDnsARecord: dns?.enableResourceNameDnsARecord ?? false,
        enableResourceNameDnsAAAARecord: dns?.enableResourceNameDnsAAAARecord ?? false,
      },
      tags: { ...s.tags },
    });
  }
  const defaultGroup: SecurityGroupRef = {
    id: world.vpc.defaultSecurityGroupId ?? defaultSecurityGroupIdOf(world.vpc.id),
    name: "default",
  };
  // AWS gives the default group one inbound rule: all traffic from members of the group itself.
  const selfRule: IngressRule = { protocol: "-1", cidrs: [], ipv6Cidrs: [], groups: [defaultGroup.id] };
  const groups = new Map<string, TopologySecurityGroup>([
    [
      defaultGroup.id,
      {
        ...defaultGroup,
        description: "default VPC security group",
        ingress: world.vpc.defaultSecurityGroupIngress ?? [selfRule],
        tags: {},
      },
    ],
  ]);
  for (const group of world.securityGroups ?? []) {
    groups.set(group.id, {
      id: group.id,
      name: group.name,
      description: group.description ?? group.name,
      ingress: group.ingress,
      tags: { ...group.tags },
    });
  }

  const instances = new Map<string, TopologyInstance>();
  const enis = new Map<string, TopologyEni>();
  for (const instance of world.instances) {
    const primary = instance.enis.find((e) => e.deviceIndex === 0) ?? instance.enis[0];
    const subnet = subnets.get(primary?.subnet ?? "");
    const launchTime = instance.launchTime ?? defaultLaunchTime;
    instances.set(instance.id, {
      id: instance.id,
      instanceType: instance.instanceType,
      addressLimit: addressLimitOf(instance),
      nitro: typeIsNitro(world.instances, instance.instanceType),
      availabilityZone: subnet?.availabilityZone ?? `${world.region}a`,
      availabilityZoneId: subnet?.availabilityZoneId ?? "",
      architecture: instance.architecture ?? "x86_64",
      imageId: instance.imageId ?? defaultImageId,
      launchTime,
      privateDnsNameOptions: subnet?.privateDnsNameOptionsOnLaunch ?? {
        hostnameType: "ip-name",
        enableResourceNameDnsARecord: false,
        enableResourceNameDnsAAAARecord: false,
      },
      tags: { ...instance.tags },
      netns: instance.netns,
      network: networkOf(instance.instanceType),
    });
    for (const eni of instance.enis) {
      enis.set(eni.id, {
        id: eni.id,
        interfaceType: eni.interfaceType ?? "interface",
        requesterId: eni.requesterId,
        requesterManaged: eni.requesterManaged ?? false,
      });
    }
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
    enis,
    httpTokens: world.imds.httpTokens,
    publicIpPool: publicIpPoolOf(mustParseCidr(world.vpc.cidr)),
    securityGroups: groups,
    ec2ReadLagMs: world.ec2ReadLagMs,
    imdsAttachmentLagMs: world.imdsAttachmentLagMs,
  };
}

/**
 * The initial mutable state of a world. Reservation ids are numbered from 1 by `nextId`, then the association
 * ids of the Elastic IPs the world associates.
 */
export function initialStateOf(world: World, nextId: (prefix: string) => string): SimState {
  const defaultGroup = world.vpc.defaultSecurityGroupId ?? defaultSecurityGroupIdOf(world.vpc.id);
  return {
    enis: world.instances.flatMap((instance) =>
      [...instance.enis]
        .sort((a, b) => a.deviceIndex - b.deviceIndex)
        .map((eni) => ({
          eniId: eni.id,
          mac: eni.mac,
          instanceId: instance.id,
          deviceIndex: eni.deviceIndex,
          networkCardIndex: 0,
          attachmentId: `eni-attach-${eni.id.slice(4)}`,
          // The instance's launch time, as for ENIs launched with it.
          attachTime: instance.launchTime ?? defaultLaunchTime,
          deleteOnTermination: eni.deleteOnTermination ?? eni.deviceIndex === 0,
          subnetId: eni.subnet,
          primaryIpv4: eni.primaryIpv4 ?? null,
          ipv4s: [...(eni.primaryIpv4 === undefined ? [] : [eni.primaryIpv4]), ...eni.secondaryIpv4s],
          ipv6s: [...eni.ipv6s],
          ipv4Prefixes: [...(eni.ipv4Prefixes ?? [])],
          ipv6Prefixes: [...(eni.ipv6Prefixes ?? [])],
          tags: { ...eni.tags },
          description: eni.description ?? "",
          securityGroupIds: [...(eni.securityGroups ?? [defaultGroup])],
          sourceDestCheck: eni.sourceDestCheck ?? true,
          createdAt: null,
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
    addresses: world.elasticIps.map((eip) => ({
      allocationId: eip.allocationId,
      publicIp: eip.publicIp,
      domain: "vpc" as const,
      associationId: eip.association === undefined ? null : nextId("eipassoc"),
      eniId: eip.association?.eni ?? null,
      privateIp: eip.association?.privateIp ?? null,
      tags: { ...eip.tags },
    })),
    clientTokens: [],
  };
}
