/**
 * The startup taint controller (src/ipam-whereabouts-bridge/startup-taint/startup-taint-controller.ts) with
 * the bridge's real Kubernetes adapter against the simulator: a node registered with the taint keeps a Multus
 * pod Pending until attach mode reports the ENI attached and the links agent's file the link ready; then the
 * taint comes off (Event, metrics) and the pod is scheduled and runs; a lost link puts it back, the node's
 * other taints kept.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/process/clock.js";
import type { KubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { createKubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-client.js";
import { type LinkReport, serializeLinkStatus } from "../src/ipam-whereabouts-bridge/node/link-status.js";
import { StartupTaintController } from "../src/ipam-whereabouts-bridge/startup-taint/startup-taint-controller.js";
import {
  LINK_STATUS_STALE_MS,
  type NetworkAttachReport,
} from "../src/ipam-whereabouts-bridge/startup-taint/taint-decision.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { PodEventReporter } from "../src/ipam-whereabouts-bridge/telemetry/pod-events.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { writeKubeconfig } from "../src/sim/kube/kubeconfig.js";
import {
  eventually,
  type Json,
  kube,
  kubeEndpointOf,
  kubeWorld,
  NODE_A,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { captureLogger } from "./helpers/loggers.js";
import { ManualClock } from "./helpers/manual-clock.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const KEY = "multus-ipmgr.io/enis-not-ready";
const OTHER = { key: "example.com/dedicated", value: "cnf", effect: "NoSchedule" };
const MAC = "02:00:00:00:01:09";

let sim: SimulatorHandle | undefined;
let api: KubeApi | undefined;
let dir: string | undefined;
const aborts: AbortController[] = [];

afterEach(async () => {
  for (const a of aborts.splice(0)) a.abort();
  await api?.close();
  api = undefined;
  await sim?.close();
  sim = undefined;
  removeTempDir(dir);
  dir = undefined;
});

async function start() {
  sim = await startKubeSim(
    kubeWorld({
      pods: [],
      nodes: [{ instance: "i-0a", taints: [OTHER, { key: KEY, effect: "NoSchedule" }] }],
    }),
  );
  dir = makeTempDir("ipmgr-node-");
  const kubeconfig = join(dir, "kubeconfig");
  await writeKubeconfig(kubeconfig, kubeEndpointOf(sim));
  api = createKubeApi({
    kubeconfig,
    clock: systemClock,
    logger: captureLogger().logger,
    watchTimeoutSeconds: 300,
    requestTimeoutMs: 5_000,
    restartBaseMs: 50,
    restartMaxMs: 200,
    component: "multus-ipmgr-bridge",
    host: NODE_A,
  });
  const clock = new ManualClock();
  const metrics = new BridgeMetrics();
  const { logger, lines } = captureLogger();
  const events = new PodEventReporter(api, clock, logger, metrics, {
    repeatIntervalMs: 60_000,
    perSecond: 10,
    burst: 10,
  });
  const world = {
    networks: undefined as NetworkAttachReport[] | undefined,
    slicesHeld: undefined as boolean | undefined,
  };
  const file = join(dir, "links.json");
  const controller = new StartupTaintController(
    {
      kube: api,
      events,
      metrics,
      logger,
      clock,
      networks: () => world.networks,
      slicesHeld: () => world.slicesHeld,
    },
    {
      nodeName: NODE_A,
      taintKey: KEY,
      linkStatusFile: file,
      staleAfterMs: LINK_STATUS_STALE_MS,
      intervalMs: 2_000,
      retry: { baseMs: 100, maxMs: 1_000 },
    },
  );
  const writeLinks = (state: LinkReport["state"]) =>
    writeFileSync(
      file,
      serializeLinkStatus({
        version: 1,
        writtenAt: new Date(clock.now()).toISOString(),
        links: [
          {
            network: "multus0",
            deviceIndex: 1,
            networkCardIndex: 0,
            mac: MAC,
            state,
            detail: state === "ready" ? "up, MTU 9001" : "ip link set multus0 up: failed",
          },
        ],
      }),
    );
  const s = sim;
  const taints = async () => (await kube(s, "GET", `/api/v1/nodes/${NODE_A}`)).body.spec.taints;
  const nodeEvents = async () =>
    ((await kube(s, "GET", "/api/v1/namespaces/default/events")).body.items as Json[])
      .filter((e) => e.involvedObject.kind === "Node")
      // In the order they were written (a list is ordered by name, and Event names are random).
      .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
  return { s, controller, world, writeLinks, taints, nodeEvents, metrics, events, lines, clock };
}

const metricLine = async (metrics: BridgeMetrics, name: string) =>
  (await metrics.text()).split("\n").filter((l) => l.startsWith(name));

describe("the startup taint controller, against the simulator", () => {
  it("keeps a Multus pod off the node until its network is ready, then takes the taint off and the pod runs", async () => {
    const { s, controller, world, writeLinks, taints, nodeEvents, metrics, events } = await start();
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "upf-1",
        namespace: "cnf",
        annotations: { "k8s.v1.cni.cncf.io/networks": "multus-ipvlan" },
      },
      spec: {
        containers: [{ name: "app", image: "registry.example/app:1" }],
        // The node's own dedicated taint, not the startup taint: Multus pods must not tolerate that one.
        tolerations: [{ key: OTHER.key, operator: "Equal", value: OTHER.value, effect: "NoSchedule" }],
      },
    };
    expect((await kube(s, "POST", "/api/v1/namespaces/cnf/pods", pod)).status).toBe(201);
    const read = async () => (await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-1")).body;
    await eventually(
      async () => ((await read()).status.conditions ?? []).some((c: Json) => c.reason === "Unschedulable"),
      "upf-1 unschedulable",
    );
    expect((await read()).spec.nodeName).toBeUndefined();

    world.networks = [{ network: "multus0", attached: false }];
    expect(await controller.check()).toMatchObject({
      action: "keep",
      reason: `the taint ${KEY} stays on: network multus0: its ENI is not attached (EC2)`,
    });
    expect(await metricLine(metrics, "multus_ipmgr_bridge_startup_taint ")).toEqual([
      "multus_ipmgr_bridge_startup_taint 1",
    ]);

    world.networks = [{ network: "multus0", attached: true, mac: MAC }];
    expect((await controller.check()).reason).toBe(
      `the taint ${KEY} stays on: the links agent has not written its status file yet`,
    );
    writeLinks("ready");
    expect(await controller.check()).toMatchObject({ action: "remove" });
    expect(await taints()).toEqual([OTHER]);
    await eventually(
      async () => (await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-1")).body.status.phase === "Running",
      "upf-1 running",
    );
    expect((await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-1")).body.spec.nodeName).toBe(NODE_A);

    await events.flush();
    expect(await nodeEvents()).toMatchObject([
      {
        metadata: { namespace: "default" },
        involvedObject: { kind: "Node", name: NODE_A, uid: NODE_A, apiVersion: "v1" },
        type: "Normal",
        reason: "StartupTaintRemoved",
        message: `every network's ENI is attached and its link ready (multus0): the taint ${KEY} comes off`,
      },
    ]);
    expect((await nodeEvents())[0].involvedObject.namespace).toBeUndefined();
    expect(await metricLine(metrics, "multus_ipmgr_bridge_startup_taint")).toEqual([
      "multus_ipmgr_bridge_startup_taint 0",
      'multus_ipmgr_bridge_startup_taint_changes_total{action="removed"} 1',
      'multus_ipmgr_bridge_startup_taint_changes_total{action="added"} 0',
    ]);
    // Ready and off: a further pass changes nothing.
    expect((await controller.check()).action).toBe("keep");
    expect(await taints()).toEqual([OTHER]);
  });

  it("puts the taint back when the link is lost, the node's other taint kept, and says so", async () => {
    const { controller, world, writeLinks, taints, nodeEvents, metrics, events, lines } = await start();
    world.networks = [{ network: "multus0", attached: true, mac: MAC }];
    writeLinks("ready");
    expect((await controller.check()).action).toBe("remove");
    writeLinks("failed");
    expect(await controller.check()).toMatchObject({
      action: "add",
      reason: `the taint ${KEY} goes back on: network multus0: its link is failed (ip link set multus0 up: failed)`,
    });
    expect(await taints()).toEqual([OTHER, { key: KEY, effect: "NoSchedule" }]);
    await events.flush();
    expect((await nodeEvents()).map((e) => [e.type, e.reason])).toEqual([
      ["Normal", "StartupTaintRemoved"],
      ["Warning", "StartupTaintAdded"],
    ]);
    expect(await metricLine(metrics, "multus_ipmgr_bridge_startup_taint_changes_total")).toEqual([
      'multus_ipmgr_bridge_startup_taint_changes_total{action="removed"} 1',
      'multus_ipmgr_bridge_startup_taint_changes_total{action="added"} 1',
    ]);
    expect(lines.filter((l) => l.msg === "startup taint put back on the node")).toHaveLength(1);
  });

  it("warns once of a status file it cannot read, and keeps the taint", async () => {
    const { controller, world, lines } = await start();
    world.networks = [{ network: "multus0", attached: true }];
    writeFileSync(join(dir as string, "links.json"), "{ half");
    for (let i = 0; i < 3; i++) expect((await controller.check()).action).toBe("keep");
    const warned = lines.filter((l) => String(l.msg).includes("status file is unusable"));
    expect(warned).toHaveLength(1);
    expect(String(warned[0]?.msg)).toContain("links.json: not JSON");
  });

  it("runs passes until aborted; a wake runs one at once", async () => {
    const { controller, world, writeLinks, taints } = await start();
    const abort = new AbortController();
    aborts.push(abort);
    world.networks = [{ network: "multus0", attached: false }];
    const running = controller.run(abort.signal);
    world.networks = [{ network: "multus0", attached: true, mac: MAC }];
    writeLinks("ready");
    controller.wake();
    await eventually(
      async () => JSON.stringify(await taints()) === JSON.stringify([OTHER]),
      "the taint taken off",
    );
    abort.abort();
    await running;
  });
});
