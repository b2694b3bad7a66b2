/**
 * Free aligned prefix blocks (/28 for IPv4, /80 for IPv6) in an area of a subnet: blocks that hold no assigned
 * address, no delegated prefix and none of the five addresses AWS keeps, which is what EC2 needs to delegate
 * one more prefix there (it answers `InsufficientCidrBlocks` when none is left). Pure arithmetic on numbers:
 * an IPv6 /64 holds 65,536 /80 blocks, so nothing is enumerated block by block.
 */
import {
  awsReservedAddresses,
  cidrBounds,
  cidrContains,
  DELEGATED_PREFIX_LENGTH,
  family as familyOf,
} from "../eni/ip.js";
import type { IpFamily } from "../eni/types.js";

export interface FreeBlocksInput {
  readonly family: IpFamily;
  /** The subnet's CIDR of that family. */
  readonly subnetCidr: string;
  /** Where the next slices come from: the explicit reservations over the node-sliced range, or the whole subnet. */
  readonly area: readonly string[];
  /** Addresses assigned in the subnet (every ENI's), and the delegated prefixes (CIDRs). */
  readonly used: readonly string[];
}

export interface FreeBlocks {
  /** Aligned blocks of the prefix length inside the area. */
  readonly total: bigint;
  /** Of those, the blocks that hold nothing. */
  readonly free: bigint;
}

const BITS: Readonly<Record<IpFamily, bigint>> = { 4: 32n, 6: 128n };

export function freePrefixBlocks(input: FreeBlocksInput): FreeBlocks {
  const length = BigInt(DELEGATED_PREFIX_LENGTH[input.family]);
  const shift = BITS[input.family] - length;
  const blocks: { first: bigint; last: bigint }[] = [];
  let total = 0n;
  for (const cidr of input.area) {
    const bounds = cidrBounds(cidr);
    if (bounds.family !== input.family) continue;
    // Whole aligned blocks inside the area: an area smaller than a block holds none.
    const first = (bounds.first + (1n << shift) - 1n) >> shift;
    const last = ((bounds.last + 1n) >> shift) - 1n;
    if (last < first) continue;
    blocks.push({ first, last });
    total += last - first + 1n;
  }
  const inArea = (block: bigint): boolean => blocks.some((b) => block >= b.first && block <= b.last);
  const taken = new Set<bigint>();
  const take = (first: bigint, last: bigint): void => {
    for (let block = first >> shift; block <= last >> shift; block++) if (inArea(block)) taken.add(block);
  };
  for (const item of [...input.used, ...awsReservedAddresses(input.subnetCidr)]) {
    if (item.includes("/")) {
      const bounds = cidrBounds(item);
      if (bounds.family === input.family) take(bounds.first, bounds.last);
      continue;
    }
    if (familyOf(item) !== input.family || !cidrContains(input.subnetCidr, item)) continue;
    const value = cidrBounds(`${item}/${BITS[input.family]}`).first;
    take(value, value);
  }
  return { total, free: total - BigInt(taken.size) };
}
