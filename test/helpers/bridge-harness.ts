/**
 * A bridge in-process against the simulator: EC2 and IMDS of one node, and the Kubernetes API through the
 * real @kubernetes/client-node, straight or through a proxy the test puts in front of it (`kubeServer`).
 * `stopAll` stops every bridge started, then the simulators they started; call it in afterEach.
 */
import type { Ec2CallRecord } from "../../src/eni/ec2-api.js";
import { systemClock } from "../../src/eni/process/clock.js";
import { createLogger } from "../../src/eni/process/logger.js";
import { Bridge, type BridgeOptions } from "../../src/ipam-whereabouts-bridge/bridge.js";
import type { CniClaims } from "../../src/ipam-whereabouts-bridge/cni/cni-claims.js";
import type { KubeApi } from "../../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { createKubeApi } from "../../src/ipam-whereabouts-bridge/kube/kube-client.js";
import { BridgeMetrics } from "../../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { PodEventReporter } from "../../src/ipam-whereabouts-bridge/telemetry/pod-events.js";
import type { SimulatorHandle, World } from "../../src/sim/index.js";
import { tempKubeconfig } from "./kube-proxy.js";
import { kubeEndpointOf, NODE_A, startKubeSim } from "./kube-worlds.js";
import { ec2ApiFor, imdsFor } from "./sim-fixtures.js";

export interface BridgeHarness {
  readonly sim: SimulatorHandle;
  readonly bridge: Bridge;
  readonly kube: KubeApi;
  readonly metrics: BridgeMetrics;
  readonly calls: Ec2CallRecord[];
  /** The IPv4 addresses EC2 holds on an ENI, the primary first. */
  held(eniId: string): string[];
  /** The Events the simulator's API holds, as `pod reason message`. */
  events(): { pod: string; reason: string; message: string }[];
  /** A metric's value in the text exposition (`name{labels}` as written there); undefined when absent. */
  metric(series: string): Promise<number | undefined>;
}

export interface HarnessSetup {
  /** A simulator already started (its owner stops it); default: a new one on `world`. */
  readonly sim?: SimulatorHandle;
  readonly node?: string;
  readonly instance?: string;
  /** The API server the bridge talks to (a proxy in front of the simulator's); default the simulator's. */
  readonly kubeServer?: (sim: SimulatorHandle) => string;
  /** Start the watches only: the test runs each wave itself (`bridge.runWave`). Default false. */
  readonly manualWaves?: boolean;
  /** Plugin mode's claims, given to the bridge (test/bridge-cni.test.ts). */
  readonly cni?: CniClaims;
}

const running: { stop: () => Promise<void> }[] = [];

/** Stops every bridge started (in reverse order), then their simulators. */
export async function stopAll(): Promise<void> {
  for (const r of running.splice(0).reverse()) await r.stop();
}

/** A bridge on node A (or `setup.node`) with the options of test/bridge.test.ts, overridden by `options`. */
export async function startBridgeOn(
  world: World,
  options: Partial<BridgeOptions> = {},
  setup: HarnessSetup = {},
): Promise<BridgeHarness> {
  const nodeName = setup.node ?? NODE_A;
  const sim = setup.sim ?? (await startKubeSim(world));
  const kubeconfig = await tempKubeconfig(setup.kubeServer?.(sim) ?? kubeEndpointOf(sim));
  const logger = createLogger("silent");
  const kube = createKubeApi({
    kubeconfig: kubeconfig.path,
    clock: systemClock,
    logger,
    watchTimeoutSeconds: 300,
    requestTimeoutMs: 5_000,
    restartBaseMs: 50,
    restartMaxMs: 200,
    component: "multus-ipmgr-bridge",
    host: nodeName,
  });
  const metrics = new BridgeMetrics();
  const calls: Ec2CallRecord[] = [];
  const ec2 = ec2ApiFor(sim, {
    observer: (record) => {
      calls.push(record);
      metrics.ec2Observer(record);
    },
  });
  const imds = imdsFor(sim, setup.instance ?? "i-0a", { clock: systemClock });
  const events = new PodEventReporter(kube, systemClock, logger, metrics, {
    repeatIntervalMs: 60_000,
    perSecond: 100,
    burst: 100,
  });
  const bridge = new Bridge(
    {
      kube,
      imds,
      ec2,
      clock: systemClock,
      logger,
      metrics,
      events,
      ...(setup.cni === undefined ? {} : { cni: setup.cni }),
    },
    {
      nodeName,
      allowedCidrs: ["198.51.100.192/26", "2001:db8:100:2::/64"],
      deviceIndexes: [],
      waveWindowMs: 100,
      releaseGraceMs: 1_500,
      releaseDryRun: false,
      resyncIntervalMs: 60_000,
      retry: { baseMs: 50, maxMs: 500 },
      recentMemoryMs: 5_000,
      addressesPerEni: 50,
      watchSilenceMs: 90_000,
      ...options,
    },
  );
  await bridge.start();
  const stop = new AbortController();
  const loop = setup.manualWaves === true ? Promise.resolve() : bridge.run(stop.signal);
  running.push({
    stop: async () => {
      stop.abort();
      await loop;
      await events.flush();
      await kube.close();
      if (setup.sim === undefined) await sim.close();
      kubeconfig.remove();
    },
  });
  type RawEvent = { reason: string; message: string; involvedObject: { name: string } };
  return {
    sim,
    bridge,
    kube,
    metrics,
    calls,
    held: (eniId) => sim.state().enis.find((e) => e.eniId === eniId)?.ipv4s ?? [],
    events: () =>
      ((sim.state().kubernetes?.events ?? []) as unknown as RawEvent[]).map((e) => ({
        pod: e.involvedObject.name,
        reason: e.reason,
        message: e.message,
      })),
    metric: async (series) => {
      const line = (await metrics.text()).split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    },
  };
}
