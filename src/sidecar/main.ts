import type { AddressEvents } from "../eni/address-events.js";
import { ExitCode } from "../eni/errors/exit-codes.js";
import { buildPodDeps } from "../eni/pod-deps.js";
import { CommandRun, printHelpIfAsked } from "../eni/process/command-run.js";
import { warnUnknownVariables } from "../eni/process/known-variables.js";
import { createLogger } from "../eni/process/logger.js";
import { commandHelp } from "../eni/process/settings.js";
import { untilFirstSignal } from "../eni/process/shutdown-signals.js";
import { fullCollector } from "../eni/process/v8-footprint.js";
import { startAddressEvents } from "./address-events-mode.js";
import { SidecarMetrics } from "./metrics.js";
import { osInterfacesFingerprint } from "./os-fingerprint.js";
import { ReleaseJournal } from "./release-journal.js";
import { loadSidecarConfig, type SidecarConfig, sidecarSettings } from "./settings.js";
import { Sidecar } from "./sidecar.js";

const settings = sidecarSettings;

/** Built only when asked for: no start-up work for a path rarely taken. */
const help = (): string =>
  commandHelp(
    "usage: multus-ipmgr sidecar [flags]",
    `Does what init does (assigns this pod's Multus addresses to the worker ENIs that carry them), then keeps
them there: an address added to a managed interface (a floating IP taken over from the other pod) is moved
to our ENI within a fraction of a second, one removed is released. Serves /healthz, /readyz and /metrics.
SIGTERM/SIGINT: finishes the EC2 call in progress and exits 0; if it outlasts IPMGR_SHUTDOWN_GRACE_MS, the
call is aborted and the sidecar exits 8 within about a second of the grace. A second signal exits at once
(143/130).`,
    settings,
  );

/** Entrypoint of `multus-ipmgr sidecar`: config, adapters, signals, then the Sidecar. */
export async function main(argv: readonly string[]): Promise<number> {
  if (printHelpIfAsked(argv, help)) return ExitCode.ok;
  const run = new CommandRun("sidecar");
  const signals = run.shutdownSignals();
  let sidecar: Sidecar | undefined;
  let addressEvents: AddressEvents | undefined;
  try {
    const config: SidecarConfig = loadSidecarConfig(argv, process.env);
    run.terminationLog = config.terminationLog;
    const log = createLogger(config.logLevel, { command: "sidecar" });
    run.logger = log;
    warnUnknownVariables(process.env, (fields, message) => log.warn(fields, message));
    // Before anything starts: a state file whose volume is missing is a configuration error (exit 2).
    const releaseJournal =
      config.stateFile === undefined ? undefined : ReleaseJournal.open(config.stateFile, log);
    const metrics = new SidecarMetrics();
    const idleCollect = fullCollector();
    // Aborted when the shutdown grace runs out: cuts the EC2 and IMDS calls in flight, and their retries.
    const inflight = new AbortController();
    const deps = buildPodDeps(config, log, { observer: metrics.ec2Observer, signal: inflight.signal });
    addressEvents = await startAddressEvents({
      mode: config.addressEvents,
      watchesInterfaces: config.addressSource === "interfaces",
      pollIntervalMs: config.pollIntervalMs,
      fallbackPollMs: config.eventsFallbackPollMs,
      clock: deps.clock,
      logger: log,
    });
    const current = new Sidecar({
      deps,
      metrics,
      policy: { allowedCidrs: config.allowedCidrs },
      waitForAddressesMs: config.waitForAddressesMs,
      confirm: { timeoutMs: config.confirmTimeoutMs, intervalMs: config.confirmIntervalMs },
      releaseOnRemove: config.releaseOnRemove,
      releaseSettleMs: config.releaseSettleMs,
      episodeCheckIntervalMs: config.episodeCheckIntervalMs,
      inflight,
      ...(idleCollect === undefined ? {} : { idleCollect }),
      pollIntervalMs: config.pollIntervalMs,
      ...(addressEvents === undefined ? {} : { addressEvents }),
      eventsFallbackPollMs: config.eventsFallbackPollMs,
      resyncIntervalMs: config.resyncIntervalMs,
      driftCheckIntervalMs: config.driftCheckIntervalMs,
      http: { host: config.httpHost, port: config.httpPort },
      ...(config.addressSource === "interfaces" ? { fingerprint: osInterfacesFingerprint() } : {}),
      elasticIps: config.elasticIps,
      ...(releaseJournal === undefined ? {} : { releaseJournal }),
    });
    sidecar = current;
    addressEvents = undefined; // the sidecar owns it now
    await current.start();
    const signal = await untilFirstSignal(current.run(), signals, "the reconcile loop");
    log.info(
      { signal, graceMs: config.shutdownGraceMs, releaseOnExit: config.releaseOnExit },
      "shutting down: finishing the EC2 call in progress",
    );
    const outcome = await current.shutdown({
      graceMs: config.shutdownGraceMs,
      releaseOnExit: config.releaseOnExit,
    });
    sidecar = undefined;
    if (outcome === "grace-expired") return ExitCode.timeout;
    log.info("stopped");
    return ExitCode.ok;
  } catch (error) {
    await addressEvents?.stop();
    if (sidecar !== undefined) {
      await sidecar.shutdown({ graceMs: 0, releaseOnExit: false }).catch((closeError: unknown) => {
        run.logger?.warn({ err: closeError }, "cleanup after failure failed");
      });
    }
    return run.fail(error);
  } finally {
    signals.dispose();
  }
}
