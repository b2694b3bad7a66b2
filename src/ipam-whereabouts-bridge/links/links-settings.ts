/**
 * `links`' settings: the links agent reads the bridge's networks and status file (the same variables, flags
 * and defaults as src/ipam-whereabouts-bridge/settings.ts, which this room may not import; test/links-settings.test.ts
 * keeps the two in step), the pod commands' IMDS, log and termination-log settings, and two of its own.
 */
import * as z from "zod/mini";
import { type AttachNetwork, AttachNetworksProblem, parseAttachNetworks } from "../../eni/attach-networks.js";
import { ConfigError } from "../../eni/errors/config-error.js";
import { podSettings } from "../../eni/process/config.js";
import { field, loadSettings, type SettingValues, setting } from "../../eni/process/settings.js";

const { imdsEndpoint, imdsEndpointMode, imdsTimeoutMs, logLevel, terminationLog } = podSettings;

export const linksSettings = {
  attachNetworks: setting({
    env: "IPMGR_BRIDGE_ATTACH_NETWORKS",
    flag: "--attach-networks",
    default: "",
    doc: "The bridge's networks (see the bridge's table): each network's link is named `name`, given `mtu`, brought up, stripped of addresses, rp_filter 0. Needed.",
    schema: z.string(),
  }),
  linkStatusFile: setting({
    env: "IPMGR_BRIDGE_LINK_STATUS_FILE",
    flag: "--link-status-file",
    default: "/run/multus-ipmgr/links.json",
    doc: "Where the agent writes its report after every pass (a temp file renamed over it), on a volume the bridge's container mounts too.",
    schema: field.text(),
  }),
  intervalMs: setting({
    env: "IPMGR_LINKS_INTERVAL_MS",
    flag: "--interval-ms",
    default: "2000",
    unit: "ms",
    doc: "How often the links agent makes a pass: reads IMDS' ENIs and the node's links, brings each network's link to its state, writes the status file. A new ENI's link is ready at most this long after it appears. The bridge takes a report older than 6 s (three passes of 2 s) as absent: above 2000, the startup taint stays on.",
    schema: field.milliseconds(100, 600_000),
  }),
  networkdDir: setting({
    env: "IPMGR_LINKS_NETWORKD_DIR",
    flag: "--networkd-dir",
    default: "/run/systemd/network",
    emptyIsValue: true,
    doc: "systemd-networkd's runtime directory on the node (a hostPath): for each network's ENI the agent writes 10-multus-ipmgr-<name>.network there, matching the ENI's MAC, with Unmanaged=yes, so that networkd (and amazon-ec2-net-utils, which configures links through it) leaves the link alone: no DHCP, no /32 aliases of the ENI's secondary addresses. Empty: no file (a node without networkd).",
    schema: z.string(),
  }),
  procSys: setting({
    env: "IPMGR_LINKS_PROC_SYS",
    flag: "--proc-sys",
    default: "/proc/sys",
    doc: "Where the agent finds /proc/sys to write net/ipv4/conf/<link>/rp_filter. Container runtimes mount /proc/sys read-only in a container that is not privileged: the chart mounts the node's /proc/sys/net (a hostPath, as Cilium's agent does) at /host/proc/sys/net and sets /host/proc/sys.",
    schema: field.text(),
  }),
  imdsEndpoint,
  imdsEndpointMode,
  imdsTimeoutMs,
  logLevel,
  terminationLog,
};

export type LinksConfig = SettingValues<typeof linksSettings> & {
  /** IPMGR_BRIDGE_ATTACH_NETWORKS, parsed. */
  readonly networks: readonly AttachNetwork[];
};

export function loadLinksConfig(argv: readonly string[], env: NodeJS.ProcessEnv): LinksConfig {
  const config = loadSettings(linksSettings, argv, env);
  if (config.attachNetworks === "") {
    throw new ConfigError(
      "IPMGR_BRIDGE_ATTACH_NETWORKS",
      undefined,
      "the links agent brings up the links of these networks; set it to the bridge's JSON list (docs/attach-mode.md)",
    );
  }
  const networks = parseAttachNetworks(config.attachNetworks);
  if (networks instanceof AttachNetworksProblem) {
    throw new ConfigError("IPMGR_BRIDGE_ATTACH_NETWORKS", config.attachNetworks, networks.problem);
  }
  return { ...config, networks };
}
