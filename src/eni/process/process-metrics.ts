import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Ec2CallObserver, Ec2CallRecord } from "../ec2-api.js";

/** What the process metrics read, at scrape time. */
export interface ProcessStats {
  residentMemoryBytes(): number;
  cpuSeconds(): number;
  /** V8's heap: total (reserved by the heap spaces) and used, in bytes; and memory held outside it. */
  heap(): { readonly totalBytes: number; readonly usedBytes: number; readonly externalBytes: number };
}

export const nodeProcessStats: ProcessStats = {
  residentMemoryBytes: () => process.memoryUsage.rss(),
  cpuSeconds: () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  },
  heap: () => {
    const usage = process.memoryUsage();
    return { totalBytes: usage.heapTotal, usedBytes: usage.heapUsed, externalBytes: usage.external };
  },
};

/**
 * The standard process metrics a long-running command exposes, read only when scraped: resident memory, CPU
 * time, and V8's heap (where the resident memory goes). Of prom-client's default metrics only these: the
 * others include an event-loop monitor that wakes the process every 10 ms, which would cost more than a
 * whole idle sidecar.
 */
export function registerProcessMetrics(registry: Registry, stats: ProcessStats = nodeProcessStats): void {
  const registers = [registry];
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers,
    collect() {
      this.set(stats.residentMemoryBytes());
    },
  });
  for (const [name, help, pick] of [
    ["nodejs_heap_size_total_bytes", "Process heap size from Node.js in bytes.", "totalBytes"],
    ["nodejs_heap_size_used_bytes", "Process heap size used from Node.js in bytes.", "usedBytes"],
    ["nodejs_external_memory_bytes", "Node.js external memory size in bytes.", "externalBytes"],
  ] as const) {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(stats.heap()[pick]);
      },
    });
  }
  let cpuReported = 0;
  new Counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    registers,
    collect() {
      const now = stats.cpuSeconds();
      if (now > cpuReported) this.inc(now - cpuReported);
      cpuReported = Math.max(cpuReported, now);
    },
  });
}

/**
 * `<prefix>ec2_calls_total` and `<prefix>ec2_call_duration_seconds`, fed by the returned observer (hand it to
 * the EC2 adapter; it never throws).
 */
export function registerEc2CallMetrics(registry: Registry, prefix: string): Ec2CallObserver {
  const registers = [registry];
  const calls = new Counter({
    name: `${prefix}ec2_calls_total`,
    help: "EC2 API calls, by EC2 action and outcome (ok or error); one call includes all its retries.",
    labelNames: ["operation", "outcome"],
    registers,
  });
  const duration = new Histogram({
    name: `${prefix}ec2_call_duration_seconds`,
    help: "Wall time of an EC2 API call, every retry and backoff included, in seconds.",
    labelNames: ["operation"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  return (record: Ec2CallRecord): void => {
    calls.inc({ operation: record.operation, outcome: record.outcome });
    duration.observe({ operation: record.operation }, record.durationMs / 1000);
  };
}
