import type { SimKubeState } from "./kube/kube-state.js";

/** The mutable part of the simulated account, as JSON (GET /state, handle.state()). */

/** One ENI as the simulator holds it. */
export interface SimEni {
  eniId: string;
  /** Lowercase, colon-separated. */
  mac: string;
  /** The instance it is attached to; null while detached (status `available`). */
  instanceId: string | null;
  /** Its device index on that instance; null while detached. */
  deviceIndex: number | null;
  /** Its network card on that instance; null while detached. */
  networkCardIndex: number | null;
  /** `eni-attach-...`; null while detached. A new attachment gets a new id. */
  attachmentId: string | null;
  /** ISO 8601 with milliseconds, UTC; null while detached. */
  attachTime: string | null;
  /** The attachment's DeleteOnTermination; false while detached. */
  deleteOnTermination: boolean;
  subnetId: string;
  /** Null on an IPv6-only ENI. */
  primaryIpv4: string | null;
  /** Every private IPv4 address, the primary first, then secondaries in assignment order. */
  ipv4s: string[];
  /** Canonical (lowercase, compressed) IPv6 addresses in assignment order. */
  ipv6s: string[];
  /** Delegated IPv4 prefixes (/28, canonical CIDR) in assignment order; each takes one address slot. */
  ipv4Prefixes: string[];
  /** Delegated IPv6 prefixes (/80, canonical CIDR) in assignment order; each takes one address slot. */
  ipv6Prefixes: string[];
  tags: Record<string, string>;
  description: string;
  /** Security group ids, in the order given. */
  securityGroupIds: string[];
  sourceDestCheck: boolean;
  /**
   * Clock time (ms since the epoch) CreateNetworkInterface made it; null for the world's ENIs. Calls naming
   * it by id answer NotFound until ec2ReadLagMs later (EC2's eventual consistency).
   */
  createdAt: number | null;
}

/** What a CreateNetworkInterface ClientToken answered: the same parameters answer the same ENI. */
export interface SimClientToken {
  token: string;
  /** The request's parameters, canonical JSON (ClientToken and DryRun left out). */
  fingerprint: string;
  eniId: string;
  /** The ENI as created, answered again (as it is now, while it exists). */
  created: SimEni;
}

/** One subnet CIDR reservation. */
export interface SimReservation {
  reservationId: string;
  subnetId: string;
  /** Canonical CIDR, IPv4 or IPv6. */
  cidr: string;
  type: "explicit" | "prefix";
  description: string | null;
  tags: Record<string, string>;
  ownerId: string;
}

/**
 * One Elastic IP (VPC domain). Associated when `associationId` is set: then `eniId` and `privateIp` name the
 * ENI and the private IPv4 address it maps to. An association moves with its private address when that
 * address is reassigned to another ENI, and is dropped when the address is unassigned.
 */
export interface SimAddress {
  allocationId: string;
  /** From a documentation range outside the VPC: 203.0.113.0/24 unless the VPC uses it. */
  publicIp: string;
  domain: "vpc";
  associationId: string | null;
  eniId: string | null;
  privateIp: string | null;
  tags: Record<string, string>;
}

export interface SimState {
  enis: SimEni[];
  reservations: SimReservation[];
  /** The Kubernetes objects, when the world has a `kubernetes` section. */
  kubernetes?: SimKubeState;
  /** Elastic IPs in allocation order. */
  addresses: SimAddress[];
  /** CreateNetworkInterface's client tokens, oldest first. */
  clientTokens: SimClientToken[];
}
