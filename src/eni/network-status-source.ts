import { readFile } from "node:fs";
import { networkInterfaces } from "node:os";
import { basename, dirname } from "node:path";
import { NetworkStatusError } from "./errors/network-status-error.js";
import type { InterfaceSelection } from "./interface-selector.js";
import type { InterfaceSource } from "./interface-source.js";
import { extractNetworkStatusJson, parseNetworkStatus, type SkippedEntry } from "./network-status.js";
import type { Logger } from "./process/logger.js";
import type { PodInterface } from "./types.js";

/**
 * Names of the interfaces of the network namespace we run in: the pod's. os.networkInterfaces() lists
 * only interfaces that have an address, which is what matters here: an address Multus recorded on an
 * interface must be on it.
 */
export function osInterfaceNames(): ReadonlySet<string> {
  return new Set(Object.keys(networkInterfaces()));
}

/**
 * The file's text. Through fs.readFile's callback, not node:fs/promises: every command's start loads this
 * module, and fs/promises brings five more of Node's own (readline among them) for this one read.
 */
function readText(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    readFile(path, "utf8", (error, text) => (error === null ? resolve(text) : reject(error)));
  });
}

/**
 * The fix for a file that is not there. The kubelet writes a downward API volume's files before any container
 * starts, so a missing file is never a matter of waiting: the volume, or its mount, is not where the setting
 * says.
 */
function mountFix(path: string): string {
  return (
    `add a downwardAPI volume with the item {path: ${basename(path)}, fieldRef: {fieldPath: metadata.annotations}} ` +
    `and mount it at ${dirname(path)} (as deploy/overlays/init/deployment-init-network-status.yaml does), or point ` +
    "IPMGR_NETWORK_STATUS_FILE at the file where it is mounted, or set IPMGR_ADDRESS_SOURCE=interfaces"
  );
}

/**
 * Reads addresses from the Multus network-status annotation in a downward API file. Until the annotation
 * appears in the file, it reports no interfaces (callers wait, bounded). A file that does not exist is a
 * configuration error at once.
 */
export class NetworkStatusSource implements InterfaceSource {
  readonly #path: string;
  readonly #selection: InterfaceSelection;
  readonly #localInterfaceNames: () => ReadonlySet<string>;
  readonly #logger: Logger | undefined;
  /** The entries skipped at the last read, so that the debug line comes once per change, not once per read. */
  #skippedKey = "";

  /**
   * `localInterfaceNames`: the pod's interfaces, checked against the file's (tests inject a set).
   * `logger`: where skipped entries (no unicast address) are said, at debug level.
   */
  constructor(
    path: string,
    selection: InterfaceSelection,
    localInterfaceNames: () => ReadonlySet<string> = osInterfaceNames,
    logger?: Logger,
  ) {
    this.#path = path;
    this.#selection = selection;
    this.#localInterfaceNames = localInterfaceNames;
    this.#logger = logger;
  }

  async read(): Promise<PodInterface[]> {
    let text: string;
    try {
      text = await readText(this.#path);
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") {
        throw new NetworkStatusError(
          this.#path,
          "the file does not exist, and the downward API writes it before any container starts",
          mountFix(this.#path),
          { cause },
        );
      }
      throw new NetworkStatusError(
        this.#path,
        `the file cannot be read (${code ?? String(cause)})`,
        undefined,
        {
          cause,
        },
      );
    }
    const json = extractNetworkStatusJson(text, this.#path);
    if (json === undefined) return [];
    const skipped: SkippedEntry[] = [];
    const interfaces = parseNetworkStatus(json, {
      selection: this.#selection,
      source: this.#path,
      localInterfaces: this.#localInterfaceNames(),
      onSkipped: (entry) => skipped.push(entry),
    });
    const key = skipped.map((e) => `${e.entry} ${e.addresses.join(" ")}`).join("\n");
    if (key !== this.#skippedKey) {
      this.#skippedKey = key;
      for (const entry of skipped) {
        this.#logger?.debug(
          { file: this.#path, interface: entry.interfaceName, addresses: entry.addresses },
          `${entry.entry} has no unicast address (a network without IPAM, or link-local only): nothing to assign, skipped`,
        );
      }
    }
    return interfaces;
  }
}
