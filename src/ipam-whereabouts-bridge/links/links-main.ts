import { ExitCode } from "../../eni/errors/exit-codes.js";
import { ImdsClient } from "../../eni/imds-client.js";
import { systemClock } from "../../eni/process/clock.js";
import { CommandRun, printHelpIfAsked } from "../../eni/process/command-run.js";
import { imdsEndpointOf } from "../../eni/process/config.js";
import { warnUnknownVariables } from "../../eni/process/known-variables.js";
import { createLogger } from "../../eni/process/logger.js";
import { commandHelp } from "../../eni/process/settings.js";
import { untilFirstSignal } from "../../eni/process/shutdown-signals.js";
import { IpLinkOps } from "./ip-link-ops.js";
import { LinksAgent } from "./links-agent.js";
import { type LinksConfig, linksSettings, loadLinksConfig } from "./links-settings.js";

const help = (): string =>
  commandHelp(
    "usage: multus-ipmgr links [flags]",
    `The links agent of attach mode (docs/attach-mode.md): a container of the bridge's DaemonSet, the only one
holding NET_ADMIN, in the node's network namespace. Every interval it finds the link of each network's ENI
(IMDS gives the ENI's MAC, the link carries it), renames it to the network's name (down first), sets its
MTU, sets it up, removes any address on it (IPv6 link-local stays), sets rp_filter to 0, keeps
systemd-networkd off it, and writes the status file the bridge reads before it removes the startup taint.
SIGTERM/SIGINT: finishes the pass in progress and exits 0.`,
    linksSettings,
  );

/** Entrypoint of `multus-ipmgr links`: config, adapters, signals, then the agent's loop. */
export async function main(argv: readonly string[]): Promise<number> {
  if (printHelpIfAsked(argv, help)) return ExitCode.ok;
  const run = new CommandRun("links");
  const signals = run.shutdownSignals();
  const stop = new AbortController();
  try {
    const config: LinksConfig = loadLinksConfig(argv, process.env);
    run.terminationLog = config.terminationLog;
    const log = createLogger(config.logLevel, { command: "links" });
    run.logger = log;
    warnUnknownVariables(process.env, (fields, message) => log.warn(fields, message));
    const imds = new ImdsClient({
      endpoint: imdsEndpointOf(config),
      requestTimeoutMs: config.imdsTimeoutMs,
      clock: systemClock,
      logger: log,
    });
    const networkdDir = config.networkdDir === "" ? undefined : config.networkdDir;
    const agent = new LinksAgent(
      { imds, ops: new IpLinkOps({ networkdDir, procSys: config.procSys }), clock: systemClock, logger: log },
      {
        networks: config.networks,
        statusFile: config.linkStatusFile,
        intervalMs: config.intervalMs,
        networkd: networkdDir !== undefined,
      },
    );
    log.info(
      {
        networks: config.networks.map((n) => n.name),
        statusFile: config.linkStatusFile,
        intervalMs: config.intervalMs,
        networkdDir: networkdDir ?? "off",
      },
      "links agent started",
    );
    const running = agent.run(stop.signal);
    const signal = await untilFirstSignal(running, signals, "the links loop");
    log.info({ signal }, "shutting down: finishing the pass in progress");
    stop.abort();
    await running;
    log.info("stopped");
    return ExitCode.ok;
  } catch (error) {
    stop.abort();
    return run.fail(error);
  } finally {
    signals.dispose();
  }
}
