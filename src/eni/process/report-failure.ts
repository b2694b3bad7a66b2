import { writeFileSync } from "node:fs";
import { IpmgrError } from "../errors/ipmgr-error.js";
import { ExitCode, type ExitCodeValue } from "./exit-codes.js";
import { createLogger, type Logger } from "./logger.js";

/**
 * Tells the user why the command failed, in one sentence, on stderr, in the JSON log on stdout (what a log
 * collector reads) and in the Kubernetes termination log (so `kubectl describe pod` shows it), and returns
 * the exit code of the error's class. Without a logger yet (the configuration failed before one could be
 * made), the sentence is logged through one of the same shape at level info.
 */
export function reportFailure(
  command: string,
  error: unknown,
  logger: Logger | undefined,
  terminationLog: string | undefined,
): ExitCodeValue {
  const known = error instanceof IpmgrError;
  const message = known
    ? error.message
    : `unexpected error: ${error instanceof Error ? error.message : String(error)}`;
  const exitCode = known ? error.exitCode : ExitCode.internal;
  const log = logger ?? createLogger("info", { command });
  log.error({ err: error, exitCode }, message);
  process.stderr.write(`multus-ipmgr ${command}: ${message}\n`);
  if (terminationLog !== undefined && terminationLog !== "") {
    try {
      writeFileSync(terminationLog, `${message}\n`);
    } catch (cause) {
      // Outside Kubernetes the file usually does not exist; the message is on stderr already.
      log.debug({ err: cause, terminationLog }, "termination log not written");
    }
  }
  return exitCode;
}
