import { NetworkStatusError } from "./errors/network-status-error.js";
import { goUnquote } from "./go-unquote.js";
import { type InterfaceSelection, isManagedInterface } from "./interface-selector.js";
import { addressKind, compareAddresses, tryCanonical } from "./ip.js";
import type { PodInterface } from "./types.js";

/** Current and pre-3.x annotation names written by Multus. */
export const NETWORK_STATUS_ANNOTATIONS = [
  "k8s.v1.cni.cncf.io/network-status",
  "k8s.v1.cni.cncf.io/networks-status",
] as const;

/** The fix for an annotation that is not as Multus writes it. */
const MALFORMED_FIX =
  "Multus writes a JSON list of entries with string fields name, interface and mac, a list of strings ips " +
  "and a boolean default: correct the annotation (or the file), or set IPMGR_ADDRESS_SOURCE=interfaces";

/** The fields we read, what each must be, and the check. Other fields (dns, device-info) are ignored. */
const FIELDS: readonly (readonly [string, string, (value: unknown) => boolean])[] = [
  ["name", "a string", (v) => typeof v === "string"],
  ["interface", "a string", (v) => typeof v === "string"],
  ["ips", "a list of strings", (v) => Array.isArray(v) && v.every((ip) => typeof ip === "string")],
  ["mac", "a string", (v) => typeof v === "string"],
  ["default", "true or false", (v) => typeof v === "boolean"],
];

/** An Ethernet MAC as Multus writes it (and as IMDS lists ENIs): six pairs of hex digits, colon-separated. */
const MAC_ADDRESS = /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/;

interface Entry {
  readonly name?: string;
  readonly interface?: string;
  readonly ips?: readonly string[];
  readonly mac?: string;
  readonly default?: boolean;
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** `network-status entry 2 ("default/macvlan", interface net1)`: the index (from 0) and what is known. */
function describeEntry(index: number, raw: unknown): string {
  const fields = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
  const known = [
    ...(typeof fields.name === "string" ? [JSON.stringify(fields.name)] : []),
    ...(typeof fields.interface === "string" ? [`interface ${fields.interface}`] : []),
  ];
  return `network-status entry ${index}${known.length === 0 ? "" : ` (${known.join(", ")})`}`;
}

/** The entry, checked field by field: a problem names the entry and the first field that is wrong. */
function checkEntry(index: number, raw: unknown, source: string): Entry {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new NetworkStatusError(
      source,
      `${describeEntry(index, raw)} is ${kindOf(raw)}, not an object`,
      MALFORMED_FIX,
    );
  }
  const fields = raw as Record<string, unknown>;
  for (const [field, expected, valid] of FIELDS) {
    if (fields[field] !== undefined && !valid(fields[field])) {
      throw new NetworkStatusError(
        source,
        `${describeEntry(index, raw)}: "${field}" must be ${expected}`,
        MALFORMED_FIX,
      );
    }
  }
  return fields as Entry;
}

/** The fix for an annotation line the kubelet would not have written. */
const QUOTING_FIX =
  'the kubelet writes each annotation as key="value", the value quoted as Go\'s %q does: correct what wrote ' +
  "the file, or set IPMGR_ADDRESS_SOURCE=interfaces";

/**
 * Extracts the network-status JSON from a downward API annotations file, whose lines are
 * `key="value"` with the value quoted Go-style (%q). A file that is itself JSON is taken as is (and refused
 * by parseNetworkStatus unless it is a list).
 * Returns undefined when the file has no network-status annotation yet (written after CNI ADD, refreshed
 * on a later kubelet sync).
 * @throws NetworkStatusError (exit 2) when the annotation's value is not a Go double-quoted string.
 */
export function extractNetworkStatusJson(fileText: string, source = "network-status"): string | undefined {
  const trimmed = fileText.trim();
  // Annotation lines start with a key, never with a bracket.
  if (trimmed.startsWith("[") || trimmed.startsWith("{")) return trimmed;
  for (const annotation of NETWORK_STATUS_ANNOTATIONS) {
    const prefix = `${annotation}=`;
    const line = fileText.split("\n").find((l) => l.startsWith(prefix));
    if (line === undefined) continue;
    // Not JSON.parse: %q writes \x7f, \U0001xxxx and \xHH for invalid UTF-8, which JSON does not have.
    const unquoted = goUnquote(line.slice(prefix.length));
    if (!unquoted.ok) {
      throw new NetworkStatusError(
        source,
        `the ${annotation} annotation is not a quoted string: ${unquoted.problem}`,
        QUOTING_FIX,
      );
    }
    return unquoted.value;
  }
  return undefined;
}

export interface NetworkStatusContext {
  readonly selection: InterfaceSelection;
  /** The file the JSON came from, for messages. */
  readonly source: string;
  /** Names of the interfaces this pod has (we run in its network namespace). */
  readonly localInterfaces: ReadonlySet<string>;
  /** Told of each selected entry left out because it has no address EC2 could hold (see SkippedEntry). */
  readonly onSkipped?: (skipped: SkippedEntry) => void;
}

/**
 * A selected entry without a unicast address: Multus omits `ips` for a network without IPAM (an L2
 * attachment), and an interface may carry only a link-local address. Nothing there needs EC2.
 */
export interface SkippedEntry {
  readonly interfaceName: string;
  /** `network-status entry 2 ("cnf/l2", interface net3)`. */
  readonly entry: string;
  /** What the entry lists (canonical), none of it unicast; empty when it lists nothing. */
  readonly addresses: readonly string[];
}

/**
 * Parses the network-status JSON into pod interfaces. Entries without an interface name (the default
 * network, usually), entries marked default and interfaces not selected are left out, and so are selected
 * entries without a unicast address (an L2 attachment: `onSkipped` is told). A selected entry with one
 * must have a MAC (ENIs are matched by MAC) and name an interface this pod has: an address on an interface
 * the pod does not have is carried by nothing here, and the file is not this pod's.
 * @throws NetworkStatusError (exit 2), one sentence naming the entry, the field and the fix.
 */
export function parseNetworkStatus(json: string, context: NetworkStatusContext): PodInterface[] {
  const { selection, source, localInterfaces } = context;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (cause) {
    throw new NetworkStatusError(source, "network-status is not valid JSON", MALFORMED_FIX, { cause });
  }
  if (!Array.isArray(raw)) {
    throw new NetworkStatusError(
      source,
      `network-status is ${kindOf(raw)}, not a list of network entries`,
      MALFORMED_FIX,
    );
  }
  const entries = raw.map((item: unknown, index) => checkEntry(index, item, source));
  const result: PodInterface[] = [];
  for (const [index, entry] of entries.entries()) {
    if (entry.interface === undefined || entry.interface === "" || entry.default === true) continue;
    if (!isManagedInterface(selection, entry.interface)) continue;
    const addresses = new Set<string>();
    for (const ip of entry.ips ?? []) {
      const address = tryCanonical(ip.split("/")[0] ?? ip);
      if (address === undefined) {
        throw new NetworkStatusError(
          source,
          `${describeEntry(index, entry)}: "ips" lists ${JSON.stringify(ip)}, not an IP address`,
          MALFORMED_FIX,
        );
      }
      addresses.add(address);
    }
    // Before the checks below: an L2 attachment may have no MAC, and no address by which to find it here.
    if (![...addresses].some((a) => addressKind(a) === "unicast")) {
      context.onSkipped?.({
        interfaceName: entry.interface,
        entry: describeEntry(index, entry),
        addresses: [...addresses].sort(compareAddresses),
      });
      continue;
    }
    if (!localInterfaces.has(entry.interface)) {
      const here = [...localInterfaces].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(", ");
      throw new NetworkStatusError(
        source,
        `${describeEntry(index, entry)}: this pod has no interface ${entry.interface} with an address ` +
          `(it has: ${here || "none"}), so nothing here carries the entry's addresses`,
        "the file describes another pod or is out of date: check IPMGR_NETWORK_STATUS_FILE and the " +
          "downward API volume (fieldPath: metadata.annotations)",
      );
    }
    if (entry.mac === undefined || entry.mac === "") {
      throw new NetworkStatusError(
        source,
        `${describeEntry(index, entry)} has no "mac", and ENIs are matched by MAC`,
        "set IPMGR_ADDRESS_SOURCE=interfaces to read the MAC from the interface itself, " +
          "or exclude the interface with IPMGR_EXCLUDE_INTERFACES",
      );
    }
    if (!MAC_ADDRESS.test(entry.mac)) {
      throw new NetworkStatusError(
        source,
        `${describeEntry(index, entry)}: "mac" is ${JSON.stringify(entry.mac)}, not a MAC address ` +
          "(six pairs of hex digits separated by colons, e.g. 02:00:00:00:0a:01), so no ENI can match it",
        "correct the annotation (or the file), or set IPMGR_ADDRESS_SOURCE=interfaces to read the MAC from " +
          "the interface itself",
      );
    }
    result.push({
      name: entry.interface,
      mac: entry.mac.toLowerCase(),
      addresses: [...addresses].sort(compareAddresses),
    });
  }
  // Code-unit order, not localeCompare: interface names are ASCII, and collation pages ICU data in (~3 MB RSS).
  return result.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
