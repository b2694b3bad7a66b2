import { ExitCode } from "../eni/errors/exit-codes.js";
import { buildAwsClients } from "../eni/pod-deps.js";
import { systemClock } from "../eni/process/clock.js";
import { CommandRun, printHelpIfAsked } from "../eni/process/command-run.js";
import { warnUnknownVariables } from "../eni/process/known-variables.js";
import { createLogger } from "../eni/process/logger.js";
import { commandHelp } from "../eni/process/settings.js";
import { untilFirstSignal } from "../eni/process/shutdown-signals.js";
import { attachPartsOf, warnNoOrphanSweep } from "./attach-wiring.js";
import { Bridge } from "./bridge.js";
import { BridgeLifecycle } from "./bridge-lifecycle.js";
import { bridgeOptionsOf, prefixModeOptionsOf } from "./bridge-options.js";
import { CniClaims } from "./cni/cni-claims.js";
import { answerCniRequest } from "./cni/cni-handler.js";
import { CniServer } from "./cni/cni-server.js";
import type { KubeApi } from "./kube/kube-api.js";
import { addressesPerEni, instanceTypeOf, vpcIdOf } from "./node/node-facts.js";
import { PrefixMode } from "./prefixes/prefix-mode.js";
import { leaseIdentity } from "./reservations/lease-renewer.js";
import { ReservationKeeper } from "./reservations/reservation-keeper.js";
import { ReservationsLoop } from "./reservations/reservations-loop.js";
import { type BridgeConfig, bridgeSettings, loadBridgeConfig } from "./settings.js";
import { BridgeMetrics } from "./telemetry/metrics.js";
import { EVENT_BURST, EVENTS_PER_SECOND, PodEventReporter } from "./telemetry/pod-events.js";

const help = (): string =>
  commandHelp(
    "usage: multus-ipmgr bridge [flags]",
    `Runs on every node (a DaemonSet): watches the node's pods, the NetworkAttachmentDefinitions and whereabouts'
pools, and keeps the node's Multus ENIs holding exactly the Multus addresses of its pods, in waves of at
most one EC2 call per ENI and family. Releases addresses of whereabouts ranges that no pod of the node has
carried for the grace period. Pods annotated multus-ipmgr.io/managed: "false", or running the sidecar, are
left to themselves. Serves /healthz, /readyz and /metrics. SIGTERM/SIGINT: finishes the EC2 call in progress
(both calls of a prefix-mode swap) and exits 0; past IPMGR_SHUTDOWN_GRACE_MS the calls are aborted and it
exits 8.`,
    bridgeSettings,
  );

/** Entrypoint of `multus-ipmgr bridge`: config, adapters and parts, signals, then the BridgeLifecycle. */
export async function main(argv: readonly string[]): Promise<number> {
  if (printHelpIfAsked(argv, help)) return ExitCode.ok;
  const run = new CommandRun("bridge");
  const signals = run.shutdownSignals();
  let kube: KubeApi | undefined;
  let bridge: BridgeLifecycle | undefined;
  try {
    const config: BridgeConfig = loadBridgeConfig(argv, process.env);
    run.terminationLog = config.terminationLog;
    const log = createLogger(config.logLevel, { command: "bridge", node: config.nodeName });
    run.logger = log;
    warnUnknownVariables(process.env, (fields, message) => log.warn(fields, message));
    const clock = systemClock;
    const metrics = new BridgeMetrics();
    // Aborted when the shutdown grace runs out: cuts the EC2 and IMDS calls in flight, and their retries.
    const inflight = new AbortController();
    const { imds, ec2 } = buildAwsClients(config, log, {
      observer: metrics.ec2Observer,
      signal: inflight.signal,
    });
    ec2.warmUp();
    const client = await import("./kube/kube-client.js");
    const kubeApi = client.createKubeApi({
      kubeconfig: config.kubeconfig,
      clock,
      logger: log,
      watchTimeoutSeconds: client.watchTimeoutSeconds(),
      watchSilenceMs: config.watchSilenceMs,
      requestTimeoutMs: client.REQUEST_TIMEOUT_MS,
      restartBaseMs: client.WATCH_RESTART_BASE_MS,
      restartMaxMs: config.watchRestartMaxMs,
      component: "multus-ipmgr-bridge",
      host: config.nodeName,
    });
    kube = kubeApi;
    const events = new PodEventReporter(kubeApi, clock, log, metrics, {
      repeatIntervalMs: config.eventIntervalMs,
      perSecond: EVENTS_PER_SECOND,
      burst: EVENT_BURST,
    });
    const perEni = await addressesPerEni(imds, log);
    const instanceType = config.prefixMode === "off" ? undefined : await instanceTypeOf(imds);
    const prefixes =
      config.prefixMode === "off"
        ? undefined
        : new PrefixMode(
            { kube: kubeApi, ec2, clock, logger: log, metrics, events },
            {
              ...prefixModeOptionsOf(config, config.prefixMode, perEni),
              ...(instanceType === undefined ? {} : { instanceType }),
            },
          );
    const cni =
      config.cniSocket === "" ? undefined : new CniClaims({ clock, logger: log, nodeName: config.nodeName });
    const attach = attachPartsOf(config, {
      kube: kubeApi,
      imds,
      ec2,
      clock,
      logger: log,
      metrics,
      events,
      prefixes,
    });
    warnNoOrphanSweep(config, log);
    const waves = new Bridge(
      {
        kube: kubeApi,
        imds,
        ec2,
        clock,
        logger: log,
        metrics,
        events,
        ...(prefixes === undefined ? {} : { prefixes }),
        ...(cni === undefined ? {} : { cni }),
        ...(attach === undefined ? {} : { attach: attach.step }),
      },
      bridgeOptionsOf(config, perEni),
    );
    const keeper =
      config.reservations === "off"
        ? undefined
        : new ReservationKeeper(
            { kube: kubeApi, ec2, clock, logger: log, metrics },
            {
              mode: config.reservations,
              leaseNamespace: config.leaseNamespace,
              leaseName: config.leaseName,
              leaseDurationMs: config.leaseDurationMs,
              identity: leaseIdentity(
                { podName: config.podName, podUid: config.podUid },
                config.nodeName,
                log,
              ),
              vpcId: await vpcIdOf(imds, log),
            },
          );
    // Attach mode's orphans are swept by the Lease holder, after its reservations pass.
    const orphans = keeper === undefined ? undefined : attach?.orphans(() => keeper.lease.holds());
    const reservations =
      keeper === undefined
        ? undefined
        : new ReservationsLoop(keeper, waves, {
            intervalMs: config.reservationIntervalMs,
            clock,
            logger: log,
            ...(orphans === undefined ? {} : { orphans }),
          });
    bridge = new BridgeLifecycle({
      waves,
      reservations,
      ...(attach?.startupTaint === undefined ? {} : { startupTaint: attach.startupTaint }),
      events,
      kube: kubeApi,
      metrics,
      clock,
      logger: log,
      inflight,
      cni:
        cni === undefined
          ? undefined
          : new CniServer({
              path: config.cniSocket,
              answer: (request) =>
                answerCniRequest(request, { claims: cni, ec2, clock, logger: log, metrics }),
              stopping: () => cni.stop(),
              logger: log,
            }),
      http: { host: config.httpHost, port: config.httpPort },
    });
    await bridge.start();
    log.info(
      {
        allowedCidrs: config.allowedCidrs,
        deviceIndexes: config.deviceIndexes,
        releaseGraceMs: config.releaseGraceMs,
        releaseDryRun: config.releaseDryRun,
        http: bridge.http === undefined ? undefined : `${bridge.http.host}:${bridge.http.port}`,
      },
      "bridge started",
    );
    const signal = await untilFirstSignal(bridge.run(), signals, "the wave loop");
    log.info(
      { signal, graceMs: config.shutdownGraceMs },
      "shutting down: finishing the EC2 call in progress",
    );
    const outcome = await bridge.shutdown(config.shutdownGraceMs);
    if (outcome === "grace-expired") return ExitCode.timeout;
    log.info("stopped");
    return ExitCode.ok;
  } catch (error) {
    if (bridge !== undefined) await bridge.close();
    else {
      await kube
        ?.close()
        .catch((closeError: unknown) =>
          run.logger?.warn({ err: closeError }, "cleanup after failure failed"),
        );
    }
    return run.fail(error);
  } finally {
    signals.dispose();
  }
}
