/**
 * Start-up cost of our own code, against Node's: every figure a ratio to a bare `node -e 0` run in the same
 * pod namespace, interleaved with ours in one run (bare, fresh init, bare, rerun, ...), so that the load of a
 * shared machine weighs on both sides alike. Wall time is from spawning `ip netns exec` to the exit of the
 * process (both sides pay `ip netns exec`); peak RSS is GNU time's maximum resident set size.
 * - `init` on a fresh pod start (one new address: one AssignPrivateIpAddresses);
 * - `init` rerun on that correct pod (no EC2 call);
 * - `init`'s peak RSS;
 * - the sidecar's RSS IPMGR_BENCH_IDLE_SECONDS (default 60) after it turned ready, node and its `ip monitor`
 *   child together, against bare node's peak RSS.
 * - the floor (bench/startup-floor.cjs): node alone doing the least a fresh pod start must do on the wire (an
 *   IMDSv2 token, one metadata read, one SigV4-signed EC2 call), also against bare node: what no code of
 *   ours can win back, printed beside the targets.
 * Each row prints the ratio of the medians, the min–max of the per-pair ratios, and the medians themselves.
 * The commands run as the image runs them: `node dist/multus-ipmgr.cjs` (IPMGR_BENCH_ENTRY to change).
 * To look inside a run: IPMGR_BENCH_SHOW=1 shows our runs' stdout (the JSON log), IPMGR_BENCH_LOG_LEVEL sets
 * their log level (default warn), IPMGR_BENCH_NODE_ARGS adds node flags (e.g. --cpu-prof; any V8 flag makes
 * V8 refuse the code cache).
 */
import { spawn } from "node:child_process";
import { existsSync, readlinkSync } from "node:fs";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import type { Lab } from "../test/helpers/netns.js";
import { ALLOWED_CIDRS } from "../test/helpers/worlds.js";
import { startOnePodLab } from "./one-pod-lab.js";
import { treeUsage, usage } from "./proc.js";
import { type BenchResult, percentile } from "./result.js";

const RUNS = Number(process.env.IPMGR_BENCH_STARTUP_RUNS ?? 15);
/** Each fresh run needs an address never used before: 198.51.100.34 up to .62 (.33 warms up; .63 is reserved by AWS). */
const MAX_RUNS = 29;
const IDLE_SECONDS = Number(process.env.IPMGR_BENCH_IDLE_SECONDS ?? 60);
const GNU_TIME = "/usr/bin/time";
/** Extra node flags for our runs only, to profile them: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
const EXTRA_NODE_ARGS = (process.env.IPMGR_BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");

interface Timed {
  readonly ms: number;
  readonly maxRssKb: number;
  /** User + system CPU time, from GNU time: less sensitive than wall time to a loaded machine. */
  readonly cpuMs: number;
}

async function timed(ns: string, env: Record<string, string>, nodeArgs: readonly string[]): Promise<Timed> {
  // bash's `time` for CPU time in milliseconds (GNU time prints hundredths), GNU time for peak RSS.
  const argv = [
    "netns",
    "exec",
    ns,
    "bash",
    "-c",
    'TIMEFORMAT="cpu=%3U+%3S"; time "$@"',
    "bash",
    GNU_TIME,
    "-f",
    "maxrss=%M",
    process.execPath,
    ...nodeArgs,
  ];
  const started = performance.now();
  const child = spawn("ip", argv, {
    env,
    stdio: ["ignore", process.env.IPMGR_BENCH_SHOW === "1" ? "inherit" : "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`bench: node ${nodeArgs.join(" ")} exited ${code}: ${stderr}`);
  const rss = /maxrss=(\d+)/.exec(stderr)?.[1];
  if (rss === undefined) throw new Error(`bench: no maxrss from GNU time: ${stderr}`);
  const cpu = /cpu=([\d.]+)\+([\d.]+)/.exec(stderr);
  return { ms, maxRssKb: Number(rss), cpuMs: (Number(cpu?.[1]) + Number(cpu?.[2])) * 1000 };
}

/** A ratio row: median of ours over median of bare node, with the spread of the per-pair ratios. */
function ratioRow(
  name: string,
  ours: readonly number[],
  bare: readonly number[],
  unit: string,
  limit: number,
): BenchResult {
  const ratio = percentile(ours, 50) / percentile(bare, 50);
  const pairs = ours.map((v, i) => v / (bare[i] ?? Number.NaN));
  const spread = `${Math.min(...pairs).toFixed(2)}–${Math.max(...pairs).toFixed(2)}`;
  return {
    name: `${name} (${percentile(ours, 50).toFixed(1)} / ${percentile(bare, 50).toFixed(1)} ${unit}; pairs ${spread})`,
    value: ratio,
    unit: "x bare node",
    target: `<= ${limit}`,
    ok: ratio <= limit,
  };
}

/**
 * The entry to run: by default the image's (dist/multus-ipmgr.cjs, with the code cache); set
 * IPMGR_BENCH_ENTRY=dist/multus-ipmgr.mjs to measure the plain ESM start beside it.
 */
const ENTRY = process.env.IPMGR_BENCH_ENTRY ?? "dist/multus-ipmgr.cjs";

function cliArgs(...args: string[]): string[] {
  return [...EXTRA_NODE_ARGS, ENTRY, ...args];
}

/**
 * Another entry to measure in the same run, for a before/after figure: e.g. the ESM entry, or a checkout of
 * main built elsewhere (IPMGR_BENCH_COMPARE_ENTRY=/tmp/main/dist/multus-ipmgr.mjs). Fresh starts alternate
 * between the two (each paired with its own bare run); reruns run both.
 */
const COMPARE = process.env.IPMGR_BENCH_COMPARE_ENTRY;

/** The node process under `ip netns exec` (which execs it, so the pid is the same once it runs node). */
async function nodePid(pid: number): Promise<number> {
  for (let i = 0; i < 200; i++) {
    // The executable, not comm: Node 24 names its main thread "MainThread".
    if (readlinkSync(`/proc/${pid}/exe`) === process.execPath) return pid;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`bench: pid ${pid} never became node`);
}

async function sidecarIdleRss(lab: Lab): Promise<{ treeKb: number; nodeKb: number }> {
  const env = lab.env("pod", {
    IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS,
    IPMGR_LOG_LEVEL: process.env.IPMGR_BENCH_LOG_LEVEL ?? "warn",
  });
  const ns = lab.pods.get("pod")?.ns;
  if (ns === undefined) throw new Error("bench: no pod");
  const child = lab.track(
    spawn("ip", ["netns", "exec", ns, process.execPath, ...cliArgs("sidecar")], {
      env,
      stdio: ["ignore", "ignore", "inherit"],
    }),
  );
  try {
    const deadline = Date.now() + 30_000;
    while ((await lab.podGet("pod", "http://127.0.0.1:9180/readyz")).status !== 200) {
      if (Date.now() > deadline) throw new Error("bench: the sidecar never turned ready");
      await new Promise((r) => setTimeout(r, 20));
    }
    const pid = await nodePid(child.pid ?? -1);
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    return { treeKb: treeUsage(pid).rssKb, nodeKb: usage(pid).rssKb };
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

export async function benchStartup(): Promise<BenchResult[]> {
  if (!Number.isInteger(RUNS) || RUNS < 1 || RUNS > MAX_RUNS) {
    throw new Error(
      `bench: IPMGR_BENCH_STARTUP_RUNS=${process.env.IPMGR_BENCH_STARTUP_RUNS}: expected a whole number from 1 to ${MAX_RUNS} ` +
        "(each fresh start takes a new address from 198.51.100.34-62); unset it for the default, 15",
    );
  }
  if (!existsSync(GNU_TIME)) throw new Error(`bench: ${GNU_TIME} (GNU time) is needed for peak RSS`);
  const lab = await startOnePodLab();
  const loadBefore = loadavg()[0] ?? Number.NaN;
  try {
    const ns = lab.pods.get("pod")?.ns;
    if (ns === undefined) throw new Error("bench: no pod");
    const env = lab.env("pod", {
      IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS,
      IPMGR_LOG_LEVEL: process.env.IPMGR_BENCH_LOG_LEVEL ?? "warn",
    });
    const bare = ["-e", "0"];
    const floorArgs = [resolve("bench/startup-floor.cjs")];
    // One warm-up of each, so that the first pair does not pay for a cold page cache.
    await timed(ns, env, bare);
    await lab.addAddress("pod", "net1", "198.51.100.33/26");
    await timed(ns, env, cliArgs("init"));
    let previous = "198.51.100.33/26";
    const bareFresh: Timed[] = [];
    const fresh: Timed[] = [];
    const bareRerun: Timed[] = [];
    const rerun: Timed[] = [];
    const freshCalls: number[] = [];
    const rerunCalls: number[] = [];
    const cmpBareFresh: Timed[] = [];
    const cmpFresh: Timed[] = [];
    const cmpBareRerun: Timed[] = [];
    const cmpRerun: Timed[] = [];
    const floor: Timed[] = [];
    const bareFloor: Timed[] = [];
    await timed(ns, env, floorArgs);
    for (let i = 0; i < RUNS; i++) {
      bareFloor.push(await timed(ns, env, bare));
      floor.push(await timed(ns, env, floorArgs));
      const cidr = `198.51.100.${34 + i}/26`;
      await lab.removeAddress("pod", "net1", previous);
      await lab.addAddress("pod", "net1", cidr);
      previous = cidr;
      if (COMPARE !== undefined && i % 2 === 1) {
        cmpBareFresh.push(await timed(ns, env, bare));
        cmpFresh.push(await timed(ns, env, [COMPARE, "init"]));
      } else {
        bareFresh.push(await timed(ns, env, bare));
        await lab.clearCalls();
        fresh.push(await timed(ns, env, cliArgs("init")));
        freshCalls.push((await lab.calls()).length);
      }
      bareRerun.push(await timed(ns, env, bare));
      await lab.clearCalls();
      rerun.push(await timed(ns, env, cliArgs("init")));
      rerunCalls.push((await lab.calls()).length);
      if (COMPARE !== undefined) {
        cmpBareRerun.push(await timed(ns, env, bare));
        cmpRerun.push(await timed(ns, env, [COMPARE, "init"]));
      }
    }
    const idle = await sidecarIdleRss(lab);
    const bareRss = [...bareFresh, ...bareRerun].map((t) => t.maxRssKb / 1024);
    const barePeak = Math.max(...bareRss);
    const loadAfter = loadavg()[0] ?? Number.NaN;
    const ms = (ts: readonly Timed[]) => ts.map((t) => t.ms);
    const cpu = (ts: readonly Timed[]) =>
      percentile(
        ts.map((t) => t.cpuMs),
        50,
      ).toFixed(0);
    const mb = (ts: readonly Timed[]) => ts.map((t) => t.maxRssKb / 1024);
    const idleMb = idle.treeKb / 1024;
    return [
      ratioRow(
        `init wall, fresh pod start, ${fresh.length} pairs [CPU ${cpu(fresh)} / ${cpu(bareFresh)} ms]`,
        ms(fresh),
        ms(bareFresh),
        "ms",
        1.3,
      ),
      ratioRow(
        `init wall, rerun on a correct pod, ${RUNS} pairs [CPU ${cpu(rerun)} / ${cpu(bareRerun)} ms]`,
        ms(rerun),
        ms(bareRerun),
        "ms",
        1.2,
      ),
      ratioRow("init peak RSS, fresh pod start", mb(fresh), mb(bareFresh), "MB", 1.25),
      {
        ...ratioRow(
          `floor: node alone, IMDS token + 1 read + 1 signed EC2 call, wall, ${RUNS} pairs [CPU ${cpu(floor)} / ${cpu(bareFloor)} ms]`,
          ms(floor),
          ms(bareFloor),
          "ms",
          Number.POSITIVE_INFINITY,
        ),
        target: "informational",
        ok: true,
      },
      {
        ...ratioRow("floor: its peak RSS", mb(floor), mb(bareFloor), "MB", Number.POSITIVE_INFINITY),
        target: "informational",
        ok: true,
      },
      // What is ours: init against the floor, medians of the same run (docs/decisions.md: start-up).
      {
        name: `init wall, fresh pod start / the floor's (${percentile(ms(fresh), 50).toFixed(1)} / ${percentile(ms(floor), 50).toFixed(1)} ms)`,
        value: percentile(ms(fresh), 50) / percentile(ms(floor), 50),
        unit: "x the floor",
        target: "informational",
        ok: true,
      },
      {
        name: `init peak RSS / the floor's (${percentile(mb(fresh), 50).toFixed(1)} / ${percentile(mb(floor), 50).toFixed(1)} MB)`,
        value: percentile(mb(fresh), 50) / percentile(mb(floor), 50),
        unit: "x the floor",
        target: "informational",
        ok: true,
      },
      {
        name: `sidecar RSS ${IDLE_SECONDS} s after ready, with its ip monitor (${idleMb.toFixed(1)} MB, node alone ${(idle.nodeKb / 1024).toFixed(1)} MB) / bare node's peak (${barePeak.toFixed(1)} MB)`,
        value: idleMb / barePeak,
        unit: "x bare node",
        target: "<= 1.3",
        ok: idleMb / barePeak <= 1.3,
      },
      {
        name: "EC2 calls per fresh pod start, max",
        value: Math.max(...freshCalls),
        unit: "calls",
        target: "exactly 1",
        ok: Math.min(...freshCalls) === 1 && Math.max(...freshCalls) === 1,
      },
      {
        name: "EC2 calls per rerun, max",
        value: Math.max(...rerunCalls),
        unit: "calls",
        target: "0",
        ok: Math.max(...rerunCalls) === 0,
      },
      ...(COMPARE === undefined
        ? []
        : [
            ratioRow(
              `[${COMPARE}] init wall, fresh pod start, ${cmpFresh.length} pairs [CPU ${cpu(cmpFresh)} / ${cpu(cmpBareFresh)} ms]`,
              ms(cmpFresh),
              ms(cmpBareFresh),
              "ms",
              1.3,
            ),
            ratioRow(
              `[${COMPARE}] init wall, rerun on a correct pod, ${RUNS} pairs [CPU ${cpu(cmpRerun)} / ${cpu(cmpBareRerun)} ms]`,
              ms(cmpRerun),
              ms(cmpBareRerun),
              "ms",
              1.2,
            ),
            ratioRow(
              `[${COMPARE}] init peak RSS, fresh pod start`,
              mb(cmpFresh),
              mb(cmpBareFresh),
              "MB",
              1.25,
            ),
          ]),
      {
        name: `load average (1 min) before / after: ${loadBefore.toFixed(2)} / ${loadAfter.toFixed(2)}`,
        value: loadAfter,
        unit: "(1 min)",
        target: "informational",
        ok: true,
      },
    ];
  } finally {
    await lab.close();
  }
}
