/**
 * The data shapes shared by the core, the adapters and the commands.
 * Addresses are always in canonical text form (see ip.ts `canonical`): one spelling per address.
 * MACs are lowercase and colon-separated, the form IMDS and EC2 use.
 */

export type IpFamily = 4 | 6;

/** A pod interface as observed locally (os.networkInterfaces) or from the Multus network-status annotation. */
export interface PodInterface {
  /** Interface name inside the pod, e.g. `net1`. */
  readonly name: string;
  /** MAC address; for ipvlan it is the MAC of the parent worker ENI. */
  readonly mac: string;
  /** Canonical addresses without prefix length, both families. */
  readonly addresses: readonly string[];
}

/** A worker ENI of this instance as IMDS (or EC2) reports it. */
export interface EniState {
  readonly eniId: string;
  readonly mac: string;
  /** Device index (IMDS `device-number`). */
  readonly deviceIndex: number;
  readonly subnetId: string;
  readonly subnetIpv4Cidrs: readonly string[];
  readonly subnetIpv6Cidrs: readonly string[];
  /** Primary private IPv4 address; undefined on an IPv6-only ENI. Never released, never planned. */
  readonly primaryIpv4: string | undefined;
  /** Every private IPv4 address the ENI holds, the primary included. */
  readonly ipv4s: readonly string[];
  /** Every IPv6 address the ENI holds. */
  readonly ipv6s: readonly string[];
  /**
   * Delegated IPv4 prefixes (/28, canonical CIDR) the ENI holds: every address inside is routed to it. Absent
   * means none known (readers built before prefixes; optional so that fixtures need not list it).
   */
  readonly ipv4Prefixes?: readonly string[];
  /** Delegated IPv6 prefixes (/80, canonical CIDR) the ENI holds; absent as for ipv4Prefixes. */
  readonly ipv6Prefixes?: readonly string[];
  /**
   * True when only the id, IPv4 addresses and IPv4 prefixes were read (an ENI no pod interface uses): device
   * index, subnet, IPv6 addresses and IPv6 prefixes are then unknown, not empty. The planner never places an address on such an ENI.
   */
  readonly summary?: true;
}

/** What the planner may do. */
export interface PlanPolicy {
  /** Only addresses inside one of these CIDRs are ever assigned or released. */
  readonly allowedCidrs: readonly string[];
}

/** Everything the planner needs, all observed beforehand. */
export interface PlanInput {
  readonly interfaces: readonly PodInterface[];
  /** The ENIs of this instance, keyed by nothing: the planner matches them by MAC. */
  readonly enis: readonly EniState[];
  readonly policy: PlanPolicy;
  /**
   * Current holders of IPv6 addresses that are wanted on one of our ENIs but not there yet:
   * address -> ENI id holding it elsewhere. An address absent here is taken to be free.
   */
  readonly ipv6Holders?: ReadonlyMap<string, string>;
  /**
   * Addresses this process saw on its interfaces earlier and no longer sees (sidecar release).
   * Released only from an ENI behind one of `interfaces` (by MAC), and only if it still holds them: an
   * address another ENI took over is never touched, and only addresses we ourselves observed can be here.
   */
  readonly released?: readonly string[];
  /**
   * Addresses EC2 accepted assigning (through this process) that IMDS has not shown yet: address -> ENI id.
   * A release takes such an address as held by that ENI: IMDS may lag past the confirm timeout, and an
   * address released while it lagged would otherwise stay on the ENI for good.
   */
  readonly assignedUnconfirmed?: ReadonlyMap<string, string>;
  /**
   * Refusals EC2 made on facts the planner cannot see (another instance's primary address, a full ENI), as
   * the sidecar learned them: the same address on the same interface is refused up front with the same detail, with no
   * call. The sidecar forgets them after a while, so that EC2 is asked again.
   */
  readonly learnedRefusals?: readonly Refusal[];
  /**
   * Floating addresses: addresses that move between pods and so between nodes (the sidecar's, those it saw
   * appear on its interfaces after its startup). One inside a delegated prefix of any ENI of this instance is
   * refused as `floating-in-prefix`: a prefix is a node's whereabouts slice and never moves. Default none.
   */
  readonly floating?: readonly string[];
}

export type PlanAction =
  | {
      readonly kind: "assign-ipv4";
      readonly eniId: string;
      readonly addresses: readonly string[];
      /** Always true: a floating IPv4 address moves from wherever it is. */
      readonly allowReassignment: true;
    }
  | { readonly kind: "unassign-ipv4"; readonly eniId: string; readonly addresses: readonly string[] }
  | { readonly kind: "assign-ipv6"; readonly eniId: string; readonly addresses: readonly string[] }
  | {
      readonly kind: "unassign-ipv6";
      readonly eniId: string;
      readonly addresses: readonly string[];
      /** `move`: taken from another holder before assigning to ours; `release`: our own address let go. */
      readonly reason: "move" | "release";
    };

/** Why an address was refused (an error for the user) or skipped (normal, not ours to manage). */
export type RefusalReason =
  | "outside-allowed-cidrs"
  | "outside-eni-subnet"
  | "unknown-mac"
  | "eni-primary-address"
  /** The same address on interfaces of two different ENIs: it can be held by only one, so neither gets it. */
  | "address-conflict"
  /**
   * The address lies inside a delegated prefix another ENI of this instance holds: the VPC routes it there,
   * and a prefix is never split or moved.
   */
  | "inside-prefix"
  /**
   * A floating address (`PlanInput.floating`) inside a delegated prefix of an ENI of this instance, its own
   * ENI's or another's: the prefix is a node's slice, and the address would be unrouted once it moves on.
   */
  | "floating-in-prefix"
  /**
   * EC2 refused the address because its ENI holds as many addresses as the instance type allows
   * (`PrivateIpAddressLimitExceeded`). Only learned from EC2 (the sidecar), never planned from reads.
   */
  | "eni-full";

/** `ipv4-mapped`: ::ffff:a.b.c.d, an IPv4 address written as IPv6; never an ENI address. */
export type SkipReason = "link-local" | "loopback" | "multicast" | "unspecified" | "ipv4-mapped";

export interface Refusal {
  readonly address: string;
  readonly interfaceName: string;
  readonly mac: string;
  readonly reason: RefusalReason;
  /** A sentence naming the thing, the value and the fix. */
  readonly detail: string;
}

export interface Skip {
  readonly address: string;
  readonly interfaceName: string;
  readonly reason: SkipReason;
}

/** Where each wanted address must end up. */
export interface Placement {
  readonly address: string;
  readonly family: IpFamily;
  readonly interfaceName: string;
  readonly eniId: string;
  readonly mac: string;
}

export interface Plan {
  /** In execution order: IPv4 assigns, then each IPv6 move (unassign from the holder) right before its assign. */
  readonly actions: readonly PlanAction[];
  /** Every address that must be held, with its ENI; includes addresses already in place. */
  readonly placements: readonly Placement[];
  /** Wanted addresses already held by the right ENI: no action. */
  readonly satisfied: readonly string[];
  readonly refusals: readonly Refusal[];
  readonly skipped: readonly Skip[];
}

/** An ENI as EC2 DescribeNetworkInterfaces reports it (any instance, or unattached). */
export interface Ec2NetworkInterface {
  readonly eniId: string;
  readonly mac: string;
  readonly subnetId: string;
  readonly vpcId: string;
  readonly instanceId: string | undefined;
  readonly deviceIndex: number | undefined;
  readonly primaryIpv4: string | undefined;
  readonly ipv4s: readonly string[];
  readonly ipv6s: readonly string[];
  /** `ipv4PrefixSet`: delegated /28 prefixes, canonical. The adapter always sets it; optional for fixtures. */
  readonly ipv4Prefixes?: readonly string[];
  /** `ipv6PrefixSet`: delegated /80 prefixes, canonical. The adapter always sets it; optional for fixtures. */
  readonly ipv6Prefixes?: readonly string[];
  readonly tags: Readonly<Record<string, string>>;
  /** The ids of the ENI's security groups (`groupSet`); absent where the reader did not learn them. */
  readonly securityGroupIds?: readonly string[];
  /** `status`: available (attached to nothing), attaching, in-use, detaching; absent for fixtures. */
  readonly status?: string;
  /** `attachment`: absent when the ENI is attached to nothing (or the reader did not learn it). */
  readonly attachment?: Ec2EniAttachment;
  /** `sourceDestCheck`; absent for fixtures. */
  readonly sourceDestCheck?: boolean;
  /** `availabilityZone`; absent for fixtures. */
  readonly availabilityZone?: string;
}

/** An ENI's attachment, as DescribeNetworkInterfaces shows it. */
export interface Ec2EniAttachment {
  readonly attachmentId: string;
  readonly instanceId: string | undefined;
  readonly deviceIndex: number;
  readonly networkCardIndex: number;
  /** attaching, attached, detaching, detached. */
  readonly status: string;
  readonly deleteOnTermination: boolean;
}

/** One inbound rule of a security group: what it admits, from where. */
export interface SecurityGroupRule {
  /** `-1` (every protocol), `tcp`, `udp`, `icmp`, `icmpv6` or a protocol number, as EC2 writes it. */
  readonly protocol: string;
  /** tcp and udp: the port range; ICMP: type and code (-1: any); undefined for every protocol. */
  readonly fromPort: number | undefined;
  readonly toPort: number | undefined;
  /** Sources: IPv4 CIDRs, IPv6 CIDRs, security group ids, managed prefix list ids. */
  readonly ipv4Cidrs: readonly string[];
  readonly ipv6Cidrs: readonly string[];
  readonly groupIds: readonly string[];
  readonly prefixListIds: readonly string[];
}

export interface Ec2SecurityGroup {
  readonly groupId: string;
  readonly groupName: string;
  readonly ingress: readonly SecurityGroupRule[];
}

export interface Ec2Subnet {
  readonly subnetId: string;
  readonly vpcId: string;
  readonly availabilityZone: string;
  readonly ipv4Cidr: string;
  readonly ipv6Cidrs: readonly string[];
}

/** What DescribeInstanceTypes says of one instance type, the members we read. */
export interface Ec2InstanceType {
  readonly instanceType: string;
  /**
   * `nitro`, `xen`, or undefined when EC2 says none (bare metal types): prefix delegation needs the Nitro
   * System, which bare metal types of Nitro families are built on too, though they report no hypervisor.
   */
  readonly hypervisor: string | undefined;
  /** Private IPv4 addresses per ENI, the primary counted; undefined when EC2 does not say. */
  readonly ipv4AddressesPerEni: number | undefined;
  /** `NetworkInfo.MaximumNetworkInterfaces`: ENIs per instance, every card counted; absent when not read. */
  readonly maxNetworkInterfaces?: number;
  /** `NetworkInfo.NetworkCards`: each card's index and its own ENI limit; absent when not read. */
  readonly networkCards?: readonly { readonly index: number; readonly maxNetworkInterfaces: number }[];
}

export interface SubnetCidrReservation {
  readonly reservationId: string;
  readonly subnetId: string;
  readonly cidr: string;
  readonly type: "explicit" | "prefix";
  readonly description: string | undefined;
  readonly tags: Readonly<Record<string, string>>;
}

/** One entry of IPMGR_ELASTIC_IPS: the Elastic IP that follows a floating private IPv4 address. */
export interface ElasticIpMapping {
  /** Canonical IPv4 address, inside the allowed CIDRs. */
  readonly address: string;
  /** `eipalloc-` and 8 or 17 lowercase hexadecimal digits. */
  readonly allocationId: string;
}

/** Where an Elastic IP points: an ENI and one of its private IPv4 addresses. */
export interface ElasticIpAssociation {
  readonly associationId: string;
  readonly eniId: string;
  /** Canonical IPv4 address. */
  readonly privateIp: string;
}

/** An Elastic IP (VPC) as EC2 DescribeAddresses reports it. */
export interface Ec2ElasticIp {
  /** `eipalloc-...` */
  readonly allocationId: string;
  readonly publicIp: string;
  /** Undefined while the Elastic IP is not associated. */
  readonly association: ElasticIpAssociation | undefined;
}
