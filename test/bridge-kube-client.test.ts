/**
 * The bridge's Kubernetes adapter (src/ipam-whereabouts-bridge/kube/kube-client.ts, the real
 * @kubernetes/client-node) against the simulator's Kubernetes API.
 */
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger, type Logger } from "../src/eni/process/logger.js";
import { KubeConflictError } from "../src/ipam-whereabouts-bridge/kube/errors/kube-conflict-error.js";
import { KubeError } from "../src/ipam-whereabouts-bridge/kube/errors/kube-error.js";
import type { KubeApi, LeaseInfo } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import {
  API_SERVER_BOOKMARK_INTERVAL_MS,
  createKubeApi,
  DEFAULT_WATCH_SILENCE_MS,
  silenceBoundWarning,
} from "../src/ipam-whereabouts-bridge/kube/kube-client.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { type KubeProxy, startKubeProxy, tempKubeconfig } from "./helpers/kube-proxy.js";
import {
  eventually,
  kubeEndpointOf,
  MAC_A,
  MAC_B,
  multusPod,
  NODE_A,
  NODE_B,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { captureLogger } from "./helpers/loggers.js";

let sim: SimulatorHandle | undefined;
let proxy: KubeProxy | undefined;
let api: KubeApi | undefined;
const cleanups: (() => unknown)[] = [];

afterEach(async () => {
  await api?.close();
  api = undefined;
  for (const c of cleanups.splice(0)) await c();
  await proxy?.close();
  proxy = undefined;
  await sim?.close();
  sim = undefined;
});

async function start(
  options: { watchTimeoutSeconds?: number; watchSilenceMs?: number; logger?: Logger } = {},
): Promise<{ s: SimulatorHandle; k: KubeApi; p: KubeProxy }> {
  sim = await startKubeSim();
  proxy = await startKubeProxy(kubeEndpointOf(sim));
  const kubeconfig = await tempKubeconfig(proxy.url);
  cleanups.push(kubeconfig.remove);
  api = createKubeApi({
    kubeconfig: kubeconfig.path,
    clock: systemClock,
    logger: options.logger ?? createLogger("silent"),
    watchTimeoutSeconds: options.watchTimeoutSeconds ?? 300,
    ...(options.watchSilenceMs === undefined ? {} : { watchSilenceMs: options.watchSilenceMs }),
    requestTimeoutMs: 5_000,
    restartBaseMs: 50,
    restartMaxMs: 200,
    component: "multus-ipmgr-bridge",
    host: NODE_A,
  });
  return { s: sim, k: api, p: proxy };
}

describe("the bridge's Kubernetes adapter", () => {
  it("lists and watches the pods of one node only, with bookmarks and a server-side timeout", async () => {
    const { s, k, p } = await start();
    let changes = 0;
    const pods = await k.watchPods(NODE_A, { changed: () => changes++ });
    expect(pods.synced).toBe(true);
    expect(pods.list().map((pod) => pod.name)).toEqual(["upf-0"]);
    await eventually(() => p.requests.some((r) => r.includes("watch=true")), "the watch request");
    const watch = p.requests.find((r) => r.includes("watch=true"));
    expect(watch).toContain("fieldSelector=spec.nodeName%3Dip-198-51-100-10.ec2.internal");
    expect(watch).toContain("allowWatchBookmarks=true");
    expect(watch).toContain("timeoutSeconds=300");
    s.kubernetes?.addPod(multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_B));
    s.kubernetes?.addPod(multusPod("upf-2", NODE_A, ["198.51.100.195"], MAC_A));
    await eventually(() => pods.list().length === 2, "upf-2 in the cache");
    expect(
      pods
        .list()
        .map((pod) => pod.name)
        .sort(),
    ).toEqual(["upf-0", "upf-2"]);
    expect(changes).toBeGreaterThanOrEqual(2);
    s.kubernetes?.deletePod("cnf", "upf-2", 30);
    await eventually(
      () => pods.list().find((pod) => pod.name === "upf-2")?.deleting === true,
      "upf-2 terminating",
    );
  });

  it("keeps of each pod only what the bridge reads, listed or watched (not the whole object)", async () => {
    const { s, k } = await start();
    const pods = await k.watchPods(NODE_A, { changed: () => undefined });
    s.kubernetes?.addPod(
      multusPod("upf-3", NODE_A, ["198.51.100.196"], MAC_A, {
        annotations: {
          "multus-ipmgr.io/managed": "false",
          "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(10_000),
        },
        spec: {
          containers: [
            {
              name: "ipmgr",
              image: "registry.example/multus-ipmgr:0.1.0",
              args: ["sidecar"],
              env: [{ name: "A", value: "b" }],
            },
          ],
        },
      }),
    );
    await eventually(() => pods.list().some((pod) => pod.name === "upf-3"), "upf-3 in the cache");
    const upf3 = pods.list().find((pod) => pod.name === "upf-3");
    expect(Object.keys(upf3?.annotations ?? {}).sort()).toEqual([
      "k8s.v1.cni.cncf.io/network-status",
      "multus-ipmgr.io/managed",
    ]);
    expect(upf3?.containers).toEqual([
      { name: "ipmgr", image: "registry.example/multus-ipmgr:0.1.0", args: ["sidecar"] },
    ]);
    const listed = pods.list().find((pod) => pod.name === "upf-0");
    expect(Object.keys(listed ?? {}).sort()).toEqual([
      "annotations",
      "containers",
      "deleting",
      "name",
      "namespace",
      "nodeName",
      "phase",
      "uid",
    ]);
  });

  it("reads NADs, IPPools (allocations decoded later) and OverlappingRangeIPReservations", async () => {
    const { k } = await start();
    const listener = { changed: () => undefined };
    const nads = await k.watchNetworkAttachmentDefinitions(listener);
    const pools = await k.watchIpPools(listener);
    const orips = await k.watchOverlappingReservations(listener);
    expect(nads.list().map((n) => `${n.namespace}/${n.name}`)).toEqual(["cnf/multus-ipvlan"]);
    expect(JSON.parse(nads.list()[0]?.config ?? "{}").ipam.range).toBe("198.51.100.192/27");
    expect(pools.list()).toEqual([
      {
        namespace: "kube-system",
        name: "198.51.100.192-27",
        range: "198.51.100.192/27",
        allocations: { "1": { id: "c0ffee", podref: "cnf/upf-0", ifname: "net1" } },
      },
    ]);
    expect(orips.list()).toEqual([]);
  });

  it("resumes a broken watch, relists after 410, and restarts with backoff after the API server fails", async () => {
    const { s, k, p } = await start();
    const failures: string[] = [];
    const pods = await k.watchPods(NODE_A, {
      changed: () => undefined,
      failed: (resource, _error, retryInMs) => failures.push(`${resource} ${retryInMs >= 50}`),
    });
    // A cut connection: client-node watches again from its resourceVersion.
    p.cut();
    s.kubernetes?.addPod(multusPod("a1", NODE_A, [], MAC_A));
    await eventually(() => pods.list().some((pod) => pod.name === "a1"), "a1 after the cut");
    // 410: history compacted while the watch was down, so it relists.
    for (const name of ["b1", "b2", "b3"]) s.kubernetes?.addPod(multusPod(name, NODE_B, [], MAC_B));
    s.kubernetes?.compact();
    s.kubernetes?.deletePod("cnf", "a1");
    s.kubernetes?.closeWatches();
    await eventually(() => !pods.list().some((pod) => pod.name === "a1"), "a1 gone after the relist");
    // An outage: the informer stops on a 500; the adapter restarts it, with backoff, until it works again.
    p.failing = true;
    p.cut();
    await eventually(() => failures.length >= 2, "two failures reported");
    s.kubernetes?.addPod(multusPod("a2", NODE_A, [], MAC_A));
    p.failing = false;
    await eventually(() => pods.list().some((pod) => pod.name === "a2"), "a2 after the outage");
    expect(failures.every((f) => f === "pods true")).toBe(true);
    expect(
      pods
        .list()
        .map((pod) => pod.name)
        .sort(),
    ).toEqual(["a2", "upf-0"]);
  });

  it("warns once at start of a silence bound below the API server's bookmark interval, not at each silence", async () => {
    const { logger, lines } = captureLogger();
    // The simulator's bookmarks come once a minute, as kube-apiserver's: a quiet watch is silent for 1 s often.
    const { k, p } = await start({ watchSilenceMs: 1_000, logger });
    await k.watchPods(NODE_A, { changed: () => undefined });
    await eventually(
      () => p.requests.filter((r) => r.includes("/api/v1/pods?") && r.includes("watch=true")).length >= 4,
      "the pods watch restarted three times for silence",
    );
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings.map((l) => l.msg)).toEqual([
      "IPMGR_BRIDGE_WATCH_SILENCE_MS is 1000 ms, below the API server's bookmark interval (kube-apiserver sends one about every 60 s): on a quiet cluster every watch goes silent and is restarted every 1 s, the view is stale each time and a release's grace restarts with it (these silences are logged at debug, not warned each time); set IPMGR_BRIDGE_WATCH_SILENCE_MS to 90000 (the default) or more",
    ]);
    expect(
      lines.filter((l) => l.level === 20 && String(l.msg).includes("silent")).length,
    ).toBeGreaterThanOrEqual(3);
  });

  it("says nothing of a silence bound at or above the API server's bookmark interval", () => {
    expect(silenceBoundWarning(DEFAULT_WATCH_SILENCE_MS)).toBeUndefined();
    expect(silenceBoundWarning(API_SERVER_BOOKMARK_INTERVAL_MS)).toBeUndefined();
    expect(silenceBoundWarning(API_SERVER_BOOKMARK_INTERVAL_MS - 1)).toContain(
      "set IPMGR_BRIDGE_WATCH_SILENCE_MS to 90000 (the default) or more",
    );
  });

  it("creates, reads and updates a Lease, with 409 as KubeConflictError", async () => {
    const { s, k } = await start();
    expect(await k.getLease("kube-system", "multus-ipmgr-reservations")).toBeUndefined();
    const lease: LeaseInfo = {
      namespace: "kube-system",
      name: "multus-ipmgr-reservations",
      holderIdentity: "bridge-a",
      leaseDurationSeconds: 30,
      acquireTime: new Date(1_700_000_000_000),
      renewTime: new Date(1_700_000_000_000),
      leaseTransitions: 0,
      resourceVersion: undefined,
    };
    const created = await k.createLease(lease);
    expect(created).toEqual({ ...lease, resourceVersion: expect.any(String) });
    await expect(k.createLease(lease)).rejects.toBeInstanceOf(KubeConflictError);
    const renewed = await k.updateLease({ ...created, renewTime: new Date(1_700_000_010_000) });
    await expect(k.updateLease({ ...created, holderIdentity: "bridge-b" })).rejects.toBeInstanceOf(
      KubeConflictError,
    );
    expect((await k.getLease("kube-system", "multus-ipmgr-reservations"))?.renewTime).toEqual(
      renewed.renewTime,
    );
    expect(s.state().kubernetes?.leases).toHaveLength(1);
  });

  it("creates Events on a pod", async () => {
    const { s, k } = await start();
    await k.createEvent({
      pod: { namespace: "cnf", name: "upf-0", uid: undefined },
      type: "Warning",
      reason: "AddressesNotAssigned",
      message: "EC2 refused: UnauthorizedOperation (ec2:AssignPrivateIpAddresses)",
    });
    const events = (s.state().kubernetes?.events ?? []) as unknown as Record<
      string,
      Record<string, string>
    >[];
    expect(events.map((e) => [e.involvedObject?.name, e.reason, e.source?.host])).toEqual([
      ["upf-0", "AddressesNotAssigned", NODE_A],
    ]);
  });

  it("names the call and the fix when the API server answers an error", async () => {
    const { k, p } = await start();
    p.failing = true;
    const error = await k.getLease("kube-system", "x").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeError);
    expect((error as KubeError).message).toBe(
      "get Lease kube-system/x failed (500 InternalError: etcdserver: request timed out); see the API server's message.",
    );
  });
});
