import { addressFamily, addressToBigInt, bigIntToAddress, type Cidr, type Family } from "../ip-math.js";
import { isJsonObject, type JsonObject } from "./kube-object.js";

/**
 * whereabouts' allocation, as the simulator's kubelet stand-in plays it: the ranges a NAD's IPAM config
 * names, and the lowest free address of each. Written from whereabouts' documented behaviour (README, IPPool
 * and OverlappingRangeIPReservation shapes), not from this project's bridge, which it is there to check.
 */

/** One range whereabouts allocates from. */
export interface WhereaboutsRange {
  /** The range's block, host bits masked: the IPPool's `spec.range` and the base of its offsets. */
  readonly cidr: Cidr;
  /** First and last address handed out (network and broadcast addresses never are). */
  readonly first: bigint;
  readonly last: bigint;
  readonly exclude: readonly Cidr[];
  /** `network_name`: prefixes the IPPool's and the reservations' names. */
  readonly networkName: string;
  /** `enable_overlapping_ranges` (default true): check and write OverlappingRangeIPReservations. */
  readonly overlapping: boolean;
}

function bitsOf(family: Family): number {
  return family === 4 ? 32 : 128;
}

/** A CIDR with its host bits masked (`198.51.100.230/24` is `198.51.100.0/24`); a bare address is a /32 or /128. */
function maskedCidr(text: string): Cidr | string {
  const [address = "", prefixText, ...rest] = text.trim().split("/");
  const family = addressFamily(address);
  if (family === undefined || rest.length > 0) return `${JSON.stringify(text)} is not a CIDR`;
  const bits = bitsOf(family);
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText))
    return `${JSON.stringify(text)} is not a CIDR`;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return `${JSON.stringify(text)} has a prefix length above ${bits}`;
  const size = 1n << BigInt(bits - prefix);
  const base = addressToBigInt(address) - (addressToBigInt(address) % size);
  return { family, base, prefix, size, text: `${bigIntToAddress(base, family)}/${prefix}` };
}

function address(text: unknown, family: Family, field: string): bigint | string {
  if (typeof text !== "string" || addressFamily(text) !== family) {
    return `${field} ${JSON.stringify(text)} is not an IPv${family} address`;
  }
  return addressToBigInt(text);
}

/** One entry of `range`/`ipRanges`, with the settings around it. Returns a reason when it cannot be read. */
function rangeOf(entry: JsonObject, top: JsonObject): WhereaboutsRange | string {
  const text = entry.range;
  if (typeof text !== "string" || text === "") return "has no range";
  // `first-last/prefix`: the form sets range_start and range_end.
  const dash = /^([^-/]+)-([^/]+)(\/\d+)$/.exec(text);
  const cidr = maskedCidr(dash === null ? text : `${dash[1]}${dash[3]}`);
  if (typeof cidr === "string") return `range ${cidr}`;
  if (cidr.size <= 2n) return `range ${cidr.text} has no address to hand out`;
  let first = cidr.base + 1n;
  let last = cidr.base + cidr.size - 2n;
  const start = dash?.[1] ?? entry.range_start;
  const end = dash?.[2] ?? entry.range_end;
  if (start !== undefined) {
    const value = address(start, cidr.family, "range_start");
    if (typeof value === "string") return value;
    if (value > first) first = value;
  }
  if (end !== undefined) {
    const value = address(end, cidr.family, "range_end");
    if (typeof value === "string") return value;
    if (value < last) last = value;
  }
  const exclude: Cidr[] = [];
  const excluded = entry.exclude ?? top.exclude ?? [];
  if (!Array.isArray(excluded)) return "exclude is not a list";
  for (const item of excluded) {
    const block = typeof item === "string" ? maskedCidr(item) : "an exclude entry is not a string";
    if (typeof block === "string") return `exclude ${block}`;
    exclude.push(block);
  }
  return {
    cidr,
    first,
    last,
    exclude,
    networkName: typeof top.network_name === "string" ? top.network_name : "",
    overlapping: top.enable_overlapping_ranges !== false,
  };
}

/** The ranges of a whereabouts IPAM config (`range` and each of `ipRanges`). Throws Error with the reason. */
export function whereaboutsRanges(ipam: JsonObject): WhereaboutsRange[] {
  const entries: JsonObject[] = [];
  if (typeof ipam.range === "string" && ipam.range !== "") entries.push(ipam);
  if (Array.isArray(ipam.ipRanges)) entries.push(...ipam.ipRanges.filter(isJsonObject));
  if (entries.length === 0) throw new Error("the whereabouts IPAM config has no range and no ipRanges");
  return entries.map((entry) => {
    const range = rangeOf(entry, ipam);
    if (typeof range === "string") throw new Error(`the whereabouts IPAM config's ${range}`);
    return range;
  });
}

/** whereabouts' name for a range's text (IPPool names): `:` and `/` as `-`, a trailing `:` padded with 0. */
function normalized(text: string): string {
  return (text.endsWith(":") ? `${text}0` : text).replaceAll(":", "-").replaceAll("/", "-");
}

/** The IPPool whereabouts keeps the range's allocations in. */
export function ipPoolName(range: WhereaboutsRange): string {
  const name = normalized(range.cidr.text);
  return range.networkName === "" ? name : `${range.networkName}-${name}`;
}

/** The OverlappingRangeIPReservation of an address in the range's network. */
export function reservationNameOf(range: WhereaboutsRange, ip: string): string {
  const name = normalized(ip);
  return range.networkName === "" ? name : `${range.networkName}-${name}`;
}

/**
 * The lowest address of the range that is not excluded, not allocated in the pool (offsets from the range's
 * base) and not `taken` (reserved elsewhere); undefined when the range is full.
 */
export function lowestFree(
  range: WhereaboutsRange,
  allocatedOffsets: ReadonlySet<string>,
  taken: (ip: string) => boolean,
): { ip: string; offset: string } | undefined {
  for (let value = range.first; value <= range.last; value++) {
    const excluded = range.exclude.find((b) => value >= b.base && value < b.base + b.size);
    if (excluded !== undefined) {
      value = excluded.base + excluded.size - 1n;
      continue;
    }
    const offset = String(value - range.cidr.base);
    if (allocatedOffsets.has(offset)) continue;
    const ip = bigIntToAddress(value, range.cidr.family);
    if (!taken(ip)) return { ip, offset };
  }
  return undefined;
}
