import { pino } from "pino";

export type Logger = pino.Logger;

/** Log levels accepted by IPMGR_LOG_LEVEL. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * JSON lines on stdout (what `kubectl logs` shows). Synchronous writes, so that the last line before an
 * exit is never lost; our volume is a few lines per change, so the cost does not matter.
 */
export function createLogger(level: LogLevel, bindings: Record<string, unknown> = {}): Logger {
  return pino(
    { level, base: { ...bindings }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ fd: 1, sync: true }),
  );
}
