/**
 * `doctor`'s settings: the same variables as the command it diagnoses, so that `kubectl exec` into the
 * container checks that container's own configuration. IPMGR_ALLOWED_CIDRS is optional here: its absence is
 * a finding, not a reason to stop. In this module, not config.ts, so that init's bundle does not carry it.
 */
import { podSettings, sidecarSettings } from "../eni/process/config.js";
import { field, loadSettings, type SettingValues } from "../eni/process/settings.js";

export const doctorSettings = {
  ...podSettings,
  allowedCidrs: { ...podSettings.allowedCidrs, optional: true as const },
  addressEvents: sidecarSettings.addressEvents,
  json: {
    env: "IPMGR_DOCTOR_JSON",
    flag: "--json",
    default: "false",
    doc: "Print the report as one JSON document (for tools) instead of text; the exit code is the same.",
    schema: field.boolean(),
  },
};

export type DoctorConfig = SettingValues<typeof doctorSettings>;

export function loadDoctorConfig(argv: readonly string[], env: NodeJS.ProcessEnv): DoctorConfig {
  return loadSettings(doctorSettings, argv, env);
}
