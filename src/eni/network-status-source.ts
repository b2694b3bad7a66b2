import { readFile } from "node:fs/promises";
import type { InterfaceSelection } from "./interface-selector.js";
import type { InterfaceSource } from "./interface-source.js";
import { extractNetworkStatusJson, NetworkStatusError, parseNetworkStatus } from "./network-status.js";
import type { PodInterface } from "./types.js";

/**
 * Reads addresses from the Multus network-status annotation in a downward API file. Until the annotation
 * appears in the file, it reports no interfaces (callers wait, bounded).
 */
export class NetworkStatusSource implements InterfaceSource {
  readonly #path: string;
  readonly #selection: InterfaceSelection;

  constructor(path: string, selection: InterfaceSelection) {
    this.#path = path;
    this.#selection = selection;
  }

  async read(): Promise<PodInterface[]> {
    let text: string;
    try {
      text = await readFile(this.#path, "utf8");
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new NetworkStatusError(this.#path, "the file cannot be read", { cause });
    }
    let json: string | undefined;
    try {
      json = extractNetworkStatusJson(text);
    } catch (cause) {
      throw new NetworkStatusError(this.#path, "the network-status annotation is not a quoted string", {
        cause,
      });
    }
    return json === undefined ? [] : parseNetworkStatus(json, this.#selection, this.#path);
  }
}
