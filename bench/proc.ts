/** What the benches read of a process from /proc: its children, CPU time and resident set. */
import { readdirSync, readFileSync } from "node:fs";

/** The live children of a process, from /proc/<pid>/task/<tid>/children. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim();
    if (text !== "") out.push(...text.split(" ").map(Number));
  }
  return out;
}

/** utime + stime of a process, in clock ticks; and its resident set (VmRSS), in kB. */
export function usage(pid: number): { ticks: number; rssKb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return { ticks, rssKb: Number(rss ?? Number.NaN) };
}

/** usage() summed over a process and its descendants (the sidecar with the `ip monitor` it runs). */
export function treeUsage(pid: number): { ticks: number; rssKb: number } {
  const total = usage(pid);
  for (const child of childrenOf(pid)) {
    const u = treeUsage(child);
    total.ticks += u.ticks;
    total.rssKb += u.rssKb;
  }
  return total;
}
