import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  DescribeAddressesCommand,
  DescribeInstancesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  type Filter,
} from "@aws-sdk/client-ec2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { instanceFilters } from "../src/sim/ec2/describe-instances.js";
import { networkInterfaceFilters } from "../src/sim/ec2/describe-network-interfaces.js";
import { subnetFilters } from "../src/sim/ec2/describe-subnets.js";
import {
  documentedAddressFilters,
  documentedInstanceFilters,
  documentedNetworkInterfaceFilters,
  documentedSecurityGroupFilters,
  documentedSubnetFilters,
} from "../src/sim/ec2/documented-filters.js";
import { addressFilters } from "../src/sim/ec2/elastic-ip-view.js";
import { parseWorld, type SimulatorHandle } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

/**
 * Two instances in VPC vpc-0f (198.51.100.0/24, 2001:db8:300::/56), with every attribute the filters read
 * set on some item and left at EC2's default on another:
 * - subnet-0nodes 198.51.100.0/26 (us-east-1a, tag Name=nodes), subnet-0multus 198.51.100.64/26 (us-east-1a,
 *   2001:db8:300:1::/64, tag tier=multus), subnet-0other 198.51.100.128/25 (us-east-1b = use1-az6,
 *   2001:db8:300:2::/64, default for its zone, public IPs, DNS64, resource-name hostnames);
 * - i-0a (m5.large, tags Name=worker-a role=worker): eni-0a0 (device 0, subnet-0nodes, 198.51.100.10, all
 *   defaults) and eni-0a1 (device 1, subnet-0multus, 198.51.100.70 + .71, 2001:db8:300:1::71, in sg-0pods and
 *   sg-0nodes, no source/dest check, described, requested by AROAEXAMPLE:i-0a, tagged no_manage);
 * - i-0b (m6g.large, arm64, own image, launched 2025-06-01T12:00:00Z, no tags): eni-0b0 (device 0,
 *   subnet-0other, 198.51.100.140, efa, requester-managed, kept on termination, sg-0nodes) and eni-0b1
 *   (device 1, IPv6 only: 2001:db8:300:2::10, tag team=blue);
 * - Elastic IPs eipalloc-0a (203.0.113.10, on eni-0a1's 198.51.100.71, tag Name=web), eipalloc-0b
 *   (203.0.113.11, on eni-0b0's 198.51.100.140) and eipalloc-0c (203.0.113.12, not associated, tag team=blue).
 */
const filterWorld = parseWorld({
  region: "us-east-1",
  // Some 200 DescribeInstances calls in a row: more than EC2's bucket of 100 allows.
  faults: { throttleScale: 10 },
  vpc: { id: "vpc-0f", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:300::/56" },
  securityGroups: [
    { id: "sg-0nodes", name: "eks-nodes" },
    { id: "sg-0pods", name: "multus-pods" },
  ],
  subnets: [
    { id: "subnet-0nodes", cidr: "198.51.100.0/26", availabilityZone: "us-east-1a", tags: { Name: "nodes" } },
    {
      id: "subnet-0multus",
      cidr: "198.51.100.64/26",
      ipv6Cidr: "2001:db8:300:1::/64",
      availabilityZone: "us-east-1a",
      tags: { tier: "multus" },
    },
    {
      id: "subnet-0other",
      cidr: "198.51.100.128/25",
      ipv6Cidr: "2001:db8:300:2::/64",
      availabilityZone: "us-east-1b",
      availabilityZoneId: "use1-az6",
      defaultForAz: true,
      mapPublicIpOnLaunch: true,
      enableDns64: true,
      privateDnsNameOptionsOnLaunch: {
        hostnameType: "resource-name",
        enableResourceNameDnsARecord: true,
        enableResourceNameDnsAAAARecord: true,
      },
    },
  ],
  instances: [
    {
      id: "i-0a",
      instanceType: "m5.large",
      tags: { Name: "worker-a", role: "worker" },
      enis: [
        {
          id: "eni-0a0",
          mac: "02:00:00:00:0a:00",
          deviceIndex: 0,
          subnet: "subnet-0nodes",
          primaryIpv4: "198.51.100.10",
        },
        {
          id: "eni-0a1",
          mac: "02:00:00:00:0a:01",
          deviceIndex: 1,
          subnet: "subnet-0multus",
          primaryIpv4: "198.51.100.70",
          secondaryIpv4s: ["198.51.100.71"],
          ipv6s: ["2001:db8:300:1::71"],
          ipv4Prefixes: ["198.51.100.96/28"],
          description: "multus net1",
          securityGroups: ["sg-0pods", "sg-0nodes"],
          sourceDestCheck: false,
          requesterId: "AROAEXAMPLE:i-0a",
          tags: { "node.k8s.amazonaws.com/no_manage": "true" },
        },
      ],
    },
    {
      id: "i-0b",
      instanceType: "m6g.large",
      ipv4AddressesPerEni: 10,
      architecture: "arm64",
      imageId: "ami-0b0b0b0b",
      launchTime: "2025-06-01T12:00:00Z",
      enis: [
        {
          id: "eni-0b0",
          mac: "02:00:00:00:0b:00",
          deviceIndex: 0,
          subnet: "subnet-0other",
          primaryIpv4: "198.51.100.140",
          securityGroups: ["sg-0nodes"],
          interfaceType: "efa",
          requesterManaged: true,
          deleteOnTermination: false,
        },
        {
          id: "eni-0b1",
          mac: "02:00:00:00:0b:01",
          deviceIndex: 1,
          subnet: "subnet-0other",
          ipv6s: ["2001:db8:300:2::10"],
          ipv6Prefixes: ["2001:db8:300:2:1::/80"],
          tags: { team: "blue" },
        },
      ],
    },
  ],
  elasticIps: [
    {
      allocationId: "eipalloc-0a",
      publicIp: "203.0.113.10",
      association: { eni: "eni-0a1", privateIp: "198.51.100.71" },
      tags: { Name: "web" },
    },
    {
      allocationId: "eipalloc-0b",
      publicIp: "203.0.113.11",
      association: { eni: "eni-0b0", privateIp: "198.51.100.140" },
    },
    { allocationId: "eipalloc-0c", publicIp: "203.0.113.12", tags: { team: "blue" } },
  ],
});

const ACCOUNT = "123456789012";
const ALL_ENIS = ["eni-0a0", "eni-0a1", "eni-0b0", "eni-0b1"];
const ALL_SUBNETS = ["subnet-0nodes", "subnet-0multus", "subnet-0other"];
const ALL_INSTANCES = ["i-0a", "i-0b"];
const ALL_ADDRESSES = ["eipalloc-0a", "eipalloc-0b", "eipalloc-0c"];

let sim: SimulatorHandle;
let ec2: EC2Client;

beforeAll(async () => {
  ({ sim, ec2 } = await startWithEc2(filterWorld));
});
afterAll(() => stopWithEc2(sim, ec2));

const eniIds = async (filters: Filter[]): Promise<string[]> =>
  ((await ec2.send(new DescribeNetworkInterfacesCommand({ Filters: filters }))).NetworkInterfaces ?? []).map(
    (n) => n.NetworkInterfaceId ?? "",
  );
const subnetIds = async (filters: Filter[]): Promise<string[]> =>
  ((await ec2.send(new DescribeSubnetsCommand({ Filters: filters }))).Subnets ?? []).map(
    (s) => s.SubnetId ?? "",
  );
const instanceIds = async (filters: Filter[]): Promise<string[]> =>
  ((await ec2.send(new DescribeInstancesCommand({ Filters: filters }))).Reservations ?? []).flatMap((r) =>
    (r.Instances ?? []).map((i) => i.InstanceId ?? ""),
  );

const addressIds = async (filters: Filter[]): Promise<string[]> =>
  ((await ec2.send(new DescribeAddressesCommand({ Filters: filters }))).Addresses ?? []).map(
    (a) => a.AllocationId ?? "",
  );

/** [filter name, values, the ids expected, in the call's order]. */
type Row = [string, string[], string[]];

const eniRows: Row[] = [
  ["addresses.primary", ["false"], ["eni-0a1"]],
  ["addresses.primary", ["true"], ["eni-0a0", "eni-0a1", "eni-0b0"]],
  ["addresses.private-ip-address", ["198.51.100.71"], ["eni-0a1"]],
  ["addresses.private-ip-address", ["198.51.100.99"], []],
  ["attachment.attach-time", ["2024-01-01T00:00:00.000Z"], ["eni-0a0", "eni-0a1"]],
  ["attachment.attach-time", ["2025-06-01T*"], ["eni-0b0", "eni-0b1"]],
  ["attachment.attachment-id", ["eni-attach-0a1"], ["eni-0a1"]],
  ["attachment.attachment-id", ["eni-attach-0zz"], []],
  ["attachment.delete-on-termination", ["true"], ["eni-0a0"]],
  ["attachment.delete-on-termination", ["false"], ["eni-0a1", "eni-0b0", "eni-0b1"]],
  ["attachment.device-index", ["1"], ["eni-0a1", "eni-0b1"]],
  ["attachment.device-index", ["2"], []],
  ["attachment.instance-id", ["i-0b"], ["eni-0b0", "eni-0b1"]],
  ["attachment.instance-id", ["i-0zz"], []],
  ["attachment.instance-owner-id", [ACCOUNT], ALL_ENIS],
  ["attachment.instance-owner-id", ["210987654321"], []],
  ["attachment.status", ["attached"], ALL_ENIS],
  ["attachment.status", ["detached"], []],
  ["availability-zone", ["us-east-1b"], ["eni-0b0", "eni-0b1"]],
  ["availability-zone", ["us-east-1c"], []],
  ["availability-zone-id", ["use1-az1"], ["eni-0a0", "eni-0a1"]],
  ["availability-zone-id", ["use1-az2"], []],
  ["description", ["multus*"], ["eni-0a1"]],
  ["description", ["nothing"], []],
  ["group-id", ["sg-0pods"], ["eni-0a1"]],
  ["group-id", ["sg-0f"], ["eni-0a0", "eni-0b1"]],
  ["group-id", ["sg-0zz"], []],
  ["interface-type", ["efa"], ["eni-0b0"]],
  ["interface-type", ["trunk"], []],
  ["ipv6-addresses.ipv6-address", ["2001:DB8:300:1:0::71"], ["eni-0a1"]],
  ["ipv6-addresses.ipv6-address", ["2001:db8:300:1::99"], []],
  ["mac-address", ["02:00:00:00:0b:*"], ["eni-0b0", "eni-0b1"]],
  ["mac-address", ["02:00:00:00:ff:ff"], []],
  ["network-interface-id", ["eni-0a0", "eni-0b1"], ["eni-0a0", "eni-0b1"]],
  ["network-interface-id", ["eni-0zz"], []],
  ["owner-id", [ACCOUNT], ALL_ENIS],
  ["owner-id", ["210987654321"], []],
  ["private-dns-name", ["ip-198-51-100-70.ec2.internal"], ["eni-0a1"]],
  // The ENI's name is its primary address's; a secondary's name is in addresses only.
  ["private-dns-name", ["ip-198-51-100-71.ec2.internal"], []],
  // Documented as "the private IPv4 address or addresses": secondaries count, as for addresses.*.
  ["private-ip-address", ["198.51.100.71"], ["eni-0a1"]],
  ["private-ip-address", ["198.51.100.10", "198.51.100.140"], ["eni-0a0", "eni-0b0"]],
  ["private-ip-address", ["198.51.100.99"], []],
  ["requester-id", ["AROAEXAMPLE:*"], ["eni-0a1"]],
  ["requester-id", ["AROAOTHER"], []],
  ["requester-managed", ["true"], ["eni-0b0"]],
  ["requester-managed", ["false"], ["eni-0a0", "eni-0a1", "eni-0b1"]],
  ["source-dest-check", ["false"], ["eni-0a1"]],
  ["source-dest-check", ["true"], ["eni-0a0", "eni-0b0", "eni-0b1"]],
  ["status", ["in-use"], ALL_ENIS],
  ["status", ["available"], []],
  ["subnet-id", ["subnet-0other"], ["eni-0b0", "eni-0b1"]],
  ["subnet-id", ["subnet-0zz"], []],
  ["tag:node.k8s.amazonaws.com/no_manage", ["true"], ["eni-0a1"]],
  ["tag:node.k8s.amazonaws.com/no_manage", ["false"], []],
  ["tag-key", ["team"], ["eni-0b1"]],
  ["tag-key", ["colour"], []],
  ["vpc-id", ["vpc-0f"], ALL_ENIS],
  ["vpc-id", ["vpc-0other"], []],
];

const eniUnsupported = [
  "addresses.association.owner-id",
  "addresses.association.public-ip",
  "association.allocation-id",
  "association.association-id",
  "association.ip-owner-id",
  "association.public-dns-name",
  "association.public-ip",
  "operator.managed",
  "operator.principal",
];

const subnetRows: Row[] = [
  ["availability-zone", ["us-east-1a"], ["subnet-0nodes", "subnet-0multus"]],
  ["availability-zone", ["us-east-1c"], []],
  ["availabilityZone", ["us-east-1b"], ["subnet-0other"]],
  ["availabilityZone", ["us-east-1c"], []],
  ["availability-zone-id", ["use1-az6"], ["subnet-0other"]],
  ["availability-zone-id", ["use1-az2"], []],
  ["availabilityZoneId", ["use1-az1"], ["subnet-0nodes", "subnet-0multus"]],
  ["availabilityZoneId", ["use1-az2"], []],
  // 64 or 128, less AWS's five, less the addresses held: .10; .70 and .71; .140.
  ["available-ip-address-count", ["57"], ["subnet-0multus"]],
  ["available-ip-address-count", ["58", "122"], ["subnet-0nodes", "subnet-0other"]],
  ["available-ip-address-count", ["1000"], []],
  ["cidr-block", ["198.51.100.64/26"], ["subnet-0multus"]],
  ["cidr-block", ["198.51.100.64/27"], []],
  ["cidr", ["198.51.100.0/26"], ["subnet-0nodes"]],
  ["cidr", ["198.51.100.0/24"], []],
  ["cidrBlock", ["198.51.100.128/25"], ["subnet-0other"]],
  ["cidrBlock", ["198.51.100.128/26"], []],
  ["default-for-az", ["true"], ["subnet-0other"]],
  ["default-for-az", ["false"], ["subnet-0nodes", "subnet-0multus"]],
  ["defaultForAz", ["true"], ["subnet-0other"]],
  ["defaultForAz", ["false"], ["subnet-0nodes", "subnet-0multus"]],
  ["enable-dns64", ["true"], ["subnet-0other"]],
  ["enable-dns64", ["false"], ["subnet-0nodes", "subnet-0multus"]],
  ["ipv6-cidr-block-association.association-id", ["subnet-cidr-assoc-0multus"], ["subnet-0multus"]],
  ["ipv6-cidr-block-association.association-id", ["subnet-cidr-assoc-0nodes"], []],
  ["ipv6-cidr-block-association.ipv6-cidr-block", ["2001:db8:300:1::/64"], ["subnet-0multus"]],
  ["ipv6-cidr-block-association.ipv6-cidr-block", ["2001:db8:300:9::/64"], []],
  ["ipv6-cidr-block-association.state", ["associated"], ["subnet-0multus", "subnet-0other"]],
  ["ipv6-cidr-block-association.state", ["disassociated"], []],
  ["ipv6-native", ["false"], ALL_SUBNETS],
  ["ipv6-native", ["true"], []],
  ["map-customer-owned-ip-on-launch", ["false"], ALL_SUBNETS],
  ["map-customer-owned-ip-on-launch", ["true"], []],
  ["map-public-ip-on-launch", ["true"], ["subnet-0other"]],
  ["map-public-ip-on-launch", ["false"], ["subnet-0nodes", "subnet-0multus"]],
  ["owner-id", [ACCOUNT], ALL_SUBNETS],
  ["owner-id", ["210987654321"], []],
  ["private-dns-name-options-on-launch.enable-resource-name-dns-a-record", ["true"], ["subnet-0other"]],
  [
    "private-dns-name-options-on-launch.enable-resource-name-dns-a-record",
    ["false"],
    ["subnet-0nodes", "subnet-0multus"],
  ],
  ["private-dns-name-options-on-launch.enable-resource-name-dns-aaaa-record", ["true"], ["subnet-0other"]],
  [
    "private-dns-name-options-on-launch.enable-resource-name-dns-aaaa-record",
    ["false"],
    ["subnet-0nodes", "subnet-0multus"],
  ],
  ["private-dns-name-options-on-launch.hostname-type", ["resource-name"], ["subnet-0other"]],
  ["private-dns-name-options-on-launch.hostname-type", ["ip-name"], ["subnet-0nodes", "subnet-0multus"]],
  ["state", ["available"], ALL_SUBNETS],
  ["state", ["pending"], []],
  ["subnet-arn", [`arn:aws:ec2:us-east-1:${ACCOUNT}:subnet/subnet-0nodes`], ["subnet-0nodes"]],
  ["subnet-arn", ["arn:aws:ec2:us-west-2:*"], []],
  ["subnet-id", ["subnet-0nodes", "subnet-0other"], ["subnet-0nodes", "subnet-0other"]],
  ["subnet-id", ["subnet-0zz"], []],
  ["tag:Name", ["nodes"], ["subnet-0nodes"]],
  ["tag:Name", ["multus"], []],
  ["tag-key", ["Name", "tier"], ["subnet-0nodes", "subnet-0multus"]],
  ["tag-key", ["colour"], []],
  ["vpc-id", ["vpc-0f"], ALL_SUBNETS],
  ["vpc-id", ["vpc-0other"], []],
];

const subnetUnsupported = ["customer-owned-ipv4-pool", "enable-lni-at-device-index", "outpost-arn"];

const instanceRows: Row[] = [
  ["architecture", ["arm64"], ["i-0b"]],
  ["architecture", ["i386"], []],
  ["availability-zone", ["us-east-1a"], ["i-0a"]],
  ["availability-zone", ["us-east-1c"], []],
  ["availability-zone-id", ["use1-az6"], ["i-0b"]],
  ["availability-zone-id", ["use1-az2"], []],
  ["image-id", ["ami-0b0b0b0b"], ["i-0b"]],
  ["image-id", ["ami-0zz"], []],
  ["instance-id", ["i-0a"], ["i-0a"]],
  ["instance-id", ["i-0zz"], []],
  ["instance-state-code", ["16"], ALL_INSTANCES],
  ["instance-state-code", ["80"], []],
  ["instance-state-name", ["running"], ALL_INSTANCES],
  ["instance-state-name", ["stopped"], []],
  ["instance-type", ["m6g.large"], ["i-0b"]],
  ["instance-type", ["t3.nano"], []],
  ["instance.group-id", ["sg-0nodes"], ["i-0b"]],
  // An instance's groups are its primary ENI's: sg-0pods is on i-0a's device 1 only.
  ["instance.group-id", ["sg-0pods"], []],
  ["instance.group-name", ["default"], ["i-0a"]],
  ["instance.group-name", ["multus-pods"], []],
  ["ipv6-address", ["2001:db8:300:2::10"], ["i-0b"]],
  ["ipv6-address", ["2001:db8:300:1::99"], []],
  ["launch-time", ["2025-06-01T*"], ["i-0b"]],
  ["launch-time", ["2023-*"], []],
  ["metadata-options.http-endpoint", ["enabled"], ALL_INSTANCES],
  ["metadata-options.http-endpoint", ["disabled"], []],
  ["metadata-options.http-tokens", ["required"], ALL_INSTANCES],
  ["metadata-options.http-tokens", ["optional"], []],
  ["metadata-options.state", ["applied"], ALL_INSTANCES],
  ["metadata-options.state", ["pending"], []],
  ["owner-id", [ACCOUNT], ALL_INSTANCES],
  ["owner-id", ["210987654321"], []],
  ["private-dns-name", ["i-0b.ec2.internal"], ["i-0b"]],
  ["private-dns-name", ["ip-198-51-100-10.ec2.internal"], ["i-0a"]],
  ["private-dns-name", ["ip-198-51-100-70.ec2.internal"], []],
  ["private-dns-name-options.enable-resource-name-dns-a-record", ["true"], ["i-0b"]],
  ["private-dns-name-options.enable-resource-name-dns-a-record", ["false"], ["i-0a"]],
  ["private-dns-name-options.enable-resource-name-dns-aaaa-record", ["true"], ["i-0b"]],
  ["private-dns-name-options.enable-resource-name-dns-aaaa-record", ["false"], ["i-0a"]],
  ["private-dns-name-options.hostname-type", ["resource-name"], ["i-0b"]],
  ["private-dns-name-options.hostname-type", ["ip-name"], ["i-0a"]],
  ["private-ip-address", ["198.51.100.10"], ["i-0a"]],
  // Documented: the primary address of the primary ENI only.
  ["private-ip-address", ["198.51.100.70"], []],
  ["reservation-id", ["r-0a"], ["i-0a"]],
  ["reservation-id", ["r-0zz"], []],
  ["source-dest-check", ["true"], ALL_INSTANCES],
  ["source-dest-check", ["false"], []],
  ["subnet-id", ["subnet-0nodes"], ["i-0a"]],
  ["subnet-id", ["subnet-0multus"], []],
  ["tag:role", ["worker"], ["i-0a"]],
  ["tag:role", ["db"], []],
  ["tag-key", ["Name"], ["i-0a"]],
  // team is a tag of an ENI, not of an instance.
  ["tag-key", ["team"], []],
  ["tenancy", ["default"], ALL_INSTANCES],
  ["tenancy", ["dedicated"], []],
  ["vpc-id", ["vpc-0f"], ALL_INSTANCES],
  ["vpc-id", ["vpc-0other"], []],
  ["network-interface.addresses.primary", ["false"], ["i-0a"]],
  ["network-interface.addresses.primary", ["true"], ALL_INSTANCES],
  ["network-interface.addresses.private-dns-name", ["ip-198-51-100-71.ec2.internal"], ["i-0a"]],
  ["network-interface.addresses.private-dns-name", ["ip-198-51-100-99.ec2.internal"], []],
  ["network-interface.addresses.private-ip-address", ["198.51.100.71"], ["i-0a"]],
  ["network-interface.addresses.private-ip-address", ["198.51.100.99"], []],
  ["network-interface.attachment.attach-time", ["2025-06-01T12:00:00.000Z"], ["i-0b"]],
  ["network-interface.attachment.attach-time", ["2023*"], []],
  ["network-interface.attachment.attachment-id", ["eni-attach-0b1"], ["i-0b"]],
  ["network-interface.attachment.attachment-id", ["eni-attach-0zz"], []],
  ["network-interface.attachment.delete-on-termination", ["true"], ["i-0a"]],
  ["network-interface.attachment.delete-on-termination", ["false"], ALL_INSTANCES],
  ["network-interface.attachment.device-index", ["1"], ALL_INSTANCES],
  ["network-interface.attachment.device-index", ["2"], []],
  ["network-interface.attachment.instance-id", ["i-0a"], ["i-0a"]],
  ["network-interface.attachment.instance-id", ["i-0zz"], []],
  ["network-interface.attachment.instance-owner-id", [ACCOUNT], ALL_INSTANCES],
  ["network-interface.attachment.instance-owner-id", ["210987654321"], []],
  ["network-interface.attachment.network-card-index", ["0"], ALL_INSTANCES],
  ["network-interface.attachment.network-card-index", ["1"], []],
  ["network-interface.attachment.status", ["attached"], ALL_INSTANCES],
  ["network-interface.attachment.status", ["detached"], []],
  ["network-interface.availability-zone", ["us-east-1b"], ["i-0b"]],
  ["network-interface.availability-zone", ["us-east-1c"], []],
  ["network-interface.description", ["multus*"], ["i-0a"]],
  ["network-interface.description", ["nothing"], []],
  ["network-interface.group-id", ["sg-0pods"], ["i-0a"]],
  ["network-interface.group-id", ["sg-0zz"], []],
  ["network-interface.group-name", ["multus-pods"], ["i-0a"]],
  ["network-interface.group-name", ["nope"], []],
  ["network-interface.ipv4-prefixes.ipv4-prefix", ["198.51.100.96/28"], ["i-0a"]],
  ["network-interface.ipv4-prefixes.ipv4-prefix", ["198.51.100.112/28"], []],
  ["network-interface.ipv6-prefixes.ipv6-prefix", ["2001:db8:300:2:1::/80"], ["i-0b"]],
  ["network-interface.ipv6-prefixes.ipv6-prefix", ["2001:db8:300:2:2::/80"], []],
  ["network-interface.ipv6-address", ["2001:db8:300:1::71"], ["i-0a"]],
  ["network-interface.ipv6-address", ["2001:db8:300:1::99"], []],
  ["network-interface.ipv6-addresses.ipv6-address", ["2001:db8:300:2::10"], ["i-0b"]],
  ["network-interface.ipv6-addresses.ipv6-address", ["2001:db8:300:2::99"], []],
  ["network-interface.ipv6-addresses.is-primary-ipv6", ["false"], ALL_INSTANCES],
  ["network-interface.ipv6-addresses.is-primary-ipv6", ["true"], []],
  ["network-interface.ipv6-native", ["true"], ["i-0b"]],
  ["network-interface.ipv6-native", ["false"], ALL_INSTANCES],
  ["network-interface.mac-address", ["02:00:00:00:0b:01"], ["i-0b"]],
  ["network-interface.mac-address", ["02:00:00:00:ff:ff"], []],
  ["network-interface.network-interface-id", ["eni-0a1"], ["i-0a"]],
  ["network-interface.network-interface-id", ["eni-0zz"], []],
  ["network-interface.owner-id", [ACCOUNT], ALL_INSTANCES],
  ["network-interface.owner-id", ["210987654321"], []],
  ["network-interface.private-dns-name", ["ip-198-51-100-70.ec2.internal"], ["i-0a"]],
  ["network-interface.private-dns-name", ["ip-198-51-100-71.ec2.internal"], []],
  ["network-interface.private-ip-address", ["198.51.100.70"], ["i-0a"]],
  // Documented as "the private IPv4 address": the ENI's primary, not its secondaries.
  ["network-interface.private-ip-address", ["198.51.100.71"], []],
  ["network-interface.requester-id", ["AROA*"], ["i-0a"]],
  ["network-interface.requester-id", ["nope"], []],
  ["network-interface.requester-managed", ["true"], ["i-0b"]],
  ["network-interface.requester-managed", ["false"], ALL_INSTANCES],
  ["network-interface.source-dest-check", ["false"], ["i-0a"]],
  ["network-interface.source-dest-check", ["true"], ALL_INSTANCES],
  ["network-interface.status", ["in-use"], ALL_INSTANCES],
  ["network-interface.status", ["available"], []],
  ["network-interface.subnet-id", ["subnet-0multus"], ["i-0a"]],
  ["network-interface.subnet-id", ["subnet-0zz"], []],
  ["network-interface.tag-key", ["team"], ["i-0b"]],
  ["network-interface.tag-key", ["colour"], []],
  ["network-interface.tag-value", ["true"], ["i-0a"]],
  ["network-interface.tag-value", ["red"], []],
  ["network-interface.vpc-id", ["vpc-0f"], ALL_INSTANCES],
  ["network-interface.vpc-id", ["vpc-0other"], []],
];

const instanceUnsupported = [
  "affinity",
  "block-device-mapping.attach-time",
  "block-device-mapping.delete-on-termination",
  "block-device-mapping.device-name",
  "block-device-mapping.status",
  "block-device-mapping.volume-id",
  "boot-mode",
  "capacity-reservation-id",
  "capacity-reservation-specification.capacity-reservation-preference",
  "capacity-reservation-specification.capacity-reservation-target.capacity-reservation-id",
  "capacity-reservation-specification.capacity-reservation-target.capacity-reservation-resource-group-arn",
  "client-token",
  "current-instance-boot-mode",
  "dns-name",
  "ebs-optimized",
  "ena-support",
  "enclave-options.enabled",
  "hibernation-options.configured",
  "host-id",
  "hypervisor",
  "iam-instance-profile.arn",
  "iam-instance-profile.id",
  "instance-lifecycle",
  "ip-address",
  "kernel-id",
  "key-name",
  "launch-index",
  "maintenance-options.auto-recovery",
  "metadata-options.http-protocol-ipv4",
  "metadata-options.http-protocol-ipv6",
  "metadata-options.http-put-response-hop-limit",
  "metadata-options.instance-metadata-tags",
  "monitoring-state",
  "network-interface.addresses.association.allocation-id",
  "network-interface.addresses.association.association-id",
  "network-interface.addresses.association.carrier-ip",
  "network-interface.addresses.association.customer-owned-ip",
  "network-interface.addresses.association.ip-owner-id",
  "network-interface.addresses.association.public-dns-name",
  "network-interface.addresses.association.public-ip",
  "network-interface.association.allocation-id",
  "network-interface.association.association-id",
  "network-interface.association.carrier-ip",
  "network-interface.association.customer-owned-ip",
  "network-interface.association.ip-owner-id",
  "network-interface.association.public-dns-name",
  "network-interface.association.public-ip",
  "network-interface.deny-all-igw-traffic",
  "network-interface.operator.managed",
  "network-interface.operator.principal",
  "network-interface.outpost-arn",
  "network-interface.public-dns-name",
  "network-performance-options.bandwidth-weighting",
  "operator.managed",
  "operator.principal",
  "outpost-arn",
  "placement-group-name",
  "placement-partition-number",
  "platform",
  "platform-details",
  "product-code",
  "product-code.type",
  "ramdisk-id",
  "reason",
  "requester-id",
  "root-device-name",
  "root-device-type",
  "spot-instance-request-id",
  "state-reason-code",
  "state-reason-message",
  "tpm-support",
  "usage-operation",
  "usage-operation-update-time",
  "virtualization-type",
];

/** Association ids are numbered in world order: the filter world has no reservation before them. */
const addressRows: Row[] = [
  ["allocation-id", ["eipalloc-0a", "eipalloc-0c"], ["eipalloc-0a", "eipalloc-0c"]],
  ["allocation-id", ["eipalloc-0zz"], []],
  ["association-id", ["eipassoc-00000000000000002"], ["eipalloc-0b"]],
  ["association-id", ["eipassoc-0zz"], []],
  // Older references document it; every address is in the VPC domain.
  ["domain", ["vpc"], ALL_ADDRESSES],
  ["domain", ["standard"], []],
  ["instance-id", ["i-0a"], ["eipalloc-0a"]],
  ["instance-id", ["i-0zz"], []],
  ["network-border-group", ["us-east-1"], ALL_ADDRESSES],
  ["network-border-group", ["us-west-2"], []],
  ["network-interface-id", ["eni-0b0"], ["eipalloc-0b"]],
  ["network-interface-id", ["eni-0a0"], []],
  // Only an associated address has an owner of its network interface.
  ["network-interface-owner-id", [ACCOUNT], ["eipalloc-0a", "eipalloc-0b"]],
  ["network-interface-owner-id", ["210987654321"], []],
  ["private-ip-address", ["198.51.100.71"], ["eipalloc-0a"]],
  ["private-ip-address", ["198.51.100.70"], []],
  ["public-ip", ["203.0.113.1?"], ALL_ADDRESSES],
  ["public-ip", ["203.0.113.12"], ["eipalloc-0c"]],
  ["public-ip", ["203.0.113.99"], []],
  ["tag:Name", ["web"], ["eipalloc-0a"]],
  ["tag:Name", ["db"], []],
  ["tag-key", ["team"], ["eipalloc-0c"]],
  ["tag-key", ["colour"], []],
];

const calls = [
  {
    call: "DescribeNetworkInterfaces",
    ids: eniIds,
    all: ALL_ENIS,
    rows: eniRows,
    unsupported: eniUnsupported,
    documented: documentedNetworkInterfaceFilters,
    modelled: Object.keys(networkInterfaceFilters.fields),
  },
  {
    call: "DescribeSubnets",
    ids: subnetIds,
    all: ALL_SUBNETS,
    rows: subnetRows,
    unsupported: subnetUnsupported,
    documented: documentedSubnetFilters,
    modelled: Object.keys(subnetFilters.fields),
  },
  {
    call: "DescribeInstances",
    ids: instanceIds,
    all: ALL_INSTANCES,
    rows: instanceRows,
    unsupported: instanceUnsupported,
    documented: documentedInstanceFilters,
    modelled: Object.keys(instanceFilters.fields),
  },
  {
    call: "DescribeAddresses",
    ids: addressIds,
    all: ALL_ADDRESSES,
    rows: addressRows,
    unsupported: [],
    // `domain`: no longer in the SDK's comment (see documentedAddressFilters), still answered.
    documented: [...documentedAddressFilters, "domain"],
    modelled: Object.keys(addressFilters.fields),
  },
] as const;

/** `tag:KEY` rows stand for the documented `tag:`. */
const documentedNameOf = (name: string): string => (name.startsWith("tag:") ? "tag:" : name);

describe.each(calls)("$call filters", ({ call, ids, all, rows, unsupported, documented, modelled }) => {
  it.each(rows)("%s = %j gives %j", async (name, values, expected) => {
    expect(await ids([{ Name: name, Values: values }])).toEqual(expected);
  });

  it.each(unsupported)("%s is documented but not modelled: UnsupportedOperation, naming it", async (name) => {
    expect(await ec2Failure(ids([{ Name: name, Values: ["x"] }]))).toEqual({
      code: "UnsupportedOperation",
      message: `The filter '${name}' is documented by EC2 but not modelled by multus-ipmgr sim`,
      status: 400,
    });
  });

  it("refuses an undocumented filter name as EC2 does", async () => {
    expect(await ec2Failure(ids([{ Name: "colour", Values: ["blue"] }]))).toEqual({
      code: "InvalidParameterValue",
      message: "The filter 'colour' is invalid",
      status: 400,
    });
  });

  it("covers every documented filter: a row that matches and a row that leaves an item out, or UnsupportedOperation", () => {
    const tested = new Set(rows.map(([name]) => documentedNameOf(name)));
    expect(new Set([...tested, ...unsupported])).toEqual(new Set(documented));
    expect(tested.size + unsupported.length).toBe(documented.length);
    for (const name of tested) {
      const mine = rows.filter(([n]) => documentedNameOf(n) === name);
      expect(
        mine.some(([, , expected]) => expected.length > 0),
        `${name} has a matching row`,
      ).toBe(true);
      expect(
        mine.some(([, , expected]) => expected.length < all.length),
        `${name} has a row leaving an item out`,
      ).toBe(true);
    }
    // What the handler models is exactly what the rows test: nothing undocumented, nothing untested.
    expect(new Set([...modelled, ...(documented.includes("tag:") ? ["tag:"] : [])])).toEqual(tested);
    expect(call).toMatch(/^Describe/);
  });
});

describe("responses carry what the filters read", () => {
  it("DescribeNetworkInterfaces: description, groups, DNS names, requester, source/dest check, attach time, type", async () => {
    const out = await ec2.send(
      new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ["eni-0a1", "eni-0b0", "eni-0b1"] }),
    );
    const [a1, b0, b1] = out.NetworkInterfaces ?? [];
    expect(a1).toMatchObject({
      Description: "multus net1",
      OwnerId: ACCOUNT,
      AvailabilityZone: "us-east-1a",
      Groups: [
        { GroupId: "sg-0pods", GroupName: "multus-pods" },
        { GroupId: "sg-0nodes", GroupName: "eks-nodes" },
      ],
      RequesterId: "AROAEXAMPLE:i-0a",
      RequesterManaged: false,
      SourceDestCheck: false,
      Status: "in-use",
      PrivateDnsName: "ip-198-51-100-70.ec2.internal",
      PrivateIpAddresses: [
        { PrivateIpAddress: "198.51.100.70", PrivateDnsName: "ip-198-51-100-70.ec2.internal", Primary: true },
        {
          PrivateIpAddress: "198.51.100.71",
          PrivateDnsName: "ip-198-51-100-71.ec2.internal",
          Primary: false,
        },
      ],
      Attachment: {
        AttachmentId: "eni-attach-0a1",
        InstanceOwnerId: ACCOUNT,
        NetworkCardIndex: 0,
        AttachTime: new Date("2024-01-01T00:00:00.000Z"),
        DeleteOnTermination: false,
      },
      InterfaceType: "interface",
      Ipv6Native: false,
    });
    expect(b0).toMatchObject({
      Description: "",
      Groups: [{ GroupId: "sg-0nodes", GroupName: "eks-nodes" }],
      RequesterManaged: true,
      InterfaceType: "efa",
      Attachment: { AttachTime: new Date("2025-06-01T12:00:00.000Z"), DeleteOnTermination: false },
    });
    expect(b0?.RequesterId).toBeUndefined();
    expect(b1).toMatchObject({ Groups: [{ GroupId: "sg-0f", GroupName: "default" }], Ipv6Native: true });
    expect(b1?.PrivateDnsName).toBeUndefined();
  });

  it("DescribeSubnets: zone id, defaults, DNS64, hostname options, tags", async () => {
    const out = await ec2.send(new DescribeSubnetsCommand({ SubnetIds: ["subnet-0nodes", "subnet-0other"] }));
    expect(out.Subnets).toMatchObject([
      {
        SubnetId: "subnet-0nodes",
        AvailabilityZoneId: "use1-az1",
        AvailableIpAddressCount: 58,
        DefaultForAz: false,
        MapPublicIpOnLaunch: false,
        MapCustomerOwnedIpOnLaunch: false,
        EnableDns64: false,
        Ipv6Native: false,
        PrivateDnsNameOptionsOnLaunch: {
          HostnameType: "ip-name",
          EnableResourceNameDnsARecord: false,
          EnableResourceNameDnsAAAARecord: false,
        },
        Tags: [{ Key: "Name", Value: "nodes" }],
      },
      {
        SubnetId: "subnet-0other",
        SubnetArn: `arn:aws:ec2:us-east-1:${ACCOUNT}:subnet/subnet-0other`,
        AvailabilityZoneId: "use1-az6",
        DefaultForAz: true,
        MapPublicIpOnLaunch: true,
        EnableDns64: true,
        PrivateDnsNameOptionsOnLaunch: {
          HostnameType: "resource-name",
          EnableResourceNameDnsARecord: true,
          EnableResourceNameDnsAAAARecord: true,
        },
        Ipv6CidrBlockAssociationSet: [
          {
            Ipv6CidrBlock: "2001:db8:300:2::/64",
            AssociationId: "subnet-cidr-assoc-0other",
            Ipv6CidrBlockState: { State: "associated" },
          },
        ],
        Tags: [],
      },
    ]);
  });

  it("DescribeInstances: image, architecture, launch time, zone id, groups, DNS name and options, tags", async () => {
    const out = await ec2.send(new DescribeInstancesCommand({}));
    const [a, b] = (out.Reservations ?? []).map((r) => r.Instances?.[0]);
    expect(a).toMatchObject({
      ImageId: "ami-0123456789abcdef0",
      Architecture: "x86_64",
      LaunchTime: new Date("2024-01-01T00:00:00.000Z"),
      Placement: { AvailabilityZone: "us-east-1a", AvailabilityZoneId: "use1-az1", Tenancy: "default" },
      PrivateDnsName: "ip-198-51-100-10.ec2.internal",
      SecurityGroups: [{ GroupId: "sg-0f", GroupName: "default" }],
      SourceDestCheck: true,
      Tags: [
        { Key: "Name", Value: "worker-a" },
        { Key: "role", Value: "worker" },
      ],
      MetadataOptions: { State: "applied", HttpTokens: "required", HttpEndpoint: "enabled" },
      PrivateDnsNameOptions: { HostnameType: "ip-name" },
    });
    expect(a?.NetworkInterfaces?.[1]).toMatchObject({
      Description: "multus net1",
      Groups: [{ GroupId: "sg-0pods" }, { GroupId: "sg-0nodes" }],
      PrivateDnsName: "ip-198-51-100-70.ec2.internal",
      SourceDestCheck: false,
      Attachment: { AttachTime: new Date("2024-01-01T00:00:00.000Z"), DeleteOnTermination: false },
    });
    expect(b).toMatchObject({
      ImageId: "ami-0b0b0b0b",
      Architecture: "arm64",
      LaunchTime: new Date("2025-06-01T12:00:00.000Z"),
      PrivateDnsName: "i-0b.ec2.internal",
      PrivateDnsNameOptions: {
        HostnameType: "resource-name",
        EnableResourceNameDnsARecord: true,
        EnableResourceNameDnsAAAARecord: true,
      },
      Tags: [],
    });
    expect(b?.NetworkInterfaces?.[0]?.InterfaceType).toBe("efa");
  });
});

/**
 * The filter names in the doc comment of `Filters` on one request shape of the installed SDK. The comment is
 * HTML: `<li><p><code>name</code> - text</p></li>`, with aliases as "use <code>alias</code> as the filter
 * name" and `tag:KEY` written `<code>tag:<key></code>` or `<code>tag</code>:<key>`.
 */
function sdkDocumentedFilters(shape: string): string[] {
  const dir = join("node_modules", "@aws-sdk", "client-ec2", "dist-types", "models");
  const text = readdirSync(dir)
    .filter((f) => f.endsWith(".d.ts"))
    .map((f) => readFileSync(join(dir, f), "utf8"))
    .join("\n");
  const start = text.indexOf(`export interface ${shape} {`);
  expect(start, `${shape} in the SDK's models`).toBeGreaterThanOrEqual(0);
  const body = text.slice(start, text.indexOf("\n}\n", start));
  const doc = body.slice(body.lastIndexOf("/**", body.indexOf("Filters?")), body.indexOf("Filters?"));
  const flat = doc.replace(/\n\s*\*\s*/g, " ");
  const names: string[] = [];
  for (const item of flat.match(/<li>.*?<\/li>/g) ?? []) {
    const name = /<code>(.*?)<\/code>/.exec(item)?.[1];
    if (name === undefined) continue;
    names.push(name === "tag" || name.startsWith("tag:") ? "tag:" : name);
    for (const alias of item.matchAll(
      /use <code>([^<]+)<\/code> (?:or <code>([^<]+)<\/code> )?as the filter name/g,
    )) {
      names.push(...alias.slice(1).filter((a): a is string => a !== undefined));
    }
  }
  return names;
}

describe("the documented filter lists", () => {
  it.each([
    ["DescribeNetworkInterfacesRequest", documentedNetworkInterfaceFilters, ["availability-zone-id"]],
    ["DescribeSubnetsRequest", documentedSubnetFilters, []],
    ["DescribeInstancesRequest", documentedInstanceFilters, []],
    ["DescribeAddressesRequest", documentedAddressFilters, []],
    ["DescribeSecurityGroupsRequest", documentedSecurityGroupFilters, []],
  ])("match the doc comments of %s in the installed @aws-sdk/client-ec2", (shape, ours, newer) => {
    const sdk = sdkDocumentedFilters(shape);
    // Ours may list what newer SDK models document; every name the installed SDK documents is ours.
    expect([...ours].sort()).toEqual([...new Set([...sdk, ...newer])].sort());
  });
});
