/**
 * `sidecar` against the simulator, the built binary in two pod namespaces on two simulated nodes:
 * - failover latency: from `ip addr add` of the floating address in the standby's namespace to the
 *   simulator recording the AssignPrivateIpAddresses call for it (the call log's arrival time), p50 and p99
 *   over IPMGR_BENCH_SIDECAR_MOVES moves (default 1000 in `auto`, 60 in `poll`), alternating direction, so
 *   failback is half of them;
 * - idle cost of one sidecar over IPMGR_BENCH_IDLE_SECONDS (default 60): peak RSS and CPU share of a core,
 *   from /proc (utime + stime), of the node process and its children (the `ip monitor` it runs) together;
 *   once just after start, and the RSS again just after the failover run (whose own peak is shown too).
 * Once per address-events mode in IPMGR_BENCH_ADDRESS_EVENTS (default "auto,poll"), each in a fresh lab.
 */

import type { ChildProcess } from "node:child_process";
import { readFileSync, readlinkSync } from "node:fs";
import { Lab, type SimCallView } from "../test/helpers/netns.js";
import { ENI, floatingPairWorld, MAC, NODE1, NODE2 } from "../test/helpers/worlds.js";
import { childrenOf, treeUsage } from "./proc.js";
import { type BenchResult, percentile } from "./result.js";

/** Moves in the `auto` mode: 1000, a sustained churn, for the idle RSS after it. `poll` makes 60. */
const MOVES = Math.max(50, Number(process.env.IPMGR_BENCH_SIDECAR_MOVES ?? 1000));
const POLL_MOVES = 60;
const IDLE_SECONDS = Number(process.env.IPMGR_BENCH_IDLE_SECONDS ?? 60);
const CLOCK_TICKS_PER_SECOND = 100;
const MODES = (process.env.IPMGR_BENCH_ADDRESS_EVENTS ?? "auto,poll")
  .split(",")
  .map((m) => m.trim())
  .filter((m) => m !== "");

/** The ENI behind each bench pod. */
const ENI_OF = { a: ENI.node1A1, b: ENI.node2A1 } as const;
const FLOAT = "198.51.100.80";

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function ready(lab: Lab, pod: string): Promise<boolean> {
  return (await lab.podGet(pod, "http://127.0.0.1:9180/readyz")).status === 200;
}

function assignOf(calls: readonly SimCallView[], eniId: string, afterSeq: number): SimCallView | undefined {
  return calls.find(
    (c) =>
      c.seq > afterSeq &&
      c.action === "AssignPrivateIpAddresses" &&
      c.outcome === "ok" &&
      c.params.NetworkInterfaceId === eniId &&
      Object.values(c.params).includes(FLOAT),
  );
}

/**
 * Where the RSS goes, for the whole process tree: the node executable's own pages (file-backed, shared by
 * every node process on the machine) and the private memory the sidecar really adds (anonymous pages).
 */
function treeBreakdown(pid: number): { nodeBinaryKb: number; privateKb: number } {
  const total = { nodeBinaryKb: 0, privateKb: 0 };
  for (const p of [pid, ...childrenOf(pid)]) {
    let mapping = "";
    for (const line of readFileSync(`/proc/${p}/smaps`, "utf8").split("\n")) {
      if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) mapping = line.split(/\s+/)[5] ?? "";
      else if (line.startsWith("Rss:") && mapping === process.execPath)
        total.nodeBinaryKb += Number(line.split(/\s+/)[1]);
      else if (line.startsWith("Anonymous:")) total.privateKb += Number(line.split(/\s+/)[1]);
    }
  }
  return total;
}

function comm(pid: number): string {
  return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
}

async function failover(lab: Lab, moves: number): Promise<number[]> {
  const latencies: number[] = [];
  let holder: "a" | "b" = "a";
  for (let i = 0; i < moves; i++) {
    const standby: "a" | "b" = holder === "a" ? "b" : "a";
    const seq = (await lab.calls()).at(-1)?.seq ?? 0;
    await lab.removeAddress(holder, "net1", `${FLOAT}/25`);
    const started = Date.now();
    await lab.addAddress(standby, "net1", `${FLOAT}/25`);
    let assign: SimCallView | undefined;
    await until(
      async () => {
        assign = assignOf(await lab.calls(), ENI_OF[standby], seq);
        return assign !== undefined;
      },
      `move ${i + 1} to ${standby}`,
    );
    latencies.push(Date.parse(String(assign?.time)) - started);
    // Let both sides settle (the old holder's release, the new holder's confirmation) before the next move.
    await until(
      async () => {
        const state = await lab.state();
        const held = (eniId: string) =>
          state.enis.find((e) => e.eniId === eniId)?.ipv4s.includes(FLOAT) ?? false;
        return held(ENI_OF[standby]) && !held(ENI_OF[holder]);
      },
      `settle after move ${i + 1}`,
    );
    await until(() => ready(lab, standby), `${standby} ready after move ${i + 1}`);
    holder = standby;
  }
  return latencies;
}

/** Samples the process tree's RSS every 100 ms until stopped; returns the highest seen. */
function peakRssSampler(pid: number): { stop(): number } {
  let peak = treeUsage(pid).rssKb;
  const timer = setInterval(() => {
    peak = Math.max(peak, treeUsage(pid).rssKb);
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, treeUsage(pid).rssKb);
    },
  };
}

async function idle(pid: number): Promise<{ rssKb: number; endRssKb: number; cpuPercent: number }> {
  const start = treeUsage(pid);
  const startedAt = performance.now();
  let peakRss = start.rssKb;
  const end = performance.now() + IDLE_SECONDS * 1000;
  while (performance.now() < end) {
    await new Promise((r) => setTimeout(r, 1000));
    peakRss = Math.max(peakRss, treeUsage(pid).rssKb);
  }
  const finish = treeUsage(pid);
  const seconds = (performance.now() - startedAt) / 1000;
  return {
    rssKb: peakRss,
    endRssKb: finish.rssKb,
    cpuPercent: ((finish.ticks - start.ticks) / CLOCK_TICKS_PER_SECOND / seconds) * 100,
  };
}

export async function benchSidecar(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const mode of MODES) results.push(...(await benchMode(mode)));
  return results;
}

/** The figures of one IPMGR_ADDRESS_EVENTS mode, in a lab of its own. */
async function benchMode(mode: string): Promise<BenchResult[]> {
  const lab = await Lab.start(floatingPairWorld(), [
    {
      name: "a",
      instanceId: NODE1,
      interfaces: [{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.70/25", `${FLOAT}/25`] }],
    },
    {
      name: "b",
      instanceId: NODE2,
      interfaces: [{ name: "net1", mac: MAC.node2A1, addresses: ["198.51.100.90/25"] }],
    },
  ]);
  const children: ChildProcess[] = [];
  try {
    for (const pod of ["a", "b"]) {
      const env = lab.env(pod, {
        IPMGR_ALLOWED_CIDRS: "198.51.100.64/26",
        IPMGR_LOG_LEVEL: "warn",
        IPMGR_ADDRESS_EVENTS: mode,
      });
      children.push(lab.spawn(pod, ["sidecar"], env));
    }
    await until(
      async () => (await ready(lab, "a")) && (await ready(lab, "b")),
      "both sidecars ready",
      30_000,
    );

    // Idle first, on a sidecar that has just settled: what a pod pays between failovers.
    const pid = children[0]?.pid;
    if (pid === undefined) throw new Error("bench: no sidecar pid");
    // The executable, not comm: Node 24 names its main thread "MainThread".
    if (readlinkSync(`/proc/${pid}/exe`) !== process.execPath)
      throw new Error(`bench: pid ${pid} is ${comm(pid)}, not the sidecar's node process`);
    // Make sure the mode measured is the mode asked: with events the sidecar runs an `ip` child, polling none.
    const monitors = childrenOf(pid).filter((child) => comm(child) === "ip").length;
    if (monitors !== (mode === "poll" ? 0 : 1)) {
      throw new Error(`bench: mode ${mode}, but the sidecar runs ${monitors} ip monitor processes`);
    }
    const quiet = await idle(pid);
    const breakdown = treeBreakdown(pid);

    const sampler = peakRssSampler(pid);
    const latencies = await failover(lab, mode === "poll" ? POLL_MOVES : MOVES);
    const busyPeakKb = sampler.stop();
    // Idle again, right after the burst: what a pod pays between failovers once it has had some.
    const afterwards = await idle(pid);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    return [
      {
        name: `sidecar [${mode}] failover latency p50 (${latencies.length} moves)`,
        value: p50,
        unit: "ms",
        target: "informational",
        ok: true,
      },
      {
        name: `sidecar [${mode}] failover latency p99 (${latencies.length} moves)`,
        value: p99,
        unit: "ms",
        target: "<= 150 ms",
        ok: p99 <= 150,
      },
      {
        name: `sidecar [${mode}] idle RSS (peak over ${IDLE_SECONDS} s)`,
        value: quiet.rssKb / 1024,
        unit: "MB",
        target: "<= 60 MB",
        ok: quiet.rssKb / 1024 <= 60,
      },
      {
        name: `sidecar [${mode}] peak RSS during the ${latencies.length} failovers`,
        value: busyPeakKb / 1024,
        unit: "MB",
        target: "informational",
        ok: true,
      },
      {
        name: `sidecar [${mode}] idle RSS ${IDLE_SECONDS} s after the ${latencies.length} failovers`,
        value: afterwards.endRssKb / 1024,
        unit: "MB",
        target: "<= 60 MB",
        ok: afterwards.endRssKb / 1024 <= 60,
      },
      {
        name: `sidecar [${mode}] idle RSS after the ${latencies.length} failovers, peak over those ${IDLE_SECONDS} s`,
        value: afterwards.rssKb / 1024,
        unit: "MB",
        target: "informational",
        ok: true,
      },
      {
        name: `sidecar [${mode}] of the first idle RSS, the node executable's shared pages`,
        value: breakdown.nodeBinaryKb / 1024,
        unit: "MB",
        target: "informational",
        ok: true,
      },
      {
        name: `sidecar [${mode}] of the first idle RSS, private (anonymous) memory`,
        value: breakdown.privateKb / 1024,
        unit: "MB",
        target: "informational",
        ok: true,
      },
      {
        name: `sidecar [${mode}] idle CPU (over ${IDLE_SECONDS} s)`,
        value: quiet.cpuPercent,
        unit: "% of a core",
        target: "<= 1%",
        ok: quiet.cpuPercent <= 1,
      },
    ];
  } finally {
    await lab.close();
  }
}
