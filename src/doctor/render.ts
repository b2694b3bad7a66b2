/** The doctor's report: text for people, one JSON document for tools. */
import type { CheckResult, CheckStatus } from "./check.js";

export interface Summary {
  readonly ok: number;
  readonly warn: number;
  readonly problem: number;
  readonly skipped: number;
}

export function summarize(results: readonly CheckResult[]): Summary {
  const count = (status: CheckStatus): number => results.filter((r) => r.status === status).length;
  return { ok: count("ok"), warn: count("warn"), problem: count("problem"), skipped: count("skipped") };
}

const LABEL: Readonly<Record<CheckStatus, string>> = {
  ok: "ok",
  warn: "warn",
  problem: "PROBLEM",
  skipped: "skipped",
};

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * Whether the detail names its subject within its first three words ("198.51.100.200 on net1 ...", "address
 * 198.51.100.200 on net1 ...", "floating address ..."): most do, and a prefix would say it twice; the prefix
 * is for those that do not ("allowed (probed ...)").
 */
function namesSubjectFirst(detail: string, subject: string): boolean {
  if (detail.startsWith(subject)) return true;
  return detail
    .split(" ", 3)
    .map((word) => word.replace(/[:;,.]$/, ""))
    .includes(subject);
}

/**
 * One line per result: status, check, subject and detail; the fix on the next line. A summary line at the
 * end, where a terminal leaves the eye.
 */
export function renderText(results: readonly CheckResult[], exitCode: number): string {
  const nameWidth = Math.max(...results.map((r) => r.name.length), 4) + 2;
  const lines: string[] = [];
  for (const r of results) {
    const subject = r.subject === undefined || namesSubjectFirst(r.detail, r.subject) ? "" : `${r.subject}: `;
    lines.push(`${LABEL[r.status].padEnd(9)}${r.name.padEnd(nameWidth)}${subject}${r.detail}`);
    if (r.fix !== undefined && r.status !== "ok") lines.push(`${" ".repeat(9 + nameWidth)}fix: ${r.fix}`);
  }
  const s = summarize(results);
  lines.push(
    "",
    `multus-ipmgr doctor: ${plural(s.problem, "problem")}, ${plural(s.warn, "warning")}, ${s.ok} ok, ${s.skipped} skipped (exit ${exitCode}).`,
  );
  return `${lines.join("\n")}\n`;
}

/** `{ok, exitCode, summary, checks}`; `checks` as CheckResult, in report order. */
export function renderJson(results: readonly CheckResult[], exitCode: number): string {
  const s = summarize(results);
  return `${JSON.stringify({ ok: s.problem === 0, exitCode, summary: s, checks: results }, null, 2)}\n`;
}
