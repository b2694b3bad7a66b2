/**
 * LinkOps on the real node: iproute2's `ip` (the image carries it) through execFile, /proc/sys for rp_filter,
 * and plain files for systemd-networkd. The only importer of node:child_process in the links agent.
 */
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { LinkCommandError } from "../../eni/errors/link-command-error.js";
import { writeFileAtomically } from "./atomic-file.js";
import type { LinkAddress, LinkOps, ListedLink } from "./link-ops.js";

/** A command that has not answered in this long is killed and reported (the kernel answers in milliseconds). */
const COMMAND_TIMEOUT_MS = 10_000;

interface IpAddrEntry {
  ifname?: unknown;
  address?: unknown;
  mtu?: unknown;
  flags?: unknown;
  addr_info?: unknown;
}

interface IpAddrInfo {
  family?: unknown;
  local?: unknown;
  prefixlen?: unknown;
  scope?: unknown;
}

export interface IpLinkOpsOptions {
  /** The `ip` binary: a name looked up in PATH, or a path. */
  readonly ip?: string;
  /** Root of /proc/sys (tests may point elsewhere). */
  readonly procSys?: string;
  /** systemd-networkd's runtime directory (IPMGR_LINKS_NETWORKD_DIR); undefined: the agent writes no file. */
  readonly networkdDir: string | undefined;
}

export class IpLinkOps implements LinkOps {
  readonly #ip: string;
  readonly #procSys: string;
  readonly #networkdDir: string | undefined;

  constructor(options: IpLinkOpsOptions) {
    this.#ip = options.ip ?? "ip";
    this.#procSys = options.procSys ?? "/proc/sys";
    this.#networkdDir = options.networkdDir;
  }

  async listLinks(): Promise<readonly ListedLink[]> {
    const args = ["-j", "addr", "show"];
    const text = await this.#run(args);
    let entries: unknown;
    try {
      entries = JSON.parse(text);
    } catch (error) {
      throw new LinkCommandError(
        [this.#ip, ...args],
        "",
        `${this.#ip} ${args.join(" ")} printed no JSON (${(error as Error).message}); the links agent needs iproute2 with -j (4.13 or later)`,
        { cause: error },
      );
    }
    if (!Array.isArray(entries)) {
      throw new LinkCommandError([this.#ip, ...args], "", `${this.#ip} ${args.join(" ")} printed no list`);
    }
    return (entries as IpAddrEntry[])
      .filter((e) => typeof e.ifname === "string")
      .map((e) => ({
        name: e.ifname as string,
        mac: typeof e.address === "string" ? e.address.toLowerCase() : "",
        mtu: typeof e.mtu === "number" ? e.mtu : 0,
        up: Array.isArray(e.flags) && e.flags.includes("UP"),
        addresses: addressesOf(e.addr_info),
      }));
  }

  async setDown(name: string): Promise<void> {
    await this.#run(["link", "set", "dev", name, "down"]);
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#run(["link", "set", "dev", from, "name", to]);
  }

  async setMtu(name: string, mtu: number): Promise<void> {
    await this.#run(["link", "set", "dev", name, "mtu", String(mtu)]);
  }

  async setUp(name: string): Promise<void> {
    await this.#run(["link", "set", "dev", name, "up"]);
  }

  async deleteAddress(name: string, cidr: string): Promise<void> {
    await this.#run(["addr", "del", cidr, "dev", name]);
  }

  async setRpFilter(name: string, value: number): Promise<void> {
    await writeFile(this.#rpFilterPath(name), `${value}\n`);
  }

  async readNetworkdFile(file: string): Promise<string | undefined> {
    if (this.#networkdDir === undefined) return undefined;
    try {
      return await readFile(join(this.#networkdDir, file), "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  async writeNetworkdFile(file: string, text: string): Promise<void> {
    if (this.#networkdDir === undefined) {
      throw new Error(`no networkd directory to write ${file} to (IPMGR_LINKS_NETWORKD_DIR is empty)`);
    }
    await writeFileAtomically(join(this.#networkdDir, file), text);
  }

  #rpFilterPath(name: string): string {
    return join(this.#procSys, "net", "ipv4", "conf", name, "rp_filter");
  }

  async readRpFilter(name: string): Promise<number | undefined> {
    try {
      const value = Number((await readFile(this.#rpFilterPath(name), "utf8")).trim());
      return Number.isInteger(value) ? value : undefined;
    } catch (error) {
      // A link that went between the listing and this read, or one without IPv4 configuration.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  #run(args: readonly string[]): Promise<string> {
    const command = [this.#ip, ...args];
    return new Promise((resolve, reject) => {
      execFile(this.#ip, args, { timeout: COMMAND_TIMEOUT_MS }, (error, stdout, stderr) => {
        if (error === null) {
          resolve(stdout);
          return;
        }
        const said = stderr.trim();
        const why =
          (error as NodeJS.ErrnoException).code === "ENOENT"
            ? `${this.#ip} was not found; the links agent needs iproute2's ip in its image`
            : said === ""
              ? error.message
              : said;
        reject(new LinkCommandError(command, said, `${command.join(" ")} failed: ${why}`, { cause: error }));
      });
    });
  }
}

function addressesOf(info: unknown): LinkAddress[] {
  if (!Array.isArray(info)) return [];
  return (info as IpAddrInfo[]).flatMap((a) =>
    (a.family === "inet" || a.family === "inet6") &&
    typeof a.local === "string" &&
    typeof a.prefixlen === "number"
      ? [
          {
            family: a.family,
            local: a.local,
            prefixLength: a.prefixlen,
            scope: typeof a.scope === "string" ? a.scope : "",
          },
        ]
      : [],
  );
}
