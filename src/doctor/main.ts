import { pino } from "pino";
import { ExitCode } from "../eni/errors/exit-codes.js";
import { OsInterfaceSource } from "../eni/os-interface-source.js";
import { buildPodDeps } from "../eni/pod-deps.js";
import { systemClock } from "../eni/process/clock.js";
import { printHelpIfAsked } from "../eni/process/command-run.js";
import { imdsEndpointOf, interfaceSelection } from "../eni/process/config.js";
import { unknownVariables } from "../eni/process/known-variables.js";
import type { Logger } from "../eni/process/logger.js";
import { reportFailure } from "../eni/process/report-failure.js";
import { commandHelp, settingError } from "../eni/process/settings.js";
import { HttpImdsProbe } from "./imds-probe.js";
import { IpMonitorProbe } from "./ip-command-probe.js";
import { kubeconfigEndpoint } from "./kubeconfig.js";
import { SysfsLinks } from "./links.js";
import { inClusterEndpoint, KubeNodeSlices } from "./node-slices.js";
import { renderJson, renderText } from "./render.js";
import { ProcRpFilter } from "./rp-filter.js";
import { type DoctorDeps, runDoctor } from "./run-doctor.js";
import { type NodeDoctorDeps, runNodeDoctor } from "./run-node-doctor.js";
import { type DoctorConfig, doctorSettings, loadDoctorConfig } from "./settings.js";

const help = (): string =>
  commandHelp(
    "usage: multus-ipmgr doctor [--json] [flags]",
    `Checks what init and the sidecar need, from inside the pod (kubectl exec -c <container> <pod> --
multus-ipmgr doctor): IMDS and its hop limit, the instance, the pod's interfaces and their ENIs, the
no_manage tag, the ENIs' security groups, free addresses per ENI, IAM permissions (DryRun where EC2
offers it), the allowed CIDRs against the subnets, subnet CIDR reservations, prefix mode (a Nitro type,
explicit reservations, never prefix ones, over the node-sliced ranges with free /28 or /80 blocks, this
node's whereabouts slices held as prefixes, read from the Kubernetes API, in the pod or through
--kubeconfig, with NODE_NAME or --node-name), and the ip
command. Run in the node's network namespace (the bridge's host-network pod), it also checks that each
Multus ENI's link is up and that rp_filter is not strict on it. --profile node (the chart's helm test)
runs the node's checks only: IMDS, the bridge's IAM, the Multus ENIs (tag, link, rp_filter, no pod
address on the host), the allowed CIDRs, reservations and this node's slices, and with IPMGR_BRIDGE_ATTACH=on
attach mode's subnets, ENI limits and EC2 permissions (DryRun). Changes nothing. Prints ok, warn, PROBLEM or skipped per
check, with the fix; exits 10 when a check found a problem, 0 otherwise.`,
    doctorSettings,
  );

/** Logs go to stderr: stdout carries the report, which tools parse with --json. */
function stderrLogger(level: DoctorConfig["logLevel"]): Logger {
  return pino(
    { level, base: { command: "doctor" }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ fd: 2, sync: true }),
  );
}

/** How long the one Kubernetes read (the NodeSlicePool list) may take, in ms. */
const KUBE_TIMEOUT_MS = 5_000;

/**
 * Where this node's slices come from: the kubeconfig when one is set, else the in-cluster Kubernetes API, and
 * the node name (the downward API's spec.nodeName); or the sentence saying why they cannot be read.
 * @throws ConfigError when the kubeconfig cannot be read or names no server.
 */
async function nodeSlicesOf(
  config: DoctorConfig,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<NonNullable<DoctorDeps["nodeSlices"]>> {
  const endpoint =
    config.kubeconfig === undefined
      ? await inClusterEndpoint(env, KUBE_TIMEOUT_MS)
      : await kubeconfigEndpoint(config.kubeconfig, KUBE_TIMEOUT_MS, (problem) =>
          settingError(doctorSettings.kubeconfig, argv, env, problem),
        );
  if (typeof endpoint === "string") return endpoint;
  const nodeName = config.nodeName;
  if (nodeName === undefined || nodeName === "") {
    return "not checked: NODE_NAME is not set (add it from the downward API, fieldRef spec.nodeName, or run doctor in the bridge's pod, which has it; from a shell, --node-name).";
  }
  return { source: new KubeNodeSlices(endpoint), nodeName };
}

async function buildDoctorDeps(
  config: DoctorConfig,
  argv: readonly string[],
  logger: Logger,
): Promise<DoctorDeps> {
  const pod = buildPodDeps(config, logger);
  return {
    nodeSlices: await nodeSlicesOf(config, argv, process.env),
    ...pod,
    imdsProbe: new HttpImdsProbe({
      endpoint: imdsEndpointOf(config),
      timeoutMs: config.imdsTimeoutMs,
      clock: systemClock,
    }),
    links: new SysfsLinks(),
    rpFilter: new ProcRpFilter(),
    ipCommand: new IpMonitorProbe({ clock: systemClock, logger }),
  };
}

/** The node profile's adapters: doctor's, and every interface of the node (the host network's) with its addresses. */
function nodeDepsOf(deps: DoctorDeps): NodeDoctorDeps {
  return {
    ...deps,
    rpFilter: new ProcRpFilter(),
    hostInterfaces: new OsInterfaceSource({ include: [], exclude: [] }),
  };
}

/** Entrypoint of `multus-ipmgr doctor`: config, adapters, the checks, the report. */
export async function main(argv: readonly string[]): Promise<number> {
  if (printHelpIfAsked(argv, help)) return ExitCode.ok;
  let logger: Logger | undefined;
  try {
    const config = loadDoctorConfig(argv, process.env);
    logger = stderrLogger(config.logLevel);
    const deps = await buildDoctorDeps(config, argv, logger);
    const results =
      config.profile === "node"
        ? await runNodeDoctor(nodeDepsOf(deps), {
            allowedCidrs: config.allowedCidrs,
            region: config.region,
            unknownVariables: unknownVariables(process.env),
            attach: {
              attach: config.attach,
              networks: config.attachNetworks ?? "",
              clusterName: config.clusterName ?? "",
            },
          })
        : await runDoctor(deps, {
            allowedCidrs: config.allowedCidrs,
            region: config.region,
            addressSource: config.addressSource,
            networkStatusFile: config.networkStatusFile,
            selection: interfaceSelection(config),
            addressEvents: config.addressEvents,
            unknownVariables: unknownVariables(process.env),
          });
    const exitCode = results.some((r) => r.status === "problem") ? ExitCode.doctorProblem : ExitCode.ok;
    process.stdout.write(config.json ? renderJson(results, exitCode) : renderText(results, exitCode));
    return exitCode;
  } catch (error) {
    // Never the termination log: doctor runs beside init or the sidecar, whose message that file holds.
    return reportFailure("doctor", error, logger ?? stderrLogger("info"), undefined);
  }
}
