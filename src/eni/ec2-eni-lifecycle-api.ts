/**
 * The EC2 calls attach mode makes to give a node its Multus ENIs, and only those: the narrow port its
 * planner and executor (src/ipam-whereabouts-bridge/attach/) are written against. Ec2Api (ec2-api.ts)
 * implements it in ec2-client.ts, the only importer of @aws-sdk/client-ec2. Every method fails with
 * Ec2Error; the IAM comment names the action and the condition the attach policy
 * (charts/multus-ipmgr/files/iam/iam-policy-attach.json) puts on it.
 */
import type { Ec2NetworkInterface, Ec2SecurityGroup, Ec2Subnet } from "./types.js";

export interface CreateNetworkInterfaceRequest {
  readonly subnetId: string;
  readonly securityGroupIds: readonly string[];
  readonly description: string;
  /** Set at creation (TagSpecifications, ResourceType network-interface): the only tags attach mode writes. */
  readonly tags: Readonly<Record<string, string>>;
  /**
   * Idempotency: the same token with the same parameters answers the ENI the first call made, so that a
   * create whose answer was lost makes no second ENI. At most 64 ASCII characters.
   */
  readonly clientToken: string;
  /** Delegated prefixes to hold from creation (Nitro only): saves an assign call per family. */
  readonly ipv4Prefixes?: readonly string[];
  readonly ipv6Prefixes?: readonly string[];
}

/** Filters of DescribeNetworkInterfaces for attach mode: all given must match (AND). */
export interface EniTagFilter {
  /** `tag:KEY` = value, each. */
  readonly tags: Readonly<Record<string, string>>;
  /** `status`, e.g. available. */
  readonly status?: string;
  /** `vpc-id`. */
  readonly vpcId?: string;
}

export interface Ec2EniLifecycleApi {
  /**
   * IAM: ec2:CreateNetworkInterface on network-interface (condition aws:RequestTag/multus-ipmgr.io/cluster),
   * subnet and security-group; ec2:CreateTags on network-interface with ec2:CreateAction
   * CreateNetworkInterface. Answers the ENI as made (status available, no attachment).
   */
  createNetworkInterface(request: CreateNetworkInterfaceRequest): Promise<Ec2NetworkInterface>;
  /**
   * IAM: ec2:AttachNetworkInterface on network-interface (condition aws:ResourceTag/multus-ipmgr.io/cluster)
   * and instance. Answers the attachment id.
   */
  attachNetworkInterface(
    eniId: string,
    instanceId: string,
    deviceIndex: number,
    networkCardIndex: number,
  ): Promise<string>;
  /** IAM: ec2:DeleteNetworkInterface (condition aws:ResourceTag/...). One that no longer exists counts as deleted. */
  deleteNetworkInterface(eniId: string): Promise<void>;
  /** IAM: ec2:ModifyNetworkInterfaceAttribute (condition aws:ResourceTag/...). `Attachment.DeleteOnTermination`. */
  setDeleteOnTermination(eniId: string, attachmentId: string, deleteOnTermination: boolean): Promise<void>;
  /** IAM: ec2:ModifyNetworkInterfaceAttribute (condition aws:ResourceTag/...). `SourceDestCheck`. */
  setSourceDestCheck(eniId: string, sourceDestCheck: boolean): Promise<void>;
  /** IAM: ec2:DescribeNetworkInterfaces. The instance's ENIs, every field, attachment included. */
  describeInstanceEnis(instanceId: string): Promise<Ec2NetworkInterface[]>;
  /** IAM: ec2:DescribeNetworkInterfaces. Follows NextToken to the end. */
  describeEnisByTags(filter: EniTagFilter): Promise<Ec2NetworkInterface[]>;
  /** IAM: ec2:DescribeSubnets. The subnets of the VPC carrying every tag given (filters tag:KEY, vpc-id). */
  describeSubnetsByTags(vpcId: string, tags: Readonly<Record<string, string>>): Promise<Ec2Subnet[]>;
  /** IAM: ec2:DescribeSecurityGroups. The groups of the VPC carrying every tag given. */
  describeSecurityGroupsByTags(
    vpcId: string,
    tags: Readonly<Record<string, string>>,
  ): Promise<Ec2SecurityGroup[]>;
}
