/**
 * The address ranges of whereabouts NetworkAttachmentDefinitions, read from their CNI configuration as
 * whereabouts reads them (its `pkg/config`, `pkg/iphelpers` and `pkg/allocate`). Pure.
 *
 * whereabouts' IPAM keys: `range` (a CIDR, or `first-last/prefix`), `range_start`, `range_end`, `exclude`,
 * `network_name`, `node_slice_size`, and `ipRanges`, a list of objects with the range keys (dual stack).
 * What whereabouts does with them, and so this module:
 * - The range's block is masked: `10.0.32.230/24` is 10.0.32.0/24, allocated from its first usable address.
 * - The network and broadcast addresses of the block are never handed out (a /31, /32, /127 or /128 has none).
 * - `range_start` and `range_end` count only inside the usable addresses (`range_end` from the start on);
 *   elsewhere they are silently ignored. In `first-last/prefix`, `first` and `last` take their place.
 * - IPv4 octets and prefix lengths may have leading zeros (`00192.00168.1.0/24`), read as decimal, in
 *   `range`, and in the top-level `range_start`/`range_end` (an unreadable one there is ignored). Inside
 *   `ipRanges`, `range_start`/`range_end` are read strictly, and one that does not parse fails the NAD.
 * - `exclude` holds CIDRs or bare addresses (since whereabouts v0.6.3), read strictly.
 * - A top-level `"range": ""` means no top-level range (whereabouts' own dual-stack NADs write it beside
 *   `ipRanges`).
 * - With `node_slice_size`, each node allocates from its slice of the first range, from the slice's first
 *   to its last usable address, with no `range_start`, `range_end` or `exclude`. Which slice is this node's
 *   is not read here: the range is the union over the slices (every slice's network and broadcast address
 *   left out). The other ranges of such a NAD keep their block's usable addresses, without `exclude`.
 * - For an IPv6 range wider than /65 only its first /65 is addressable (whereabouts keeps an allocation as a
 *   signed 64-bit offset from the block's first address).
 * The configuration is the NAD's `spec.config`: one plugin with `ipam`, or a list (`plugins`) of which the
 * whereabouts ones count.
 */
import {
  addressOfValue,
  addressValue,
  anyCidrContains,
  canonicalCidr,
  cidrBounds,
  family,
  tryCanonical,
} from "../../eni/ip.js";
import type { IpFamily } from "../../eni/types.js";
import type { NadInfo } from "../kube/kube-api.js";

/**
 * One whereabouts range: every address from `first` to `last` in `cidr`, except those in `exclude` and,
 * with node slices, each slice's first and last address.
 */
export interface WhereaboutsRange {
  /** The NAD, `namespace/name`. */
  readonly nad: string;
  readonly family: IpFamily;
  /** The block, canonical (network address). */
  readonly cidr: string;
  /** First and last address whereabouts may hand out, inclusive, canonical. */
  readonly first: string;
  readonly last: string;
  /** Canonical CIDRs (a bare address as /32 or /128). */
  readonly exclude: readonly string[];
  /** The NAD's `network_name`; "" when unset (whereabouts' unnamed network). */
  readonly networkName: string;
  /** With `node_slice_size`, on the range that is sliced: the slices' prefix length. */
  readonly slicePrefix: number | undefined;
}

export interface NadRanges {
  readonly ranges: WhereaboutsRange[];
  /** Why part of a NAD's configuration was not understood (one sentence each); its other ranges still count. */
  readonly problems: string[];
}

// biome-ignore lint/suspicious/noExplicitAny: CNI configuration JSON, read defensively.
type Json = any;

const WHEREABOUTS_WIDEST_IPV6_PREFIX = 65;

const familyBits = (fam: IpFamily): number => (fam === 4 ? 32 : 128);

/**
 * An address as Go's `netutils.ParseIPSloppy` reads it: IPv4 octets and the hex groups of IPv6 may carry
 * leading zeros ("010" is ten, not eight). Canonical, or undefined.
 */
export function parseSloppyAddress(text: string): string | undefined {
  const dotted = (part: string): string | undefined => {
    const octets = part.split(".");
    if (octets.length !== 4 || !octets.every((o) => /^\d+$/.test(o))) return undefined;
    const values = octets.map((o) => Number.parseInt(o, 10));
    return values.every((v) => v <= 255) ? values.join(".") : undefined;
  };
  if (!text.includes(":")) {
    const v4 = dotted(text);
    return v4 === undefined ? undefined : tryCanonical(v4);
  }
  const groups = text.split(":");
  const last = groups.length - 1;
  const normal: string[] = [];
  for (const [i, group] of groups.entries()) {
    if (i === last && group.includes(".")) {
      const v4 = dotted(group);
      if (v4 === undefined) return undefined;
      normal.push(v4);
    } else if (group === "") {
      normal.push(group);
    } else {
      if (!/^[0-9a-fA-F]+$/.test(group)) return undefined;
      const trimmed = group.replace(/^0+(?=.)/, "");
      if (trimmed.length > 4) return undefined;
      normal.push(trimmed);
    }
  }
  return tryCanonical(normal.join(":"));
}

/** A CIDR as Go's `netutils.ParseCIDRSloppy` reads it: the address (host bits kept) and the masked block. */
function parseSloppyCidr(text: string): { address: string; cidr: string } | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const address = parseSloppyAddress(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (address === undefined || !/^\d+$/.test(prefixText)) return undefined;
  const prefix = Number.parseInt(prefixText, 10);
  if (prefix > familyBits(family(address))) return undefined;
  return { address, cidr: canonicalCidr(`${address}/${prefix}`) };
}

/** An `exclude` entry as whereabouts' allocator reads it (strict): a CIDR, else an address as /32 or /128. */
function parseExclude(item: unknown): string | undefined {
  if (typeof item !== "string") return undefined;
  if (item.includes("/")) {
    try {
      return canonicalCidr(item);
    } catch {
      return undefined;
    }
  }
  const address = tryCanonical(item);
  return address === undefined ? undefined : `${address}/${familyBits(family(address))}`;
}

interface RangeContext {
  readonly nad: string;
  readonly networkName: string;
  /** Top-level keys read `range_start`/`range_end` leniently; `ipRanges` entries strictly. */
  readonly topLevel: boolean;
  /** A NAD with `node_slice_size`: `range_start`, `range_end` and `exclude` do not apply. */
  readonly sliced: boolean;
}

/** `range_start` or `range_end`: an address, undefined when unset or (top level) unreadable, or a problem. */
function boundOf(ctx: RangeContext, key: string, value: unknown): string | undefined | { problem: string } {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") {
    return { problem: `NAD ${ctx.nad}: ${key} ${JSON.stringify(value)} is not a string` };
  }
  if (ctx.topLevel) return parseSloppyAddress(value);
  const address = tryCanonical(value);
  if (address === undefined) {
    return {
      problem:
        `NAD ${ctx.nad}: ${key} ${JSON.stringify(value)} in ipRanges is not an IP address ` +
        "(whereabouts reads it strictly there: no leading zeros), so whereabouts cannot load this configuration",
    };
  }
  return address;
}

function rangeOf(ctx: RangeContext, spec: Json): WhereaboutsRange | string {
  const { nad } = ctx;
  const raw = spec?.range;
  if (typeof raw !== "string") return `NAD ${nad}: a whereabouts range without "range"`;
  const notRange = `NAD ${nad}: whereabouts range ${JSON.stringify(raw)} is not a CIDR or first-last/prefix`;
  // Read both bounds first: whereabouts fails the whole configuration on an unreadable one in ipRanges,
  // even where the first-last form overrides it.
  const starts = boundOf(ctx, "range_start", spec.range_start);
  const ends = boundOf(ctx, "range_end", spec.range_end);
  if (typeof starts === "object") return starts.problem;
  if (typeof ends === "object") return ends.problem;
  let rangeStart = starts;
  let rangeEnd = ends;
  let cidr: string;
  const dash = raw.indexOf("-");
  if (dash >= 0) {
    const first = parseSloppyAddress(raw.slice(0, dash));
    const block = parseSloppyCidr(raw.slice(dash + 1));
    if (first === undefined || block === undefined) return notRange;
    const b = cidrBounds(block.cidr);
    const value = addressValue(first);
    if (family(first) !== b.family || value < b.first || value > b.last) {
      return `NAD ${nad}: whereabouts range ${JSON.stringify(raw)} starts outside its block ${block.cidr}`;
    }
    cidr = block.cidr;
    rangeStart = first;
    rangeEnd = block.address;
  } else {
    const block = parseSloppyCidr(raw);
    if (block === undefined) return notRange;
    cidr = block.cidr;
  }
  const bounds = cidrBounds(cidr);
  const fam = bounds.family;
  if (bounds.last - bounds.first < 2n) {
    return `NAD ${nad}: whereabouts range ${JSON.stringify(raw)} has no usable address (whereabouts never hands out a block's first and last address)`;
  }
  const firstUsable = bounds.first + 1n;
  const lastUsable = bounds.last - 1n;
  const inside = (address: string | undefined, from: bigint): bigint | undefined => {
    if (address === undefined || family(address) !== fam) return undefined;
    const value = addressValue(address);
    return value >= from && value <= lastUsable ? value : undefined;
  };
  let first = firstUsable;
  let last = lastUsable;
  const exclude: string[] = [];
  if (!ctx.sliced) {
    first = inside(rangeStart, firstUsable) ?? firstUsable;
    last = inside(rangeEnd, first) ?? lastUsable;
    for (const item of Array.isArray(spec.exclude) ? spec.exclude : []) {
      const excluded = parseExclude(item);
      if (excluded === undefined)
        return `NAD ${nad}: exclude ${JSON.stringify(item)} is not a CIDR or an address`;
      exclude.push(excluded);
    }
  }
  const prefix = Number(cidr.slice(cidr.indexOf("/") + 1));
  if (fam === 6 && prefix < WHEREABOUTS_WIDEST_IPV6_PREFIX) {
    const cap = bounds.first + (1n << BigInt(128 - WHEREABOUTS_WIDEST_IPV6_PREFIX)) - 1n;
    if (last > cap) last = cap;
    if (first > last) {
      return `NAD ${nad}: whereabouts range ${JSON.stringify(raw)} starts past the first /65 of ${cidr}, the only part whereabouts can address`;
    }
  }
  return {
    nad,
    family: fam,
    cidr,
    first: addressOfValue(fam, first),
    last: addressOfValue(fam, last),
    exclude,
    networkName: ctx.networkName,
    slicePrefix: undefined,
  };
}

/**
 * `node_slice_size` ("/22" or "22"): the prefix length, or a problem. whereabouts' own node-slice controller
 * cuts IPv4 ranges only (v0.9 fails on an IPv6 range); an IPv6 range with a slice size is still read as
 * sliced, so that prefix mode holds /80 slices that a NodeSlicePool names, whoever made it (docs/prefix-mode.md).
 */
function slicePrefixOf(nad: string, value: unknown, sliced: WhereaboutsRange): number | string {
  const text = typeof value === "string" ? value.replace(/^\//, "") : "";
  const prefix = /^\d+$/.test(text) ? Number.parseInt(text, 10) : Number.NaN;
  const blockPrefix = Number(sliced.cidr.slice(sliced.cidr.indexOf("/") + 1));
  const narrowest = sliced.family === 4 ? 30 : 126;
  if (Number.isNaN(prefix) || prefix < blockPrefix || prefix > narrowest) {
    return `NAD ${nad}: node_slice_size ${JSON.stringify(value)} is not a prefix length from the range's own (/${blockPrefix}) to /${narrowest}, so ${sliced.cidr} cannot be sliced per node`;
  }
  return prefix;
}

/** The whereabouts ranges of one NAD; a NAD without whereabouts IPAM has none. */
export function rangesOfNad(info: NadInfo): NadRanges {
  const nad = `${info.namespace}/${info.name}`;
  if (info.config === "") return { ranges: [], problems: [] };
  let config: Json;
  try {
    config = JSON.parse(info.config);
  } catch {
    return { ranges: [], problems: [`NAD ${nad}: spec.config is not JSON`] };
  }
  const ranges: WhereaboutsRange[] = [];
  const problems: string[] = [];
  for (const ipam of ipamsOf(config)) {
    const networkName = typeof ipam.network_name === "string" ? ipam.network_name : "";
    if (ipam.network_name !== undefined && typeof ipam.network_name !== "string") {
      problems.push(`NAD ${nad}: network_name ${JSON.stringify(ipam.network_name)} is not a string`);
      continue;
    }
    const specs: { spec: Json; topLevel: boolean }[] = [
      // whereabouts takes a top-level "range": "" (or null) for none.
      ...(ipam.range === undefined || ipam.range === null || ipam.range === ""
        ? []
        : [{ spec: ipam, topLevel: true }]),
      ...(Array.isArray(ipam.ipRanges) ? ipam.ipRanges : []).map((spec: Json) => ({ spec, topLevel: false })),
    ];
    if (specs.length === 0) {
      // whereabouts fails every CNI ADD on it: a key misspelt (`ipRange`), not a NAD without ranges.
      problems.push(
        `NAD ${nad}: its whereabouts ipam names no range (no "range", no "ipRanges"; its keys are ${keysOf(ipam)}), so whereabouts cannot allocate from it`,
      );
      continue;
    }
    const sliced =
      ipam.node_slice_size !== undefined && ipam.node_slice_size !== null && ipam.node_slice_size !== "";
    for (const [i, { spec, topLevel }] of specs.entries()) {
      let range = rangeOf({ nad, networkName, topLevel, sliced }, spec);
      // whereabouts' node slice controller slices the first range only.
      if (sliced && i === 0 && typeof range !== "string") {
        const slicePrefix = slicePrefixOf(nad, ipam.node_slice_size, range);
        if (typeof slicePrefix === "string") range = slicePrefix;
        else range = { ...range, slicePrefix };
      }
      if (typeof range === "string") problems.push(range);
      else ranges.push(range);
    }
  }
  return { ranges, problems };
}

const keysOf = (object: Json): string =>
  Object.keys(object)
    .map((k) => JSON.stringify(k))
    .join(", ");

/**
 * Why a NAD's configuration names no whereabouts range, in a few words (`rangesOfNad` found none and no
 * problem): spec.config empty, no `ipam` block, or an `ipam` of another type.
 */
export function whyNoWhereaboutsRange(info: NadInfo): string {
  if (info.config.trim() === "") return "its spec.config is empty";
  let config: Json;
  try {
    config = JSON.parse(info.config);
  } catch {
    return "its spec.config is not JSON";
  }
  if (typeof config !== "object" || config === null) return "its spec.config is not a JSON object";
  const plugins: Json[] = Array.isArray(config.plugins) ? config.plugins : [config];
  const types = plugins
    .map((plugin) => plugin?.ipam)
    .filter((ipam) => typeof ipam === "object" && ipam !== null)
    .map((ipam) => (ipam.type === undefined ? "unset" : JSON.stringify(ipam.type)));
  if (types.length === 0) return 'it has no "ipam" block';
  return `its ipam type is ${types.join(", ")}, not "whereabouts"`;
}

function ipamsOf(config: Json): Json[] {
  if (typeof config !== "object" || config === null) return [];
  const plugins: Json[] = Array.isArray(config.plugins) ? config.plugins : [config];
  return plugins
    .map((plugin) => plugin?.ipam)
    .filter((ipam) => typeof ipam === "object" && ipam !== null && ipam.type === "whereabouts");
}

/** Whether whereabouts may hand out `address` from this range. */
export function rangeContains(range: WhereaboutsRange, address: string): boolean {
  if (family(address) !== range.family) return false;
  const value = addressValue(address);
  if (value < addressValue(range.first) || value > addressValue(range.last)) return false;
  if (range.slicePrefix !== undefined) {
    const size = 1n << BigInt(familyBits(range.family) - range.slicePrefix);
    const offset = (value - cidrBounds(range.cidr).first) % size;
    if (offset === 0n || offset === size - 1n) return false;
  }
  return !(range.exclude.length > 0 && anyCidrContains(range.exclude, address));
}
