/**
 * The bridge never releases on a view it cannot trust: the Kubernetes API refused or silently frozen (a TCP
 * proxy between the bridge and the simulator's API), a pod whose network-status cannot be read. And what it
 * does release when the view is good: a finished pod's address. In process, against the simulator.
 */
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger } from "../src/eni/process/logger.js";
import { Bridge } from "../src/ipam-whereabouts-bridge/bridge.js";
import type { KubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { createKubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-client.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { PodEventReporter } from "../src/ipam-whereabouts-bridge/telemetry/pod-events.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { type KubeProxy, startKubeProxy, tempKubeconfig } from "./helpers/kube-proxy.js";
import {
  eventually,
  kubeEndpointOf,
  kubeWorld,
  MAC_A,
  multusPod,
  NODE_A,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { ec2ApiFor, imdsFor } from "./helpers/sim-fixtures.js";

const ADDRESS = "198.51.100.200";
const GRACE_MS = 1_500;
const SILENCE_MS = 3_000;

interface Harness {
  readonly sim: SimulatorHandle;
  readonly proxy: KubeProxy;
  readonly bridge: Bridge;
  readonly metrics: BridgeMetrics;
  held(): string[];
  /** Unassign calls EC2 answered for ADDRESS. */
  releasesOfAddress(): number;
}

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A bridge on NODE_A whose Kubernetes API goes through a proxy; pod `a` carries ADDRESS. */
async function start(options: { readonly silenceMs?: number } = {}): Promise<Harness> {
  const silenceMs = options.silenceMs ?? SILENCE_MS;
  const sim = await startKubeSim(
    kubeWorld({
      bookmarkIntervalSeconds: 1,
      pods: [multusPod("upf-0", NODE_A, ["198.51.100.193"], MAC_A), multusPod("a", NODE_A, [ADDRESS], MAC_A)],
    }),
  );
  cleanups.push(() => sim.close());
  const proxy = await startKubeProxy(kubeEndpointOf(sim));
  cleanups.push(() => proxy.close());
  const kubeconfig = await tempKubeconfig(proxy.url);
  cleanups.push(kubeconfig.remove);
  const logger = createLogger("silent");
  const kube: KubeApi = createKubeApi({
    kubeconfig: kubeconfig.path,
    clock: systemClock,
    logger,
    watchTimeoutSeconds: 300,
    watchSilenceMs: silenceMs,
    listTimeoutMs: 1_000,
    requestTimeoutMs: 2_000,
    restartBaseMs: 50,
    restartMaxMs: 400,
    component: "multus-ipmgr-bridge",
    host: NODE_A,
  });
  cleanups.push(() => kube.close());
  const metrics = new BridgeMetrics();
  const events = new PodEventReporter(kube, systemClock, logger, metrics, {
    repeatIntervalMs: 60_000,
    perSecond: 100,
    burst: 100,
  });
  const bridge = new Bridge(
    {
      kube,
      imds: imdsFor(sim, "i-0a", { clock: systemClock }),
      ec2: ec2ApiFor(sim),
      clock: systemClock,
      logger,
      metrics,
      events,
    },
    {
      nodeName: NODE_A,
      allowedCidrs: ["198.51.100.192/26"],
      deviceIndexes: [],
      waveWindowMs: 50,
      releaseGraceMs: GRACE_MS,
      releaseDryRun: false,
      resyncIntervalMs: 60_000,
      retry: { baseMs: 50, maxMs: 500 },
      recentMemoryMs: 2_000,
      addressesPerEni: 50,
      watchSilenceMs: silenceMs,
    },
  );
  await bridge.start();
  const stop = new AbortController();
  const loop = bridge.run(stop.signal);
  cleanups.push(async () => {
    stop.abort();
    await loop;
    await events.flush();
  });
  const held = (): string[] => sim.state().enis.find((e) => e.eniId === "eni-0a1")?.ipv4s ?? [];
  await eventually(() => held().includes(ADDRESS), `${ADDRESS} on eni-0a1`);
  await eventually(() => bridge.readiness().ok, "the bridge ready");
  return {
    sim,
    proxy,
    bridge,
    metrics,
    held,
    releasesOfAddress: () =>
      sim
        .calls()
        .filter(
          (c) =>
            c.action === "UnassignPrivateIpAddresses" &&
            c.outcome === "ok" &&
            Object.values(c.params).includes(ADDRESS),
        ).length,
  };
}

/** Pod `a` deleted, and the bridge counting down its address's grace. */
async function deleteAAndWaitForPending(h: Harness): Promise<void> {
  h.sim.kubernetes?.deletePod("cnf", "a", 0);
  await eventually(
    () => (h.bridge.report?.pendingReleases ?? 0) > 0,
    "the release of pod a's address pending",
  );
}

async function metric(h: Harness, line: string): Promise<boolean> {
  return (await h.metrics.text()).split("\n").includes(line);
}

describe("the bridge on a view it cannot trust", () => {
  it("releases nothing while the API refuses connections, and keeps an address a pod created meanwhile carries", async () => {
    const h = await start();
    await deleteAAndWaitForPending(h);
    await h.proxy.refuse();
    h.sim.kubernetes?.addPod(multusPod("b", NODE_A, [ADDRESS], MAC_A));
    // A wait to show that nothing happens: the grace passes twice and the address stays.
    await sleep(GRACE_MS * 2);
    expect(h.held()).toContain(ADDRESS);
    expect(h.releasesOfAddress()).toBe(0);
    await eventually(
      () => h.bridge.readiness().lines.join("\n").includes("refused the connection"),
      "the refusal on /readyz",
    );
    expect(h.bridge.readiness().lines).toContain("the view of the cluster is stale; releases are held:");
    await eventually(
      async () =>
        (await metric(h, "multus_ipmgr_bridge_view_trusted 0")) &&
        (await metric(h, 'multus_ipmgr_bridge_releases_held{reason="stale-view"} 1')),
      "the stale view in the metrics",
    );

    await h.proxy.accept();
    await eventually(() => h.bridge.readiness().ok, "ready once the API is back");
    // b carries the address: once the grace has passed again it is still held, never released.
    await sleep(GRACE_MS * 2);
    expect(h.held()).toContain(ADDRESS);
    expect(h.releasesOfAddress()).toBe(0);
    expect(await metric(h, "multus_ipmgr_bridge_view_trusted 1")).toBe(true);
  });

  it("releases nothing while the API is silently frozen (no reset), notices the silence, and recovers", async () => {
    const h = await start();
    await deleteAAndWaitForPending(h);
    h.proxy.freeze();
    h.sim.kubernetes?.addPod(multusPod("b", NODE_A, [ADDRESS], MAC_A));
    await sleep(SILENCE_MS + GRACE_MS);
    expect(h.held()).toContain(ADDRESS);
    expect(h.releasesOfAddress()).toBe(0);
    await eventually(
      () => h.bridge.readiness().lines.some((l) => /silent for/.test(l)),
      "the silence noticed",
      SILENCE_MS * 4,
    );
    expect(h.bridge.readiness().ok).toBe(false);

    h.proxy.thaw();
    await eventually(() => h.bridge.readiness().ok, "ready once the API answers again", SILENCE_MS * 4);
    await sleep(GRACE_MS * 2);
    expect(h.held()).toContain(ADDRESS);
    expect(h.releasesOfAddress()).toBe(0);
  });

  it("sets releases_held{reason=stale-view} in the same scrape as view_trusted 0, and clears it with view_trusted 1, between waves", async () => {
    const h = await start();
    const scrape = async (): Promise<[string | undefined, string | undefined]> => {
      const lines = (await h.metrics.text()).split("\n");
      return [
        lines.find((l) => l.startsWith("multus_ipmgr_bridge_view_trusted ")),
        lines.find((l) => l.startsWith('multus_ipmgr_bridge_releases_held{reason="stale-view"}')),
      ];
    };
    await h.proxy.refuse();
    let seen = await scrape();
    await eventually(async () => {
      seen = await scrape();
      return seen[0] === "multus_ipmgr_bridge_view_trusted 0";
    }, "view_trusted 0");
    expect(seen[1]).toBe('multus_ipmgr_bridge_releases_held{reason="stale-view"} 1');
    await h.proxy.accept();
    await eventually(async () => {
      seen = await scrape();
      return seen[0] === "multus_ipmgr_bridge_view_trusted 1";
    }, "view_trusted 1");
    expect(seen[1]).toBe('multus_ipmgr_bridge_releases_held{reason="stale-view"} 0');
  });

  it("after a failure, sends again a watch request a freeze left unanswered on a dead connection, without waiting for the silence bound", async () => {
    // A silence bound of a minute: only the abandoned request, after the 400 ms restart cap, recovers in time.
    const h = await start({ silenceMs: 60_000 });
    h.proxy.failing = true;
    h.proxy.cut();
    await eventually(
      () => h.bridge.readiness().lines.some((l) => l.includes("500")),
      "the watches failing with 500",
    );
    h.proxy.freeze();
    await eventually(() => h.proxy.heldCount >= 4, "a request of each watch held by the freeze");
    h.proxy.failing = false;
    h.proxy.thaw({ reset: false });
    await eventually(() => h.bridge.readiness().ok, "ready again on new connections", 20_000);
    expect(h.proxy.heldCount).toBeGreaterThanOrEqual(4);
  });

  it("never releases on account of a pod whose network-status cannot be read, and says so on the pod", async () => {
    const h = await start();
    h.sim.kubernetes?.patchPod("cnf", "a", {
      metadata: { annotations: { "k8s.v1.cni.cncf.io/network-status": '[{"interface": "net1",' } },
    });
    await sleep(GRACE_MS * 3);
    expect(h.held()).toContain(ADDRESS);
    expect(h.releasesOfAddress()).toBe(0);
    await eventually(
      () => h.bridge.readiness().lines.some((l) => l.startsWith("cannot read: pod cnf/a")),
      "the unreadable annotation on /readyz",
    );
    expect(await metric(h, 'multus_ipmgr_bridge_input_problems{kind="Pod"} 1')).toBe(true);
    expect(await metric(h, 'multus_ipmgr_bridge_releases_held{reason="unreadable-pod"} 1')).toBe(true);
    await eventually(
      () =>
        (h.sim.state().kubernetes?.events ?? []).some(
          (e) =>
            (e as { reason?: string }).reason === "NetworkStatusUnreadable" &&
            (e as { involvedObject?: { name?: string; uid?: string } }).involvedObject?.name === "a" &&
            (e as { involvedObject?: { uid?: string } }).involvedObject?.uid !== undefined,
        ),
      "a Warning Event on pod a",
    );
  });

  it.each<[string, Record<string, unknown>]>([
    ["without mac", { name: "cnf/multus-ipvlan", interface: "net1", ips: [ADDRESS] }],
    ["without interface", { name: "cnf/multus-ipvlan", ips: [ADDRESS], mac: MAC_A }],
    ["with ips as a string", { name: "cnf/multus-ipvlan", interface: "net1", ips: ADDRESS, mac: MAC_A }],
  ])(
    "never releases the address of a network-status entry %s, and says so on the pod",
    async (_what, entry) => {
      const h = await start();
      h.sim.kubernetes?.patchPod("cnf", "a", {
        metadata: { annotations: { "k8s.v1.cni.cncf.io/network-status": JSON.stringify([entry]) } },
      });
      await eventually(
        () => h.bridge.readiness().lines.some((l) => l.startsWith("cannot read: pod cnf/a")),
        "the unreadable entry on /readyz",
      );
      expect(await metric(h, 'multus_ipmgr_bridge_input_problems{kind="Pod"} 1')).toBe(true);
      // Three graces on: a wait to show that nothing happens.
      await sleep(GRACE_MS * 3);
      expect(h.held()).toContain(ADDRESS);
      expect(h.releasesOfAddress()).toBe(0);
      expect(await metric(h, 'multus_ipmgr_bridge_releases_held{reason="unreadable-pod"} 1')).toBe(true);
    },
  );

  it("releases a finished pod's address after the grace, as a deleted pod's", async () => {
    const h = await start();
    h.sim.kubernetes?.patchPod("cnf", "a", { status: { phase: "Succeeded" } });
    await eventually(() => !h.held().includes(ADDRESS), `${ADDRESS} released`, GRACE_MS * 6);
    expect(h.releasesOfAddress()).toBe(1);
  });
});
