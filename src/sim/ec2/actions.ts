import { allocateAddress } from "./allocate-address.js";
import { assignIpv6Addresses } from "./assign-ipv6-addresses.js";
import { assignPrivateIpAddresses } from "./assign-private-ip-addresses.js";
import { associateAddress } from "./associate-address.js";
import { attachNetworkInterface } from "./attach-network-interface.js";
import { createNetworkInterface } from "./create-network-interface.js";
import { deleteNetworkInterface } from "./delete-network-interface.js";
import { describeAddresses } from "./describe-addresses.js";
import { describeInstanceTypes } from "./describe-instance-types.js";
import { describeInstances } from "./describe-instances.js";
import { describeNetworkInterfaces } from "./describe-network-interfaces.js";
import { describeSecurityGroups } from "./describe-security-groups.js";
import { describeSubnets } from "./describe-subnets.js";
import { detachNetworkInterface } from "./detach-network-interface.js";
import { disassociateAddress } from "./disassociate-address.js";
import type { Ec2Handler } from "./ec2-context.js";
import { modifyNetworkInterfaceAttribute } from "./modify-network-interface-attribute.js";
import type { QueryParams } from "./query-params.js";
import {
  createSubnetCidrReservation,
  deleteSubnetCidrReservation,
  getSubnetCidrReservations,
} from "./subnet-cidr-reservations.js";
import type { BucketSpec } from "./token-bucket.js";
import { unassignIpv6Addresses } from "./unassign-ipv6-addresses.js";
import { unassignPrivateIpAddresses } from "./unassign-private-ip-addresses.js";

export interface ActionSpec {
  readonly handler: Ec2Handler;
  /** Whether the action takes `DryRun` (the four assign/unassign calls do not). */
  readonly dryRun: boolean;
  /** The throttling bucket a call of this action draws from. */
  readonly bucket: (params: QueryParams) => BucketSpec;
}

const fixed = (key: string, burst: number, refillPerSecond: number) => (): BucketSpec => ({
  key,
  burst,
  refillPerSecond,
});

/** EC2 gives unfiltered, unpaged listings of every ENI or instance a smaller bucket of their own. */
const describeBucket =
  (action: string, idParameter: string) =>
  (params: QueryParams): BucketSpec => {
    const narrowed =
      params.has("MaxResults") || params.has("Filter.1.Name") || params.list(idParameter).length > 0;
    return narrowed
      ? { key: action, burst: 100, refillPerSecond: 20 }
      : { key: `${action} (unfiltered)`, burst: 50, refillPerSecond: 10 };
  };

export const actions: Readonly<Record<string, ActionSpec>> = {
  AssignPrivateIpAddresses: {
    handler: assignPrivateIpAddresses,
    dryRun: false,
    bucket: fixed("AssignPrivateIpAddresses", 100, 5),
  },
  UnassignPrivateIpAddresses: {
    handler: unassignPrivateIpAddresses,
    dryRun: false,
    bucket: fixed("UnassignPrivateIpAddresses", 100, 5),
  },
  AssignIpv6Addresses: {
    handler: assignIpv6Addresses,
    dryRun: false,
    bucket: fixed("AssignIpv6Addresses", 100, 5),
  },
  UnassignIpv6Addresses: {
    handler: unassignIpv6Addresses,
    dryRun: false,
    bucket: fixed("UnassignIpv6Addresses", 50, 5),
  },
  DescribeNetworkInterfaces: {
    handler: describeNetworkInterfaces,
    dryRun: true,
    bucket: describeBucket("DescribeNetworkInterfaces", "NetworkInterfaceId"),
  },
  DescribeInstances: {
    handler: describeInstances,
    dryRun: true,
    bucket: describeBucket("DescribeInstances", "InstanceId"),
  },
  DescribeInstanceTypes: {
    handler: describeInstanceTypes,
    dryRun: true,
    bucket: fixed("DescribeInstanceTypes", 100, 20),
  },
  DescribeSubnets: { handler: describeSubnets, dryRun: true, bucket: fixed("DescribeSubnets", 100, 20) },
  DescribeSecurityGroups: {
    handler: describeSecurityGroups,
    dryRun: true,
    bucket: fixed("DescribeSecurityGroups", 100, 20),
  },
  CreateSubnetCidrReservation: {
    handler: createSubnetCidrReservation,
    dryRun: true,
    bucket: fixed("CreateSubnetCidrReservation", 5, 1),
  },
  GetSubnetCidrReservations: {
    handler: getSubnetCidrReservations,
    dryRun: true,
    bucket: fixed("GetSubnetCidrReservations", 100, 20),
  },
  DeleteSubnetCidrReservation: {
    handler: deleteSubnetCidrReservation,
    dryRun: true,
    bucket: fixed("DeleteSubnetCidrReservation", 5, 1),
  },
  // Elastic IPs: the three writes are "other mutating calls" (50 / 5), DescribeAddresses a read (100 / 20).
  AllocateAddress: { handler: allocateAddress, dryRun: true, bucket: fixed("AllocateAddress", 50, 5) },
  AssociateAddress: { handler: associateAddress, dryRun: true, bucket: fixed("AssociateAddress", 50, 5) },
  DisassociateAddress: {
    handler: disassociateAddress,
    dryRun: true,
    bucket: fixed("DisassociateAddress", 50, 5),
  },
  DescribeAddresses: {
    handler: describeAddresses,
    dryRun: true,
    bucket: fixed("DescribeAddresses", 100, 20),
  },
  // The ENI lifecycle: "other mutating calls" (50 / 5), each with its own bucket.
  CreateNetworkInterface: {
    handler: createNetworkInterface,
    dryRun: true,
    bucket: fixed("CreateNetworkInterface", 50, 5),
  },
  AttachNetworkInterface: {
    handler: attachNetworkInterface,
    dryRun: true,
    bucket: fixed("AttachNetworkInterface", 50, 5),
  },
  DetachNetworkInterface: {
    handler: detachNetworkInterface,
    dryRun: true,
    bucket: fixed("DetachNetworkInterface", 50, 5),
  },
  DeleteNetworkInterface: {
    handler: deleteNetworkInterface,
    dryRun: true,
    bucket: fixed("DeleteNetworkInterface", 50, 5),
  },
  ModifyNetworkInterfaceAttribute: {
    handler: modifyNetworkInterfaceAttribute,
    dryRun: true,
    bucket: fixed("ModifyNetworkInterfaceAttribute", 50, 5),
  },
};
