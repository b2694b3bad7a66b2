/**
 * The IPMGR_* environment variables multus-ipmgr reads, and the warning for one it does not: a misspelt
 * variable (IPMGR_TIMOUT_MS, IPMGR_INTERFACE) changes nothing, so every command says so once at start, with
 * the nearest known name. A name here belongs to some command: the same env block on an init and a sidecar
 * container is normal, so a sidecar-only variable seen by init is not reported.
 *
 * A plain list, not the settings tables themselves, so that init's bundle carries no other command's
 * settings; test/config.test.ts checks it against every table.
 */
import { nearestName } from "./nearest-name.js";

export const KNOWN_VARIABLES: readonly string[] = [
  // init and sidecar (src/eni/process/config.ts, src/init/settings.ts, src/sidecar/settings.ts),
  // doctor (src/doctor/settings.ts; it also reads the bridge's IPMGR_KUBECONFIG)
  "IPMGR_ALLOWED_CIDRS",
  "IPMGR_INTERFACES",
  "IPMGR_EXCLUDE_INTERFACES",
  "IPMGR_ADDRESS_SOURCE",
  "IPMGR_NETWORK_STATUS_FILE",
  "IPMGR_IMDS_TIMEOUT_MS",
  "IPMGR_EC2_TIMEOUT_MS",
  "IPMGR_EC2_MAX_ATTEMPTS",
  "IPMGR_EC2_RETRY_BASE_MS",
  "IPMGR_EC2_RETRY_MAX_MS",
  "IPMGR_CONFIRM_TIMEOUT_MS",
  "IPMGR_CONFIRM_INTERVAL_MS",
  "IPMGR_LOG_LEVEL",
  "IPMGR_TERMINATION_LOG",
  "IPMGR_ELASTIC_IPS",
  "IPMGR_WAIT_FOR_ADDRESSES_MS",
  "IPMGR_TIMEOUT_MS",
  "IPMGR_POLL_INTERVAL_MS",
  "IPMGR_ADDRESS_EVENTS",
  "IPMGR_EVENTS_FALLBACK_POLL_MS",
  "IPMGR_RESYNC_INTERVAL_MS",
  "IPMGR_DRIFT_CHECK_INTERVAL_MS",
  "IPMGR_RELEASE_ON_REMOVE",
  "IPMGR_RELEASE_SETTLE_MS",
  "IPMGR_STATE_FILE",
  "IPMGR_EPISODE_CHECK_INTERVAL_MS",
  "IPMGR_RELEASE_ON_EXIT",
  "IPMGR_SHUTDOWN_GRACE_MS",
  "IPMGR_HTTP_PORT",
  "IPMGR_HTTP_HOST",
  "IPMGR_DOCTOR_JSON",
  "IPMGR_DOCTOR_PROFILE",
  // bridge (src/ipam-whereabouts-bridge/settings.ts)
  "IPMGR_KUBECONFIG",
  "IPMGR_BRIDGE_ATTACH",
  "IPMGR_BRIDGE_ATTACH_NETWORKS",
  "IPMGR_BRIDGE_CNI_SOCKET",
  "IPMGR_BRIDGE_LINK_STATUS_FILE",
  "IPMGR_BRIDGE_ORPHANS",
  "IPMGR_BRIDGE_ORPHAN_GRACE_MS",
  "IPMGR_BRIDGE_STARTUP_TAINT",
  "IPMGR_CLUSTER_NAME",
  "IPMGR_BRIDGE_DEVICE_INDEXES",
  "IPMGR_BRIDGE_WAVE_WINDOW_MS",
  "IPMGR_BRIDGE_RELEASE_GRACE_MS",
  "IPMGR_BRIDGE_RELEASE_DRY_RUN",
  "IPMGR_BRIDGE_PREFIX_MODE",
  "IPMGR_BRIDGE_RESYNC_INTERVAL_MS",
  "IPMGR_BRIDGE_WATCH_SILENCE_MS",
  "IPMGR_BRIDGE_WATCH_RESTART_MAX_MS",
  "IPMGR_BRIDGE_RETRY_BASE_MS",
  "IPMGR_BRIDGE_RETRY_MAX_MS",
  "IPMGR_BRIDGE_EVENT_INTERVAL_MS",
  "IPMGR_BRIDGE_RESERVATIONS",
  "IPMGR_BRIDGE_RESERVATION_INTERVAL_MS",
  "IPMGR_BRIDGE_LEASE_NAMESPACE",
  "IPMGR_BRIDGE_LEASE_NAME",
  "IPMGR_BRIDGE_LEASE_DURATION_MS",
  // links (src/ipam-whereabouts-bridge/links/links-settings.ts; it also reads two of the bridge's)
  "IPMGR_LINKS_INTERVAL_MS",
  "IPMGR_LINKS_NETWORKD_DIR",
  "IPMGR_LINKS_PROC_SYS",
  // sim (src/sim/cli-args.ts)
  "IPMGR_SIM_WORLD",
  "IPMGR_SIM_HOST",
  "IPMGR_SIM_EC2_PORT",
  "IPMGR_SIM_CONTROL_PORT",
  "IPMGR_SIM_IMDS_PORT_BASE",
  "IPMGR_SIM_KUBE_PORT",
  "IPMGR_SIM_KUBECONFIG",
  // the project's own tooling (tests, the image test), which runs the commands with them set
  "IPMGR_TEST_SKIP_BUILD",
  "IPMGR_TEST_RUN_TAG",
  "IPMGR_TEST_REQUIRE_SHELLCHECK",
  "IPMGR_IMAGE",
  "IPMGR_IMAGE_TEST_RUN",
  "IPMGR_IMAGE_TEST_KEEP",
];

const PREFIX = "IPMGR_";
/** The benchmarks' own settings (bench/), which reach the commands they start: many, and theirs to name. */
export const TOOLING_PREFIXES: readonly string[] = ["IPMGR_BENCH_"];

export interface UnknownVariable {
  readonly name: string;
  /** The nearest known name, when one is near enough to be what was meant. */
  readonly suggestion: string | undefined;
}

/** The IPMGR_* variables of `env` that no command reads, sorted, each with its nearest known name. */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>): UnknownVariable[] {
  const known = new Set(KNOWN_VARIABLES);
  return Object.keys(env)
    .filter((name) => name.startsWith(PREFIX) && !known.has(name))
    .filter((name) => !TOOLING_PREFIXES.some((prefix) => name.startsWith(prefix)))
    .sort()
    .map((name) => ({ name, suggestion: nearestName(name, KNOWN_VARIABLES) }));
}

/** The sentence for one: what it does (nothing) and the fix. */
export function unknownVariableSentence(unknown: UnknownVariable): string {
  const fix =
    unknown.suggestion === undefined
      ? "check its spelling against docs/configuration.md, or remove it"
      : `did you mean ${unknown.suggestion}?`;
  return `${unknown.name} is not a variable of multus-ipmgr and changes nothing; ${fix}`;
}

/** The known variable `missing`'s likely misspelling in `env`, for the sentence that says it is required. */
export function misspellingOf(
  missing: string,
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  return unknownVariables(env).find((u) => u.suggestion === missing)?.name;
}

/** Warns once per unknown IPMGR_* variable of `env`, through `warn` (a logger's warn). */
export function warnUnknownVariables(
  env: Readonly<Record<string, string | undefined>>,
  warn: (fields: Record<string, unknown>, message: string) => void,
): void {
  for (const unknown of unknownVariables(env)) {
    warn(
      {
        variable: unknown.name,
        ...(unknown.suggestion === undefined ? {} : { didYouMean: unknown.suggestion }),
      },
      unknownVariableSentence(unknown),
    );
  }
}
