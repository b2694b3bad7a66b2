/**
 * The links agent's one narrow interface to the node's kernel and its network manager: what the agent reads
 * (the links with their MAC, MTU, state and addresses; rp_filter; its own systemd-networkd files) and the few
 * changes it makes. ip-link-ops.ts implements it with iproute2's `ip` and /proc/sys; the pass logic
 * (link-pass.ts) sees only these types, so it is tested without a kernel.
 */

/** An address on a link, as `ip -j addr show` reports it. */
export interface LinkAddress {
  readonly family: "inet" | "inet6";
  /** The address without its prefix length, e.g. 203.0.113.5 or fe80::1. */
  readonly local: string;
  readonly prefixLength: number;
  /** `host`, `link`, `global`, ... */
  readonly scope: string;
}

/** A network link of the node (one entry of /sys/class/net), as `ip -j addr show` lists it. */
export interface ListedLink {
  readonly name: string;
  /** Lower case, colons; empty for links without one (lo, tunnels). */
  readonly mac: string;
  readonly mtu: number;
  /** Administratively up (the UP flag). */
  readonly up: boolean;
  readonly addresses: readonly LinkAddress[];
}

/** A link with its rp_filter, read only for links that carry an ENI's MAC (a node has a veth per pod). */
export interface NodeLink extends ListedLink {
  /** /proc/sys/net/ipv4/conf/<name>/rp_filter; undefined when it cannot be read. */
  readonly rpFilter: number | undefined;
}

export interface LinkOps {
  /** Every link with its addresses (`ip -j addr show`). */
  listLinks(): Promise<readonly ListedLink[]>;
  /** /proc/sys/net/ipv4/conf/<name>/rp_filter; undefined when the link has none (gone, or no IPv4 conf). */
  readRpFilter(name: string): Promise<number | undefined>;
  /** `ip link set dev <name> down` */
  setDown(name: string): Promise<void>;
  /** `ip link set dev <from> name <to>`; the link must be down. */
  rename(from: string, to: string): Promise<void>;
  /** `ip link set dev <name> mtu <mtu>` */
  setMtu(name: string, mtu: number): Promise<void>;
  /** `ip link set dev <name> up` */
  setUp(name: string): Promise<void>;
  /** `ip addr del <cidr> dev <name>` */
  deleteAddress(name: string, cidr: string): Promise<void>;
  /** Writes `value` to /proc/sys/net/ipv4/conf/<name>/rp_filter. */
  setRpFilter(name: string, value: number): Promise<void>;
  /** The text of our systemd-networkd file `file` in the networkd directory; undefined when absent or off. */
  readNetworkdFile(file: string): Promise<string | undefined>;
  /** Writes our systemd-networkd file `file` whole (a temp file renamed over it). */
  writeNetworkdFile(file: string, text: string): Promise<void>;
}
