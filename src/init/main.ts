import { ExitCode } from "../eni/errors/exit-codes.js";
import { TimeoutError } from "../eni/errors/timeout-error.js";
import type { InterfaceSource } from "../eni/interface-source.js";
import { buildPodDeps } from "../eni/pod-deps.js";
import { CommandRun, printHelpIfAsked } from "../eni/process/command-run.js";
import { warnUnknownVariables } from "../eni/process/known-variables.js";
import { createLogger } from "../eni/process/logger.js";
import { commandHelp } from "../eni/process/settings.js";
import { runInit } from "./run-init.js";
import { initSettings, loadInitConfig } from "./settings.js";

/** Built only when asked for: no start-up work for a path rarely taken. */
const help = (): string =>
  commandHelp(
    "usage: multus-ipmgr init [flags]",
    `Assigns this pod's Multus addresses as secondary IPs of the worker ENIs that carry them (matched by MAC),
waits until EC2 holds them all, and exits 0. Exits non-zero with one sentence saying what is wrong
otherwise; exit codes are listed in docs/troubleshooting.md.`,
    initSettings,
  );

/**
 * What a caller may put in place of an adapter. Only the code cache's training run uses it
 * (scripts/code-cache/code-cache-training.ts): it gives the pod's interfaces as they would be read, since the
 * machine that builds the cache has no pod network namespace.
 */
export interface InitSeams {
  readonly interfaces?: InterfaceSource;
}

/** Entrypoint of `multus-ipmgr init`: config, adapters, signals, then runInit. */
export async function main(argv: readonly string[], seams: InitSeams = {}): Promise<number> {
  if (printHelpIfAsked(argv, help)) return ExitCode.ok;
  const run = new CommandRun("init");
  const controller = new AbortController();
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    stoppedBy = signal;
    controller.abort(new Error(`stopped by ${signal}`));
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  try {
    const config = loadInitConfig(argv, process.env);
    run.terminationLog = config.terminationLog;
    const logger = createLogger(config.logLevel, { command: "init" });
    run.logger = logger;
    warnUnknownVariables(process.env, (fields, message) => logger.warn(fields, message));
    const deadline = AbortSignal.timeout(config.timeoutMs);
    const signal = AbortSignal.any([controller.signal, deadline]);
    const built = buildPodDeps(config, logger, { signal });
    const deps = seams.interfaces === undefined ? built : { ...built, interfaces: seams.interfaces };
    // The EC2 SDK loads on the first EC2 call, not during IMDS discovery: a rerun on a correct pod makes
    // none and never loads it (about 20 ms less), and a fresh start lost nothing measurable, since IMDS
    // answers within a millisecond and left little to overlap (docs/decisions.md: start-up).
    try {
      await runInit(deps, {
        policy: { allowedCidrs: config.allowedCidrs },
        waitForAddressesMs: config.waitForAddressesMs,
        confirm: { timeoutMs: config.confirmTimeoutMs, intervalMs: config.confirmIntervalMs, signal },
        signal,
        elasticIps: config.elasticIps,
      });
    } catch (error) {
      if (deadline.aborted && !(error instanceof TimeoutError)) {
        throw new TimeoutError(
          "init to finish",
          config.timeoutMs,
          "Raise IPMGR_TIMEOUT_MS, or see the log for the step that hung.",
          {
            cause: error,
          },
        );
      }
      throw error;
    }
    return ExitCode.ok;
  } catch (error) {
    if (controller.signal.aborted) {
      run.logger?.warn({ signal: stoppedBy }, "init interrupted; addresses assigned so far stay assigned");
      // The shell convention: 128 + signal number.
      return stoppedBy === "SIGINT" ? 130 : 143;
    }
    return run.fail(error);
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}
