/**
 * `init`'s settings: the pod settings every pod command shares (src/eni/process/config.ts) and its own. In
 * this module, beside the command, as every command keeps its settings.
 */
import { checkPodConfig, podSettings } from "../eni/process/config.js";
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

export function loadInitConfig(argv: readonly string[], env: NodeJS.ProcessEnv): InitConfig {
  const config = loadSettings(initSettings, argv, env);
  checkPodConfig(config, argv, env);
  return config;
}
