/**
 * One pass of the links agent, pure: from the networks to bring up, the ENIs IMDS shows and the node's links,
 * the steps to take for each network and the report to write once they are taken. No I/O: links-agent.ts
 * applies the steps through LinkOps and writes the reports.
 */
import type { LinkReport } from "../node/link-status.js";
import type { LinkAddress, NodeLink } from "./link-ops.js";

/** What the pass needs of a network (src/eni/attach-networks.ts's AttachNetwork has more). */
export interface LinkNetwork {
  readonly name: string;
  readonly deviceIndex: number;
  readonly networkCardIndex: number;
  readonly mtu: number;
}

/** An ENI as IMDS shows it: macs/<mac>/device-number and network-card. */
export interface EniSlot {
  readonly mac: string;
  readonly deviceIndex: number;
  readonly networkCardIndex: number;
}

export type LinkStep =
  | { readonly kind: "networkd"; readonly file: string; readonly text: string }
  | { readonly kind: "down"; readonly link: string }
  | { readonly kind: "rename"; readonly from: string; readonly to: string }
  | { readonly kind: "mtu"; readonly link: string; readonly mtu: number }
  | { readonly kind: "up"; readonly link: string }
  | { readonly kind: "delete-address"; readonly link: string; readonly cidr: string }
  | { readonly kind: "rp-filter"; readonly link: string };

/**
 * A network's plan: the steps in order, then `report` once every step succeeded (a failed step makes the
 * report `failed`, naming it). A `waiting` or `failed` report may come with steps too (the networkd file).
 */
export interface LinkPlan {
  readonly steps: readonly LinkStep[];
  readonly report: LinkReport;
}

export interface PassOptions {
  /** Whether the agent keeps systemd-networkd off the links (IPMGR_LINKS_NETWORKD_DIR not empty). */
  readonly networkd: boolean;
  /** Our networkd files' current text, by file name (absent: no file). */
  readonly networkdFiles: ReadonlyMap<string, string>;
}

/** Our systemd-networkd file for a network: sorts before amazon-ec2-net-utils' 70-* and 80-ec2.network. */
export function networkdFileName(network: string): string {
  return `10-multus-ipmgr-${network}.network`;
}

/**
 * The file's text: networkd applies the first .network file (in lexical order over /etc, /run and /usr/lib)
 * whose [Match] fits a link, and Unmanaged=yes makes it leave that link alone: no DHCP, no /32 aliases, no
 * policy routes, no up or down (docs/attach-mode.md, "The links agent").
 */
export function networkdFileText(network: string, mac: string): string {
  return [
    `# Written by multus-ipmgr links for the Multus network ${network}: its link is the links agent's, not systemd-networkd's.`,
    "[Match]",
    `MACAddress=${mac}`,
    "",
    "[Link]",
    "Unmanaged=yes",
    "",
  ].join("\n");
}

/** IPv6 link-local (fe80::/10) is the kernel's own and stays; every other address goes. */
export function isKeptAddress(address: LinkAddress): boolean {
  return address.family === "inet6" && /^fe[89ab][0-9a-f]:/i.test(address.local);
}

export function cidrOf(address: LinkAddress): string {
  return `${address.local}/${address.prefixLength}`;
}

function reportOf(
  network: LinkNetwork,
  mac: string | undefined,
  state: LinkReport["state"],
  detail: string,
): LinkReport {
  return {
    network: network.name,
    deviceIndex: network.deviceIndex,
    networkCardIndex: network.networkCardIndex,
    ...(mac === undefined ? {} : { mac }),
    state,
    detail,
  };
}

/** The plan of every network, in the order given. */
export function planLinks(
  networks: readonly LinkNetwork[],
  enis: readonly EniSlot[],
  links: readonly NodeLink[],
  options: PassOptions,
): LinkPlan[] {
  return networks.map((network) => planLink(network, enis, links, options));
}

function planLink(
  network: LinkNetwork,
  enis: readonly EniSlot[],
  links: readonly NodeLink[],
  options: PassOptions,
): LinkPlan {
  const slot = `network card ${network.networkCardIndex}, device ${network.deviceIndex}`;
  const eni = enis.find(
    (e) => e.deviceIndex === network.deviceIndex && e.networkCardIndex === network.networkCardIndex,
  );
  if (eni === undefined) {
    return {
      steps: [],
      report: reportOf(
        network,
        undefined,
        "waiting",
        `IMDS shows no ENI at ${slot} yet (the bridge attaches it; IMDS follows EC2 within seconds)`,
      ),
    };
  }
  const mac = eni.mac.toLowerCase();
  const steps: LinkStep[] = [];
  if (options.networkd) {
    const file = networkdFileName(network.name);
    const text = networkdFileText(network.name, mac);
    if (options.networkdFiles.get(file) !== text) steps.push({ kind: "networkd", file, text });
  }
  const candidates = links.filter((l) => l.mac === mac);
  if (candidates.length === 0) {
    return {
      steps,
      report: reportOf(
        network,
        mac,
        "waiting",
        `no link in /sys/class/net has the MAC ${mac} of the ENI at ${slot} yet (the kernel adds it once the attachment completes)`,
      ),
    };
  }
  const link = candidates.find((l) => l.name === network.name) ?? candidates[0];
  if (link === undefined || (candidates.length > 1 && link.name !== network.name)) {
    return {
      steps,
      report: reportOf(
        network,
        mac,
        "failed",
        `the links ${candidates.map((l) => l.name).join(", ")} all have the MAC ${mac} of the ENI at ${slot}; rename the one that is the ENI to ${network.name}, or remove the others`,
      ),
    };
  }
  const taken = links.find((l) => l.name === network.name && l !== link);
  if (taken !== undefined) {
    return {
      steps,
      report: reportOf(
        network,
        mac,
        "failed",
        `the ENI's link ${link.name} cannot be renamed to ${network.name}: another link (MAC ${taken.mac || "none"}) has that name; rename or remove it, or give the network another name in IPMGR_BRIDGE_ATTACH_NETWORKS`,
      ),
    };
  }
  let up = link.up;
  if (link.name !== network.name) {
    if (up) steps.push({ kind: "down", link: link.name });
    up = false;
    steps.push({ kind: "rename", from: link.name, to: network.name });
  }
  const name = network.name;
  if (link.mtu !== network.mtu) steps.push({ kind: "mtu", link: name, mtu: network.mtu });
  if (!up) steps.push({ kind: "up", link: name });
  for (const address of link.addresses) {
    if (!isKeptAddress(address)) steps.push({ kind: "delete-address", link: name, cidr: cidrOf(address) });
  }
  if (link.rpFilter !== 0) steps.push({ kind: "rp-filter", link: name });
  return {
    steps,
    report: reportOf(network, mac, "ready", `${name}: MTU ${network.mtu}, up, no address, rp_filter 0`),
  };
}

/** A step in words, for the log and for a `failed` report. */
export function describeStep(step: LinkStep): string {
  switch (step.kind) {
    case "networkd":
      return `write the systemd-networkd file ${step.file}`;
    case "down":
      return `set ${step.link} down`;
    case "rename":
      return `rename ${step.from} to ${step.to}`;
    case "mtu":
      return `set ${step.link}'s MTU to ${step.mtu}`;
    case "up":
      return `set ${step.link} up`;
    case "delete-address":
      return `remove the address ${step.cidr} from ${step.link}`;
    case "rp-filter":
      return `set ${step.link}'s rp_filter to 0`;
  }
}
