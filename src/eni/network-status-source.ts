import { readFile } from "node:fs";
import { networkInterfaces } from "node:os";
import { NetworkStatusError } from "./errors/network-status-error.js";
import type { InterfaceSelection } from "./interface-selector.js";
import type { InterfaceSource } from "./interface-source.js";
import { extractNetworkStatusJson, parseNetworkStatus } from "./network-status.js";
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
 * Reads addresses from the Multus network-status annotation in a downward API file. Until the annotation
 * appears in the file, it reports no interfaces (callers wait, bounded).
 */
export class NetworkStatusSource implements InterfaceSource {
  readonly #path: string;
  readonly #selection: InterfaceSelection;
  readonly #localInterfaceNames: () => ReadonlySet<string>;

  /** `localInterfaceNames`: the pod's interfaces, checked against the file's (tests inject a set). */
  constructor(
    path: string,
    selection: InterfaceSelection,
    localInterfaceNames: () => ReadonlySet<string> = osInterfaceNames,
  ) {
    this.#path = path;
    this.#selection = selection;
    this.#localInterfaceNames = localInterfaceNames;
  }

  async read(): Promise<PodInterface[]> {
    let text: string;
    try {
      text = await readText(this.#path);
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return [];
      throw new NetworkStatusError(
        this.#path,
        `the file cannot be read (${code ?? String(cause)})`,
        undefined,
        {
          cause,
        },
      );
    }
    let json: string | undefined;
    try {
      json = extractNetworkStatusJson(text);
    } catch (cause) {
      throw new NetworkStatusError(
        this.#path,
        "the network-status annotation is not a quoted string",
        undefined,
        { cause },
      );
    }
    if (json === undefined) return [];
    return parseNetworkStatus(json, {
      selection: this.#selection,
      source: this.#path,
      localInterfaces: this.#localInterfaceNames(),
    });
  }
}
