import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  ListWatch,
  makeInformer,
  type V1Lease,
  type V1Pod,
  Watch,
} from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import type { SimulatorHandle } from "../src/sim/index.js";
import {
  control,
  eventually,
  kubeConfigFor,
  kubeWorld,
  MAC_A,
  MAC_B,
  multusPod,
  NODE_A,
  NODE_B,
  startKubeSim,
} from "./helpers/kube-worlds.js";

/** The real @kubernetes/client-node (the bridge's client) against the simulated API server. */

let sim: SimulatorHandle | undefined;
const stops: (() => unknown)[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  await sim?.close();
  sim = undefined;
});

/** The simulator, with every Kubernetes request it answers in `requests` (`GET /api/v1/pods?... 200`). */
async function start(): Promise<{ s: SimulatorHandle; kc: KubeConfig; requests: string[] }> {
  const requests: string[] = [];
  sim = await startKubeSim(kubeWorld(), {
    log: (line) => {
      if (line.startsWith("kubernetes ")) requests.push(line.slice("kubernetes ".length));
    },
  });
  return { s: sim, kc: kubeConfigFor(sim), requests };
}

function apiError(error: unknown): { code: number; status: { reason?: string; message?: string } } {
  if (!(error instanceof ApiException)) throw error;
  const body = typeof error.body === "string" ? JSON.parse(error.body) : error.body;
  return { code: error.code, status: body };
}

async function failure(
  promise: Promise<unknown>,
): Promise<{ code: number; status: { reason?: string; message?: string } }> {
  try {
    await promise;
  } catch (error) {
    return apiError(error);
  }
  throw new Error("expected the call to fail");
}

type Seen = { verb: string; name: string; rv: string };

describe("@kubernetes/client-node against the simulator", () => {
  it("lists pods by node (field selector) and custom resources", async () => {
    const { s, kc } = await start();
    await control(s, "POST", "/kubernetes/pods", multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_B));
    const core = kc.makeApiClient(CoreV1Api);
    const onA = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE_A}` });
    expect(onA.items.map((p) => p.metadata?.name)).toEqual(["upf-0"]);
    expect(onA.metadata?.resourceVersion).toBe(s.state().kubernetes?.resourceVersion);
    const inCnf = await core.listNamespacedPod({ namespace: "cnf", labelSelector: "app in (upf)", limit: 1 });
    expect(inCnf.items).toHaveLength(1);
    expect(inCnf.metadata?._continue).toEqual(expect.any(String));
    const rest = await core.listNamespacedPod({
      namespace: "cnf",
      labelSelector: "app in (upf)",
      _continue: inCnf.metadata?._continue ?? "",
    });
    expect(rest.items.map((p) => p.metadata?.name)).toEqual(["upf-1"]);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const pools = (await custom.listNamespacedCustomObject({
      group: "whereabouts.cni.cncf.io",
      version: "v1alpha1",
      namespace: "kube-system",
      plural: "ippools",
    })) as { items: { spec: { range: string } }[] };
    expect(pools.items.map((p) => p.spec.range)).toEqual(["198.51.100.192/27"]);
  });

  it("watches with Watch: events and bookmarks", async () => {
    const { s, kc } = await start();
    const core = kc.makeApiClient(CoreV1Api);
    const rv = (await core.listNamespacedPod({ namespace: "cnf" })).metadata?.resourceVersion ?? "";
    const seen: string[] = [];
    let done: unknown = "open";
    const request = await new Watch(kc).watch(
      "/api/v1/namespaces/cnf/pods",
      { resourceVersion: rv, allowWatchBookmarks: true },
      (type, object: V1Pod) => seen.push(`${type} ${object.metadata?.name}`),
      (error) => {
        done = error;
      },
    );
    stops.push(() => request.abort());
    await control(s, "POST", "/kubernetes/pods", multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_B));
    await control(s, "DELETE", "/kubernetes/pods/cnf/upf-1");
    await eventually(() => seen.length === 2, "two events");
    expect(seen).toEqual(["ADDED upf-1", "DELETED upf-1"]);
    await control(s, "POST", "/kubernetes/watches/close");
    await eventually(() => done !== "open", "the done callback");
    expect(done).toBeNull();
  });

  it("runs an informer that sees ADDED, MODIFIED and DELETED, and resumes a watch the server broke from its resourceVersion", async () => {
    const { s, kc, requests } = await start();
    const core = kc.makeApiClient(CoreV1Api);
    // makeInformer's ListWatch; its type hides latestResourceVersion, which the resume check reads.
    const informer = makeInformer(kc, "/api/v1/pods", () =>
      core.listPodForAllNamespaces(),
    ) as ListWatch<V1Pod>;
    const seen: Seen[] = [];
    const record = (verb: string) => (pod: V1Pod) =>
      seen.push({ verb, name: pod.metadata?.name ?? "", rv: pod.metadata?.resourceVersion ?? "" });
    informer.on("add", record("add"));
    informer.on("update", record("update"));
    informer.on("delete", record("delete"));
    const errors: unknown[] = [];
    informer.on("error", (error) => errors.push(error));
    await informer.start();
    stops.push(() => informer.stop());
    await eventually(() => seen.length === 1, "the initial list");
    await control(s, "POST", "/kubernetes/pods", multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_B));
    await control(s, "PATCH", "/kubernetes/pods/cnf/upf-1", { metadata: { labels: { phase: "2" } } });
    await control(s, "DELETE", "/kubernetes/pods/cnf/upf-1");
    await eventually(() => seen.length === 4, "add, update, delete");
    expect(seen.map((e) => `${e.verb} ${e.name}`)).toEqual([
      "add upf-0",
      "add upf-1",
      "update upf-1",
      "delete upf-1",
    ]);

    const lastSeen = informer.latestResourceVersion();
    const before = requests.length;
    expect((await control(s, "POST", "/kubernetes/watches/close")).body).toEqual({ closed: 1 });
    await eventually(() => requests.length > before, "a new watch");
    expect(requests.slice(before)).toEqual([`GET /api/v1/pods?watch=true&resourceVersion=${lastSeen} 200`]);
    await control(s, "POST", "/kubernetes/pods", multusPod("upf-2", NODE_A, ["198.51.100.195"], MAC_A));
    await eventually(() => seen.length === 5, "the pod added after the break");
    expect(seen[4]?.name).toBe("upf-2");
    expect(
      informer
        .list()
        .map((p) => p.metadata?.name)
        .sort(),
    ).toEqual(["upf-0", "upf-2"]);
    expect(errors).toEqual([]);
  });

  it("relists on kubeExpireWatchResume's 410 when it resumes a broken watch, and sees what changed meanwhile", async () => {
    const { s, kc, requests } = await start();
    const core = kc.makeApiClient(CoreV1Api);
    const informer = makeInformer(kc, "/api/v1/pods", () =>
      core.listPodForAllNamespaces(),
    ) as ListWatch<V1Pod>;
    const seen: string[] = [];
    informer.on("add", (pod) => seen.push(`add ${pod.metadata?.name}`));
    informer.on("error", (error) => seen.push(`error ${String(error)}`));
    await informer.start();
    stops.push(() => informer.stop());
    await eventually(() => seen.length === 1, "the initial list");
    await control(s, "PUT", "/faults", { kubeExpireWatchResume: 1 });
    const before = requests.length;
    expect((await control(s, "POST", "/kubernetes/watches/close")).body).toEqual({ closed: 1 });
    await control(s, "POST", "/kubernetes/pods", multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_B));
    await eventually(() => seen.includes("add upf-1"), "the pod added while the watch was down");
    const after = requests.slice(before);
    expect(after[0]).toMatch(/^GET \/api\/v1\/pods\?watch=true&resourceVersion=\d+ 200$/);
    expect(after).toContain("GET /api/v1/pods 200");
    expect(seen).toEqual(["add upf-0", "add upf-1"]);
    expect((await control(s, "GET", "/faults")).body.kubeExpireWatchResume).toBe(0);
  });

  it("sees watches/close?reset=true as an error (Premature close), where a clean close is resumed silently", async () => {
    const { s, kc } = await start();
    const core = kc.makeApiClient(CoreV1Api);
    const informer = makeInformer(kc, "/api/v1/pods", () =>
      core.listPodForAllNamespaces(),
    ) as ListWatch<V1Pod>;
    const errors: string[] = [];
    informer.on("error", (error) => errors.push(String(error)));
    await informer.start();
    stops.push(() => informer.stop());
    await eventually(() => informer.list().length === 1, "the initial list");
    await control(s, "POST", "/kubernetes/watches/close?reset=true");
    await eventually(() => errors.length > 0, "the informer's error");
    expect(errors).toEqual(["Error: Premature close"]);
  });

  it("relists when its resourceVersion expired (410) while it watched only some pods", async () => {
    const { s, kc, requests } = await start();
    const core = kc.makeApiClient(CoreV1Api);
    // The selector hides most changes from the watch, so its resourceVersion falls behind: the case
    // bookmarks exist for, and which this informer (without bookmarks) meets as a 410.
    const informer = new ListWatch<V1Pod>(
      "/api/v1/pods",
      new Watch(kc),
      () => core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE_A}` }),
      false,
      undefined,
      `spec.nodeName=${NODE_A}`,
    );
    const seen: string[] = [];
    informer.on("add", (pod) => seen.push(`add ${pod.metadata?.name}`));
    informer.on("delete", (pod) => seen.push(`delete ${pod.metadata?.name}`));
    await informer.start();
    stops.push(() => informer.stop());
    await eventually(() => seen.length === 1, "the initial list");
    const stale = informer.latestResourceVersion();
    for (const name of ["b1", "b2", "b3"])
      await control(s, "POST", "/kubernetes/pods", multusPod(name, NODE_B, [], MAC_B));
    await control(s, "POST", "/kubernetes/compact");
    const before = requests.length;
    await control(s, "POST", "/kubernetes/watches/close");
    await eventually(
      () =>
        requests
          .slice(before)
          .some((r) => r.includes("watch=true") && !r.includes(`resourceVersion=${stale}&`)),
      "a watch after the relist",
    );
    const after = requests.slice(before);
    expect(after[0]).toContain(`watch=true&resourceVersion=${stale}&`);
    expect(after[1]).toMatch(/^GET \/api\/v1\/pods\?fieldSelector=spec\.nodeName%3D.* 200$/);
    expect(after[2]).toContain(`resourceVersion=${s.state().kubernetes?.resourceVersion}`);
    await control(s, "POST", "/kubernetes/pods", multusPod("a2", NODE_A, [], MAC_A));
    await eventually(() => seen.includes("add a2"), "the pod added after the relist");
    expect(seen).toEqual(["add upf-0", "add a2"]);
  });

  it("creates and renews a Lease with optimistic concurrency: a stale resourceVersion is 409 Conflict", async () => {
    const { kc } = await start();
    const leases = kc.makeApiClient(CoordinationV1Api);
    const body: V1Lease = {
      metadata: { name: "multus-ipmgr-reservations", namespace: "kube-system" },
      spec: {
        holderIdentity: "bridge-a",
        leaseDurationSeconds: 15,
        acquireTime: new Date(),
        renewTime: new Date(),
      },
    };
    const created = await leases.createNamespacedLease({ namespace: "kube-system", body });
    expect((await failure(leases.createNamespacedLease({ namespace: "kube-system", body }))).code).toBe(409);
    const renewed = await leases.replaceNamespacedLease({
      name: "multus-ipmgr-reservations",
      namespace: "kube-system",
      body: { ...created, spec: { ...created.spec, renewTime: new Date() } },
    });
    expect(renewed.metadata?.resourceVersion).not.toBe(created.metadata?.resourceVersion);
    const takeover = failure(
      leases.replaceNamespacedLease({
        name: "multus-ipmgr-reservations",
        namespace: "kube-system",
        body: { ...created, spec: { ...created.spec, holderIdentity: "bridge-b" } },
      }),
    );
    expect(await takeover).toEqual({ code: 409, status: expect.objectContaining({ reason: "Conflict" }) });
    const read = await leases.readNamespacedLease({
      name: "multus-ipmgr-reservations",
      namespace: "kube-system",
    });
    expect(read.spec?.holderIdentity).toBe("bridge-a");
  });

  it("creates Events through both Event APIs", async () => {
    const { s, kc } = await start();
    const regarding = { kind: "Pod", namespace: "cnf", name: "upf-0", apiVersion: "v1" };
    await kc.makeApiClient(EventsV1Api).createNamespacedEvent({
      namespace: "cnf",
      body: {
        metadata: { generateName: "upf-0." },
        eventTime: new Date(),
        reportingController: "multus-ipmgr.example.com/bridge",
        reportingInstance: "bridge-a",
        action: "AssignAddresses",
        reason: "AddressesAssigned",
        type: "Normal",
        note: "198.51.100.193 assigned to eni-0a1",
        regarding,
      },
    });
    await kc.makeApiClient(CoreV1Api).createNamespacedEvent({
      namespace: "cnf",
      body: {
        metadata: { generateName: "upf-0." },
        involvedObject: regarding,
        reason: "AddressesNotAssigned",
        message: "ec2:AssignPrivateIpAddresses is not allowed",
        type: "Warning",
      },
    });
    const events = (s.state().kubernetes?.events ?? []) as unknown as {
      reason: string;
      involvedObject: { name: string };
    }[];
    expect(events.map((e) => `${e.reason} ${e.involvedObject.name}`).sort()).toEqual([
      "AddressesAssigned upf-0",
      "AddressesNotAssigned upf-0",
    ]);
  });
});
