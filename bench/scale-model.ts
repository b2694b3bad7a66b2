/**
 * `npm run bench -- scale-model`: a discrete-event model, in one process and with no sockets, of 5,000
 * nodes × 110 pods on one account's documented EC2 token buckets, per-address mode against prefix mode, and
 * 5,000 new nodes making their Multus ENIs in attach mode (bench/scale-model/attach-join.ts).
 * The waves' calls come from the bridge's own planners (bench/scale-model/node-wave.ts, the seam); the
 * model only times them against the buckets on a simulated clock, with the bridge's retry and backoff.
 * Buckets: https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html (token-bucket.ts).
 * Assumptions: docs/scale-model.md. IPMGR_BENCH_SCALE_NODES sets the number of nodes (default 5,000; a
 * smaller fleet runs faster and shows the same shapes).
 */
import { loadBridgeConfig } from "../src/ipam-whereabouts-bridge/settings.js";
import type { BenchResult } from "./result.js";
import { ModelAccount } from "./scale-model/account.js";
import { ATTACH_BUCKETS, attachJoinRuns } from "./scale-model/attach-join.js";
import { EventQueue } from "./scale-model/event-queue.js";
import { ModelBridge, type ModelBridgeSettings } from "./scale-model/model-bridge.js";
import { eniOfSlot, ModelNode, SUBNET, sliceOctetOf } from "./scale-model/model-node.js";
import {
  type NodeWavePlan,
  type NodeWavePlanner,
  perAddressWave,
  prefixModeWave,
} from "./scale-model/node-wave.js";
import { DOCUMENTED_BUCKETS, EC2_THROTTLING_PAGE } from "./scale-model/token-bucket.js";

const NODES = nodeCount(process.env.IPMGR_BENCH_SCALE_NODES);

function nodeCount(text: string | undefined): number {
  if (text === undefined) return 5_000;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(
      `IPMGR_BENCH_SCALE_NODES=${JSON.stringify(text)} is not a whole number of nodes: set it to 1 or more, or unset it for 5000`,
    );
  }
  return n;
}
const PODS_PER_NODE = 110;
/** m5.4xlarge: 30 IPv4 addresses per ENI, the primary included. */
const ADDRESSES_PER_ENI = 30;
/** After a restart, a node's pods start one after the other over this long (kubelet, Multus, whereabouts). */
const POD_START_SPREAD_MS = 60_000;
/** Nodes boot within this long of each other. */
const BOOT_SPREAD_MS = 1_000;
/** From a request to its answer. */
const CALL_LATENCY_MS = 100;
/** Simulated time after which a restart counts as not converged. */
const RESTART_CAP_MS = 6 * 3_600_000;
/** Churn: pods replaced a minute across the cluster (2 a second: a pod lives 76 h on average). */
const CHURN_PER_MINUTE = 120;
const CHURN_WARMUP_MS = 6 * 60_000;
const CHURN_MEASURE_MS = 5 * 60_000;
const RATIO_TARGET = 50;

/** The bridge's defaults, as the binary loads them, with the Multus ENIs given by device index. */
function bridgeSettings(): ModelBridgeSettings {
  const config = loadBridgeConfig([], {
    NODE_NAME: "node-model",
    IPMGR_ALLOWED_CIDRS: SUBNET,
    IPMGR_BRIDGE_DEVICE_INDEXES: "1,2,3,4",
  });
  return {
    waveWindowMs: config.waveWindowMs,
    resyncIntervalMs: config.resyncIntervalMs,
    releaseGraceMs: config.releaseGraceMs,
    retry: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
    ec2: {
      maxAttempts: config.ec2MaxAttempts,
      baseDelayMs: config.ec2RetryBaseMs,
      maxDelayMs: config.ec2RetryMaxMs,
    },
    callLatencyMs: CALL_LATENCY_MS,
  };
}

/** A seeded generator (mulberry32): the same run for the same seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The planner asked once per distinct input: it is pure, and nodes in the same state ask the same. */
function memoized(planner: NodeWavePlanner, graceMs: number) {
  const memo = new Map<string, NodeWavePlan>();
  let asked = 0;
  const planWave = (node: ModelNode, nowMs: number) => {
    const { input, nextReleaseAt, key } = node.waveInput(nowMs, graceMs);
    let plan = memo.get(key);
    if (plan === undefined) {
      asked += 1;
      plan = planner.plan(input());
      if (memo.size >= 200_000) memo.clear();
      memo.set(key, plan);
    }
    return { plan, nextReleaseAt };
  };
  return { planWave, asked: () => asked };
}

interface Fleet {
  readonly queue: EventQueue;
  readonly account: ModelAccount;
  readonly nodes: ModelNode[];
  readonly bridges: ModelBridge[];
  converged(): number;
  lastConvergedAt(): number;
  planned(): number;
}

function fleet(planner: NodeWavePlanner, seed: number): Fleet {
  const settings = bridgeSettings();
  const queue = new EventQueue();
  const account = new ModelAccount();
  const random = seeded(seed);
  const { planWave, asked } = memoized(planner, settings.releaseGraceMs);
  const nodes: ModelNode[] = [];
  const bridges: ModelBridge[] = [];
  let converged = 0;
  let lastConvergedAt = 0;
  for (let n = 0; n < NODES; n++) {
    const node = new ModelNode(PODS_PER_NODE, ADDRESSES_PER_ENI);
    let counted = false;
    const onChange = () => {
      if (counted || !node.converged) return;
      counted = true;
      converged += 1;
      lastConvergedAt = queue.now;
    };
    nodes.push(node);
    bridges.push(new ModelBridge({ queue, account, node, planWave, random, onChange }, settings));
  }
  return {
    queue,
    account,
    nodes,
    bridges,
    converged: () => converged,
    lastConvergedAt: () => lastConvergedAt,
    planned: asked,
  };
}

interface RestartRun {
  readonly accepted: number;
  readonly throttled: number;
  readonly seconds: number;
  readonly converged: number;
  readonly waves: number;
  readonly failedWaves: number;
  readonly planned: number;
  readonly events: number;
}

type Mode = "addresses" | "prefixes";

/**
 * A cluster-wide restart. `new-nodes`: every node boots within BOOT_SPREAD_MS with ENIs that hold nothing
 * (the node group replaced, the cluster restored elsewhere). `reboot`: the same nodes, whose ENIs keep
 * what they held (EC2 keeps an attached ENI's addresses and prefixes across a reboot), every pod
 * deleted at once and started again. Either way the bridge starts with the node and the pods start over
 * POD_START_SPREAD_MS. In per-address mode (today: one cluster-wide whereabouts range) a restarted pod gets
 * an address its node does not hold; in prefix mode, one of its node's slice. Ends when every address is
 * routed, or at RESTART_CAP_MS.
 */
function restart(planner: NodeWavePlanner, kind: "new-nodes" | "reboot", mode: Mode): RestartRun {
  const f = fleet(planner, 20);
  const { queue } = f;
  for (let n = 0; n < NODES; n++) {
    const node = f.nodes[n] as ModelNode;
    const bridge = f.bridges[n] as ModelBridge;
    const bootAt = (n / NODES) * BOOT_SPREAD_MS;
    if (kind === "reboot") {
      for (let slot = 0; slot < PODS_PER_NODE; slot++) node.startPod(slot, sliceOctetOf(slot));
      node.holdAll(mode);
      for (let slot = 0; slot < PODS_PER_NODE; slot++) node.stopPod(slot, 0);
    }
    queue.at(bootAt, () => bridge.start());
    const startPod = (slot: number) => {
      queue.at(bootAt + ((slot + 1) * POD_START_SPREAD_MS) / PODS_PER_NODE, () => {
        const octet =
          kind === "new-nodes" || mode === "prefixes" ? sliceOctetOf(slot) : unheldOctet(node, slot, mode);
        node.startPod(slot, octet);
        bridge.changed();
        if (slot + 1 < PODS_PER_NODE) startPod(slot + 1);
      });
    };
    startPod(0);
  }
  queue.run(RESTART_CAP_MS, () => f.converged() === NODES);
  const { accepted, throttled } = f.account.total();
  return {
    accepted,
    throttled,
    seconds: f.converged() === NODES ? f.lastConvergedAt() / 1000 : Number.NaN,
    converged: f.converged(),
    waves: f.bridges.reduce((s, b) => s + b.waves, 0),
    failedWaves: f.bridges.reduce((s, b) => s + b.failedWaves, 0),
    planned: f.planned(),
    events: queue.ran,
  };
}

interface ChurnRun {
  readonly perMinute: number;
  readonly acceptedPerMinute: number;
  readonly unrouted: number;
  readonly planned: number;
}

/**
 * Steady state at CHURN_PER_MINUTE: every node converged before the model starts (no call), bridges
 * resyncing out of step; a pod on a random node is replaced at even intervals. Per-address mode: the
 * replacement gets an address its ENI does not hold (today's one cluster-wide whereabouts range: the
 * lowest free address is almost never one its node held), and the old address is released after the
 * grace. Prefix mode: the replacement gets another address of its node's slice. Counted over
 * CHURN_MEASURE_MS after CHURN_WARMUP_MS (longer than the release grace).
 */
function churn(planner: NodeWavePlanner, mode: "addresses" | "prefixes"): ChurnRun {
  const f = fleet(planner, 21);
  const { queue } = f;
  const random = seeded(22);
  const settings = bridgeSettings();
  for (let n = 0; n < NODES; n++) {
    const node = f.nodes[n] as ModelNode;
    for (let slot = 0; slot < PODS_PER_NODE; slot++) node.startPod(slot, sliceOctetOf(slot));
    node.holdAll(mode);
    const bridge = f.bridges[n] as ModelBridge;
    queue.at(random() * settings.resyncIntervalMs, () => bridge.start());
  }
  const interval = 60_000 / CHURN_PER_MINUTE;
  const replace = () => {
    const n = Math.floor(random() * NODES);
    const slot = Math.floor(random() * PODS_PER_NODE);
    const node = f.nodes[n] as ModelNode;
    const old = node.stopPod(slot, queue.now);
    node.startPod(slot, unheldOctet(node, slot, mode, old));
    (f.bridges[n] as ModelBridge).changed();
    queue.after(interval, replace);
  };
  queue.at(interval, replace);
  queue.run(CHURN_WARMUP_MS);
  const before = f.account.total();
  queue.run(CHURN_WARMUP_MS + CHURN_MEASURE_MS);
  const after = f.account.total();
  const minutes = CHURN_MEASURE_MS / 60_000;
  return {
    perMinute: (after.accepted + after.throttled - before.accepted - before.throttled) / minutes,
    acceptedPerMinute: (after.accepted - before.accepted) / minutes,
    unrouted: NODES - f.nodes.filter((node) => node.converged).length,
    planned: f.planned(),
  };
}

/**
 * The address whereabouts gives a new pod on `node`, as a last octet of the template; see `restart` and
 * `churn`. Prefix mode: a free address of the node's slice for the pod's network, another than `old`.
 * Per-address mode: one the node's pods do not use and its ENIs do not hold.
 */
function unheldOctet(node: ModelNode, slot: number, mode: Mode, old = -1): number {
  if (mode === "prefixes") {
    const base = 32 * eniOfSlot(slot);
    for (let octet = base + 1; octet < base + 31; octet++)
      if (octet !== old && !node.uses(octet)) return octet;
  } else {
    // Past the five addresses AWS keeps and the primaries (198.51.100.4 to .8).
    for (let octet = 9; octet < 255; octet++) if (!node.uses(octet)) return octet;
  }
  throw new Error(`scale model: no free address for pod slot ${slot}`);
}

function prefixPlanner(): NodeWavePlanner {
  return prefixModeWave;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const sent = (r: RestartRun) => r.accepted + r.throttled;

/** The rows of one restart: calls and time in each mode, and the ratio of calls. */
function restartRows(
  title: string,
  perAddress: RestartRun,
  prefix: RestartRun,
  ratioTarget: number,
  ratioNote: string,
): BenchResult[] {
  const ratio = sent(perAddress) / Math.max(1, sent(prefix));
  const calls = (r: RestartRun) => `${fmt(r.accepted)} accepted, ${fmt(r.throttled)} throttled`;
  const converged = (r: RestartRun) =>
    r.converged === NODES ? "all converged" : `only ${fmt(r.converged)} of ${fmt(NODES)} nodes converged`;
  return [
    {
      name: `${title}, per-address mode: EC2 calls until every address is routed (${calls(perAddress)})`,
      value: sent(perAddress),
      unit: "calls",
      target: `printed; converges within ${RESTART_CAP_MS / 3_600_000} h (${converged(perAddress)})`,
      ok: perAddress.converged === NODES,
    },
    {
      name: `${title}, per-address mode: time until every address is routed`,
      value: perAddress.seconds,
      unit: "s",
      target: "printed",
      ok: Number.isFinite(perAddress.seconds),
    },
    {
      name: `${title}, prefix mode: EC2 calls until every address is routed (${calls(prefix)})`,
      value: sent(prefix),
      unit: "calls",
      target: `<= per-address / ${ratioTarget} = ${fmt(sent(perAddress) / ratioTarget)} (${converged(prefix)})`,
      ok: prefix.converged === NODES && ratio >= ratioTarget,
    },
    {
      name: `${title}, prefix mode: time until every address is routed`,
      value: prefix.seconds,
      unit: "s",
      target: `<= per-address (${perAddress.seconds.toFixed(0)} s)`,
      ok: Number.isFinite(prefix.seconds) && !(prefix.seconds > perAddress.seconds),
    },
    {
      name: `${title}: per-address calls / prefix calls (prefix counted as at least 1)${ratioNote}`,
      value: ratio,
      unit: "x",
      target: `>= ${ratioTarget}`,
      ok: ratio >= ratioTarget,
    },
  ];
}

export async function benchScaleModel(): Promise<BenchResult[]> {
  const settings = bridgeSettings();
  const prefix = prefixPlanner();
  const b = DOCUMENTED_BUCKETS.AssignPrivateIpAddresses;
  const u = DOCUMENTED_BUCKETS.UnassignPrivateIpAddresses;
  process.stdout.write(
    `  model: ${fmt(NODES)} nodes x ${PODS_PER_NODE} pods (one Multus interface each, IPv4, 4 Multus ENIs of ${ADDRESSES_PER_ENI} addresses), one account\n` +
      `  buckets (${EC2_THROTTLING_PAGE}): ${b.name} ${b.capacity} / ${b.refillPerSecond} a s, ${u.name} ${u.capacity} / ${u.refillPerSecond} a s\n` +
      `  attach mode's buckets: ${ATTACH_BUCKETS}\n` +
      `  bridge defaults: wave window ${settings.waveWindowMs} ms, wave backoff ${settings.retry.baseMs}-${settings.retry.maxMs} ms, ` +
      `EC2 ${settings.ec2.maxAttempts} attempts ${settings.ec2.baseDelayMs}-${settings.ec2.maxDelayMs} ms full jitter, ` +
      `resync ${settings.resyncIntervalMs / 1000} s, release grace ${settings.releaseGraceMs / 1000} s; EC2 answers after ${CALL_LATENCY_MS} ms\n` +
      `  per-address waves: ${perAddressWave.description}\n  prefix waves: ${prefix.description}\n` +
      `  restarts: nodes boot within ${BOOT_SPREAD_MS / 1000} s, each node's pods start over ${POD_START_SPREAD_MS / 1000} s; ` +
      `churn: ${CHURN_PER_MINUTE} pods replaced a minute across the cluster, counted over ${CHURN_MEASURE_MS / 60_000} min after ${CHURN_WARMUP_MS / 60_000} min\n`,
  );
  const started = Date.now();
  const reboot = {
    perAddress: restart(perAddressWave, "reboot", "addresses"),
    prefix: restart(prefix, "reboot", "prefixes"),
  };
  const fresh = {
    perAddress: restart(perAddressWave, "new-nodes", "addresses"),
    prefix: restart(prefix, "new-nodes", "prefixes"),
  };
  const churnAddresses = churn(perAddressWave, "addresses");
  const churnPrefixes = churn(prefix, "prefixes");
  const runs = [reboot.perAddress, reboot.prefix, fresh.perAddress, fresh.prefix];
  process.stdout.write(
    `  model run: ${((Date.now() - started) / 1000).toFixed(1)} s, ${fmt(runs.reduce((s, r) => s + r.events, 0))} restart events, ` +
      `${fmt(runs.reduce((s, r) => s + r.waves, 0))} restart waves (${fmt(runs.reduce((s, r) => s + r.failedWaves, 0))} failed after EC2's retries), ` +
      `${fmt(runs.reduce((s, r) => s + r.planned, 0) + churnAddresses.planned + churnPrefixes.planned)} distinct wave plans\n`,
  );
  const attach = attachJoinRuns(
    { nodes: NODES, bootSpreadMs: BOOT_SPREAD_MS, capMs: RESTART_CAP_MS, random: seeded(23) },
    {
      ec2: settings.ec2,
      waveRetry: settings.retry,
      callLatencyMs: CALL_LATENCY_MS,
    },
  );
  const churnName = `scale-model: ${CHURN_PER_MINUTE} pods replaced a minute on ${fmt(NODES)} nodes`;
  const churnRatio = churnAddresses.perMinute / Math.max(1, churnPrefixes.perMinute);
  return [
    ...restartRows(
      `scale-model: cluster-wide restart, ${fmt(NODES)} nodes rebooted, every pod started again`,
      reboot.perAddress,
      reboot.prefix,
      RATIO_TARGET,
      "",
    ),
    ...restartRows(
      `scale-model: cluster-wide restart onto ${fmt(NODES)} new nodes`,
      fresh.perAddress,
      fresh.prefix,
      1,
      `; the floor here is one call per node, ENI and family in prefix mode, so not ${RATIO_TARGET}x`,
    ),
    {
      name: `${churnName}, per-address mode: EC2 calls a minute (${fmt(churnAddresses.acceptedPerMinute)} accepted; ${churnAddresses.unrouted} nodes with an address not routed yet at the end)`,
      value: churnAddresses.perMinute,
      unit: "calls",
      target: "printed",
      ok: true,
    },
    {
      name: `${churnName}, prefix mode: EC2 calls a minute (${churnPrefixes.unrouted} nodes with an address not routed at the end)`,
      value: churnPrefixes.perMinute,
      unit: "calls",
      target: `<= per-address / ${RATIO_TARGET} = ${(churnAddresses.perMinute / RATIO_TARGET).toFixed(1)}, all routed`,
      ok: churnPrefixes.perMinute * RATIO_TARGET <= churnAddresses.perMinute && churnPrefixes.unrouted === 0,
    },
    {
      name: `${churnName}: per-address calls / prefix calls (prefix counted as at least 1)`,
      value: churnRatio,
      unit: "x",
      target: `>= ${RATIO_TARGET}`,
      ok: churnRatio >= RATIO_TARGET,
    },
    ...attach,
  ];
}
