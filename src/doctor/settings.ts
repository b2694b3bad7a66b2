/**
 * `doctor`'s settings: the same variables as the command it diagnoses, so that `kubectl exec` into the
 * container checks that container's own configuration. IPMGR_ALLOWED_CIDRS is optional here: its absence is
 * a finding, not a reason to stop. In this module, not config.ts, so that init's bundle does not carry it.
 */
import { podSettings, sidecarSharedSettings } from "../eni/process/config.js";
import {
  checkBackoffRange,
  field,
  loadSettings,
  type SettingValues,
  setting,
} from "../eni/process/settings.js";

const {
  interfaces,
  excludeInterfaces,
  addressSource,
  networkStatusFile,
  region,
  ec2Endpoint,
  imdsEndpoint,
  imdsEndpointMode,
  imdsTimeoutMs,
  ec2TimeoutMs,
  ec2MaxAttempts,
  ec2RetryBaseMs,
  ec2RetryMaxMs,
  logLevel,
} = podSettings;

/**
 * Only what doctor reads, so that `doctor --help` offers nothing it ignores: not the termination log (doctor
 * never writes it), the waits and confirmations of init, or the Elastic IPs.
 */
export const doctorSettings = {
  allowedCidrs: { ...podSettings.allowedCidrs, optional: true as const },
  interfaces,
  excludeInterfaces,
  addressSource,
  networkStatusFile,
  region,
  ec2Endpoint,
  imdsEndpoint,
  imdsEndpointMode,
  imdsTimeoutMs,
  ec2TimeoutMs,
  ec2MaxAttempts,
  ec2RetryBaseMs,
  ec2RetryMaxMs,
  logLevel,
  addressEvents: sidecarSharedSettings.addressEvents,
  nodeName: setting({
    env: "NODE_NAME",
    flag: "--node-name",
    default: undefined,
    optional: true,
    doc: "This node's name (spec.nodeName of its pods), from the downward API: fieldRef spec.nodeName. Unset: the node-slice check is skipped.",
    schema: field.text(),
  }),
  kubeconfig: setting({
    env: "IPMGR_KUBECONFIG",
    flag: "--kubeconfig",
    default: undefined,
    optional: true,
    doc: "A kubeconfig file for the node-slice check's one read (the NodeSlicePool list): its current context's server and credentials (a token, a token file or a client certificate; not an exec command). Unset: the pod's service account (in cluster).",
    schema: field.text(),
  }),
  attach: setting({
    env: "IPMGR_BRIDGE_ATTACH",
    flag: "--attach",
    default: "off",
    doc: "The bridge's attach mode (docs/attach-mode.md), read in the bridge's container. on: --profile node also checks each network's subnet and security groups, the instance type's ENI limits, and probes attach mode's EC2 calls with DryRun. Ignored by --profile pod.",
    schema: field.enumOf(["off", "on"] as const),
  }),
  attachNetworks: setting({
    env: "IPMGR_BRIDGE_ATTACH_NETWORKS",
    flag: "--attach-networks",
    default: undefined,
    optional: true,
    doc: "The bridge's attach networks (the same JSON list as the bridge's), checked by --profile node when IPMGR_BRIDGE_ATTACH=on.",
    schema: field.text(),
  }),
  clusterName: setting({
    env: "IPMGR_CLUSTER_NAME",
    flag: "--cluster-name",
    default: undefined,
    optional: true,
    doc: "The cluster's name, as the bridge has it: the multus-ipmgr.io/cluster tag doctor's DryRun create carries, and the ENIs its other attach probes are made on.",
    schema: field.text(),
  }),
  json: {
    env: "IPMGR_DOCTOR_JSON",
    flag: "--json",
    default: "false",
    doc: "Print the report as one JSON document (for tools) instead of text; the exit code is the same.",
    schema: field.boolean(),
  },
  profile: {
    env: "IPMGR_DOCTOR_PROFILE",
    flag: "--profile",
    default: "pod",
    doc: "What to check: pod (the container of init or the sidecar: its interfaces, their ENIs and addresses) or node (the bridge's host-network pod: the node's Multus ENIs, their tags and links, rp_filter, pod-range addresses on the host, reservations, the node's whereabouts slices; no pod check).",
    schema: field.enumOf(["pod", "node"] as const),
  },
};

export type DoctorConfig = SettingValues<typeof doctorSettings>;

export function loadDoctorConfig(argv: readonly string[], env: NodeJS.ProcessEnv): DoctorConfig {
  const config = loadSettings(doctorSettings, argv, env);
  checkBackoffRange(
    ec2RetryBaseMs,
    ec2RetryMaxMs,
    { base: config.ec2RetryBaseMs, cap: config.ec2RetryMaxMs },
    argv,
    env,
  );
  return config;
}
