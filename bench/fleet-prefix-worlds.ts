/**
 * The two prefix-mode fleets of bench/bridge-fleet-prefix.ts, one per family: the simulator's world, the
 * pods and what each node should end up holding. Each node is an m5.4xlarge with one Multus ENI (device 1,
 * eth1, tagged no_manage) whose whereabouts node slice, given by the simulator's stand-in for whereabouts'
 * node-slice controller (the first free slice to each node, nodes in name order), becomes one delegated prefix.
 *
 * - IPv6: 50 nodes × 100 pods on /80 slices of 2001:db8:300:1:100::/74 (64 slices).
 * - IPv4: 7 nodes × 14 pods on /28 slices of 198.51.100.128/25. Only documentation ranges may appear in
 *   benches, the simulator's VPC has one IPv4 CIDR, so one /24 holds every primary address and every slice:
 *   the range's eight /28s, the last of which holds the subnet's last address (AWS keeps it). The family
 *   bounds this fleet's size, not the bridge.
 */
import type { SimEni } from "../src/sim/sim-state.js";

export interface PrefixFleet {
  readonly family: 4 | 6;
  readonly nodes: number;
  readonly podsPerNode: number;
  /** The NAD's whereabouts range, also the bridges' IPMGR_ALLOWED_CIDRS. */
  readonly range: string;
  /** The action that assigns this family's prefixes. */
  readonly assignAction: "AssignPrivateIpAddresses" | "AssignIpv6Addresses";
  /** The world for `multus-ipmgr sim`, no pods. */
  world(): Record<string, unknown>;
  /** Pod i of node n: its address from the node's slice, in its network-status on the Multus ENI's MAC. */
  pod(n: number, i: number): Record<string, unknown>;
  nodeName(n: number): string;
  instanceOf(n: number): string;
  eniOf(n: number, device: number): string;
  macOf(n: number, device: number): string;
  /** The slice the node-slice controller gives node n. */
  sliceOf(n: number): string;
  /** This family's prefixes an ENI holds in the simulator's state. */
  prefixesOf(eni: SimEni): readonly string[];
}

const PODS_NAMESPACE = "cnf";
const NAD = "slices";
const hex = (n: number) => n.toString(16).padStart(2, "0");

/** What both fleets share: names, MACs, the primaries (from 198.51.100.4, two a node). */
function fleet(
  o: Pick<PrefixFleet, "family" | "nodes" | "podsPerNode" | "range" | "sliceOf" | "prefixesOf"> & {
    readonly tag: string;
    readonly macByte: string;
    readonly sliceSize: string;
    readonly subnetIpv6?: string;
    readonly vpcIpv6?: string;
    addressOf(n: number, i: number): string;
  },
): PrefixFleet {
  const nodeName = (n: number) => `node-${hex(n)}.ec2.internal`;
  const instanceOf = (n: number) => `i-0${o.tag}${hex(n)}`;
  const eniOf = (n: number, device: number) => `eni-0${o.tag}${hex(n)}${hex(device)}`;
  const macOf = (n: number, device: number) => `02:00:00:${o.macByte}:${hex(n)}:${hex(device)}`;
  /** Past the four addresses AWS keeps. */
  const primaryOf = (n: number, device: number) => `198.51.100.${4 + 2 * n + device}`;
  return {
    family: o.family,
    nodes: o.nodes,
    podsPerNode: o.podsPerNode,
    range: o.range,
    assignAction: o.family === 6 ? "AssignIpv6Addresses" : "AssignPrivateIpAddresses",
    sliceOf: o.sliceOf,
    prefixesOf: o.prefixesOf,
    nodeName,
    instanceOf,
    eniOf,
    macOf,
    world: () => ({
      region: "us-east-1",
      vpc: {
        id: `vpc-0${o.tag}`,
        cidr: "198.51.100.0/24",
        ...(o.vpcIpv6 === undefined ? {} : { ipv6Cidr: o.vpcIpv6 }),
      },
      subnets: [
        {
          id: `subnet-0${o.tag}`,
          cidr: "198.51.100.0/24",
          ...(o.subnetIpv6 === undefined ? {} : { ipv6Cidr: o.subnetIpv6 }),
          availabilityZone: "us-east-1a",
        },
      ],
      instances: Array.from({ length: o.nodes }, (_, n) => ({
        id: instanceOf(n),
        instanceType: "m5.4xlarge",
        enis: [0, 1].map((d) => ({
          id: eniOf(n, d),
          mac: macOf(n, d),
          deviceIndex: d,
          subnet: `subnet-0${o.tag}`,
          primaryIpv4: primaryOf(n, d),
          ...(d === 0 ? {} : { tags: { "node.k8s.amazonaws.com/no_manage": "true" } }),
        })),
      })),
      kubernetes: {
        namespaces: [PODS_NAMESPACE],
        nodes: Array.from({ length: o.nodes }, (_, n) => ({ instance: instanceOf(n), name: nodeName(n) })),
        networkAttachmentDefinitions: [
          {
            namespace: "kube-system",
            name: NAD,
            config: {
              cniVersion: "0.3.1",
              name: NAD,
              type: "ipvlan",
              master: "eth1",
              ipam: { type: "whereabouts", network_name: NAD, range: o.range, node_slice_size: o.sliceSize },
            },
          },
        ],
        pods: [],
      },
    }),
    pod: (n, i) => ({
      namespace: PODS_NAMESPACE,
      name: `pod-${n}-${i}`,
      nodeName: nodeName(n),
      networkStatus: [
        { name: "aws-cni", interface: "eth0", ips: [primaryOf(n, 0)], default: true },
        { name: `kube-system/${NAD}`, interface: "net1", ips: [o.addressOf(n, i)], mac: macOf(n, 1) },
      ],
    }),
  };
}

/** 50 nodes × 100 pods, each node's slice a /80 of 2001:db8:300:1:100::/74 (2001:db8:300:1:100::/80 on). */
export const ipv6Fleet: PrefixFleet = fleet({
  family: 6,
  tag: "slice",
  macByte: "02",
  nodes: 50,
  podsPerNode: 100,
  range: "2001:db8:300:1:100::/74",
  sliceSize: "/80",
  vpcIpv6: "2001:db8:300::/56",
  subnetIpv6: "2001:db8:300:1::/64",
  sliceOf: (n) => `2001:db8:300:1:${(0x100 + n).toString(16)}::/80`,
  addressOf: (n, i) => `2001:db8:300:1:${(0x100 + n).toString(16)}::${(i + 1).toString(16)}`,
  prefixesOf: (eni) => eni.ipv6Prefixes,
});

/** 7 nodes × 14 pods, each node's slice a /28 of 198.51.100.128/25 (198.51.100.128/28 on). */
export const ipv4Fleet: PrefixFleet = fleet({
  family: 4,
  tag: "slicev4",
  macByte: "03",
  nodes: 7,
  podsPerNode: 14,
  range: "198.51.100.128/25",
  sliceSize: "/28",
  sliceOf: (n) => `198.51.100.${128 + 16 * n}/28`,
  addressOf: (n, i) => `198.51.100.${128 + 16 * n + 1 + i}`,
  prefixesOf: (eni) => eni.ipv4Prefixes,
});
