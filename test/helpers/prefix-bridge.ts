/**
 * The bridge with prefix mode in-process against the simulator (EC2, IMDS, and the Kubernetes API with
 * whereabouts' node-slice controller and node-slice IPAM played by its stand-ins), for the prefix-mode tests.
 */
import type { Ec2Api } from "../../src/eni/ec2-api.js";
import { systemClock } from "../../src/eni/process/clock.js";
import { createLogger, type Logger } from "../../src/eni/process/logger.js";
import { Bridge } from "../../src/ipam-whereabouts-bridge/bridge.js";
import type { CniClaims } from "../../src/ipam-whereabouts-bridge/cni/cni-claims.js";
import { createKubeApi } from "../../src/ipam-whereabouts-bridge/kube/kube-client.js";
import { PrefixMode } from "../../src/ipam-whereabouts-bridge/prefixes/prefix-mode.js";
import type { PrefixOverlapMode } from "../../src/ipam-whereabouts-bridge/prefixes/prefix-plan.js";
import { BridgeMetrics } from "../../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { PodEventReporter } from "../../src/ipam-whereabouts-bridge/telemetry/pod-events.js";
import type { SimulatorHandle } from "../../src/sim/index.js";
import { tempKubeconfig } from "./kube-proxy.js";
import {
  eventually,
  type Json,
  kube,
  kubeEndpointOf,
  kubeWorld,
  MAC_A,
  NODE_A,
  startKubeSim,
} from "./kube-worlds.js";
import { ec2ApiFor, imdsFor } from "./sim-fixtures.js";

export const MUTATING = new Set([
  "AssignPrivateIpAddresses",
  "UnassignPrivateIpAddresses",
  "AssignIpv6Addresses",
  "UnassignIpv6Addresses",
]);
/** Node A's slice of the range below: whereabouts gives the first free slice to each node, in name order. */
export const SLICE_A = "198.51.100.160/28";
export const POOLS = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/nodeslicepools";

/** A node-sliced NAD in kube-system (whereabouts' namespace), master eth1: node A's Multus ENI eni-0a1. */
export const SLICED_NAD = {
  namespace: "kube-system",
  name: "slices",
  config: {
    cniVersion: "0.3.1",
    name: "slices",
    type: "ipvlan",
    master: "eth1",
    ipam: { type: "whereabouts", network_name: "slices", range: "198.51.100.160/27", node_slice_size: "/28" },
  },
};

export interface PrefixBridgeOptions {
  readonly pods?: Record<string, unknown>[];
  /** Runs once the simulator is up, before the bridge starts. */
  readonly before?: (sim: SimulatorHandle) => Promise<void>;
  readonly releaseDryRun?: boolean;
  readonly nad?: typeof SLICED_NAD;
  /** Node A's instance type takes prefixes (default) or not. */
  readonly nitro?: boolean;
  /** Passed to prefix mode, which then asks DescribeInstanceTypes; default none (no lookup). */
  readonly instanceType?: string;
  readonly logger?: Logger;
  /** Cuts the bridge's EC2 calls, as the shutdown grace running out does (BridgeLifecycle's `inflight`). */
  readonly ec2Signal?: AbortSignal;
  /** Wraps the bridge's EC2 adapter (a pass-through that watches the calls). */
  readonly wrapEc2?: (ec2: Ec2Api) => Ec2Api;
  /** Plugin mode's claims, given to the bridge (test/bridge-cni.test.ts). */
  readonly cni?: CniClaims;
  /** Whether the helper runs the wave loop (default); false: the test runs it (a BridgeLifecycle). */
  readonly run?: boolean;
}

const running: { stop: () => Promise<void> }[] = [];

/** Stops every bridge and simulator started since the last call (afterEach). */
export async function stopPrefixBridges(): Promise<void> {
  for (const r of running.splice(0)) await r.stop();
}

export async function startPrefixBridge(overlap: PrefixOverlapMode, options: PrefixBridgeOptions = {}) {
  const releaseGraceMs = 1_500;
  const releaseDryRun = options.releaseDryRun ?? false;
  const base = kubeWorld().kubernetes as unknown as { networkAttachmentDefinitions: unknown[] };
  const sim = await startKubeSim(
    kubeWorld(
      {
        networkAttachmentDefinitions: [...base.networkAttachmentDefinitions, options.nad ?? SLICED_NAD],
        pods: options.pods ?? [],
      },
      options.nitro === undefined ? {} : { nitro: options.nitro },
    ),
  );
  await options.before?.(sim);
  const kubeconfig = await tempKubeconfig(kubeEndpointOf(sim));
  const logger = options.logger ?? createLogger("silent");
  const kubeApi = createKubeApi({
    kubeconfig: kubeconfig.path,
    clock: systemClock,
    logger,
    watchTimeoutSeconds: 300,
    requestTimeoutMs: 5_000,
    restartBaseMs: 50,
    restartMaxMs: 200,
    component: "multus-ipmgr-bridge",
    host: NODE_A,
  });
  const metrics = new BridgeMetrics();
  const adapter = ec2ApiFor(sim, {
    observer: metrics.ec2Observer,
    ...(options.ec2Signal === undefined ? {} : { signal: options.ec2Signal }),
  });
  const ec2 = options.wrapEc2?.(adapter) ?? adapter;
  const imds = imdsFor(sim, "i-0a", { clock: systemClock });
  const events = new PodEventReporter(kubeApi, systemClock, logger, metrics, {
    repeatIntervalMs: 60_000,
    perSecond: 100,
    burst: 100,
  });
  const allowedCidrs = ["198.51.100.128/25"];
  const prefixes = new PrefixMode(
    { kube: kubeApi, ec2, clock: systemClock, logger, metrics, events },
    {
      nodeName: NODE_A,
      allowedCidrs,
      overlap,
      releaseGraceMs,
      releaseDryRun,
      recentMemoryMs: 5_000,
      addressesPerEni: 10,
      watchSilenceMs: 90_000,
      hostMacs: () => new Map([["eth1", MAC_A]]),
      ...(options.instanceType === undefined ? {} : { instanceType: options.instanceType }),
    },
  );
  const bridge = new Bridge(
    {
      kube: kubeApi,
      imds,
      ec2,
      clock: systemClock,
      logger,
      metrics,
      events,
      prefixes,
      ...(options.cni === undefined ? {} : { cni: options.cni }),
    },
    {
      nodeName: NODE_A,
      allowedCidrs,
      deviceIndexes: [],
      waveWindowMs: 50,
      releaseGraceMs,
      releaseDryRun,
      resyncIntervalMs: 60_000,
      retry: { baseMs: 50, maxMs: 500 },
      recentMemoryMs: 5_000,
      addressesPerEni: 10,
      watchSilenceMs: 90_000,
    },
  );
  const close = async () => {
    await events.flush();
    await kubeApi.close();
    await sim.close();
    kubeconfig.remove();
  };
  if (options.run ?? true) {
    await bridge.start();
    const stop = new AbortController();
    const loop = bridge.run(stop.signal);
    running.push({
      stop: async () => {
        stop.abort();
        await loop;
        await close();
      },
    });
  } else {
    running.push({ stop: close });
  }
  const eni = () => sim.state().enis.find((e) => e.eniId === "eni-0a1");
  const mutating = () => sim.calls().filter((c) => MUTATING.has(c.action) && c.outcome === "ok");
  return { sim, bridge, prefixes, metrics, eni, mutating, events, kubeApi };
}

/** Creates a pod on node A on the sliced network and waits for it to run; returns its Multus addresses. */
export async function runPod(sim: SimulatorHandle, name: string): Promise<string[]> {
  const manifest = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "cnf",
      annotations: { "k8s.v1.cni.cncf.io/networks": "kube-system/slices" },
    },
    spec: { nodeName: NODE_A, containers: [{ name: "app", image: "registry.example/app:1" }] },
  };
  const answer = await kube(sim, "POST", "/api/v1/namespaces/cnf/pods", manifest);
  // Thrown, not expect(): bench/cni-plugin.ts imports this file outside vitest.
  if (answer.status !== 201)
    throw new Error(`creating pod ${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
  let pod: Json;
  await eventually(async () => {
    pod = (await kube(sim, "GET", `/api/v1/namespaces/cnf/pods/${name}`)).body;
    return pod.status?.phase === "Running";
  }, `pod ${name} Running`);
  const status = JSON.parse(pod.metadata.annotations["k8s.v1.cni.cncf.io/network-status"]);
  return status.slice(1).flatMap((s: Json) => s.ips);
}
