/**
 * All IP address and CIDR arithmetic, for both families. Pure: no I/O.
 *
 * Parsing is strict on purpose. ipaddr.js accepts the historical IPv4 spellings ("10.1", "0x7f.1",
 * "010.0.0.1" read as octal) and IPv6 zone ids; an address that two programs could read differently
 * must never reach EC2, so we accept only four decimal octets (no leading zeros) and IPv6 without a zone.
 * Internally an address is a bigint, which makes masks, offsets and comparisons exact for IPv6.
 */
import ipaddr from "ipaddr.js";
import { InvalidAddressError } from "./errors/invalid-address-error.js";
import { InvalidCidrError } from "./errors/invalid-cidr-error.js";
import type { IpFamily } from "./types.js";

/**
 * What an address is for. Only `unicast` addresses are ever planned.
 * `ipv4-mapped` (::ffff:0:0/96) is an IPv4 address in IPv6 clothing: it never belongs on an interface or an
 * ENI, and it must not match an IPv4 CIDR by accident, so it gets its own kind and the planner skips it.
 */
export type AddressKind = "unicast" | "link-local" | "loopback" | "multicast" | "unspecified" | "ipv4-mapped";

/** A parsed CIDR block. `network` is the canonical, masked first address. */
export interface Cidr {
  readonly network: string;
  readonly prefix: number;
  readonly family: IpFamily;
}

interface Parsed {
  readonly family: IpFamily;
  readonly value: bigint;
}

interface ParsedCidr {
  readonly family: IpFamily;
  readonly network: bigint;
  readonly prefix: number;
}

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]\\d|\\d)";
const STRICT_IPV4 = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);
const IPV6_CHARS = /^[0-9a-fA-F:.]+$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;
const PREFIX = /^(?:0|[1-9]\d{0,2})$/;

const EXPECT_ADDRESS =
  "an IPv4 address in four decimal octets (e.g. 192.0.2.10) or an IPv6 address without a zone id (e.g. 2001:db8::10)";
const EXPECT_CIDR = "address/prefix, e.g. 192.0.2.0/24 or 2001:db8::/64";

function bits(family: IpFamily): number {
  return family === 4 ? 32 : 128;
}

function parseIpv4(text: string): bigint | undefined {
  if (!STRICT_IPV4.test(text)) return undefined;
  let value = 0n;
  for (const octet of text.split(".")) value = (value << 8n) | BigInt(Number(octet));
  return value;
}

function parseIpv6(text: string): bigint | undefined {
  if (!IPV6_CHARS.test(text) || !text.includes(":")) return undefined;
  let hex = text;
  // A dotted IPv4 tail is converted here rather than by ipaddr.js, which reads "::a.b.c.d" as ::ffff:a.b.c.d
  // and accepts octal and hex octets in the tail.
  if (text.includes(".")) {
    const cut = text.lastIndexOf(":");
    const tail = parseIpv4(text.slice(cut + 1));
    if (tail === undefined) return undefined;
    hex = `${text.slice(0, cut + 1)}${(tail >> 16n).toString(16)}:${(tail & 0xffffn).toString(16)}`;
  }
  for (const group of hex.split(":")) {
    if (group !== "" && !HEX_GROUP.test(group)) return undefined;
  }
  if (!ipaddr.IPv6.isValid(hex)) return undefined;
  let value = 0n;
  for (const part of ipaddr.IPv6.parse(hex).parts) value = (value << 16n) | BigInt(part);
  return value;
}

/**
 * Addresses parsed before, by their text (undefined for text that is none). A bridge parses the same pod
 * addresses again at every wave, and sorting them parses both sides of every comparison: 50 bridges' first
 * waves on IPv6 spent about a third of their CPU in ipaddr.js. Bounded: emptied when full.
 */
const parsedByText = new Map<string, Parsed | undefined>();
const PARSED_BY_TEXT_MAX = 10_000;

function parse(text: string): Parsed | undefined {
  if (typeof text !== "string") return undefined;
  const known = parsedByText.get(text);
  if (known !== undefined || parsedByText.has(text)) return known;
  const parsed = parseUncached(text);
  if (parsedByText.size >= PARSED_BY_TEXT_MAX) parsedByText.clear();
  parsedByText.set(text, parsed);
  return parsed;
}

function parseUncached(text: string): Parsed | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return Object.freeze({ family: 4, value: v4 });
  const v6 = parseIpv6(text);
  if (v6 !== undefined) return Object.freeze({ family: 6, value: v6 });
  return undefined;
}

function parseOrThrow(text: string): Parsed {
  const parsed = parse(text);
  if (parsed === undefined) {
    const expected =
      typeof text === "string" && text.includes("%")
        ? "an IPv6 address without a zone id (the part from % on is not part of the address)"
        : EXPECT_ADDRESS;
    throw new InvalidAddressError(String(text), expected);
  }
  return parsed;
}

function format({ family, value }: Parsed): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => ((value >> shift) & 0xffn).toString()).join(".");
  }
  // RFC 5952 section 5: an IPv4-mapped address is written with its IPv4 part in dotted decimal.
  if (value >> 32n === 0xffffn) return `::ffff:${format({ family: 4, value: value & 0xffffffffn })}`;
  const parts: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) parts.push(Number((value >> shift) & 0xffffn));
  return new ipaddr.IPv6(parts).toRFC5952String();
}

function mask(family: IpFamily, prefix: number): bigint {
  const width = BigInt(bits(family));
  const host = (1n << (width - BigInt(prefix))) - 1n;
  return ((1n << width) - 1n) ^ host;
}

function parseCidrInternal(text: string): ParsedCidr {
  if (typeof text !== "string") throw new InvalidCidrError(String(text), EXPECT_CIDR);
  const slash = text.indexOf("/");
  if (slash < 0 || slash !== text.lastIndexOf("/")) throw new InvalidCidrError(text, EXPECT_CIDR);
  const address = parse(text.slice(0, slash));
  if (address === undefined) {
    throw new InvalidCidrError(text, `${EXPECT_CIDR}; the address part is not valid (${EXPECT_ADDRESS})`);
  }
  const prefixText = text.slice(slash + 1);
  const max = bits(address.family);
  const prefix = PREFIX.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (!(prefix >= 0 && prefix <= max)) {
    throw new InvalidCidrError(text, `a prefix length from 0 to ${max} after the slash`);
  }
  return { family: address.family, network: address.value & mask(address.family, prefix), prefix };
}

function containsParsed(cidr: ParsedCidr, address: Parsed): boolean {
  return cidr.family === address.family && (address.value & mask(cidr.family, cidr.prefix)) === cidr.network;
}

function lastOf(cidr: ParsedCidr): bigint {
  return cidr.network | (mask(cidr.family, cidr.prefix) ^ ((1n << BigInt(bits(cidr.family))) - 1n));
}

/**
 * The one spelling of an address: IPv4 as four decimal octets, IPv6 as RFC 5952 (lowercase, longest run of
 * zero groups compressed, IPv4-mapped addresses as ::ffff:a.b.c.d).
 * @throws InvalidAddressError for anything else, including IPv6 zone ids and loose IPv4 forms ("10.1").
 */
export function canonical(text: string): string {
  return tryCanonical(text) ?? format(parseOrThrow(text));
}

/** Like `canonical`, but undefined instead of an error. */
export function tryCanonical(text: string): string | undefined {
  const known = canonicalByText.get(text);
  if (known !== undefined || canonicalByText.has(text)) return known;
  const parsed = parse(text);
  const spelled = parsed === undefined ? undefined : format(parsed);
  if (canonicalByText.size >= PARSED_BY_TEXT_MAX) canonicalByText.clear();
  canonicalByText.set(text, spelled);
  return spelled;
}

/** tryCanonical by text: the bridge spells every pod address of its node canonically at every wave. */
const canonicalByText = new Map<string, string | undefined>();

/** @throws InvalidAddressError */
export function family(address: string): IpFamily {
  return parseOrThrow(address).family;
}

/**
 * Parses `address/prefix`. Host bits are allowed and masked off: "198.51.100.7/24" gives network
 * 198.51.100.0, because users write an interface address with its prefix and mean its network.
 * @throws InvalidCidrError when the address is not strict (see `canonical`) or the prefix is out of range.
 */
export function parseCidr(text: string): Cidr {
  const cidr = parseCidrInternal(text);
  return {
    network: format({ family: cidr.family, value: cidr.network }),
    prefix: cidr.prefix,
    family: cidr.family,
  };
}

/** The canonical text of a CIDR block, e.g. "2001:DB8:0::1/64" gives "2001:db8::/64". */
export function canonicalCidr(text: string): string {
  const cidr = parseCidr(text);
  return `${cidr.network}/${cidr.prefix}`;
}

/**
 * Whether the address part of `address/prefix` has bits set past the prefix ("198.51.100.33/27"): written
 * as an interface address, not as a block.
 * @throws InvalidCidrError, as parseCidr.
 */
export function hasHostBits(text: string): boolean {
  const cidr = parseCidrInternal(text);
  const address = parse(text.slice(0, text.indexOf("/")));
  return address !== undefined && address.value !== cidr.network;
}

/** Whether `address` lies in `cidr`; always false across families (an IPv4-mapped IPv6 address is IPv6). */
export function cidrContains(cidr: string, address: string): boolean {
  return containsParsed(parseCidrInternal(cidr), parseOrThrow(address));
}

export function anyCidrContains(cidrs: readonly string[], address: string): boolean {
  const parsed = parseOrThrow(address);
  return cidrs.some((cidr) => containsParsed(parseCidrInternal(cidr), parsed));
}

/**
 * The length of a prefix EC2 delegates to an ENI (prefix delegation, Nitro instances): IPv4 /28 (16 addresses),
 * IPv6 /80.
 */
export const DELEGATED_PREFIX_LENGTH: Readonly<Record<IpFamily, number>> = { 4: 28, 6: 80 };

/**
 * The first of `prefixes` (CIDR text, any length and family) that covers `address`, or undefined: traffic to an
 * address inside a prefix an ENI holds is delivered to that ENI with no per-address assignment.
 * @throws InvalidAddressError / InvalidCidrError on text that is not an address or CIDR.
 */
export function coveringPrefix(prefixes: readonly string[], address: string): string | undefined {
  const parsed = parseOrThrow(address);
  return prefixes.find((prefix) => containsParsed(parseCidrInternal(prefix), parsed));
}

/** Whether two blocks share at least one address; false across families. */
export function cidrsOverlap(a: string, b: string): boolean {
  const x = parseCidrInternal(a);
  const y = parseCidrInternal(b);
  if (x.family !== y.family) return false;
  const shorter = Math.min(x.prefix, y.prefix);
  const m = mask(x.family, shorter);
  return (x.network & m) === (y.network & m);
}

const KIND_RANGES: readonly (readonly [string, Exclude<AddressKind, "unicast">])[] = [
  // The whole of 0.0.0.0/8 ("this network", RFC 1122) is never a valid interface address.
  ["0.0.0.0/8", "unspecified"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local"],
  ["224.0.0.0/4", "multicast"],
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["::ffff:0:0/96", "ipv4-mapped"],
  ["fe80::/10", "link-local"],
  ["ff00::/8", "multicast"],
];
const PARSED_KIND_RANGES = KIND_RANGES.map(([cidr, kind]) => [parseCidrInternal(cidr), kind] as const);

/** Classifies an address; see `AddressKind`. @throws InvalidAddressError */
export function addressKind(address: string): AddressKind {
  const parsed = parseOrThrow(address);
  for (const [cidr, kind] of PARSED_KIND_RANGES) {
    if (containsParsed(cidr, parsed)) return kind;
  }
  return "unicast";
}

/** Number of addresses in the block (2^(bits - prefix)). */
export function cidrSize(cidr: string): bigint {
  const parsed = parseCidrInternal(cidr);
  return 1n << BigInt(bits(parsed.family) - parsed.prefix);
}

/**
 * Offset of `address` from the block's first address (whereabouts keys its allocations by this offset).
 * @throws RangeError when the address lies outside the block: the caller checks `cidrContains` first.
 */
export function offsetInCidr(cidr: string, address: string): bigint {
  const block = parseCidrInternal(cidr);
  const parsed = parseOrThrow(address);
  if (!containsParsed(block, parsed)) throw new RangeError(`address ${address} is not inside ${cidr}`);
  return parsed.value - block.network;
}

/**
 * The address at `offset` from the block's first address.
 * @throws RangeError when the offset is negative or not below `cidrSize(cidr)`.
 */
export function addressAtOffset(cidr: string, offset: bigint): string {
  const block = parseCidrInternal(cidr);
  const size = 1n << BigInt(bits(block.family) - block.prefix);
  if (offset < 0n || offset >= size) {
    throw new RangeError(`offset ${offset} is outside ${cidr}, which holds ${size} addresses`);
  }
  return format({ family: block.family, value: block.network + offset });
}

/**
 * Addresses AWS keeps for itself in a subnet: the first four (network, VPC router, DNS, future use) and the last.
 * This holds for IPv6 subnet CIDR blocks too ("The first four IPv6 addresses and the last IPv6 address in each
 * subnet CIDR block are not available for your use", https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html).
 * Sorted ascending, without duplicates (blocks smaller than /29 or /125 overlap themselves).
 */
export function awsReservedAddresses(subnetCidr: string): string[] {
  let reserved = reservedBySubnet.get(subnetCidr);
  if (reserved === undefined) {
    reserved = reservedIn(subnetCidr);
    if (reservedBySubnet.size >= PARSED_BY_TEXT_MAX) reservedBySubnet.clear();
    reservedBySubnet.set(subnetCidr, reserved);
  }
  return [...reserved];
}

/** awsReservedAddresses by subnet: the planner asks for every address it places, formatting five each time. */
const reservedBySubnet = new Map<string, readonly string[]>();

function reservedIn(subnetCidr: string): string[] {
  const block = parseCidrInternal(subnetCidr);
  const last = lastOf(block);
  const values = new Set<bigint>();
  for (let i = 0n; i < 4n && block.network + i <= last; i++) values.add(block.network + i);
  values.add(last);
  return [...values]
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((value) => format({ family: block.family, value }));
}

/** Total order for stable sorting: IPv4 before IPv6, then numerically. @throws InvalidAddressError */
export function compareAddresses(a: string, b: string): number {
  const x = parseOrThrow(a);
  const y = parseOrThrow(b);
  if (x.family !== y.family) return x.family - y.family;
  return x.value < y.value ? -1 : x.value > y.value ? 1 : 0;
}

/**
 * Lenient canonical form for text that comes from AWS: an address or a CIDR gets one spelling (a CIDR keeps
 * its prefix as written); anything else is kept, lowercased, so that a surprise shows up in our logs as it
 * came instead of failing the read.
 */
export function canonicalAddressText(value: string): string {
  const text = value.trim();
  const slash = text.indexOf("/");
  const address = slash === -1 ? text : text.slice(0, slash);
  const canonicalAddress = tryCanonical(address) ?? address.toLowerCase();
  return slash === -1 ? canonicalAddress : `${canonicalAddress}${text.slice(slash)}`;
}

/** The address as a number, for interval arithmetic (`addressOfValue` is the inverse). @throws InvalidAddressError */
export function addressValue(address: string): bigint {
  return parseOrThrow(address).value;
}

/** The canonical address of a number of the family. @throws RangeError outside the family's space. */
export function addressOfValue(fam: IpFamily, value: bigint): string {
  if (value < 0n || value >= 1n << BigInt(bits(fam))) {
    throw new RangeError(`${value} is not an IPv${fam} address value`);
  }
  return format({ family: fam, value });
}

/** The first and last address of a block, as numbers. @throws InvalidCidrError */
export function cidrBounds(cidr: string): { family: IpFamily; first: bigint; last: bigint } {
  const parsed = parseCidrInternal(cidr);
  return { family: parsed.family, first: parsed.network, last: lastOf(parsed) };
}

/**
 * The smallest list of CIDR blocks whose union is exactly the addresses `first` to `last` (inclusive), in
 * ascending order: each block is the largest aligned one that starts at the next uncovered address and
 * ends within the interval. Empty when `first > last`.
 */
export function intervalToCidrs(fam: IpFamily, first: bigint, last: bigint): string[] {
  const width = BigInt(bits(fam));
  const out: string[] = [];
  let start = first;
  while (start <= last) {
    // Largest power of two that divides `start` (its alignment), capped by the space's width.
    let size = 0n;
    while (
      size < width &&
      (start & ((1n << (size + 1n)) - 1n)) === 0n &&
      start + (1n << (size + 1n)) - 1n <= last
    ) {
      size += 1n;
    }
    out.push(`${format({ family: fam, value: start })}/${Number(width - size)}`);
    start += 1n << size;
  }
  return out;
}
