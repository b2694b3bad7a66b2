import ipaddr from "ipaddr.js";

/**
 * The little IP arithmetic the simulator needs, on bigints so both families share one code path.
 * Deliberately private to src/sim: the product's own IP module is written separately and the simulator
 * must not share its bugs.
 */

export type Family = 4 | 6;

export interface Cidr {
  readonly family: Family;
  /** First address of the block. */
  readonly base: bigint;
  readonly prefix: number;
  /** Number of addresses in the block. */
  readonly size: bigint;
  /** Canonical text, e.g. `198.51.100.0/25` or `2001:db8::/64`. */
  readonly text: string;
}

const bitsOf = (family: Family): number => (family === 4 ? 32 : 128);

/** The family of a strictly written address (four-part decimal IPv4, or IPv6), or undefined. */
export function addressFamily(text: string): Family | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return 4;
  if (!text.includes(":") || !ipaddr.IPv6.isValid(text)) return undefined;
  // A zone index (`fe80::1%eth0`) is not an EC2 address.
  return text.includes("%") ? undefined : 6;
}

/** One spelling per address: IPv4 dotted decimal, IPv6 lowercase and compressed (RFC 5952). */
export function canonicalAddress(text: string): string | undefined {
  const family = addressFamily(text);
  if (family === undefined) return undefined;
  return family === 4 ? ipaddr.IPv4.parse(text).toString() : ipaddr.IPv6.parse(text).toRFC5952String();
}

export function addressToBigInt(text: string): bigint {
  const bytes = ipaddr.parse(text).toByteArray();
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

export function bigIntToAddress(value: bigint, family: Family): string {
  const bytes: number[] = [];
  let rest = value;
  for (let i = 0; i < bitsOf(family) / 8; i++) {
    bytes.unshift(Number(rest & 0xffn));
    rest >>= 8n;
  }
  const address = ipaddr.fromByteArray(bytes);
  return address.kind() === "ipv6" ? (address as ipaddr.IPv6).toRFC5952String() : address.toString();
}

/** Parses a CIDR whose host bits are zero; returns a reason string when it is not one. */
export function parseCidr(text: string): Cidr | string {
  const slash = text.indexOf("/");
  if (slash < 0) return "must be a CIDR block such as 198.51.100.0/24 or 2001:db8::/64";
  const family = addressFamily(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (family === undefined || !/^\d{1,3}$/.test(prefixText)) {
    return "must be a CIDR block such as 198.51.100.0/24 or 2001:db8::/64";
  }
  const prefix = Number(prefixText);
  const bits = bitsOf(family);
  if (prefix > bits) return `has a prefix length above ${bits}`;
  const base = addressToBigInt(text.slice(0, slash));
  const size = 1n << BigInt(bits - prefix);
  if (base % size !== 0n) {
    return `has host bits set (the network address is ${bigIntToAddress(base - (base % size), family)}/${prefix})`;
  }
  return { family, base, prefix, size, text: `${bigIntToAddress(base, family)}/${prefix}` };
}

export function cidrContains(cidr: Cidr, address: string): boolean {
  if (addressFamily(address) !== cidr.family) return false;
  const value = addressToBigInt(address);
  return value >= cidr.base && value < cidr.base + cidr.size;
}

/** True when `inner` lies entirely inside `outer`. */
export function cidrWithin(inner: Cidr, outer: Cidr): boolean {
  return (
    inner.family === outer.family &&
    inner.base >= outer.base &&
    inner.base + inner.size <= outer.base + outer.size
  );
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.base < b.base + b.size && b.base < a.base + a.size;
}

/**
 * AWS reserves the first four addresses and the last address of every subnet CIDR block (both families):
 * network, VPC router, DNS, future use, and the broadcast address.
 */
export function isAwsReserved(cidr: Cidr, address: string): boolean {
  const offset = addressToBigInt(address) - cidr.base;
  return offset < 4n || offset === cidr.size - 1n;
}

/** Parses a CIDR that the caller has already validated (world file, stored state). */
export function mustParseCidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if (typeof parsed === "string") throw new Error(`internal: ${text} ${parsed}`);
  return parsed;
}
