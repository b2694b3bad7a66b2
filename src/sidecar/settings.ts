/**
 * The sidecar's settings: the pod settings every pod command shares (src/eni/process/config.ts) and its own.
 * The few another command reads too (address events, shutdown grace, probe server) are defined in the core
 * (sidecarSharedSettings), so that doctor and the bridge need not import this command.
 */
import { checkPodConfig, podSettings, sidecarSharedSettings } from "../eni/process/config.js";
import { field, loadSettings, type SettingValues, setting } from "../eni/process/settings.js";

const { addressEvents, shutdownGraceMs, httpPort, httpHost } = sidecarSharedSettings;

/** The sidecar's settings: the pod settings, then its own, in the order of `--help` and docs/configuration.md. */
export const sidecarSettings = {
  ...podSettings,
  pollIntervalMs: setting({
    env: "IPMGR_POLL_INTERVAL_MS",
    flag: "--poll-interval-ms",
    default: "50",
    unit: "ms",
    doc: "How often the sidecar reads the pod's interfaces when it polls (os.networkInterfaces, about 50 µs a read): always with IPMGR_ADDRESS_EVENTS=poll, otherwise while ip monitor is unavailable or restarting.",
    schema: field.milliseconds(5, 60_000),
  }),
  addressEvents,
  eventsFallbackPollMs: setting({
    env: "IPMGR_EVENTS_FALLBACK_POLL_MS",
    flag: "--events-fallback-poll-ms",
    default: "1000",
    unit: "ms",
    doc: "While ip monitor events work, how often the interfaces are read anyway, as a safety net.",
    schema: field.milliseconds(50, 600_000),
  }),
  resyncIntervalMs: setting({
    env: "IPMGR_RESYNC_INTERVAL_MS",
    flag: "--resync-interval-ms",
    default: "60000",
    unit: "ms",
    doc: "Full reconcile period, even when nothing changed locally.",
    schema: field.milliseconds(1000, 86_400_000),
  }),
  driftCheckIntervalMs: setting({
    env: "IPMGR_DRIFT_CHECK_INTERVAL_MS",
    flag: "--drift-check-interval-ms",
    default: "5000",
    unit: "ms",
    doc: "How often IMDS (no EC2 call) is checked for our addresses being taken away.",
    schema: field.milliseconds(100, 86_400_000),
  }),
  releaseOnRemove: setting({
    env: "IPMGR_RELEASE_ON_REMOVE",
    flag: "--release-on-remove",
    default: "true",
    doc: "Release an address from our ENI when it leaves our interface (only if our ENI still holds it).",
    schema: field.boolean(),
  }),
  releaseSettleMs: setting({
    env: "IPMGR_RELEASE_SETTLE_MS",
    flag: "--release-settle-ms",
    default: "250",
    unit: "ms",
    doc: "How long an address must stay off our interfaces before it is released, so that a bounce (removed and added back) keeps it routed. A standby taking it over never waits for this.",
    schema: field.milliseconds(0, 60_000),
  }),
  stateFile: setting({
    env: "IPMGR_STATE_FILE",
    flag: "--state-file",
    default: undefined,
    optional: true,
    doc: "File in which the sidecar keeps the releases it has not made yet, on a volume that survives a container restart (an emptyDir): a sidecar killed inside the settle window makes them when it starts again. Unset: none kept.",
    schema: field.text(),
  }),
  episodeCheckIntervalMs: setting({
    env: "IPMGR_EPISODE_CHECK_INTERVAL_MS",
    flag: "--episode-check-interval-ms",
    default: "500",
    unit: "ms",
    doc: "While an address is in a drift episode (taken off our ENI), how often IMDS is checked and, while our ENI does not hold it, one DescribeNetworkInterfaces learns who does (a rival letting go is seen this fast).",
    schema: field.milliseconds(50, 60_000),
  }),
  releaseOnExit: setting({
    env: "IPMGR_RELEASE_ON_EXIT",
    flag: "--release-on-exit",
    default: "false",
    doc: "Release our addresses on SIGTERM/SIGINT.",
    schema: field.boolean(),
  }),
  shutdownGraceMs,
  httpPort,
  httpHost,
};

export type SidecarConfig = SettingValues<typeof sidecarSettings>;

export function loadSidecarConfig(argv: readonly string[], env: NodeJS.ProcessEnv): SidecarConfig {
  const config = loadSettings(sidecarSettings, argv, env);
  checkPodConfig(config, argv, env);
  return config;
}
