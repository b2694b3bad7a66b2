/**
 * The kernel's IPv4 reverse-path filter per link (`net.ipv4.conf.<link>.rp_filter`), read from /proc/sys: 0
 * off, 1 strict (a packet is dropped unless the route back to its source leaves through the link it came
 * in on), 2 loose (dropped only when no route at all leads back). The kernel applies the larger of the
 * link's value and `all`'s. In a host-network pod, /proc/sys/net is the node's.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface RpFilterSource {
  /** The value for `link` (`all` for the global one); undefined when there is no such link. */
  read(link: string): Promise<number | undefined>;
}

export class ProcRpFilter implements RpFilterSource {
  readonly #root: string;

  /** `root`: the directory of per-link IPv4 settings. Default /proc/sys/net/ipv4/conf. */
  constructor(root = "/proc/sys/net/ipv4/conf") {
    this.#root = root;
  }

  async read(link: string): Promise<number | undefined> {
    if (link.includes("/") || link === "." || link === "..") return undefined;
    try {
      const text = (await readFile(join(this.#root, link, "rp_filter"), "utf8")).trim();
      return /^\d+$/.test(text) ? Number(text) : undefined;
    } catch (error) {
      // No such link (or no IPv4 on it): nothing to filter.
      if ((error as { code?: unknown }).code === "ENOENT") return undefined;
      throw error;
    }
  }
}
