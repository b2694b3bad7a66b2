import type { ImdsClient } from "../eni/imds-client.js";
import { addressesPerEniOf } from "../eni/instance-limits.js";
import { buildAwsClients } from "../eni/pod-deps.js";
import { systemClock } from "../eni/process/clock.js";
import { CommandRun, printHelpIfAsked } from "../eni/process/command-run.js";
import { ExitCode } from "../eni/process/exit-codes.js";
import { warnUnknownVariables } from "../eni/process/known-variables.js";
import { createLogger, type Logger } from "../eni/process/logger.js";
import { type RunningHttpServer, startHttpServer } from "../eni/process/probe-server.js";
import { commandHelp } from "../eni/process/settings.js";
import { untilFirstSignal } from "../eni/process/shutdown-signals.js";
import { Bridge } from "./bridge.js";
import type { KubeApi } from "./kube-api.js";
import { leaseIdentity } from "./lease-renewer.js";
import { BridgeMetrics } from "./metrics.js";
import { PodEventReporter } from "./pod-events.js";
import { ReservationKeeper } from "./reservation-keeper.js";
import { type BridgeConfig, bridgeSettings, loadBridgeConfig } from "./settings.js";

const help = (): string =>
  commandHelp(
    "usage: multus-ipmgr bridge [flags]",
    `Runs on every node (a DaemonSet): watches the node's pods, the NetworkAttachmentDefinitions and whereabouts'
pools, and keeps the node's Multus ENIs holding exactly the Multus addresses of its pods, in waves of at
most one EC2 call per ENI and family. Releases addresses of whereabouts ranges that no pod of the node has
carried for the grace period. Pods annotated multus-ipmgr.io/managed: "false", or running the sidecar, are
left to themselves. Serves /healthz, /readyz and /metrics. SIGTERM/SIGINT: finishes the EC2 call in progress
and exits 0; past IPMGR_SHUTDOWN_GRACE_MS the calls are aborted and it exits 8.`,
    bridgeSettings,
  );

/** The instance type's addresses per ENI (IMDS `instance-type`, the table doctor uses); undefined if unknown. */
async function addressesPerEni(imds: ImdsClient, logger: Logger): Promise<number | undefined> {
  const type = (await imds.get("/latest/meta-data/instance-type"))?.trim();
  const limit = type === undefined ? undefined : addressesPerEniOf(type);
  if (limit === undefined) {
    logger.warn(
      { instanceType: type },
      "the instance type is not in the built-in table: a wave does not check the ENIs' room, EC2 refuses what does not fit",
    );
  }
  return limit;
}

/** The node's VPC (IMDS `vpc-id` of one of its ENIs: all are in one VPC), whose subnets the reservations cover. */
async function vpcIdOf(imds: ImdsClient, logger: Logger): Promise<string | undefined> {
  try {
    const [mac] = await imds.macs();
    return mac === undefined ? undefined : await imds.vpcId(mac);
  } catch (error) {
    logger.warn(
      { err: error },
      "could not read the VPC from IMDS: reservations are kept only for the subnets of this node's Multus ENIs",
    );
    return undefined;
  }
}

/**
 * Every interval, once the watches have listed and a wave has run: the Lease, then the reservations.
 * A failure is logged and the next pass tries again; it never stops the waves.
 */
async function keepReservations(
  keeper: ReservationKeeper,
  bridge: Bridge,
  intervalMs: number,
  signal: AbortSignal,
  logger: Logger,
): Promise<void> {
  let failing = false;
  let pruneHeldFor = "";
  while (!signal.aborted) {
    const desired = bridge.lastDesired;
    if (desired !== undefined && bridge.synced) {
      try {
        await keeper.pass(desired.ranges, bridge.lastSubnets);
        // A NAD that cannot be read is unknown, not gone, and a stale view may miss a NAD: nothing is
        // pruned on either.
        const held = [
          ...(bridge.trusted ? [] : ["the view of the cluster is stale"]),
          ...desired.unreadableNads.map((nad) => `NAD ${nad} cannot be read`),
        ].join("; ");
        if (held === "") await keeper.prune(desired.ranges, bridge.lastSubnets);
        else if (held !== pruneHeldFor) {
          logger.warn(
            { reason: held },
            "reservations are kept, none is deleted, until every NAD reads and the view is trusted",
          );
        }
        pruneHeldFor = held;
        if (failing) logger.info("the reservations pass works again");
        failing = false;
      } catch (error) {
        if (!failing)
          logger.warn({ err: error }, "the reservations pass failed; it runs again after the interval");
        failing = true;
      }
    }
    await systemClock
      .sleep(desired === undefined ? Math.min(intervalMs, 1_000) : intervalMs, signal)
      .catch((error: unknown) => {
        if (!signal.aborted) throw error;
      });
  }
}

/** Entrypoint of `multus-ipmgr bridge`: config, adapters, signals, then the Bridge. */
export async function main(argv: readonly string[]): Promise<number> {
  if (printHelpIfAsked(argv, help)) return ExitCode.ok;
  const run = new CommandRun("bridge");
  const signals = run.shutdownSignals();
  let kube: KubeApi | undefined;
  let http: RunningHttpServer | undefined;
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
    const { createKubeApi } = await import("./kube-client.js");
    const kubeApi = createKubeApi({
      kubeconfig: config.kubeconfig,
      clock,
      logger: log,
      watchTimeoutSeconds: 300 + Math.floor(Math.random() * 300),
      watchSilenceMs: config.watchSilenceMs,
      requestTimeoutMs: 10_000,
      restartBaseMs: 250,
      restartMaxMs: config.watchRestartMaxMs,
      component: "multus-ipmgr-bridge",
      host: config.nodeName,
    });
    kube = kubeApi;
    const events = new PodEventReporter(kubeApi, clock, log, metrics, {
      repeatIntervalMs: config.eventIntervalMs,
      perSecond: 5,
      burst: 25,
    });
    const bridge = new Bridge(
      { kube: kubeApi, imds, ec2, clock, logger: log, metrics, events },
      {
        nodeName: config.nodeName,
        allowedCidrs: config.allowedCidrs,
        deviceIndexes: config.deviceIndexes,
        waveWindowMs: config.waveWindowMs,
        releaseGraceMs: config.releaseGraceMs,
        releaseDryRun: config.releaseDryRun,
        resyncIntervalMs: config.resyncIntervalMs,
        retry: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
        recentMemoryMs: config.confirmTimeoutMs,
        addressesPerEni: await addressesPerEni(imds, log),
        watchSilenceMs: config.watchSilenceMs,
      },
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
    http = await startHttpServer({
      host: config.httpHost,
      port: config.httpPort,
      status: { health: () => bridge.health(), readiness: () => bridge.readiness(keeper?.lines() ?? []) },
      metrics,
      logger: log,
    });
    await bridge.start();
    log.info(
      {
        allowedCidrs: config.allowedCidrs,
        deviceIndexes: config.deviceIndexes,
        releaseGraceMs: config.releaseGraceMs,
        releaseDryRun: config.releaseDryRun,
        http: `${http.host}:${http.port}`,
      },
      "bridge started",
    );
    const stop = new AbortController();
    const running = bridge.run(stop.signal);
    const keeping =
      keeper === undefined
        ? Promise.resolve()
        : Promise.all([
            keepReservations(keeper, bridge, config.reservationIntervalMs, stop.signal, log),
            keeper.lease.run(stop.signal),
          ]);
    const signal = await untilFirstSignal(running, signals, "the wave loop");
    log.info(
      { signal, graceMs: config.shutdownGraceMs },
      "shutting down: finishing the EC2 call in progress",
    );
    stop.abort();
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<"grace-expired">((resolve) => {
      timer = setTimeout(() => resolve("grace-expired"), config.shutdownGraceMs);
    });
    const outcome = await Promise.race([
      Promise.all([running, keeping]).then(() => "finished" as const),
      graceOver,
    ]);
    clearTimeout(timer);
    if (outcome === "grace-expired") {
      inflight.abort(new Error("the shutdown grace ran out"));
      log.warn(
        { graceMs: config.shutdownGraceMs },
        "the shutdown grace ran out: the calls in flight were aborted",
      );
    }
    await Promise.race([events.flush(), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    await kubeApi.close();
    await http.close();
    if (outcome === "grace-expired") return ExitCode.timeout;
    log.info("stopped");
    return ExitCode.ok;
  } catch (error) {
    await kube
      ?.close()
      .catch((closeError: unknown) => run.logger?.warn({ err: closeError }, "cleanup after failure failed"));
    await http
      ?.close()
      .catch((closeError: unknown) => run.logger?.warn({ err: closeError }, "cleanup after failure failed"));
    return run.fail(error);
  } finally {
    signals.dispose();
  }
}
