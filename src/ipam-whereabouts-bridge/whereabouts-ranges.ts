/**
 * The address ranges of whereabouts NetworkAttachmentDefinitions, read from their CNI configuration. Pure.
 *
 * whereabouts' IPAM keys: `range` (a CIDR, or `first-last/prefix`), `range_start`, `range_end`, `exclude`
 * (CIDRs), and `ipRanges`, a list of objects with the same keys (dual stack). A `range` whose address has
 * host bits set starts at that address, as whereabouts reads it. For a range wider than /65 whereabouts
 * uses only its first /65, and so does this module. The configuration is the NAD's `spec.config`: one
 * plugin with `ipam`, or a list (`plugins`) of which the whereabouts ones count.
 */
import {
  addressOfValue,
  addressValue,
  anyCidrContains,
  canonicalCidr,
  cidrBounds,
  family,
  tryCanonical,
} from "../eni/ip.js";
import type { IpFamily } from "../eni/types.js";
import type { NadInfo } from "./kube-api.js";

/** One whereabouts range: every address from `first` to `last` in `cidr`, except those in `exclude`. */
export interface WhereaboutsRange {
  /** The NAD, `namespace/name`. */
  readonly nad: string;
  readonly family: IpFamily;
  /** The block, canonical (network address). */
  readonly cidr: string;
  /** First and last address of the range, inclusive, canonical. */
  readonly first: string;
  readonly last: string;
  readonly exclude: readonly string[];
}

export interface NadRanges {
  readonly ranges: WhereaboutsRange[];
  /** Why part of a NAD's configuration was not understood (one sentence each); its other ranges still count. */
  readonly problems: string[];
}

// biome-ignore lint/suspicious/noExplicitAny: CNI configuration JSON, read defensively.
type Json = any;

const WHEREABOUTS_WIDEST_IPV6_PREFIX = 65;

function ipamsOf(config: Json): Json[] {
  if (typeof config !== "object" || config === null) return [];
  const plugins: Json[] = Array.isArray(config.plugins) ? config.plugins : [config];
  return plugins
    .map((plugin) => plugin?.ipam)
    .filter((ipam) => typeof ipam === "object" && ipam !== null && ipam.type === "whereabouts");
}

function rangeOf(nad: string, spec: Json): WhereaboutsRange | string {
  const raw = spec?.range;
  if (typeof raw !== "string") return `NAD ${nad}: a whereabouts range without "range"`;
  const slash = raw.lastIndexOf("/");
  const prefix = slash < 0 ? "" : raw.slice(slash + 1);
  const head = slash < 0 ? raw : raw.slice(0, slash);
  const dash = head.indexOf("-");
  const startText = dash < 0 ? head : head.slice(0, dash);
  const endText = dash < 0 ? undefined : head.slice(dash + 1);
  const start = tryCanonical(startText);
  if (start === undefined || prefix === "") {
    return `NAD ${nad}: whereabouts range ${JSON.stringify(raw)} is not a CIDR or first-last/prefix`;
  }
  let cidr: string;
  try {
    cidr = canonicalCidr(`${start}/${prefix}`);
  } catch {
    return `NAD ${nad}: whereabouts range ${JSON.stringify(raw)} is not a CIDR or first-last/prefix`;
  }
  const fam = family(start);
  const bounds = cidrBounds(cidr);
  let last = bounds.last;
  const prefixLength = Number(prefix);
  if (fam === 6 && prefixLength < WHEREABOUTS_WIDEST_IPV6_PREFIX) {
    last = bounds.first + (1n << BigInt(128 - WHEREABOUTS_WIDEST_IPV6_PREFIX)) - 1n;
  }
  let first = addressValue(start);
  const bound = (key: string, value: unknown): bigint | string | undefined => {
    if (value === undefined) return undefined;
    const address = typeof value === "string" ? tryCanonical(value) : undefined;
    if (address === undefined || family(address) !== fam) {
      return `NAD ${nad}: ${key} ${JSON.stringify(value)} is not an IPv${fam} address`;
    }
    return addressValue(address);
  };
  const end = bound("range end", endText);
  const rangeStart = bound("range_start", spec.range_start);
  const rangeEnd = bound("range_end", spec.range_end);
  for (const b of [end, rangeStart, rangeEnd]) if (typeof b === "string") return b;
  if (typeof rangeStart === "bigint" && rangeStart > first) first = rangeStart;
  if (typeof end === "bigint" && end < last) last = end;
  if (typeof rangeEnd === "bigint" && rangeEnd < last) last = rangeEnd;
  if (first < bounds.first || last > bounds.last || first > last) {
    return `NAD ${nad}: whereabouts range ${JSON.stringify(raw)} has no address between its start and end inside ${cidr}`;
  }
  const exclude: string[] = [];
  for (const item of Array.isArray(spec.exclude) ? spec.exclude : []) {
    try {
      exclude.push(canonicalCidr(String(item)));
    } catch {
      return `NAD ${nad}: exclude ${JSON.stringify(item)} is not a CIDR`;
    }
  }
  return {
    nad,
    family: fam,
    cidr,
    first: addressOfValue(fam, first),
    last: addressOfValue(fam, last),
    exclude,
  };
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
    const specs: Json[] = [
      ...(ipam.range === undefined ? [] : [ipam]),
      ...(Array.isArray(ipam.ipRanges) ? ipam.ipRanges : []),
    ];
    for (const spec of specs) {
      const range = rangeOf(nad, spec);
      if (typeof range === "string") problems.push(range);
      else ranges.push(range);
    }
  }
  return { ranges, problems };
}

/** Whether whereabouts may hand out `address` from this range. */
export function rangeContains(range: WhereaboutsRange, address: string): boolean {
  if (family(address) !== range.family) return false;
  const value = addressValue(address);
  if (value < addressValue(range.first) || value > addressValue(range.last)) return false;
  return !(range.exclude.length > 0 && anyCidrContains(range.exclude, address));
}
