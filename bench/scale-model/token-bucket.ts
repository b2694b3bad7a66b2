/**
 * EC2's request throttling as documented: per account and Region, one token bucket per API action (or per
 * category of actions), each request takes one token or is throttled (`RequestLimitExceeded`), and a
 * bucket refills at a fixed rate up to its capacity.
 *
 * Source of the sizes and rates: "Request throttling for the Amazon EC2 API", section "Request token bucket
 * sizes and refill rates", https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html
 * (AssignPrivateIpAddresses and UnassignPrivateIpAddresses, AssignIpv6Addresses: "Uncategorized actions",
 * 100 tokens, 5 a second; UnassignIpv6Addresses is in none of the lists, so "Mutating actions", 50 and 5;
 * DescribeNetworkInterfaces with a filter or paging: "Non-mutating actions", 100 and 20). Prefixes travel in
 * the same actions (`Ipv4Prefix.N`, `Ipv6Prefix.N`), so they draw from the same buckets.
 *
 * Attach mode's calls (bench/scale-model/attach-calls.ts), from the same section: CreateNetworkInterface and
 * AttachNetworkInterface are in the "Uncategorized actions" table, 100 tokens and 5 a second each;
 * ModifyNetworkInterfaceAttribute is in no list, so "Mutating actions", 50 and 5; DescribeInstanceTypes is
 * "Non-mutating actions", 100 and 20. The page throttles "on a per-API basis": a category sets a bucket's
 * size, and each action has a bucket of its own, so DeleteOnTermination and SourceDestCheck, two calls of
 * ModifyNetworkInterfaceAttribute, share one.
 */

export const EC2_THROTTLING_PAGE = "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html";

/** One documented bucket. */
export interface BucketSpec {
  /** The action (or category) whose requests draw from it. */
  readonly name: string;
  /** Bucket maximum capacity, in tokens; a bucket starts full. */
  readonly capacity: number;
  /** Bucket refill rate, in tokens a second. */
  readonly refillPerSecond: number;
}

/** The EC2 actions the bridge calls for pod addresses and, in attach mode, for its ENIs; the buckets they draw from. */
export type ModelEc2Action =
  | "AssignPrivateIpAddresses"
  | "UnassignPrivateIpAddresses"
  | "AssignIpv6Addresses"
  | "UnassignIpv6Addresses"
  | "DescribeNetworkInterfaces"
  | "CreateNetworkInterface"
  | "AttachNetworkInterface"
  | "ModifyNetworkInterfaceAttribute"
  | "DescribeInstanceTypes";

export const DOCUMENTED_BUCKETS: Readonly<Record<ModelEc2Action, BucketSpec>> = {
  AssignPrivateIpAddresses: { name: "AssignPrivateIpAddresses", capacity: 100, refillPerSecond: 5 },
  UnassignPrivateIpAddresses: { name: "UnassignPrivateIpAddresses", capacity: 100, refillPerSecond: 5 },
  AssignIpv6Addresses: { name: "AssignIpv6Addresses", capacity: 100, refillPerSecond: 5 },
  UnassignIpv6Addresses: {
    name: "Mutating actions (UnassignIpv6Addresses)",
    capacity: 50,
    refillPerSecond: 5,
  },
  DescribeNetworkInterfaces: {
    name: "Non-mutating actions (DescribeNetworkInterfaces, filtered)",
    capacity: 100,
    refillPerSecond: 20,
  },
  CreateNetworkInterface: { name: "CreateNetworkInterface", capacity: 100, refillPerSecond: 5 },
  AttachNetworkInterface: { name: "AttachNetworkInterface", capacity: 100, refillPerSecond: 5 },
  ModifyNetworkInterfaceAttribute: {
    name: "Mutating actions (ModifyNetworkInterfaceAttribute)",
    capacity: 50,
    refillPerSecond: 5,
  },
  DescribeInstanceTypes: {
    name: "Non-mutating actions (DescribeInstanceTypes)",
    capacity: 100,
    refillPerSecond: 20,
  },
};

/** A token bucket on the model's clock (ms). Fractional tokens accrue; a request needs a whole one. */
export class TokenBucket {
  #tokens: number;
  #last: number;

  constructor(
    readonly spec: BucketSpec,
    startMs = 0,
  ) {
    this.#tokens = spec.capacity;
    this.#last = startMs;
  }

  /** Tokens in the bucket at `nowMs` (not before the last request). */
  tokens(nowMs: number): number {
    const elapsed = Math.max(0, nowMs - this.#last);
    return Math.min(this.spec.capacity, this.#tokens + (elapsed / 1000) * this.spec.refillPerSecond);
  }

  /** One request at `nowMs`: true when it takes a token, false when EC2 would throttle it. */
  take(nowMs: number): boolean {
    const at = Math.max(nowMs, this.#last);
    this.#tokens = this.tokens(at);
    this.#last = at;
    // Refill is summed in floating point: a token 1e-9 short is a whole one (0.2 s at 5 a second is 1).
    if (this.#tokens < 1 - 1e-9) return false;
    this.#tokens = Math.max(0, this.#tokens - 1);
    return true;
  }
}
