/**
 * The fleet in prefix mode: nodes whose Multus ENI holds its whereabouts node slice as a delegated prefix,
 * each node's bridge in-process (as in bridge-fleet.ts: the adapters `multus-ipmgr bridge` builds, its
 * default settings, IPMGR_BRIDGE_PREFIX_MODE=defer) against one `multus-ipmgr sim` process, whose stand-in
 * for whereabouts' node-slice controller gives each node a slice. Two fleets (bench/fleet-prefix-worlds.ts):
 * IPv6, 50 nodes × 100 pods on /80 slices; IPv4, 7 nodes × 14 pods on /28 slices.
 *
 * What a user waits for after rolling out the bridge onto running pods: the pods (addresses from their
 * node's slice, in their network-status) are created first; the clock starts before the bridges do (50 at
 * once, as a DaemonSet's pods start: each builds its clients and lists its watches, then runs its waves)
 * and stops
 * - routed: when the answer to the last accepted prefix assign reaches its bridge;
 * - IMDS: when every node's IMDS lists its slice under `ipvN-prefix` of its Multus ENI's MAC (read as soon
 *   as that node's assign was answered, then every 50 ms), as the node itself would see it.
 */
import { ImdsClient } from "../src/eni/imds-client.js";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger, type Logger } from "../src/eni/process/logger.js";
import type { Bridge } from "../src/ipam-whereabouts-bridge/bridge.js";
import type { SimCall } from "../src/sim/call-log.js";
import type { SimState } from "../src/sim/sim-state.js";
import { tempKubeconfig } from "../test/helpers/kube-proxy.js";
import type { SimReady } from "../test/helpers/sim-process.js";
import { control, startFleetSim } from "./bridge-fleet.js";
import { type FleetCall, startFleetBridge } from "./fleet-bridge.js";
import { ipv4Fleet, ipv6Fleet, type PrefixFleet } from "./fleet-prefix-worlds.js";
import { usage } from "./proc.js";
import type { BenchResult } from "./result.js";

const PER_ENI = 30;
const CALLS_PER_NODE_TARGET = 2;
/** Pods of each node replaced after the IPv6 fleet is routed: 1,000 in all. */
const REPLACED_PER_NODE = 20;
const SECONDS_TARGET = 3;
const IMDS_POLL_MS = 50;
const nodesOf = (fleet: PrefixFleet) => Array.from({ length: fleet.nodes }, (_, n) => n);

/** What one fleet's run measured; times in seconds from the bridges' start. */
interface FleetRun {
  /** Pod addresses inside a prefix their node's Multus ENI holds, at the end. */
  readonly routedAddresses: number;
  readonly mutating: readonly SimCall[];
  readonly accepted: readonly SimCall[];
  readonly createSeconds: number;
  /** Until every bridge had built its clients and listed its watches. */
  readonly listedSeconds: number;
  readonly firstSeconds: number;
  /** Until the answer to the last accepted prefix assign reached its bridge. */
  readonly routedSeconds: number;
  /** Until every node's IMDS showed its slice (NaN when one never did). */
  readonly imdsSeconds: number;
  /**
   * CPU time over that span, of this process (the 50 bridges, one event loop) and of the simulator; and of
   * this process until every bridge had listed its watches.
   */
  readonly cpuSeconds: { readonly bridges: number; readonly sim: number; readonly bridgesListed: number };
  readonly churn: { readonly calls: number; readonly seconds: number } | undefined;
}

export async function benchBridgeFleetPrefix(): Promise<BenchResult[]> {
  const v6 = await runFleet(ipv6Fleet, true);
  const v4 = await runFleet(ipv4Fleet, false);
  return [...rowsOf(ipv6Fleet, v6), ...rowsOf(ipv4Fleet, v4)];
}

function rowsOf(fleet: PrefixFleet, run: FleetRun): BenchResult[] {
  const total = fleet.nodes * fleet.podsPerNode;
  const all = run.routedAddresses === total;
  const perNode = run.accepted.length / fleet.nodes;
  const head = `bridge, prefix mode, IPv${fleet.family}: ${fleet.nodes} nodes x ${fleet.podsPerNode} pods (node slices of ${fleet.range})`;
  const rows: BenchResult[] = [
    {
      name: `${head}: pod addresses inside a prefix their ENI holds`,
      value: run.routedAddresses,
      unit: "addresses",
      target: `all ${total}`,
      ok: all,
    },
    {
      name: `${head}: mutating EC2 calls per node (${run.accepted.length} accepted, ${run.mutating.length - run.accepted.length} refused or throttled: ${[...new Set(run.accepted.map((c) => c.action))].join(", ") || "none"})`,
      value: perNode,
      unit: "calls a node",
      target: `<= ${CALLS_PER_NODE_TARGET} per node`,
      ok: all && perNode <= CALLS_PER_NODE_TARGET,
    },
    {
      name: `${head}: time from the bridges' start, their pods existing (the simulator took ${run.createSeconds.toFixed(2)} s to create them), until every pod address is routed (the last accepted assign's answer; every bridge's watches listed at ${run.listedSeconds.toFixed(2)} s, the first assign answered at ${run.firstSeconds.toFixed(2)} s)`,
      value: all ? run.routedSeconds : Number.NaN,
      unit: "s",
      target: `<= ${SECONDS_TARGET} s`,
      ok: all && run.routedSeconds <= SECONDS_TARGET,
    },
    {
      name: `${head}: time from the bridges' start until every node's IMDS lists its slice under ipv${fleet.family}-prefix (read every ${IMDS_POLL_MS} ms once its assign was answered; CPU meanwhile: the bridges' process ${run.cpuSeconds.bridges.toFixed(2)} s, ${run.cpuSeconds.bridgesListed.toFixed(2)} s of it until every bridge had listed its watches; the simulator ${run.cpuSeconds.sim.toFixed(2)} s)`,
      value: run.imdsSeconds,
      unit: "s",
      target: `<= ${SECONDS_TARGET} s`,
      ok: run.imdsSeconds <= SECONDS_TARGET,
    },
  ];
  if (fleet === ipv6Fleet) {
    const churn = run.churn;
    rows.push({
      name: `${head}: mutating EC2 calls while ${REPLACED_PER_NODE * fleet.nodes} of its pods are replaced (${REPLACED_PER_NODE} a node deleted, then as many created with new addresses of the node's slice; every bridge's wave counted them held)${churn === undefined ? ": not run, the fleet was not routed" : ` in ${churn.seconds.toFixed(1)} s`}`,
      value: churn?.calls ?? Number.NaN,
      unit: "calls",
      target: "0",
      ok: churn?.calls === 0,
    });
  }
  return rows;
}

async function runFleet(fleet: PrefixFleet, withChurn: boolean): Promise<FleetRun> {
  const fleetSim = await startFleetSim(fleet.world());
  const sim = fleetSim.ready;
  const kubeconfig = await tempKubeconfig(sim.kubernetes ?? "");
  const logger = createLogger("silent");
  const stop: AbortController[] = [];
  const calls: FleetCall[] = [];
  const stops: (() => Promise<void>)[] = [];
  const loops: Promise<void>[] = [];
  const watching = new AbortController();
  let imds: Promise<number[]> | undefined;
  try {
    await slicesGiven(sim, fleet);
    // The pods first: the simulator is one process for the API server and every node's IMDS, and while it
    // creates 5,000 pods (about 1 s) the nodes' IMDS would wait behind it, which on EC2 they never do.
    const posted = Date.now();
    await control(
      sim,
      "POST",
      "/kubernetes/pods",
      Array.from({ length: fleet.nodes * fleet.podsPerNode }, (_, k) =>
        fleet.pod(Math.floor(k / fleet.podsPerNode), k % fleet.podsPerNode),
      ),
    );
    const createSeconds = (Date.now() - posted) / 1000;
    await control(sim, "DELETE", "/calls");
    const started = Date.now();
    const cpuAtStart = { bridges: process.cpuUsage(), simTicks: usage(fleetSim.pid).ticks };
    imds = imdsShowsSlices(fleet, sim, calls, started, logger, watching.signal);
    const bridges: Bridge[] = [];
    const starts = await Promise.allSettled(
      nodesOf(fleet).map(async (n) => {
        const { bridge, close } = await startFleetBridge({
          sim,
          kubeconfig: kubeconfig.path,
          logger,
          nodeName: fleet.nodeName(n),
          instance: fleet.instanceOf(n),
          env: {
            IPMGR_ALLOWED_CIDRS: fleet.range,
            IPMGR_BRIDGE_RESERVATIONS: "off",
            IPMGR_BRIDGE_PREFIX_MODE: "defer",
          },
          addressesPerEni: PER_ENI,
          calls,
          eth1Mac: fleet.macOf(n, 1),
        });
        stops.push(close);
        const controller = new AbortController();
        stop.push(controller);
        loops.push(bridge.run(controller.signal));
        bridges.push(bridge);
      }),
    );
    const listedSeconds = (Date.now() - started) / 1000;
    const listedCpu = process.cpuUsage(cpuAtStart.bridges);
    const failed = starts.find((s) => s.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    const shown = await imds;
    const bridgesCpu = process.cpuUsage(cpuAtStart.bridges);
    const cpuSeconds = {
      bridges: (bridgesCpu.user + bridgesCpu.system) / 1e6,
      sim: (usage(fleetSim.pid).ticks - cpuAtStart.simTicks) / 100,
      bridgesListed: (listedCpu.user + listedCpu.system) / 1e6,
    };
    const answered = calls.filter((c) => c.operation === fleet.assignAction && c.outcome === "ok");
    const since = (at: readonly number[], pick: (...values: number[]) => number) =>
      at.length === 0 ? Number.NaN : (pick(...at) - started) / 1000;
    const answeredAt = answered.map((c) => c.answeredAt);
    const state = await control<SimState>(sim, "GET", "/state");
    const routedAddresses =
      fleet.podsPerNode *
      nodesOf(fleet).filter((n) => {
        const eni = state.enis.find((e) => e.eniId === fleet.eniOf(n, 1));
        return eni !== undefined && fleet.prefixesOf(eni).includes(fleet.sliceOf(n));
      }).length;
    const mutating = (await control<SimCall[]>(sim, "GET", "/calls")).filter(
      (c) => c.action.startsWith("Assign") || c.action.startsWith("Unassign"),
    );
    const all = routedAddresses === fleet.nodes * fleet.podsPerNode;
    return {
      routedAddresses,
      mutating,
      accepted: mutating.filter((c) => c.outcome === "ok"),
      createSeconds,
      listedSeconds,
      firstSeconds: since(answeredAt, Math.min),
      routedSeconds: since(answeredAt, Math.max),
      imdsSeconds: Math.max(...shown),
      cpuSeconds,
      churn: withChurn && all ? await replacePods(sim, fleet, bridges) : undefined,
    };
  } finally {
    watching.abort();
    await Promise.allSettled(imds === undefined ? [] : [imds]);
    for (const controller of stop) controller.abort();
    await Promise.allSettled(loops);
    await Promise.allSettled(stops.map((s) => s()));
    await fleetSim.close();
    kubeconfig.remove();
  }
}

/** Waits until the simulator's node-slice controller has given node n the slice sliceOf(n), every n. */
async function slicesGiven(sim: SimReady, fleet: PrefixFleet): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const pools = (await control<SimState>(sim, "GET", "/state")).kubernetes?.nodeSlicePools ?? [];
    const allocations =
      (pools[0]?.status as { allocations?: { nodeName: string; sliceRange: string }[] } | undefined)
        ?.allocations ?? [];
    const wrong = nodesOf(fleet).find(
      (n) => allocations.find((a) => a.nodeName === fleet.nodeName(n))?.sliceRange !== fleet.sliceOf(n),
    );
    if (wrong === undefined) return;
    if (Date.now() > deadline) {
      const held = allocations.find((a) => a.nodeName === fleet.nodeName(wrong))?.sliceRange;
      throw new Error(`bench: ${fleet.nodeName(wrong)} has slice ${held}, not ${fleet.sliceOf(wrong)}`);
    }
    await systemClock.sleep(50);
  }
}

/**
 * Per node, the seconds from `started` until its IMDS lists its slice on its Multus ENI's MAC (NaN when it
 * never did within 60 s). A node's IMDS is read once its bridge has an answer to an accepted prefix assign
 * on that ENI: before that there is nothing to show, and reading 50 IMDS every 50 ms would take the one
 * simulator process from the bridges.
 */
async function imdsShowsSlices(
  fleet: PrefixFleet,
  sim: SimReady,
  calls: readonly FleetCall[],
  started: number,
  logger: Logger,
  signal: AbortSignal,
): Promise<number[]> {
  const shownAt = nodesOf(fleet).map(() => Number.NaN);
  const clients = nodesOf(fleet).map(
    (n) =>
      new ImdsClient({
        endpoint: sim.imds[fleet.instanceOf(n)] ?? "",
        requestTimeoutMs: 5_000,
        clock: systemClock,
        logger,
      }),
  );
  const deadline = started + 60_000;
  while (shownAt.some(Number.isNaN) && Date.now() < deadline && !signal.aborted) {
    const answered = new Set(
      calls.filter((c) => c.operation === fleet.assignAction && c.outcome === "ok").map((c) => c.eniId),
    );
    await Promise.all(
      nodesOf(fleet)
        .filter((n) => Number.isNaN(shownAt[n]) && answered.has(fleet.eniOf(n, 1)))
        .map(async (n) => {
          const imds = clients[n] as ImdsClient;
          const mac = fleet.macOf(n, 1);
          const prefixes = fleet.family === 6 ? await imds.ipv6Prefixes(mac) : await imds.ipv4Prefixes(mac);
          if (prefixes.includes(fleet.sliceOf(n))) shownAt[n] = (Date.now() - started) / 1000;
        }),
    );
    // Aborted when the run ends early (a bridge failed to start): the loop ends at its condition.
    await systemClock.sleep(IMDS_POLL_MS, signal).catch((error: unknown) => {
      if (!signal.aborted) throw error;
    });
  }
  return shownAt;
}

/**
 * Replaces REPLACED_PER_NODE pods of every node (deleted, then created anew with addresses of the node's
 * slice not used yet), waiting each time until every bridge has run a wave that counts them; returns the
 * mutating EC2 calls the simulator received meanwhile (prefix mode: none) and how long it took.
 */
async function replacePods(
  sim: SimReady,
  fleet: PrefixFleet,
  bridges: readonly Bridge[],
): Promise<{ calls: number; seconds: number }> {
  await control(sim, "DELETE", "/calls");
  const begun = Date.now();
  const everyWave = async (wanted: number, since: number) => {
    const deadline = Date.now() + 60_000;
    const done = () =>
      bridges.every(
        (b) =>
          b.report !== undefined &&
          b.report.at >= since &&
          b.report.wanted === wanted &&
          b.report.held === wanted,
      );
    while (!done()) {
      if (Date.now() > deadline)
        throw new Error(`bench: the bridges never counted ${wanted} pod addresses held`);
      await systemClock.sleep(100);
    }
  };
  let since = Date.now();
  for (const n of nodesOf(fleet))
    for (let i = 0; i < REPLACED_PER_NODE; i++)
      await control(sim, "DELETE", `/kubernetes/pods/cnf/pod-${n}-${i}`);
  await everyWave(fleet.podsPerNode - REPLACED_PER_NODE, since);
  since = Date.now();
  await control(
    sim,
    "POST",
    "/kubernetes/pods",
    Array.from({ length: fleet.nodes * REPLACED_PER_NODE }, (_, k) =>
      fleet.pod(Math.floor(k / REPLACED_PER_NODE), fleet.podsPerNode + (k % REPLACED_PER_NODE)),
    ),
  );
  await everyWave(fleet.podsPerNode, since);
  const calls = (await control<SimCall[]>(sim, "GET", "/calls")).filter(
    (c) => c.action.startsWith("Assign") || c.action.startsWith("Unassign"),
  ).length;
  return { calls, seconds: (Date.now() - begun) / 1000 };
}
