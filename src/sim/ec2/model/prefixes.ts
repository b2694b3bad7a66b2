import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import {
  addressToBigInt,
  bigIntToAddress,
  type Cidr,
  cidrContains,
  cidrsOverlap,
  cidrWithin,
  type Family,
  mustParseCidr,
} from "../../ip-math.js";
import type { SimEni, SimState } from "../../sim-state.js";
import type { TopologySubnet } from "../../topology.js";
import type { AddressHost } from "./enis.js";

/**
 * EC2's rules for delegated prefixes (user guide "Assign prefixes to network interfaces"): an IPv4 prefix is a
 * /28, an IPv6 prefix a /80, aligned, inside the ENI's subnet, on Nitro instances only; each takes one of the
 * ENI's address slots; none overlaps an address or prefix assigned in the subnet.
 *
 * Unconfirmed EC2 behaviour, decided here (no documented code): a prefix of the wrong length, unaligned, outside
 * the subnet, covering an address AWS reserves, or overlapping an assigned address or prefix is refused with
 * `InvalidParameterValue`; a non-Nitro instance type with `InvalidParameterValue` too; a prefix this ENI already
 * holds counts as assigned, like an address. `InsufficientCidrBlocks` for a count EC2 cannot place is the code
 * EC2 is seen to answer (amazon-vpc-cni-k8s#1585).
 */

export const PREFIX_LENGTH: Readonly<Record<Family, number>> = { 4: 28, 6: 80 };

/** The prefixes of one family an ENI holds. */
export function prefixesOf(eni: SimEni, family: Family): string[] {
  return family === 4 ? eni.ipv4Prefixes : eni.ipv6Prefixes;
}

/** The ENI and prefix covering `address`, if any ENI holds one. */
export function prefixHolding(state: SimState, address: string): { eni: SimEni; prefix: string } | undefined {
  for (const eni of state.enis) {
    for (const prefix of [...eni.ipv4Prefixes, ...eni.ipv6Prefixes]) {
      if (cidrContains(mustParseCidr(prefix), address)) return { eni, prefix };
    }
  }
  return undefined;
}

/** Every delegated prefix of one family, on any ENI: automatic address picks skip them. */
export function prefixBlocks(state: SimState, family: Family): Cidr[] {
  return state.enis.flatMap((e) => prefixesOf(e, family).map(mustParseCidr));
}

export function requireNitro(instance: AddressHost): void {
  if (!instance.nitro) {
    throw new Ec2ModelError(
      "InvalidParameterValue",
      `Prefix delegation is not supported for instance type ${instance.instanceType}: it is not built on the Nitro System.`,
    );
  }
}

/** The subnet block of one family, or the refusal when the subnet has none. */
export function subnetBlock(subnet: TopologySubnet, family: Family): Cidr {
  const block = family === 4 ? subnet.cidr : subnet.ipv6Cidr;
  if (block === undefined) {
    throw new Ec2ModelError("InvalidParameterValue", `Subnet ${subnet.id} has no IPv${family} CIDR block`);
  }
  return block;
}

/** True when the block holds one of the five addresses AWS reserves in the subnet block. */
function coversAwsReserved(block: Cidr, prefix: Cidr): boolean {
  const first = block.base;
  const last = block.base + block.size - 1n;
  return prefix.base < first + 4n || prefix.base + prefix.size - 1n === last;
}

/** What a prefix may not overlap: every address and every other ENI's prefix of the family. */
function overlapping(state: SimState, eni: SimEni, prefix: Cidr): string | undefined {
  for (const other of state.enis) {
    const addresses = prefix.family === 4 ? other.ipv4s : other.ipv6s;
    const hit = addresses.find((a) => cidrContains(prefix, a));
    if (hit !== undefined) return `address ${hit}`;
    for (const held of prefixesOf(other, prefix.family)) {
      if (other === eni && held === prefix.text) continue;
      if (cidrsOverlap(mustParseCidr(held), prefix)) return `prefix ${held}`;
    }
  }
  return undefined;
}

/** Checks named prefixes against the subnet and the draft; returns those the ENI does not hold yet. */
export function checkNamedPrefixes(
  state: SimState,
  eni: SimEni,
  block: Cidr,
  prefixes: readonly Cidr[],
): Cidr[] {
  for (const prefix of prefixes) {
    if (!cidrWithin(prefix, block)) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Prefix ${prefix.text} does not fall within the subnet's address range (${block.text})`,
      );
    }
    if (coversAwsReserved(block, prefix)) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Prefix ${prefix.text} is in subnet's reserved address range`,
      );
    }
    const clash = overlapping(state, eni, prefix);
    if (clash !== undefined) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Prefix ${prefix.text} overlaps ${clash}, already assigned in the subnet.`,
      );
    }
  }
  const held = prefixesOf(eni, block.family);
  return prefixes.filter((p) => !held.includes(p.text));
}

/**
 * EC2's pick for a prefix count: the lowest free aligned blocks inside the subnet's `prefix` reservations
 * first, then outside every reservation (an `explicit` one is never used by EC2 on its own). Free: no assigned
 * address or prefix inside, none of AWS's reserved addresses. Real EC2 picks in no documented order.
 */
export function pickFreePrefixes(state: SimState, subnetId: string, block: Cidr, count: number): string[] {
  const family = block.family;
  const length = PREFIX_LENGTH[family];
  const size = 1n << BigInt((family === 4 ? 32 : 128) - length);
  const reserved = state.reservations
    .filter((r) => r.subnetId === subnetId)
    .map((r) => ({ type: r.type, cidr: mustParseCidr(r.cidr) }))
    .filter((r) => r.cidr.family === family);
  const used = state.enis.flatMap((e) => (family === 4 ? e.ipv4s : e.ipv6s)).map(addressToBigInt);
  const taken = prefixBlocks(state, family);
  const picked = new Set<bigint>();
  const overlaps = (base: bigint, other: Cidr): boolean =>
    base < other.base + other.size && other.base < base + size;
  const free = (base: bigint): boolean =>
    !picked.has(base) &&
    !coversAwsReserved(block, { family, base, prefix: length, size, text: "" }) &&
    !used.some((a) => a >= base && a < base + size) &&
    !taken.some((t) => overlaps(base, t));
  // Candidates are the aligned blocks of `within`, in order; a /80 scan of a /64 stops once enough are found.
  const scan = (within: Cidr, allowed: (base: bigint) => boolean): void => {
    for (
      let base = within.base;
      base + size <= within.base + within.size && picked.size < count;
      base += size
    ) {
      if (allowed(base) && free(base)) picked.add(base);
    }
  };
  for (const r of reserved) {
    if (r.type === "prefix" && r.cidr.prefix <= length) scan(r.cidr, () => true);
  }
  scan(block, (base) => !reserved.some((r) => overlaps(base, r.cidr)));
  return [...picked].map((base) => `${bigIntToAddress(base, family)}/${length}`);
}

/** The slots an ENI uses in one family: addresses plus prefixes (each prefix takes one). */
export function slotsUsed(eni: SimEni, family: Family): number {
  return (family === 4 ? eni.ipv4s.length : eni.ipv6s.length) + prefixesOf(eni, family).length;
}

/** What one prefix assign asks for: named prefixes (canonical), or a count for EC2 to pick. */
export type PrefixRequest = { readonly named: readonly Cidr[] } | { readonly count: number };

/**
 * Assigns prefixes to `eni` in the draft, all or nothing, and returns the prefixes to list in the answer
 * (named ones as given, counted ones as picked). `limitError` builds the refusal for going over the limit.
 */
export function assignPrefixes(
  state: SimState,
  eni: SimEni,
  instance: AddressHost,
  subnet: TopologySubnet,
  family: Family,
  request: PrefixRequest,
  limitError: (limit: number) => Ec2ModelError,
): string[] {
  requireNitro(instance);
  const block = subnetBlock(subnet, family);
  const checkLimit = (adding: number): void => {
    if (slotsUsed(eni, family) + adding > instance.addressLimit) throw limitError(instance.addressLimit);
  };
  const held = prefixesOf(eni, family);
  if ("named" in request) {
    const adding = checkNamedPrefixes(state, eni, block, request.named);
    checkLimit(adding.length);
    held.push(...adding.map((p) => p.text));
    return request.named.map((p) => p.text);
  }
  checkLimit(request.count);
  const picks = pickFreePrefixes(state, subnet.id, block, request.count);
  if (picks.length < request.count) {
    throw new Ec2ModelError(
      "InsufficientCidrBlocks",
      "The specified subnet does not have enough free cidr blocks to satisfy the request.",
    );
  }
  held.push(...picks);
  return picks;
}

/** Unassigns prefixes (canonical CIDRs) from the ENI in the draft, all or nothing; one it does not hold is refused. */
export function unassignPrefixes(eni: SimEni, family: Family, prefixes: readonly string[]): void {
  const held = prefixesOf(eni, family);
  const missing = prefixes.filter((p) => !held.includes(p));
  if (missing.length > 0) {
    throw new Ec2ModelError(
      "InvalidParameterValue",
      `Some of the specified prefixes are not assigned to interface ${eni.eniId}: ${missing.join(", ")}`,
    );
  }
  const kept = held.filter((p) => !prefixes.includes(p));
  if (family === 4) eni.ipv4Prefixes = kept;
  else eni.ipv6Prefixes = kept;
}
