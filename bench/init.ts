/**
 * `init` against the simulator, the built binary in a pod namespace: wall time from process start to exit
 * (median of N fresh pod starts, each needing one new address), EC2 calls per pod start, the same for a
 * rerun on a correct pod, and peak RSS (GNU time's maximum resident set size).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import type { Lab } from "../test/helpers/netns.js";
import { ALLOWED_CIDRS } from "../test/helpers/worlds.js";
import { startOnePodLab } from "./one-pod-lab.js";
import { type BenchResult, percentile } from "./result.js";

const RUNS = Number(process.env.IPMGR_BENCH_INIT_RUNS ?? 21);
/** Each fresh run needs an address never used before: 198.51.100.33 up to .62 (.63 is reserved by AWS). */
const MAX_RUNS = 30;
const GNU_TIME = "/usr/bin/time";

interface Timed {
  readonly ms: number;
  readonly code: number | null;
  readonly maxRssKb: number | undefined;
}

async function timedInit(lab: Lab, env: Record<string, string>): Promise<Timed> {
  const pod = lab.pods.get("pod");
  if (pod === undefined) throw new Error("no pod");
  const withTime = existsSync(GNU_TIME);
  const argv = [
    "netns",
    "exec",
    pod.ns,
    ...(withTime ? [GNU_TIME, "-f", "maxrss=%M"] : []),
    process.execPath,
    "dist/multus-ipmgr.cjs",
    "init",
  ];
  const started = performance.now();
  const child = spawn("ip", argv, { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const ms = performance.now() - started;
  const rss = /maxrss=(\d+)/.exec(stderr)?.[1];
  if (code !== 0) throw new Error(`init exited ${code}: ${stderr}`);
  return { ms, code, maxRssKb: rss === undefined ? undefined : Number(rss) };
}

export async function benchInit(): Promise<BenchResult[]> {
  if (!Number.isInteger(RUNS) || RUNS < 1 || RUNS > MAX_RUNS) {
    throw new Error(
      `bench: IPMGR_BENCH_INIT_RUNS=${process.env.IPMGR_BENCH_INIT_RUNS}: expected a whole number from 1 to ${MAX_RUNS} ` +
        "(each fresh start takes a new address from 198.51.100.33-62); unset it for the default, 21",
    );
  }
  // Room for one new address per run.
  const lab = await startOnePodLab();
  try {
    const env = lab.env("pod", { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS, IPMGR_LOG_LEVEL: "warn" });
    const fresh: Timed[] = [];
    const callsPerStart: number[] = [];
    let previous: string | undefined;
    for (let i = 0; i < RUNS; i++) {
      const cidr = `198.51.100.${33 + i}/26`;
      if (previous !== undefined) await lab.removeAddress("pod", "net1", previous);
      await lab.addAddress("pod", "net1", cidr);
      previous = cidr;
      await lab.clearCalls();
      fresh.push(await timedInit(lab, env));
      callsPerStart.push((await lab.calls()).length);
    }
    const reruns: Timed[] = [];
    const rerunCalls: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      await lab.clearCalls();
      reruns.push(await timedInit(lab, env));
      rerunCalls.push((await lab.calls()).length);
    }
    const median = percentile(
      fresh.map((t) => t.ms),
      50,
    );
    const rerunMedian = percentile(
      reruns.map((t) => t.ms),
      50,
    );
    const rss = Math.max(...fresh.map((t) => t.maxRssKb ?? Number.NaN)) / 1024;
    const maxCalls = Math.max(...callsPerStart);
    const maxRerunCalls = Math.max(...rerunCalls);
    return [
      {
        name: `init wall time, fresh pod, median of ${RUNS}`,
        value: median,
        unit: "ms",
        target: "<= 200 ms",
        ok: median <= 200,
      },
      {
        name: `init wall time, rerun on a correct pod, median of ${RUNS}`,
        value: rerunMedian,
        unit: "ms",
        target: "(no target)",
        ok: true,
      },
      {
        name: "EC2 calls per pod start (IPv4, one ENI), max",
        value: maxCalls,
        unit: "calls",
        target: "exactly 1",
        ok: maxCalls === 1 && Math.min(...callsPerStart) === 1,
      },
      {
        name: "EC2 calls on a rerun, max",
        value: maxRerunCalls,
        unit: "calls",
        target: "0 mutating",
        ok: maxRerunCalls === 0,
      },
      {
        name: "init peak RSS (max over fresh starts)",
        value: rss,
        unit: "MB",
        target: "<= 80 MB",
        ok: rss <= 80,
      },
    ];
  } finally {
    await lab.close();
  }
}
