/**
 * EC2's answers, as the SDK parses them, mapped to our types (types.ts): addresses canonical, the primary
 * first, empty where EC2 says nothing. Pure; the adapter (ec2-client.ts) is the only module that sends calls,
 * and the only one that loads the SDK at run time: this one imports its types only.
 */
import type {
  Address,
  Filter,
  NetworkInterface,
  SubnetCidrReservation as SdkReservation,
  SecurityGroup,
  Subnet,
  Tag,
} from "@aws-sdk/client-ec2";
import { canonicalAddressText } from "./ip.js";
import type {
  Ec2ElasticIp,
  Ec2NetworkInterface,
  Ec2SecurityGroup,
  Ec2Subnet,
  SubnetCidrReservation,
} from "./types.js";

export function tagsOf(tags: readonly Tag[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const tag of tags ?? []) {
    if (tag.Key !== undefined) out[tag.Key] = tag.Value ?? "";
  }
  return out;
}

export function toNetworkInterface(eni: NetworkInterface): Ec2NetworkInterface {
  const ipv4s = (eni.PrivateIpAddresses ?? []).flatMap((p) =>
    p.PrivateIpAddress === undefined ? [] : [canonicalAddressText(p.PrivateIpAddress)],
  );
  const primary =
    (eni.PrivateIpAddresses ?? []).find((p) => p.Primary === true)?.PrivateIpAddress ?? eni.PrivateIpAddress;
  const primaryIpv4 = primary === undefined ? undefined : canonicalAddressText(primary);
  // Primary first, like IMDS local-ipv4s.
  const ordered =
    primaryIpv4 === undefined ? ipv4s : [primaryIpv4, ...ipv4s.filter((a) => a !== primaryIpv4)];
  return {
    eniId: eni.NetworkInterfaceId ?? "",
    mac: (eni.MacAddress ?? "").toLowerCase(),
    subnetId: eni.SubnetId ?? "",
    vpcId: eni.VpcId ?? "",
    instanceId: eni.Attachment?.InstanceId,
    deviceIndex: eni.Attachment?.DeviceIndex,
    primaryIpv4,
    ipv4s: ordered,
    ipv6s: (eni.Ipv6Addresses ?? []).flatMap((a) =>
      a.Ipv6Address === undefined ? [] : [canonicalAddressText(a.Ipv6Address)],
    ),
    ipv4Prefixes: (eni.Ipv4Prefixes ?? []).flatMap((p) =>
      p.Ipv4Prefix === undefined ? [] : [canonicalAddressText(p.Ipv4Prefix)],
    ),
    ipv6Prefixes: (eni.Ipv6Prefixes ?? []).flatMap((p) =>
      p.Ipv6Prefix === undefined ? [] : [canonicalAddressText(p.Ipv6Prefix)],
    ),
    tags: tagsOf(eni.TagSet),
    securityGroupIds: (eni.Groups ?? []).flatMap((g) => (g.GroupId === undefined ? [] : [g.GroupId])),
    ...(eni.Status === undefined ? {} : { status: eni.Status }),
    ...(eni.Attachment?.AttachmentId === undefined
      ? {}
      : {
          attachment: {
            attachmentId: eni.Attachment.AttachmentId,
            instanceId: eni.Attachment.InstanceId,
            deviceIndex: eni.Attachment.DeviceIndex ?? 0,
            networkCardIndex: eni.Attachment.NetworkCardIndex ?? 0,
            status: eni.Attachment.Status ?? "",
            deleteOnTermination: eni.Attachment.DeleteOnTermination ?? false,
          },
        }),
    ...(eni.SourceDestCheck === undefined ? {} : { sourceDestCheck: eni.SourceDestCheck }),
    ...(eni.AvailabilityZone === undefined ? {} : { availabilityZone: eni.AvailabilityZone }),
  };
}

/** `tag:KEY` filters, one per tag, in key order. */
export function tagFilters(tags: Readonly<Record<string, string>>): Filter[] {
  return Object.keys(tags)
    .sort()
    .map((key) => ({ Name: `tag:${key}`, Values: [tags[key] ?? ""] }));
}

export function toSecurityGroup(group: SecurityGroup): Ec2SecurityGroup {
  return {
    groupId: group.GroupId ?? "",
    groupName: group.GroupName ?? "",
    ingress: (group.IpPermissions ?? []).map((p) => ({
      protocol: p.IpProtocol ?? "-1",
      fromPort: p.FromPort,
      toPort: p.ToPort,
      ipv4Cidrs: (p.IpRanges ?? []).flatMap((r) =>
        r.CidrIp === undefined ? [] : [canonicalAddressText(r.CidrIp)],
      ),
      ipv6Cidrs: (p.Ipv6Ranges ?? []).flatMap((r) =>
        r.CidrIpv6 === undefined ? [] : [canonicalAddressText(r.CidrIpv6)],
      ),
      groupIds: (p.UserIdGroupPairs ?? []).flatMap((g) => (g.GroupId === undefined ? [] : [g.GroupId])),
      prefixListIds: (p.PrefixListIds ?? []).flatMap((l) =>
        l.PrefixListId === undefined ? [] : [l.PrefixListId],
      ),
    })),
  };
}

export function toSubnet(subnet: Subnet): Ec2Subnet {
  return {
    subnetId: subnet.SubnetId ?? "",
    vpcId: subnet.VpcId ?? "",
    availabilityZone: subnet.AvailabilityZone ?? "",
    ipv4Cidr: canonicalAddressText(subnet.CidrBlock ?? ""),
    ipv6Cidrs: (subnet.Ipv6CidrBlockAssociationSet ?? []).flatMap((a) =>
      a.Ipv6CidrBlock === undefined ||
      a.Ipv6CidrBlockState?.State === "disassociated" ||
      a.Ipv6CidrBlockState?.State === "disassociating"
        ? []
        : [canonicalAddressText(a.Ipv6CidrBlock)],
    ),
  };
}

export function toReservation(r: SdkReservation): SubnetCidrReservation {
  return {
    reservationId: r.SubnetCidrReservationId ?? "",
    subnetId: r.SubnetId ?? "",
    cidr: canonicalAddressText(r.Cidr ?? ""),
    type: r.ReservationType === "prefix" ? "prefix" : "explicit",
    description: r.Description,
    tags: tagsOf(r.Tags),
  };
}

export function toElasticIp(address: Address): Ec2ElasticIp {
  const associationId = address.AssociationId;
  return {
    allocationId: address.AllocationId ?? "",
    publicIp: address.PublicIp ?? "",
    association:
      associationId === undefined || associationId === ""
        ? undefined
        : {
            associationId,
            eniId: address.NetworkInterfaceId ?? "",
            privateIp: canonicalAddressText(address.PrivateIpAddress ?? ""),
          },
  };
}
