// zod/mini: the classic API would pull all of zod into every start of `init` (see settings.ts).
import * as z from "zod/mini";
import { IpmgrError } from "./errors/ipmgr-error.js";
import { ExitCode } from "./exit-codes.js";
import { type InterfaceSelection, isManagedInterface } from "./interface-selector.js";
import { compareAddresses, tryCanonical } from "./ip.js";
import type { PodInterface } from "./types.js";

/** Current and pre-3.x annotation names written by Multus. */
export const NETWORK_STATUS_ANNOTATIONS = [
  "k8s.v1.cni.cncf.io/network-status",
  "k8s.v1.cni.cncf.io/networks-status",
] as const;

const networkStatusEntry = z.looseObject({
  name: z.optional(z.string()),
  interface: z.optional(z.string()),
  ips: z.optional(z.array(z.string())),
  mac: z.optional(z.string()),
  default: z.optional(z.boolean()),
});
const networkStatus = z.array(networkStatusEntry);

/** The network-status annotation (or a file holding it) could not be read as Multus writes it. */
export class NetworkStatusError extends IpmgrError {
  override name = "NetworkStatusError";
  readonly source: string;

  constructor(source: string, problem: string, options?: { cause?: unknown }) {
    super(
      `${source}: ${problem}. Mount the pod's annotations with the downward API ` +
        "(fieldPath: metadata.annotations) or use IPMGR_ADDRESS_SOURCE=interfaces.",
      { ...options, exitCode: ExitCode.config },
    );
    this.source = source;
  }
}

/**
 * Extracts the network-status JSON from a downward API annotations file, whose lines are
 * `key="value"` with the value quoted Go-style (%q). A file that is itself a JSON array is taken as is.
 * Returns undefined when the file has no network-status annotation yet (written after CNI ADD, refreshed
 * on a later kubelet sync).
 */
export function extractNetworkStatusJson(fileText: string): string | undefined {
  const trimmed = fileText.trim();
  if (trimmed.startsWith("[")) return trimmed;
  for (const annotation of NETWORK_STATUS_ANNOTATIONS) {
    const prefix = `${annotation}=`;
    const line = fileText.split("\n").find((l) => l.startsWith(prefix));
    if (line === undefined) continue;
    // Go's %q and JSON agree on the escapes kubelet emits for this content (\" \\ \n \t \uXXXX).
    return JSON.parse(line.slice(prefix.length)) as string;
  }
  return undefined;
}

/**
 * Parses the network-status JSON into pod interfaces. Entries without an interface name or MAC (the
 * default network, usually) and interfaces not selected are left out.
 */
export function parseNetworkStatus(
  json: string,
  selection: InterfaceSelection,
  source: string,
): PodInterface[] {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (cause) {
    throw new NetworkStatusError(source, "network-status is not valid JSON", { cause });
  }
  const parsed = networkStatus.safeParse(raw);
  if (!parsed.success) {
    throw new NetworkStatusError(
      source,
      `network-status is not a list of network entries (${parsed.error.message})`,
    );
  }
  const result: PodInterface[] = [];
  for (const entry of parsed.data) {
    if (entry.interface === undefined || entry.mac === undefined || entry.default === true) continue;
    if (!isManagedInterface(selection, entry.interface)) continue;
    const addresses = new Set<string>();
    for (const ip of entry.ips ?? []) {
      const address = tryCanonical(ip.split("/")[0] ?? ip);
      if (address === undefined) {
        throw new NetworkStatusError(
          source,
          `interface ${entry.interface} lists ${JSON.stringify(ip)}, not an IP address`,
        );
      }
      addresses.add(address);
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
