import type { Ec2ModelError } from "../../src/sim/errors/ec2-model-error.js";
import { parseWorld } from "../../src/sim/index.js";
import type { SimState } from "../../src/sim/sim-state.js";
import { initialStateOf, type Topology, topologyOf } from "../../src/sim/topology.js";

/**
 * The world of the EC2 model tests: two c5.xlarge nodes (15 address slots per ENI, Nitro), each with a Multus
 * ENI in 198.51.100.64/26 (IPv6 2001:db8:200:1::/64), an explicit reservation on 198.51.100.96/28, and one
 * Elastic IP associated with the secondary address 198.51.100.100 of node 1's Multus ENI.
 */
export const modelWorld = parseWorld({
  region: "us-east-1",
  vpc: { id: "vpc-0model", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:200::/56" },
  subnets: [
    { id: "subnet-0nodes", cidr: "198.51.100.0/26", availabilityZone: "us-east-1b" },
    {
      id: "subnet-0multus",
      cidr: "198.51.100.64/26",
      ipv6Cidr: "2001:db8:200:1::/64",
      availabilityZone: "us-east-1b",
    },
  ],
  instances: [1, 2].map((n) => ({
    id: `i-0node${n}`,
    instanceType: "c5.xlarge",
    enis: [
      {
        id: `eni-0n${n}eth0`,
        mac: `02:00:00:0${n}:00:00`,
        deviceIndex: 0,
        subnet: "subnet-0nodes",
        primaryIpv4: `198.51.100.${10 * n}`,
      },
      {
        id: `eni-0n${n}multus`,
        mac: `02:00:00:0${n}:00:01`,
        deviceIndex: 1,
        subnet: "subnet-0multus",
        primaryIpv4: `198.51.100.${69 + n}`,
        ...(n === 1 ? { secondaryIpv4s: ["198.51.100.100"] } : {}),
      },
    ],
  })),
  reservations: [{ subnet: "subnet-0multus", cidr: "198.51.100.96/28", type: "explicit" }],
  elasticIps: [
    {
      allocationId: "eipalloc-0web",
      publicIp: "203.0.113.10",
      association: { eni: "eni-0n1multus", privateIp: "198.51.100.100" },
    },
  ],
});

/** A fresh state of modelWorld and its topology; ids from a counter, as the simulator numbers them. */
export function freshModel(): { state: SimState; topology: Topology; nextId: (prefix: string) => string } {
  let counter = 0;
  const nextId = (prefix: string): string => {
    counter += 1;
    return `${prefix}-${counter.toString(16).padStart(17, "0")}`;
  };
  return { state: initialStateOf(modelWorld, nextId), topology: topologyOf(modelWorld), nextId };
}

/** The code and message of the Ec2ModelError `act` throws (fails the test when it throws nothing else). */
export function refusal(act: () => unknown): { name: string; code: string; message: string } {
  try {
    act();
  } catch (error) {
    const e = error as Ec2ModelError;
    return { name: e.name, code: e.code, message: e.message };
  }
  throw new Error("expected the model to refuse, but it accepted");
}
