import { pino } from "pino";
import type { Logger } from "../../src/eni/logger.js";

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
