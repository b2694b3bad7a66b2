import { writeFileSync } from "node:fs";
import { ConfigError } from "../errors/config-error.js";
import { ExitCode, type ExitCodeValue } from "../errors/exit-codes.js";
import { IpmgrError } from "../errors/ipmgr-error.js";
import { createLogger, LOG_LEVELS, type Logger, type LogLevel } from "./logger.js";

/** IPMGR_LOG_LEVEL when it is a level, else info: the level of a failure before the configuration loaded. */
function levelOfEnv(env: NodeJS.ProcessEnv): LogLevel {
  const level = env.IPMGR_LOG_LEVEL;
  return LOG_LEVELS.find((l) => l === level) ?? "info";
}

/**
 * Tells the user why the command failed, in one sentence, on stderr, in the JSON log on stdout (what a log
 * collector reads) and in the Kubernetes termination log (so `kubectl describe pod` shows it), and returns
 * the exit code of the error's class. Without a logger yet (the configuration failed before one could be
 * made), the sentence is logged through one of the same shape, at IPMGR_LOG_LEVEL if it is a level, else info. A configuration error is logged
 * as its sentence and class only; its stack goes to a debug line.
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
  const log = logger ?? createLogger(levelOfEnv(process.env), { command });
  if (error instanceof ConfigError) {
    // The sentence says all a user needs; a stack of the bundle's code would only bury it. At debug for us.
    // No `message` field: pino's serializer would take the object for an error and rename its type.
    log.error({ err: { type: error.name, variable: error.variable, value: error.value }, exitCode }, message);
    log.debug({ err: error }, "the configuration error's stack");
  } else {
    log.error({ err: error, exitCode }, message);
  }
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
