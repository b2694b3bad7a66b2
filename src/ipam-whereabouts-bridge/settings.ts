/**
 * `bridge`'s settings. In this module, not src/eni/process/config.ts, so that init's bundle does not carry them.
 * The AWS, IMDS, EC2 retry, log and termination-log settings are the pod commands' own.
 */
import * as z from "zod/mini";
import { AttachNetworksProblem, parseAttachNetworks } from "../eni/attach-networks.js";
import { ConfigError } from "../eni/errors/config-error.js";
import { podSettings, sidecarSharedSettings } from "../eni/process/config.js";
import {
  checkBackoffRange,
  field,
  loadSettings,
  type SettingValues,
  setting,
} from "../eni/process/settings.js";

/** Comma-separated device indexes, e.g. `1,2`; empty: none (the no_manage tag decides). */
const deviceIndexes = field.list({
  example: "1,2",
  emptyMeans: "the no_manage tag decides",
  item: (item) =>
    /^\d{1,2}$/.test(item) && Number(item) >= 1
      ? { value: Number(item) }
      : {
          problem: `${JSON.stringify(item)} is not a secondary ENI's device index; write them like 1,2 (device 0 is the primary ENI, never a Multus ENI)`,
        },
});

const {
  allowedCidrs,
  region,
  ec2Endpoint,
  imdsEndpoint,
  imdsEndpointMode,
  imdsTimeoutMs,
  ec2TimeoutMs,
  ec2MaxAttempts,
  ec2RetryBaseMs,
  ec2RetryMaxMs,
  confirmTimeoutMs,
  logLevel,
  terminationLog,
} = podSettings;

export const bridgeSettings = {
  allowedCidrs,
  nodeName: setting({
    env: "NODE_NAME",
    flag: "--node-name",
    default: undefined,
    doc: "This node's name (spec.nodeName of its pods), from the downward API: fieldRef spec.nodeName.",
    schema: field.text(),
  }),
  podName: setting({
    env: "POD_NAME",
    flag: "--pod-name",
    default: undefined,
    optional: true,
    doc: "This pod's name, from the downward API (fieldRef metadata.name): with POD_UID, the reservations Lease's holder identity. Unset: the host name, the node and a random uuid, with a warning.",
    schema: field.text(),
  }),
  podUid: setting({
    env: "POD_UID",
    flag: "--pod-uid",
    default: undefined,
    optional: true,
    doc: "This pod's uid, from the downward API (fieldRef metadata.uid): with POD_NAME, the reservations Lease's holder identity, unique per process.",
    schema: field.text(),
  }),
  kubeconfig: setting({
    env: "IPMGR_KUBECONFIG",
    flag: "--kubeconfig",
    default: undefined,
    optional: true,
    doc: "A kubeconfig file. Unset: KUBECONFIG, ~/.kube/config, or the pod's service account (in cluster).",
    schema: field.text(),
  }),
  deviceIndexes: setting({
    env: "IPMGR_BRIDGE_DEVICE_INDEXES",
    flag: "--device-indexes",
    default: "",
    doc: "Device indexes of this node's Multus ENIs, e.g. 1,2. Empty: the ENIs tagged node.k8s.amazonaws.com/no_manage=true (one DescribeNetworkInterfaces at start and on every resync).",
    schema: deviceIndexes,
  }),
  waveWindowMs: setting({
    env: "IPMGR_BRIDGE_WAVE_WINDOW_MS",
    flag: "--wave-window-ms",
    default: "200",
    unit: "ms",
    doc: "How long changes are gathered before a wave of EC2 calls: pods appearing together cost one call per ENI and family.",
    schema: field.milliseconds(0, 60_000),
  }),
  releaseGraceMs: setting({
    env: "IPMGR_BRIDGE_RELEASE_GRACE_MS",
    flag: "--release-grace-ms",
    default: "300000",
    unit: "ms",
    doc: "How long an address of a managed range must stay unused by every pod of this node before it is released (a StatefulSet pod restarting keeps its address).",
    schema: field.milliseconds(0, 86_400_000),
  }),
  releaseDryRun: setting({
    env: "IPMGR_BRIDGE_RELEASE_DRY_RUN",
    flag: "--release-dry-run",
    default: "false",
    doc: "Log (and count) the releases the bridge would make, and make none.",
    schema: field.boolean(),
  }),
  prefixMode: setting({
    env: "IPMGR_BRIDGE_PREFIX_MODE",
    flag: "--prefix-mode",
    default: "off",
    doc: "Prefix mode (docs/prefix-mode.md): hold this node's whereabouts node slices as delegated /28 (IPv4) or /80 (IPv6) prefixes on their master's ENI, so that pods start with no EC2 call. off; defer (a block where the ENI holds single addresses waits until they are released: no pod address is ever unrouted); swap (such addresses are unassigned in the call right before the prefix assign: unrouted until the assign returns, its retries included; a slice whose prefix EC2 refuses is not swapped again for a backoff of 1 to 30 min). Needs a Nitro instance type and nodeslicepools list/watch.",
    schema: field.enumOf(["off", "defer", "swap"] as const),
  }),
  resyncIntervalMs: setting({
    env: "IPMGR_BRIDGE_RESYNC_INTERVAL_MS",
    flag: "--resync-interval-ms",
    default: "60000",
    unit: "ms",
    doc: "A wave runs at least this often, even without a change (IMDS re-read: drift, a new ENI, grace periods ending).",
    schema: field.milliseconds(1000, 86_400_000),
  }),
  watchSilenceMs: setting({
    env: "IPMGR_BRIDGE_WATCH_SILENCE_MS",
    flag: "--watch-silence-ms",
    default: "90000",
    unit: "ms",
    doc: "A Kubernetes watch not heard from (no event, no bookmark: API servers send one about every minute) for this long is taken as dead and restarted; until it is heard from again, no address is released. Below 60000 (kube-apiserver's bookmark interval) the bridge warns at start: every quiet watch would go silent at every bound.",
    schema: field.milliseconds(100, 3_600_000),
  }),
  watchRestartMaxMs: setting({
    env: "IPMGR_BRIDGE_WATCH_RESTART_MAX_MS",
    flag: "--watch-restart-max-ms",
    default: "3000",
    unit: "ms",
    doc: "Cap of the delay between attempts to restart a failed list or watch (the first is 250 ms, doubling, from the start of the attempt that failed): the API back, the view is trusted again within this much. After a failure, a watch request not answered within this much is sent again at once on a new connection.",
    schema: field.milliseconds(250, 600_000),
  }),
  retryBaseMs: setting({
    env: "IPMGR_BRIDGE_RETRY_BASE_MS",
    flag: "--retry-base-ms",
    default: "1000",
    unit: "ms",
    doc: "First delay before a failed wave (EC2 throttled or unavailable after its retries, IMDS failing) is run again whole; doubles per failure. At most IPMGR_BRIDGE_RETRY_MAX_MS.",
    schema: field.milliseconds(1, 600_000),
  }),
  retryMaxMs: setting({
    env: "IPMGR_BRIDGE_RETRY_MAX_MS",
    flag: "--retry-max-ms",
    default: "5000",
    unit: "ms",
    doc: "Cap of the delay between failed waves: after EC2 comes back from throttling or an outage, the next wave is at most this (plus up to 25 %) away.",
    schema: field.milliseconds(1, 3_600_000),
  }),
  eventIntervalMs: setting({
    env: "IPMGR_BRIDGE_EVENT_INTERVAL_MS",
    flag: "--event-interval-ms",
    default: "600000",
    unit: "ms",
    doc: "The same Kubernetes Event (pod, reason, message) is not posted again within this time.",
    schema: field.milliseconds(0, 86_400_000),
  }),
  reservations: setting({
    env: "IPMGR_BRIDGE_RESERVATIONS",
    flag: "--reservations",
    default: "report",
    doc: "Subnet CIDR reservations over the whereabouts ranges, kept by one bridge at a time (a Lease): report (compare and report what is missing), create (also create what is missing, tagged as ours), off (no reservation call).",
    schema: field.enumOf(["report", "create", "off"] as const),
  }),
  reservationIntervalMs: setting({
    env: "IPMGR_BRIDGE_RESERVATION_INTERVAL_MS",
    flag: "--reservation-interval-ms",
    default: "60000",
    unit: "ms",
    doc: "How often the Lease holder compares the reservations (the Lease is renewed on a timer of its own).",
    schema: field.milliseconds(1000, 86_400_000),
  }),
  leaseNamespace: setting({
    env: "IPMGR_BRIDGE_LEASE_NAMESPACE",
    flag: "--lease-namespace",
    default: "kube-system",
    doc: "Namespace of the reservations Lease.",
    schema: field.text(),
  }),
  leaseName: setting({
    env: "IPMGR_BRIDGE_LEASE_NAME",
    flag: "--lease-name",
    default: "multus-ipmgr-reservations",
    doc: "Name of the reservations Lease.",
    schema: field.text(),
  }),
  leaseDurationMs: setting({
    env: "IPMGR_BRIDGE_LEASE_DURATION_MS",
    flag: "--lease-duration-ms",
    default: "90000",
    unit: "ms",
    doc: "How long the Lease holds without renewal; another bridge takes it over after that. The holder renews it every sixth of this, and writes no reservation once two thirds of it have passed since its last renewal.",
    schema: field.milliseconds(1000, 3_600_000),
  }),
  attach: setting({
    env: "IPMGR_BRIDGE_ATTACH",
    flag: "--attach",
    default: "off",
    doc: "Attach mode (docs/attach-mode.md): on makes, attaches and keeps this node's Multus ENIs as IPMGR_BRIDGE_ATTACH_NETWORKS describes them (tagged at creation, DeleteOnTermination, SourceDestCheck), removes the startup taint once they are up, and lets the Lease holder delete this cluster's orphaned ENIs. off: the ENIs come from elsewhere (deploy/node/multus-eni.sh, a Lambda, by hand).",
    schema: field.enumOf(["off", "on"] as const),
  }),
  attachNetworks: setting({
    env: "IPMGR_BRIDGE_ATTACH_NETWORKS",
    flag: "--attach-networks",
    default: "",
    doc: 'Attach mode: this node\'s Multus networks, a JSON list; each {"name": the interface name the NADs\' master expects, "deviceIndex": 1.., "networkCardIndex": 0.. (default 0), "subnet": {"byZone": {zone: subnet id}} or {"tags": {...}}, "securityGroups": {"ids": [...]} or {"tags": {...}}, "mtu" (default 9001), "sourceDestCheck" (default false)}. Empty: none (needed when IPMGR_BRIDGE_ATTACH=on).',
    schema: z.string(),
  }),
  clusterName: setting({
    env: "IPMGR_CLUSTER_NAME",
    flag: "--cluster-name",
    default: "",
    doc: "The cluster's name: attach mode tags every ENI it makes with multus-ipmgr.io/cluster=<this>, the IAM policy's condition, and sweeps only orphans with this tag. Needed when IPMGR_BRIDGE_ATTACH=on.",
    schema: z.string(),
  }),
  startupTaint: setting({
    env: "IPMGR_BRIDGE_STARTUP_TAINT",
    flag: "--startup-taint",
    default: "multus-ipmgr.io/enis-not-ready",
    emptyIsValue: true,
    doc: "Attach mode: the key of the NoSchedule taint the node registers with (Karpenter startupTaints, node group taints, --register-with-taints). The bridge removes it once every network's ENI is attached and its link ready (and, in prefix mode, the node's slices held), and puts it back when one is lost. Empty: the bridge never touches the node's taints.",
    schema: z.string(),
  }),
  linkStatusFile: setting({
    env: "IPMGR_BRIDGE_LINK_STATUS_FILE",
    flag: "--link-status-file",
    default: "/run/multus-ipmgr/links.json",
    doc: "Attach mode: the links agent's report (multus-ipmgr links, the DaemonSet's container that holds NET_ADMIN), on a volume both containers mount. The agent writes it; the bridge reads it before removing the startup taint.",
    schema: field.text(),
  }),
  orphans: setting({
    env: "IPMGR_BRIDGE_ORPHANS",
    flag: "--orphans",
    default: "delete",
    doc: "Attach mode, on the Lease holder: ENIs in state available that carry multus-ipmgr.io/cluster=IPMGR_CLUSTER_NAME and stay unattached for IPMGR_BRIDGE_ORPHAN_GRACE_MS: delete them, dry-run (log and count them, delete none), or off. An ENI without the tag is never touched.",
    schema: field.enumOf(["delete", "dry-run", "off"] as const),
  }),
  orphanGraceMs: setting({
    env: "IPMGR_BRIDGE_ORPHAN_GRACE_MS",
    flag: "--orphan-grace-ms",
    default: "600000",
    unit: "ms",
    doc: "Attach mode: how long an ENI of this cluster must be seen available (attached to nothing) before the orphan sweep deletes it; longer than a bridge's create-then-attach, retries included.",
    schema: field.milliseconds(60_000, 86_400_000),
  }),
  cniSocket: setting({
    env: "IPMGR_BRIDGE_CNI_SOCKET",
    flag: "--cni-socket",
    default: "",
    doc: "Plugin mode (docs/cni-plugin.md): the unix socket the chained CNI plugin multus-ipmgr calls, on a hostPath only root reaches (the chart: /run/multus-ipmgr/cni/cni.sock). ADD waits here until EC2 holds the pod's address. Empty: no socket.",
    schema: z.string(),
  }),
  region,
  ec2Endpoint,
  imdsEndpoint,
  imdsEndpointMode,
  imdsTimeoutMs,
  ec2TimeoutMs,
  ec2MaxAttempts,
  ec2RetryBaseMs,
  ec2RetryMaxMs,
  confirmTimeoutMs,
  logLevel,
  terminationLog,
  shutdownGraceMs: setting({
    ...sidecarSharedSettings.shutdownGraceMs,
    doc: "On SIGTERM, how long the wave in progress may take; past it its EC2 and IMDS calls are aborted and the bridge exits 8.",
  }),
  httpPort: sidecarSharedSettings.httpPort,
  httpHost: setting({
    ...sidecarSharedSettings.httpHost,
    doc: "Address the HTTP server listens on: an IP address. The bridge runs in the node's network namespace, so 0.0.0.0 shows /metrics (pod names, addresses, ENI IDs) to anything the node's security groups admit; the chart sets the node's own address (status.hostIP), and 127.0.0.1 keeps it on the node (no Prometheus then).",
  }),
};

export type BridgeConfig = SettingValues<typeof bridgeSettings>;

export function loadBridgeConfig(argv: readonly string[], env: NodeJS.ProcessEnv): BridgeConfig {
  const config = loadSettings(bridgeSettings, argv, env);
  const { retryBaseMs, retryMaxMs } = bridgeSettings;
  checkBackoffRange(retryBaseMs, retryMaxMs, { base: config.retryBaseMs, cap: config.retryMaxMs }, argv, env);
  checkBackoffRange(
    ec2RetryBaseMs,
    ec2RetryMaxMs,
    { base: config.ec2RetryBaseMs, cap: config.ec2RetryMaxMs },
    argv,
    env,
  );
  checkAttach(config);
  return config;
}

/** Attach mode needs its networks and the cluster's name; the networks' JSON must parse whenever given. */
function checkAttach(config: BridgeConfig): void {
  if (config.attachNetworks !== "") {
    const networks = parseAttachNetworks(config.attachNetworks);
    if (networks instanceof AttachNetworksProblem) {
      throw new ConfigError("IPMGR_BRIDGE_ATTACH_NETWORKS", config.attachNetworks, networks.problem);
    }
  }
  if (config.attach !== "on") return;
  if (config.attachNetworks === "") {
    throw new ConfigError(
      "IPMGR_BRIDGE_ATTACH_NETWORKS",
      undefined,
      "IPMGR_BRIDGE_ATTACH=on needs the networks to attach; set it to a JSON list (docs/attach-mode.md)",
    );
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/.test(config.clusterName)) {
    throw new ConfigError(
      "IPMGR_CLUSTER_NAME",
      config.clusterName === "" ? undefined : config.clusterName,
      "IPMGR_BRIDGE_ATTACH=on needs the cluster's name (letters, digits, - and _, as EKS names clusters): every ENI it makes is tagged with it",
    );
  }
}
