import type { SimKubeState } from "./kube/kube-cluster.js";

/** The mutable part of the simulated account, as JSON (GET /state, handle.state()). */

/** One ENI as the simulator holds it. */
export interface SimEni {
  eniId: string;
  /** Lowercase, colon-separated. */
  mac: string;
  instanceId: string;
  deviceIndex: number;
  subnetId: string;
  /** Null on an IPv6-only ENI. */
  primaryIpv4: string | null;
  /** Every private IPv4 address, the primary first, then secondaries in assignment order. */
  ipv4s: string[];
  /** Canonical (lowercase, compressed) IPv6 addresses in assignment order. */
  ipv6s: string[];
  tags: Record<string, string>;
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

export interface SimState {
  enis: SimEni[];
  reservations: SimReservation[];
  /** The Kubernetes objects, when the world has a `kubernetes` section. */
  kubernetes?: SimKubeState;
}
