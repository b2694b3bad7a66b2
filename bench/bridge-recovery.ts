/**
 * The bridge's view of the cluster through Kubernetes API outages: `multus-ipmgr bridge`, the built binary
 * on the host, talks to the simulator's Kubernetes API through a TCP proxy that refuses connections or
 * freezes silently (test/helpers/kube-proxy.ts).
 * - API refused for 10 s, once and after a first blip: from its return to a trusted view (/readyz 200)
 *   and to the address of a pod created during the outage held by EC2 (the wave it owes);
 * - API frozen without a reset: how long until the bridge calls its view stale (the silence bound, set to
 *   10 s here instead of the default 90 s so the bench stays short), releases made meanwhile of an address a
 *   pod created during the freeze carries, and the time from the thaw to a trusted view; the same thaw leaving
 *   the frozen connections dead (no answer, no reset), as a NAT or load balancer that lost the flows does;
 * - API refused 1 s, back 1 s, for a minute: the lines the bridge logs (one per change of state, flaps counted).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { SimulatorHandle } from "../src/sim/index.js";
import { startSimulator } from "../src/sim/index.js";
import { closedPortUrl } from "../test/helpers/closed-port.js";
import { type KubeProxy, startKubeProxy, tempKubeconfig } from "../test/helpers/kube-proxy.js";
import { kubeWorld, MAC_A, multusPod, NODE_A } from "../test/helpers/kube-worlds.js";
import type { BenchResult } from "./result.js";

const ENTRY = process.env.IPMGR_BENCH_BRIDGE_ENTRY ?? "dist/multus-ipmgr.cjs";
const RECOVERY_TARGET_MS = 5_000;
const SILENCE_MS = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Rig {
  readonly sim: SimulatorHandle;
  readonly proxy: KubeProxy;
  readonly http: string;
  ready(): Promise<boolean>;
  readyzText(): Promise<string>;
  held(address: string): boolean;
  releasesOf(address: string): number;
  /** The messages the bridge logged at info and above (with `IPMGR_LOG_LEVEL: "info"` in `env`). */
  readonly logs: string[];
  close(): Promise<void>;
}

async function rig(env: Record<string, string> = {}, bookmarkIntervalSeconds = 60): Promise<Rig> {
  const sim = await startSimulator(
    kubeWorld({
      bookmarkIntervalSeconds,
      pods: [
        multusPod("upf-0", NODE_A, ["198.51.100.193"], MAC_A),
        multusPod("a", NODE_A, ["198.51.100.200"], MAC_A),
      ],
    }),
  );
  const proxy = await startKubeProxy(sim.kubernetesEndpoint ?? "");
  const kubeconfig = await tempKubeconfig(proxy.url);
  const port = new URL(await closedPortUrl()).port;
  const child: ChildProcess = spawn(process.execPath, [ENTRY, "bridge"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      AWS_EC2_METADATA_SERVICE_ENDPOINT: sim.imdsEndpoints["i-0a"] ?? "",
      AWS_ENDPOINT_URL_EC2: sim.ec2Endpoint,
      AWS_ACCESS_KEY_ID: "sim",
      AWS_SECRET_ACCESS_KEY: "sim",
      NODE_NAME: NODE_A,
      IPMGR_KUBECONFIG: kubeconfig.path,
      IPMGR_TERMINATION_LOG: "",
      IPMGR_LOG_LEVEL: "error",
      IPMGR_ALLOWED_CIDRS: "198.51.100.192/26",
      IPMGR_HTTP_HOST: "127.0.0.1",
      IPMGR_HTTP_PORT: port,
      IPMGR_BRIDGE_RESERVATIONS: "off",
      IPMGR_BRIDGE_RELEASE_GRACE_MS: "2000",
      IPMGR_BRIDGE_WAVE_WINDOW_MS: "50",
      ...env,
    },
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const logs: string[] = [];
  child.stdout?.setEncoding("utf8");
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    const msg: unknown = JSON.parse(line)?.msg;
    if (typeof msg === "string") logs.push(msg);
  });
  const http = `http://127.0.0.1:${port}`;
  const held = (address: string): boolean =>
    sim.state().enis.some((e) => e.eniId === "eni-0a1" && e.ipv4s.includes(address));
  const r: Rig = {
    sim,
    logs,
    proxy,
    http,
    ready: async () => (await fetch(`${http}/readyz`).catch(() => undefined))?.status === 200,
    readyzText: async () => (await fetch(`${http}/readyz`).catch(() => undefined))?.text() ?? "",
    held,
    releasesOf: (address) =>
      sim
        .calls()
        .filter(
          (c) =>
            c.action === "UnassignPrivateIpAddresses" &&
            c.outcome === "ok" &&
            Object.values(c.params).includes(address),
        ).length,
    async close() {
      child.kill("SIGTERM");
      await exited;
      await proxy.close();
      await sim.close();
      kubeconfig.remove();
    },
  };
  if (!(await until(() => r.ready(), 20_000))) throw new Error("the bridge never became ready");
  if (!(await until(async () => held("198.51.100.200"), 10_000)))
    throw new Error("pod a's address never held");
  return r;
}

/** ms until `check` holds, or NaN after `timeoutMs`. */
async function timeUntil(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = performance.now();
  return (await until(check, timeoutMs)) ? performance.now() - started : Number.NaN;
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

/** The API refused for 10 s (after `blip`: refused 3 s, back 2 s first); a pod is created meanwhile. */
async function refused(blip: boolean): Promise<BenchResult[]> {
  const r = await rig();
  try {
    if (blip) {
      await r.proxy.refuse();
      await sleep(3_000);
      await r.proxy.accept();
      await sleep(2_000);
    }
    await r.proxy.refuse();
    await sleep(10_000);
    r.sim.kubernetes?.addPod(multusPod("late", NODE_A, ["198.51.100.205"], MAC_A));
    await r.proxy.accept();
    const started = performance.now();
    const trusted = await timeUntil(() => r.ready(), 30_000);
    const heldAfter = await timeUntil(() => r.held("198.51.100.205"), 30_000);
    const owed = Number.isNaN(heldAfter) ? Number.NaN : performance.now() - started;
    const label = blip ? "after a first 3 s blip, API refused 10 s" : "API refused 10 s";
    return [
      {
        name: `bridge: ${label}: from its return to a trusted view (/readyz 200)`,
        value: trusted,
        unit: "ms",
        target: `<= ${RECOVERY_TARGET_MS} ms`,
        ok: trusted <= RECOVERY_TARGET_MS,
      },
      {
        name: `bridge: ${label}: from its return to the address of a pod created meanwhile held by EC2`,
        value: owed,
        unit: "ms",
        target: `<= ${RECOVERY_TARGET_MS} ms`,
        ok: owed <= RECOVERY_TARGET_MS,
      },
    ];
  } finally {
    await r.close();
  }
}

/** The API frozen without a reset, after pod a (198.51.100.200) was deleted; pod b takes its address. */
async function frozen(): Promise<BenchResult[]> {
  const r = await rig({ IPMGR_BRIDGE_WATCH_SILENCE_MS: String(SILENCE_MS) }, 2);
  try {
    r.sim.kubernetes?.deletePod("cnf", "a", 0);
    await sleep(500);
    r.proxy.freeze();
    const frozenAt = performance.now();
    r.sim.kubernetes?.addPod(multusPod("b", NODE_A, ["198.51.100.200"], MAC_A));
    const noticed = await timeUntil(async () => /silent for/.test(await r.readyzText()), SILENCE_MS * 3);
    await sleep(Math.max(0, SILENCE_MS + 5_000 - (performance.now() - frozenAt)));
    const releases = r.releasesOf("198.51.100.200");
    r.proxy.thaw();
    const trusted = await timeUntil(() => r.ready(), 30_000);
    await sleep(3_000);
    const releasesAfter = r.releasesOf("198.51.100.200");
    return [
      {
        name: `bridge: API frozen silently: from the freeze to /readyz naming the silence (bound IPMGR_BRIDGE_WATCH_SILENCE_MS=${SILENCE_MS}; default 90000)`,
        value: noticed,
        unit: "ms",
        target: `<= ${SILENCE_MS + 1_000} ms`,
        ok: noticed <= SILENCE_MS + 1_000,
      },
      {
        name: "bridge: releases of the address a pod created during a 15 s freeze carries (grace 2 s), during it and 3 s after",
        value: releases + releasesAfter,
        unit: "calls",
        target: "0",
        ok: releases + releasesAfter === 0,
      },
      {
        name: "bridge: API frozen silently: from the thaw to a trusted view (/readyz 200)",
        value: trusted,
        unit: "ms",
        target: `<= ${RECOVERY_TARGET_MS} ms`,
        ok: trusted <= RECOVERY_TARGET_MS,
      },
    ];
  } finally {
    await r.close();
  }
}

export async function benchBridgeRecovery(): Promise<BenchResult[]> {
  return [
    ...(await refused(false)),
    ...(await refused(true)),
    ...(await frozen()),
    ...(await frozenLeftDead()),
    ...(await flapping()),
  ];
}

/** The API refused 1 s, back 1 s, for a minute: the lines the bridge logs meanwhile (info and above). */
async function flapping(): Promise<BenchResult[]> {
  const r = await rig({ IPMGR_LOG_LEVEL: "info" });
  try {
    const from = r.logs.length;
    for (let i = 0; i < 30; i += 1) {
      await r.proxy.refuse();
      await sleep(1_000);
      await r.proxy.accept();
      await sleep(1_000);
    }
    await until(() => r.ready(), 30_000);
    const lines = r.logs.length - from;
    return [
      {
        name: "bridge: log lines (info and above) through a minute of the API refused 1 s, back 1 s (one line per change of state, flaps counted)",
        value: lines,
        unit: "lines",
        target: "<= 30",
        ok: lines <= 30,
      },
    ];
  } finally {
    await r.close();
  }
}

/** A 15 s freeze whose thaw leaves the frozen connections dead: from the thaw to a trusted view. */
async function frozenLeftDead(): Promise<BenchResult[]> {
  const r = await rig({ IPMGR_BRIDGE_WATCH_SILENCE_MS: String(SILENCE_MS) }, 2);
  try {
    r.proxy.freeze();
    await sleep(SILENCE_MS + 5_000);
    r.proxy.thaw({ reset: false });
    const trusted = await timeUntil(() => r.ready(), 30_000);
    return [
      {
        name: "bridge: API frozen silently, the thaw leaving the frozen connections dead: from the thaw to a trusted view (/readyz 200)",
        value: trusted,
        unit: "ms",
        target: `<= ${RECOVERY_TARGET_MS} ms`,
        ok: trusted <= RECOVERY_TARGET_MS,
      },
    ];
  } finally {
    await r.close();
  }
}
