/** What one doctor check found. */

/**
 * `ok`: as it should be. `warn`: works now, but risky or degraded. `problem`: init or the sidecar fails, or
 * pod traffic is lost, until it is fixed; doctor then exits 10. `skipped`: could not be checked, `detail` says
 * why (usually an earlier problem).
 */
export type CheckStatus = "ok" | "warn" | "problem" | "skipped";

export interface CheckResult {
  /** Stable id of the check, e.g. `imds` or `eni-tag`; several results may share one (one per ENI, ...). */
  readonly name: string;
  /** What this result is about when the check runs per item: `net1`, `eni-0123...`, `198.51.100.32/27`. */
  readonly subject?: string;
  readonly status: CheckStatus;
  /** One or two sentences naming the thing and the value found. */
  readonly detail: string;
  /** What to do, often a command to run; set on `warn` and `problem`, and on `skipped` when useful. */
  readonly fix?: string;
}

interface Parts {
  readonly subject?: string | undefined;
  readonly fix?: string | undefined;
}

function make(name: string, status: CheckStatus, detail: string, parts: Parts): CheckResult {
  return {
    name,
    ...(parts.subject === undefined ? {} : { subject: parts.subject }),
    status,
    detail,
    ...(parts.fix === undefined ? {} : { fix: parts.fix }),
  };
}

export const ok = (name: string, detail: string, parts: Parts = {}): CheckResult =>
  make(name, "ok", detail, parts);
export const warn = (name: string, detail: string, parts: Parts): CheckResult =>
  make(name, "warn", detail, parts);
export const problem = (name: string, detail: string, parts: Parts): CheckResult =>
  make(name, "problem", detail, parts);
export const skipped = (name: string, detail: string, parts: Parts = {}): CheckResult =>
  make(name, "skipped", detail, parts);

/** The sentence of an error a step failed with, for a result's detail. */
export function errorSentence(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** "a, b and c" */
export function listText(items: readonly string[]): string {
  if (items.length <= 1) return items[0] ?? "none";
  return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}
