import { pino } from "pino";
import type { Logger } from "../../src/eni/process/logger.js";

export type LogLine = Record<string, unknown>;

/** A logger that writes nothing. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/** A debug logger whose lines, parsed, the test reads from `lines`. */
export function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/**
 * An info logger with the base fields a command's logger has (e.g. `{ command: "sidecar" }`), whose lines
 * the test reads as written, in `raw`: JSON.parse would hide a key written twice.
 */
export function captureRawLogger(bindings: Record<string, unknown>): { logger: Logger; raw: string[] } {
  const raw: string[] = [];
  const logger = pino({ level: "info", base: bindings }, { write: (line: string) => raw.push(line) });
  return { logger, raw };
}
