/**
 * Worlds shared by the end-to-end tests, in VPC 198.51.100.0/24: subnet-a 198.51.100.0/26 and subnet-b
 * 198.51.100.64/26 hold the Multus ENIs (pod ranges .32/27 and .96/27), 198.51.100.128/25 the nodes' eth0.
 * Node 1 has two Multus ENIs in ONE subnet (subnet-a, so only the MAC can tell them apart) and one in
 * subnet-b. Node 2 has a Multus ENI in subnet-a. Documentation ranges only.
 */
export const MAC = {
  node1Eth0: "02:00:00:00:01:00",
  node1A1: "02:00:00:00:0a:01",
  node1A2: "02:00:00:00:0a:02",
  node1B1: "02:00:00:00:0b:01",
  node2Eth0: "02:00:00:00:02:00",
  node2A1: "02:00:00:00:2a:01",
  stranger: "02:00:00:00:ff:ff",
} as const;

export const ENI = {
  node1A1: "eni-0000000000000a001",
  node1A2: "eni-0000000000000a002",
  node1B1: "eni-0000000000000b001",
  node2A1: "eni-0000000000002a001",
} as const;

export const ALLOWED_CIDRS = [
  "198.51.100.32/27",
  "198.51.100.96/27",
  "2001:db8:100:1::100/120",
  "2001:db8:100:2::100/120",
].join(",");

const noManage = { "node.k8s.amazonaws.com/no_manage": "true" };

/** What an ENI holds at start besides its primary address: addresses, and delegated prefixes (/28, /80). */
export interface EniOverride {
  secondaryIpv4s?: string[];
  ipv6s?: string[];
  ipv4Prefixes?: string[];
  ipv6Prefixes?: string[];
}

export interface WorldOverrides {
  node1A1?: EniOverride;
  node1A2?: EniOverride;
  node2A1?: EniOverride;
}

/** The world-file keys of an override's prefixes, only those it sets. */
function prefixesOf(override: EniOverride | undefined): Record<string, string[]> {
  return {
    ...(override?.ipv4Prefixes === undefined ? {} : { ipv4Prefixes: override.ipv4Prefixes }),
    ...(override?.ipv6Prefixes === undefined ? {} : { ipv6Prefixes: override.ipv6Prefixes }),
  };
}

export function twoNodeWorld(overrides: WorldOverrides = {}): Record<string, unknown> {
  return {
    region: "us-east-1",
    vpc: { id: "vpc-0000000000000d0c5", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:100::/56" },
    subnets: [
      {
        id: "subnet-00000000000000e00",
        cidr: "198.51.100.0/26",
        ipv6Cidr: "2001:db8:100:1::/64",
        availabilityZone: "us-east-1a",
      },
      {
        id: "subnet-00000000000000b00",
        cidr: "198.51.100.64/26",
        ipv6Cidr: "2001:db8:100:2::/64",
        availabilityZone: "us-east-1a",
      },
      { id: "subnet-000000000000000e0", cidr: "198.51.100.128/25", availabilityZone: "us-east-1a" },
    ],
    instances: [
      {
        id: "i-00000000000000001",
        instanceType: "m5.xlarge",
        enis: [
          {
            id: "eni-00000000000000100",
            mac: MAC.node1Eth0,
            deviceIndex: 0,
            subnet: "subnet-000000000000000e0",
            primaryIpv4: "198.51.100.140",
          },
          {
            id: ENI.node1A1,
            mac: MAC.node1A1,
            deviceIndex: 1,
            subnet: "subnet-00000000000000e00",
            primaryIpv4: "198.51.100.11",
            secondaryIpv4s: overrides.node1A1?.secondaryIpv4s ?? [],
            ipv6s: overrides.node1A1?.ipv6s ?? [],
            ...prefixesOf(overrides.node1A1),
            tags: noManage,
          },
          {
            id: ENI.node1A2,
            mac: MAC.node1A2,
            deviceIndex: 2,
            subnet: "subnet-00000000000000e00",
            primaryIpv4: "198.51.100.12",
            ...prefixesOf(overrides.node1A2),
            tags: noManage,
          },
          {
            id: ENI.node1B1,
            mac: MAC.node1B1,
            deviceIndex: 3,
            subnet: "subnet-00000000000000b00",
            primaryIpv4: "198.51.100.70",
            tags: noManage,
          },
        ],
      },
      {
        id: "i-00000000000000002",
        instanceType: "m5.large",
        enis: [
          {
            id: "eni-00000000000000200",
            mac: MAC.node2Eth0,
            deviceIndex: 0,
            subnet: "subnet-000000000000000e0",
            primaryIpv4: "198.51.100.150",
          },
          {
            id: ENI.node2A1,
            mac: MAC.node2A1,
            deviceIndex: 1,
            subnet: "subnet-00000000000000e00",
            primaryIpv4: "198.51.100.21",
            secondaryIpv4s: overrides.node2A1?.secondaryIpv4s ?? [],
            ipv6s: overrides.node2A1?.ipv6s ?? [],
            ...prefixesOf(overrides.node2A1),
            tags: noManage,
          },
        ],
      },
    ],
  };
}

export const NODE1 = "i-00000000000000001";
export const NODE2 = "i-00000000000000002";

/**
 * An active/standby pair: two nodes with one Multus ENI each (node 1 eth1 = ENI.node1A1, node 2 eth1 =
 * ENI.node2A1), both in 198.51.100.0/25 and 2001:db8:100:1::/64, so a floating address can live on either.
 * The nodes' eth0 sit in 198.51.100.128/25.
 */
export function floatingPairWorld(
  options: {
    faults?: Record<string, unknown>;
    node2A1SecondaryIpv4s?: string[];
    /** Node 1's Multus ENI's secondary addresses. Default none. */
    node1A1SecondaryIpv4s?: string[];
    /** Node 1's Multus ENI's delegated IPv4 prefixes (/28), its whereabouts slice in prefix mode. Default none. */
    node1A1Ipv4Prefixes?: string[];
    /** Elastic IPs, in world-file form. Default none. */
    elasticIps?: unknown[];
  } = {},
): Record<string, unknown> {
  const multus = (
    id: string,
    mac: string,
    primaryIpv4: string,
    secondaryIpv4s: string[] = [],
    ipv4Prefixes: string[] = [],
  ) => ({
    id,
    mac,
    deviceIndex: 1,
    subnet: "subnet-0000000000000000a",
    primaryIpv4,
    secondaryIpv4s,
    ...(ipv4Prefixes.length === 0 ? {} : { ipv4Prefixes }),
    tags: noManage,
  });
  const eth0 = (id: string, mac: string, primaryIpv4: string) => ({
    id,
    mac,
    deviceIndex: 0,
    subnet: "subnet-0000000000000000e",
    primaryIpv4,
  });
  return {
    region: "us-east-1",
    vpc: { id: "vpc-0000000000000d0c5", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:100::/56" },
    subnets: [
      {
        id: "subnet-0000000000000000a",
        cidr: "198.51.100.0/25",
        ipv6Cidr: "2001:db8:100:1::/64",
        availabilityZone: "us-east-1a",
      },
      { id: "subnet-0000000000000000e", cidr: "198.51.100.128/25", availabilityZone: "us-east-1a" },
    ],
    instances: [
      {
        id: NODE1,
        instanceType: "m5.large",
        enis: [
          eth0("eni-00000000000000100", MAC.node1Eth0, "198.51.100.150"),
          multus(
            ENI.node1A1,
            MAC.node1A1,
            "198.51.100.11",
            options.node1A1SecondaryIpv4s,
            options.node1A1Ipv4Prefixes,
          ),
        ],
      },
      {
        id: NODE2,
        instanceType: "m5.large",
        enis: [
          eth0("eni-00000000000000200", MAC.node2Eth0, "198.51.100.160"),
          multus(ENI.node2A1, MAC.node2A1, "198.51.100.21", options.node2A1SecondaryIpv4s),
        ],
      },
    ],
    ...(options.faults === undefined ? {} : { faults: options.faults }),
    ...(options.elasticIps === undefined ? {} : { elasticIps: options.elasticIps }),
  };
}
