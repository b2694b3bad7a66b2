import type { CreateNetworkInterfaceRequest, Ec2EniLifecycleApi } from "./ec2-eni-lifecycle-api.js";
import type { Ec2Error } from "./errors/ec2-error.js";
import type {
  Ec2ElasticIp,
  Ec2InstanceType,
  Ec2NetworkInterface,
  Ec2SecurityGroup,
  Ec2Subnet,
  SubnetCidrReservation,
} from "./types.js";

/** Filters for DescribeNetworkInterfaces; each set field becomes one EC2 filter. */
export interface NetworkInterfaceFilter {
  /** `attachment.instance-id` */
  readonly instanceId?: string;
  /** `network-interface-id` */
  readonly eniIds?: readonly string[];
  /** `mac-address` */
  readonly macs?: readonly string[];
  /** `addresses.private-ip-address` */
  readonly ipv4Addresses?: readonly string[];
  /** `ipv6-addresses.ipv6-address` */
  readonly ipv6Addresses?: readonly string[];
  /** `subnet-id` */
  readonly subnetIds?: readonly string[];
}

/** Filters for DescribeAddresses; each set field becomes one EC2 filter (AND between them). */
export interface ElasticIpFilter {
  /** `allocation-id` */
  readonly allocationIds?: readonly string[];
  /** `network-interface-id` */
  readonly eniIds?: readonly string[];
  /** `private-ip-address` */
  readonly privateIps?: readonly string[];
}

/**
 * A permission to probe with DryRun (EC2 then checks the caller's IAM permission and does nothing else).
 * The four assign/unassign calls take no DryRun parameter. Attach mode's calls are probed with the request
 * the bridge would send, so that EC2 evaluates the policy's conditions: the create with the network's subnet,
 * security groups and tags at creation (aws:RequestTag, and ec2:CreateTags with ec2:CreateAction); attach,
 * delete and modify on an ENI that exists and carries the cluster's tag (aws:ResourceTag).
 */
export type PermissionProbe =
  | { readonly action: "DescribeNetworkInterfaces" }
  | { readonly action: "GetSubnetCidrReservations"; readonly subnetId: string }
  | {
      readonly action: "CreateNetworkInterface";
      /**
       * No ClientToken of ours (the SDK fills a random one): it takes no part in the authorization, and a
       * probe must never send one of the bridge's.
       */
      readonly request: Omit<CreateNetworkInterfaceRequest, "clientToken" | "ipv4Prefixes" | "ipv6Prefixes">;
    }
  | {
      readonly action: "AttachNetworkInterface";
      readonly eniId: string;
      readonly instanceId: string;
      readonly deviceIndex: number;
      readonly networkCardIndex: number;
    }
  | { readonly action: "DeleteNetworkInterface"; readonly eniId: string }
  | {
      readonly action: "ModifyNetworkInterfaceAttribute";
      readonly eniId: string;
      readonly sourceDestCheck: boolean;
    };

/** What a DryRun probe learned: allowed, or denied with EC2's refusal (its message names the action). */
export type PermissionVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly refusal: Ec2Error };

/**
 * The EC2 calls this tool makes, and only those. Implemented by the adapter in ec2-client.ts, the only file
 * that imports @aws-sdk/client-ec2. Every method fails with Ec2Error. Idempotent outcomes are success:
 * assigning an address the ENI already holds, unassigning one it no longer holds. Attach mode's calls
 * (Ec2EniLifecycleApi) are part of it.
 */
export interface Ec2Api extends Ec2EniLifecycleApi {
  /** IAM: ec2:AssignPrivateIpAddresses. All or nothing. */
  assignPrivateIpv4(eniId: string, addresses: readonly string[], allowReassignment: boolean): Promise<void>;
  /** IAM: ec2:UnassignPrivateIpAddresses. Secondary addresses only. */
  unassignPrivateIpv4(eniId: string, addresses: readonly string[]): Promise<void>;
  /** IAM: ec2:AssignIpv6Addresses. No reassignment exists: unassign from the holder first. */
  assignIpv6(eniId: string, addresses: readonly string[]): Promise<void>;
  /** IAM: ec2:UnassignIpv6Addresses. */
  unassignIpv6(eniId: string, addresses: readonly string[]): Promise<void>;
  /**
   * IAM: ec2:AssignPrivateIpAddresses (the same action as for addresses, with `Ipv4Prefix.N`). Delegated
   * IPv4 /28 prefixes, all or nothing (Nitro instances only). EC2 refuses a prefix that overlaps any address
   * or prefix assigned in the subnet; one this ENI already holds counts as assigned.
   */
  assignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void>;
  /** IAM: ec2:UnassignPrivateIpAddresses (with `Ipv4Prefix.N`). One the ENI no longer holds counts as released. */
  unassignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void>;
  /** IAM: ec2:AssignIpv6Addresses (with `Ipv6Prefix.N`). Delegated IPv6 /80 prefixes, as assignIpv4Prefixes. */
  assignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void>;
  /** IAM: ec2:UnassignIpv6Addresses (with `Ipv6Prefix.N`). One the ENI no longer holds counts as released. */
  unassignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void>;
  /** IAM: ec2:DescribeNetworkInterfaces. Follows NextToken to the end. */
  describeNetworkInterfaces(filter: NetworkInterfaceFilter): Promise<Ec2NetworkInterface[]>;
  /**
   * IAM: ec2:DescribeInstanceTypes. One type: its hypervisor (`nitro` takes delegated prefixes) and addresses
   * per ENI; undefined when EC2 does not know the type (`InvalidInstanceType`).
   */
  describeInstanceType(instanceType: string): Promise<Ec2InstanceType | undefined>;
  /** IAM: ec2:DescribeSubnets. */
  describeSubnets(subnetIds: readonly string[]): Promise<Ec2Subnet[]>;
  /** IAM: ec2:DescribeSubnets. Every subnet of the VPC (filter `vpc-id`), following NextToken to the end. */
  describeVpcSubnets(vpcId: string): Promise<Ec2Subnet[]>;
  /** IAM: ec2:DescribeSecurityGroups. The groups of `groupIds` with their inbound rules; none for an empty list. */
  describeSecurityGroups(groupIds: readonly string[]): Promise<Ec2SecurityGroup[]>;
  /** IAM: ec2:GetSubnetCidrReservations. Both families. */
  getSubnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]>;
  /** IAM: ec2:CreateSubnetCidrReservation. */
  createSubnetCidrReservation(
    subnetId: string,
    cidr: string,
    type: "explicit" | "prefix",
    description: string,
    tags: Readonly<Record<string, string>>,
  ): Promise<SubnetCidrReservation>;
  /** IAM: ec2:DeleteSubnetCidrReservation. */
  deleteSubnetCidrReservation(reservationId: string): Promise<void>;
  /**
   * IAM: ec2:DescribeNetworkInterfaces, ec2:GetSubnetCidrReservations, ec2:CreateNetworkInterface (the
   * probed one; or attach mode's AttachNetworkInterface, DeleteNetworkInterface and
   * ModifyNetworkInterfaceAttribute), called with DryRun: nothing is read or changed, and no grant is
   * needed to learn a denial. Resolves with the verdict (EC2 answers `DryRunOperation` when the
   * caller may, `UnauthorizedOperation` when not); any other failure rejects with Ec2Error.
   */
  probePermission(probe: PermissionProbe): Promise<PermissionVerdict>;
  /**
   * IAM: ec2:DescribeAddresses. The Elastic IPs matching every field of `filter`, in one call, through filters
   * (an allocation that does not exist is absent from the answer, not an error for the others). An empty list
   * in a field matches nothing, without a call.
   */
  describeElasticIps(filter: ElasticIpFilter): Promise<Ec2ElasticIp[]>;
  /**
   * IAM: ec2:AssociateAddress. Points the Elastic IP at `privateIp` on `eniId`; returns the association id.
   * `AllowReassociation` is always sent: EC2 reassociates by default, and with false refuses an Elastic IP
   * associated elsewhere (Resource.AlreadyAssociated), so a race never moves it. One already associated with
   * exactly this ENI and address counts as done.
   */
  associateElasticIp(
    allocationId: string,
    eniId: string,
    privateIp: string,
    allowReassociation: boolean,
  ): Promise<string>;
}

/** One EC2 API call as the instrumentation wrapper saw it (after our retries). */
export interface Ec2CallRecord {
  /** EC2 action, e.g. `AssignPrivateIpAddresses`. */
  readonly operation: string;
  readonly eniId: string | undefined;
  readonly addresses: readonly string[];
  readonly requestId: string | undefined;
  /** Wall time of the whole call, every attempt and backoff included, in milliseconds. */
  readonly durationMs: number;
  /** How many attempts were made (1 when the first succeeded or failed for good). */
  readonly attempts: number;
  readonly outcome: "ok" | "error";
  /** EC2 error code when outcome is `error`. */
  readonly errorCode: string | undefined;
}

/** Receives every EC2 call record; the sidecar feeds its Prometheus metrics from it. Must not throw. */
export type Ec2CallObserver = (record: Ec2CallRecord) => void;
