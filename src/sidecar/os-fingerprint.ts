import { networkInterfaces } from "node:os";

/**
 * A cheap fingerprint of every interface's addresses, straight from os.networkInterfaces(): no parsing, no
 * canonicalisation, no sorting. The watcher compares it between polls and does the full read (which parses
 * every address) only when it differs, so an idle poll costs one getifaddrs() and one string.
 */
export function osInterfacesFingerprint(read: typeof networkInterfaces = networkInterfaces): () => string {
  return () => {
    let text = "";
    for (const [name, entries] of Object.entries(read())) {
      text += name;
      for (const entry of entries ?? []) text += `|${entry.mac}|${entry.address}/${entry.netmask}`;
      text += "\n";
    }
    return text;
  };
}
