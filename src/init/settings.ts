/**
 * `init`'s settings: the pod settings every pod command shares (src/eni/process/config.ts) and its own. In
 * this module, beside the command, as every command keeps its settings.
 */
import { checkPodConfig, podSettings, sidecarSharedSettings } from "../eni/process/config.js";
import { field, loadSettings, type SettingValues, setting } from "../eni/process/settings.js";

/** `init`'s settings: the pod settings and the deadline of the whole run. */
export const initSettings = {
  ...podSettings,
  timeoutMs: setting({
    env: "IPMGR_TIMEOUT_MS",
    flag: "--timeout-ms",
    default: "120000",
    unit: "ms",
    doc: "Deadline for the whole init run; past it init stops and exits 8.",
    schema: field.milliseconds(1000, 3_600_000),
  }),
};

export type InitConfig = SettingValues<typeof initSettings>;

/**
 * Loads init's settings. The sidecar's settings defined in the core (IPMGR_ADDRESS_EVENTS,
 * IPMGR_SHUTDOWN_GRACE_MS, IPMGR_HTTP_PORT, IPMGR_HTTP_HOST) are checked too, from the environment only: init
 * and the sidecar usually share one env block, and a bad value there stops the pod at init, exit 2, rather
 * than the sidecar after the application started. init reads none of them.
 */
export function loadInitConfig(argv: readonly string[], env: NodeJS.ProcessEnv): InitConfig {
  const config = loadSettings(initSettings, argv, env);
  checkPodConfig(config, argv, env);
  loadSettings(sidecarSharedSettings, [], env);
  return config;
}
