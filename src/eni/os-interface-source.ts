import { networkInterfaces } from "node:os";
import { type InterfaceSelection, isManagedInterface } from "./interface-selector.js";
import type { InterfaceSource } from "./interface-source.js";
import { compareAddresses, tryCanonical } from "./ip.js";
import type { PodInterface } from "./types.js";

/**
 * Reads the pod's interfaces with os.networkInterfaces() (getifaddrs): every address, floating ones
 * included, in about 50 µs. Not systeminformation: it reports one address per family per interface and
 * so misses a floating IP, and takes about 60 ms a call.
 */
export class OsInterfaceSource implements InterfaceSource {
  readonly #selection: InterfaceSelection;
  readonly #read: typeof networkInterfaces;

  constructor(selection: InterfaceSelection, read: typeof networkInterfaces = networkInterfaces) {
    this.#selection = selection;
    this.#read = read;
  }

  async read(): Promise<PodInterface[]> {
    return this.readSync();
  }

  /** The same snapshot, synchronously: cheap enough for the sidecar's tight poll loop. */
  readSync(): PodInterface[] {
    const result: PodInterface[] = [];
    for (const [name, entries] of Object.entries(this.#read())) {
      if (entries === undefined || entries.length === 0 || !isManagedInterface(this.#selection, name))
        continue;
      const addresses = new Set<string>();
      for (const entry of entries) {
        const address = tryCanonical(entry.address);
        if (address !== undefined) addresses.add(address);
      }
      result.push({
        name,
        mac: (entries[0]?.mac ?? "").toLowerCase(),
        addresses: [...addresses].sort(compareAddresses),
      });
    }
    // Code-unit order, not localeCompare: interface names are ASCII, and collation pages ICU data in (~3 MB RSS).
    return result.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}
