import { bigIntToAddress, type Cidr, mustParseCidr } from "../../ip-math.js";
import type { SimState } from "../../sim-state.js";

/** Every address held by any ENI, both families. */
export function usedAddresses(state: SimState): Set<string> {
  return new Set(state.enis.flatMap((e) => [...e.ipv4s, ...e.ipv6s]));
}

/** The reservation blocks of a subnet in one family (both types keep automatic assignment off). */
export function reservedBlocks(state: SimState, subnetId: string, family: 4 | 6): Cidr[] {
  return state.reservations
    .filter((r) => r.subnetId === subnetId)
    .map((r) => mustParseCidr(r.cidr))
    .filter((c) => c.family === family);
}

/**
 * EC2's automatic pick (SecondaryPrivateIpAddressCount, Ipv6AddressCount): the lowest free addresses of the
 * block, skipping AWS's five reserved addresses, addresses in use and subnet CIDR reservations. Real EC2
 * picks in no documented order; lowest-first keeps tests deterministic. Returns fewer than `count` when the
 * block runs out.
 */
export function pickFree(
  block: Cidr,
  used: ReadonlySet<string>,
  reserved: readonly Cidr[],
  count: number,
): string[] {
  const picks: string[] = [];
  const last = block.base + block.size - 1n;
  let value = block.base + 4n;
  while (picks.length < count && value < last) {
    const hit = reserved.find((r) => value >= r.base && value < r.base + r.size);
    if (hit !== undefined) {
      value = hit.base + hit.size;
      continue;
    }
    const address = bigIntToAddress(value, block.family);
    if (!used.has(address)) picks.push(address);
    value += 1n;
  }
  return picks;
}
