/**
 * /healthz of the sidecar's loop: unhealthy when the interfaces are not read any more, when a step runs far
 * longer than any should, or when the loop has not turned for three drift check periods. Failed reconciles
 * keep it healthy (a restart would not fix EC2), and are listed. Pure: the loop passes what it saw.
 */
import type { ProbeResult } from "../eni/process/probe-server.js";

export interface LoopHealthInput {
  readonly now: number;
  /** When the watcher last read the interfaces, and how often it reads them, in ms. */
  readonly lastPollAt: number | undefined;
  readonly pollIntervalMs: number;
  /** Whether the loop has started (startup is over). */
  readonly started: boolean;
  /** When the step in progress started; undefined between steps. */
  readonly stepStartedAt: number | undefined;
  /** How long one step may run, in ms. */
  readonly maxStepMs: number;
  /** When the loop last turned. */
  readonly lastTickAt: number | undefined;
  readonly driftCheckIntervalMs: number;
  /** Failed reconciles in a row, and the open failure's description. */
  readonly failures: number;
  readonly failure: string | undefined;
}

export function loopHealth(input: LoopHealthInput): ProbeResult {
  const { now } = input;
  const lines: string[] = [];
  const pollLimit = Math.max(3 * input.pollIntervalMs, 1_000);
  if (input.lastPollAt === undefined || now - input.lastPollAt > pollLimit) {
    lines.push(`the interfaces were not read in the last ${pollLimit} ms`);
  }
  if (input.started) {
    if (input.stepStartedAt !== undefined) {
      if (now - input.stepStartedAt > input.maxStepMs) {
        lines.push(`a reconcile step has been running for ${now - input.stepStartedAt} ms`);
      }
    } else {
      const tickLimit = 3 * input.driftCheckIntervalMs;
      if (input.lastTickAt === undefined || now - input.lastTickAt > tickLimit) {
        lines.push(`the reconcile loop has not run in the last ${tickLimit} ms`);
      }
    }
  }
  if (lines.length > 0) return { ok: false, lines };
  return {
    ok: true,
    lines: input.failures > 0 ? [`${input.failures} failed reconcile(s) in a row: ${input.failure}`] : [],
  };
}
