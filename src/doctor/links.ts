/**
 * The pod's network links as the kernel shows them in sysfs: whether each is up, its MTU and MAC. Read from
 * /sys/class/net directly, not with systeminformation (about 60 ms a call and a dependency) or `ip -j link`
 * (a process per read): three small files per interface. In a pod, /sys is the pod's own network namespace's.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

export interface LinkInfo {
  readonly name: string;
  /** IFF_UP: administratively up (`ip link set up`). */
  readonly adminUp: boolean;
  /** RFC 2863 operational state as the kernel reports it: `up`, `down`, `lowerlayerdown`, `unknown`, ... */
  readonly operState: string;
  readonly mtu: number | undefined;
  /** Lowercase, colon-separated. */
  readonly mac: string | undefined;
}

/** Reads the pod's links. */
export interface LinkSource {
  /** Names of every link, sorted. */
  names(): Promise<string[]>;
  /** One link, or undefined when there is no link of that name. */
  read(name: string): Promise<LinkInfo | undefined>;
}

const IFF_UP = 0x1;

async function readText(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, "utf8")).trim();
  } catch (error) {
    // Absent (no such link) or unreadable in this state (e.g. a down link's carrier): "not known".
    const code = (error as { code?: unknown }).code;
    if (code === "ENOENT" || code === "EINVAL" || code === "ENOTDIR") return undefined;
    throw error;
  }
}

export class SysfsLinks implements LinkSource {
  readonly #root: string;

  /** `root`: the sysfs directory of network links. Default /sys/class/net. */
  constructor(root = "/sys/class/net") {
    this.#root = root;
  }

  async names(): Promise<string[]> {
    return (await readdir(this.#root)).sort();
  }

  async read(name: string): Promise<LinkInfo | undefined> {
    if (name.includes("/") || name === "." || name === "..") return undefined;
    const dir = join(this.#root, name);
    const [flags, operState, mtu, mac] = await Promise.all(
      ["flags", "operstate", "mtu", "address"].map((file) => readText(join(dir, file))),
    );
    if (flags === undefined && operState === undefined) return undefined;
    const flagBits = flags === undefined ? 0 : Number.parseInt(flags, 16);
    return {
      name,
      adminUp: (flagBits & IFF_UP) !== 0,
      operState: operState ?? "unknown",
      mtu: mtu === undefined || !/^\d+$/.test(mtu) ? undefined : Number(mtu),
      mac: mac?.toLowerCase(),
    };
  }
}
