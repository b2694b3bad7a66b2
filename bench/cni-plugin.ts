/**
 * Plugin mode: what the chained plugin multus-ipmgr adds to a pod's ADD. Each pod's chain runs as in
 * test/cni-e2e.test.ts (Debian's reference plugins standing in for ipvlan: macvlan, static, tuning with the
 * ENI's MAC, in network namespaces; test/helpers/cni-lab.ts), then the built host binary
 * dist/cni/multus-ipmgr runs as the runtime runs the last plugin: its netconf with tuning's result as
 * prevResult on stdin. The chain is sequential, so the plugin's step, from its spawn to its exit, is exactly
 * the time it adds over the same chain without it; that step is what is timed. The bridge runs in-process
 * against the simulator, whose EC2 answers after EC2_LATENCY_MS.
 *
 * - per-address mode, with the bridge's default wave window (200 ms) and with none: 1 pod at a time (p50,
 *   p99), then 50 pods whose plugin steps start together (each one's time, the last answer's, the assign
 *   calls on the ENI);
 * - prefix mode (a delegated /28 of the ENI covers the addresses): the same, with 16 pods together (the
 *   node's whole slice), against a bare `node -e 0` start measured on the same machine in the same run.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger } from "../src/eni/process/logger.js";
import { CniClaims } from "../src/ipam-whereabouts-bridge/cni/cni-claims.js";
import { referencePluginsUnavailableReason } from "../test/helpers/cni-chain.js";
import {
  CniLab,
  type LabPod,
  referencePlugins,
  serve,
  startCniBridge,
  stopCniBridges,
} from "../test/helpers/cni-lab.js";
import { CNI_PLUGIN, cniPluginUnavailableReason, runPlugin } from "../test/helpers/cni-plugin.js";
import { eventually, kubeWorld, MAC_A, NODE_A } from "../test/helpers/kube-worlds.js";
import { labUnavailableReason } from "../test/helpers/netns.js";
import { SLICE_A, startPrefixBridge, stopPrefixBridges } from "../test/helpers/prefix-bridge.js";
import { type BenchResult, percentile } from "./result.js";

/** The simulator's EC2 answers after this long: one EC2 round trip. */
const EC2_LATENCY_MS = 50;
const SINGLES = 10;
const TOGETHER = 50;
const PREFIX_TOGETHER = 16;
const BARE_NODE_RUNS = 12;

const A = (n: number) => `198.51.100.${n}`;

/** The plugin's step, as a runtime runs the last plugin of a chain (DEL: the first); its wall time in ms. */
async function pluginStep(
  command: "ADD" | "DEL",
  pod: LabPod,
  name: string,
  socket: string,
  prevResult: Record<string, unknown>,
): Promise<number> {
  const stdin = JSON.stringify({
    type: "multus-ipmgr",
    socket,
    deadlineSeconds: 10,
    name: "multus-ipvlan",
    cniVersion: "1.0.0",
    prevResult,
  });
  const env = {
    PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
    CNI_COMMAND: command,
    CNI_CONTAINERID: `c-${pod.netns}`,
    CNI_NETNS: `/var/run/netns/${pod.netns}`,
    CNI_IFNAME: "net1",
    CNI_ARGS: `IgnoreUnknown=true;K8S_POD_NAMESPACE=cnf;K8S_POD_NAME=${name};K8S_POD_UID=uid-${name}`,
    CNI_PATH: join(CNI_PLUGIN, ".."),
  };
  const started = performance.now();
  const run = await runPlugin(CNI_PLUGIN, env, stdin);
  const ms = performance.now() - started;
  if (run.code !== 0)
    throw new Error(`multus-ipmgr ${command} for ${name} failed (${run.code}): ${run.stdout}`);
  return ms;
}

/** A pod's reference chain (no plugin): its result, and its ADD's wall time. */
async function referenceAdd(lab: CniLab, name: string, address: string) {
  const pod = await lab.newPod();
  const chain = lab.chain(pod, name, referencePlugins(`${address}/25`, MAC_A, pod.master));
  const started = performance.now();
  const added = await chain.add();
  const ms = performance.now() - started;
  if (!added.ok || added.result === undefined)
    throw new Error(`the reference chain failed for ${name}: ${JSON.stringify(added.error)}`);
  return { pod, chain, result: added.result, ms };
}

/** Wall time of `node -e 0`, runs times. */
async function bareNode(runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await new Promise<void>((done, fail) => {
      const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
      child.once("error", fail);
      child.once("exit", () => done());
    });
    out.push(performance.now() - started);
  }
  return out;
}

interface Round {
  readonly singles: number[];
  readonly together: number[];
  readonly lastMs: number;
  readonly assignCalls: number;
  readonly referenceMs: number[];
}

/** Long enough for a DEL's release wave to end: the default wave window, a round trip and some. */
const QUIET_MS = 500;

/** `singles` pods one at a time, then `together` pods whose plugin steps start at once. */
async function round(
  lab: CniLab,
  socket: string,
  addresses: { singles: readonly string[]; together: readonly string[] },
  assignCalls: () => number,
): Promise<Round> {
  const singles: number[] = [];
  const referenceMs: number[] = [];
  for (const [i, address] of addresses.singles.entries()) {
    const name = `single-${i}`;
    const ref = await referenceAdd(lab, name, address);
    referenceMs.push(ref.ms);
    singles.push(await pluginStep("ADD", ref.pod, name, socket, ref.result));
    // DEL as a runtime does, the plugin first: the claim goes (prefix mode reuses the slice's addresses).
    await pluginStep("DEL", ref.pod, name, socket, ref.result);
    const deleted = await ref.chain.del();
    if (!deleted.ok)
      throw new Error(`the reference chain's DEL failed for ${name}: ${JSON.stringify(deleted.error)}`);
    // One pod starting on a quiet node: the wave that carries this DEL's release (after the 200 ms window,
    // one EC2 round trip) is over before the next ADD, which would otherwise share its wave and wait for it.
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  }
  const refs = [];
  for (const [i, address] of addresses.together.entries()) {
    const name = `together-${i}`;
    const ref = await referenceAdd(lab, name, address);
    referenceMs.push(ref.ms);
    refs.push({ name, ...ref });
  }
  const before = assignCalls();
  const started = performance.now();
  const together = await Promise.all(refs.map((r) => pluginStep("ADD", r.pod, r.name, socket, r.result)));
  const lastMs = performance.now() - started;
  return { singles, together, lastMs, assignCalls: assignCalls() - before, referenceMs };
}

function rows(label: string, r: Round, target: { single: number; singleText: string }): BenchResult[] {
  const p50 = percentile(r.singles, 50);
  const p99 = percentile(r.singles, 99);
  const n = r.together.length;
  return [
    {
      name: `${label}: ADD added, 1 pod, p50 (chain without the plugin: p50 ${percentile(r.referenceMs, 50).toFixed(0)} ms)`,
      value: p50,
      unit: "ms",
      target: target.singleText,
      ok: p50 <= target.single,
    },
    {
      name: `${label}: ADD added, 1 pod, p99`,
      value: p99,
      unit: "ms",
      target: target.singleText,
      ok: p99 <= target.single,
    },
    {
      name: `${label}: ADD added, ${n} pods together, p50`,
      value: percentile(r.together, 50),
      unit: "ms",
      target: "(info)",
      ok: true,
    },
    {
      name: `${label}: ADD added, ${n} pods together, p99`,
      value: percentile(r.together, 99),
      unit: "ms",
      target: "(info)",
      ok: true,
    },
    {
      name: `${label}: ${n} pods together, the last answer`,
      value: r.lastMs,
      unit: "ms",
      target: "≤ 1000 ms",
      ok: r.lastMs <= 1000,
    },
  ];
}

async function perAddress(lab: CniLab, waveWindowMs: number): Promise<BenchResult[]> {
  try {
    const b = await startCniBridge(kubeWorld({ pods: [] }, { ipv4AddressesPerEni: 80 }), {
      addressesPerEni: 80,
      waveWindowMs,
    });
    b.sim.setFaults({ ec2LatencyMs: EC2_LATENCY_MS });
    await eventually(() => b.bridge.report !== undefined, "a first wave", 30_000);
    // From .194: kubeWorld's IPPool gives .193 to upf-0, whose address the bridge never takes for another.
    const all = Array.from({ length: SINGLES + TOGETHER }, (_, i) => A(194 + i));
    const r = await round(
      lab,
      b.socket,
      { singles: all.slice(0, SINGLES), together: all.slice(SINGLES) },
      () => b.okCalls("AssignPrivateIpAddresses"),
    );
    const label = `per-address mode, wave window ${waveWindowMs} ms`;
    const limit = EC2_LATENCY_MS + 50;
    return [
      ...rows(label, r, {
        single: limit,
        singleText: `≤ ${limit} ms (EC2 round trip ${EC2_LATENCY_MS} ms + 50 ms)`,
      }),
      {
        name: `${label}: ${TOGETHER} pods together, assign calls on the ENI (IPv4; IPv6 none)`,
        value: r.assignCalls,
        unit: "calls",
        target: "≤ 2",
        ok: r.assignCalls <= 2,
      },
    ];
  } finally {
    await stopCniBridges();
    await lab.removePods();
  }
}

async function prefixMode(lab: CniLab): Promise<BenchResult[]> {
  try {
    const claims = new CniClaims({ clock: systemClock, logger: createLogger("silent"), nodeName: NODE_A });
    const h = await startPrefixBridge("defer", { cni: claims });
    await eventually(
      async () => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the slice held as a prefix",
      30_000,
    );
    h.sim.setFaults({ ec2LatencyMs: EC2_LATENCY_MS });
    const { path } = await serve(claims, h.sim, h.metrics);
    const slice = Array.from({ length: PREFIX_TOGETHER }, (_, i) => A(160 + i));
    const calls = () => h.sim.calls().length;
    const before = calls();
    const r = await round(lab, path, { singles: slice.slice(0, SINGLES), together: slice }, calls);
    const bare = await bareNode(BARE_NODE_RUNS);
    const bareP50 = percentile(bare, 50);
    const limit = 1.3 * bareP50;
    const label = "prefix mode";
    const total = calls() - before;
    return [
      { name: "bare `node -e 0`, p50", value: bareP50, unit: "ms", target: "(reference)", ok: true },
      ...rows(label, r, { single: limit, singleText: `≤ ${limit.toFixed(1)} ms (1.3 × bare node -e 0)` }),
      {
        name: `${label}: EC2 calls for all ${SINGLES + PREFIX_TOGETHER} ADDs`,
        value: total,
        unit: "calls",
        target: "0",
        ok: total === 0,
      },
    ];
  } finally {
    await stopCniBridges();
    await stopPrefixBridges();
    await lab.removePods();
  }
}

export async function benchCniPlugin(): Promise<BenchResult[]> {
  const why = labUnavailableReason() ?? referencePluginsUnavailableReason() ?? cniPluginUnavailableReason();
  if (why !== undefined)
    return [
      {
        name: `skipped: ${why}`,
        value: Number.NaN,
        unit: "",
        target: "root, iproute2, the reference plugins, the built plugin",
        ok: true,
      },
    ];
  const lab = await CniLab.open();
  try {
    return [...(await perAddress(lab, 200)), ...(await perAddress(lab, 0)), ...(await prefixMode(lab))];
  } finally {
    await lab.close();
  }
}
