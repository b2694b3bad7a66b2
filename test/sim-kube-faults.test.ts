/**
 * The Kubernetes API's faults (`kube*` in PUT /faults), each through real HTTP to the simulator on
 * 127.0.0.1: refused connections, a silent freeze, watches dropped or reset, 410 on resume, injected
 * error statuses, latency and requests that never answer.
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseWorld, type SimulatorHandle, type SimulatorOptions } from "../src/sim/index.js";
import {
  control,
  eventually,
  kube,
  kubeEndpointOf,
  kubeWorld,
  MAC_B,
  multusPod,
  NODE_B,
  openWatch,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { ManualClock } from "./helpers/manual-clock.js";

let sim: SimulatorHandle | undefined;
/** What the simulator reports as its own failures: none is expected under any fault. */
let errors: string[] = [];

afterEach(async () => {
  await sim?.close();
  sim = undefined;
  expect(errors).toEqual([]);
  errors = [];
});

async function start(kubernetes: Record<string, unknown> = {}, options: SimulatorOptions = {}) {
  sim = await startKubeSim(kubeWorld(kubernetes), { errorLog: (line) => errors.push(line), ...options });
  return sim;
}

async function setFaults(s: SimulatorHandle, faults: Record<string, unknown>): Promise<void> {
  const answer = await control(s, "PUT", "/faults", faults);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** "answered" when `request` settles within `ms`, "pending" otherwise (the request is left running). */
async function within(request: Promise<unknown>, ms: number): Promise<"answered" | "pending"> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<"pending">((resolve) => {
    timer = setTimeout(() => resolve("pending"), ms);
  });
  const answered = request.then(
    () => "answered" as const,
    () => "answered" as const,
  );
  try {
    return await Promise.race([answered, pending]);
  } finally {
    clearTimeout(timer);
  }
}

/** The error code under a failed fetch (ECONNREFUSED, ECONNRESET, ...), or the error's name. */
async function fetchFailure(request: Promise<unknown>): Promise<string> {
  try {
    await request;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code ?? (error as Error).name;
  }
  return "no failure";
}

const listPods = (s: SimulatorHandle, init: RequestInit = {}) =>
  fetch(`${kubeEndpointOf(s)}/api/v1/pods`, init);

async function currentResourceVersion(s: SimulatorHandle): Promise<string> {
  return (await kube(s, "GET", "/api/v1/pods")).body.metadata.resourceVersion;
}

describe("Kubernetes API faults", () => {
  it("kubeRefuseConnections refuses new connections and resets open watches; false listens again on the same port", async () => {
    const s = await start();
    const watch = await openWatch(s, "/api/v1/pods?watch=true");
    await watch.until(1);
    await setFaults(s, { kubeRefuseConnections: true });
    await expect(watch.ended).rejects.toThrow();
    expect(await fetchFailure(listPods(s))).toBe("ECONNREFUSED");
    await setFaults(s, { kubeRefuseConnections: false });
    await eventually(async () => (await fetchFailure(listPods(s))) === "no failure", "listening again");
    expect((await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-0")).status).toBe(200);
  });

  it("kubeFreeze: watches go silent (no events, no bookmarks), requests get no answer; lifting it ends the frozen watches and answers the held requests", async () => {
    const s = await start({ bookmarkIntervalSeconds: 0.05 });
    const rv = await currentResourceVersion(s);
    const watch = await openWatch(
      s,
      `/api/v1/pods?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true`,
    );
    await watch.until(1);
    expect(watch.events[0]?.type).toBe("BOOKMARK");
    await setFaults(s, { kubeFreeze: true });
    const seen = watch.events.length;
    await control(s, "POST", "/kubernetes/pods", multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_B));
    const held = listPods(s);
    expect(await within(held, 400)).toBe("pending");
    // Silent: nothing arrived in 400 ms, though a bookmark is due every 50 ms and a pod was added.
    expect(watch.events.length).toBe(seen);
    expect(await fetchFailure(listPods(s, { signal: AbortSignal.timeout(200) }))).toBe("TimeoutError");
    await setFaults(s, { kubeFreeze: false });
    expect((await held).status).toBe(200);
    await watch.ended;
    expect(watch.events.some((e) => e.type === "ADDED")).toBe(false);
    // The client resumes from what it has and gets what the freeze held back.
    const last = watch.events.at(-1)?.object.metadata.resourceVersion;
    const resumed = await openWatch(s, `/api/v1/pods?watch=true&resourceVersion=${last}`);
    const [added] = await resumed.until(1);
    expect(added).toMatchObject({ type: "ADDED", object: { metadata: { name: "upf-1" } } });
    resumed.close();
  });

  it("POST /kubernetes/watches/close ends watches cleanly; ?reset=true destroys their connections", async () => {
    const s = await start();
    const clean = await openWatch(s, "/api/v1/pods?watch=true");
    await clean.until(1);
    expect((await control(s, "POST", "/kubernetes/watches/close")).body).toEqual({ closed: 1 });
    await clean.ended;
    const reset = await openWatch(s, "/api/v1/pods?watch=true");
    await reset.until(1);
    expect((await control(s, "POST", "/kubernetes/watches/close?reset=true")).body).toEqual({ closed: 1 });
    await expect(reset.ended).rejects.toThrow();
    expect((await control(s, "POST", "/kubernetes/watches/close?reset=yes")).status).toBe(400);
  });

  it("kubeExpireWatchResume answers the next N resumes with ERROR 410 Expired, then resumes work again", async () => {
    const s = await start();
    await setFaults(s, { kubeExpireWatchResume: 1 });
    // A watch that does not resume (no resourceVersion) is not one of them.
    const fresh = await openWatch(s, "/api/v1/pods?watch=true");
    await fresh.until(1);
    fresh.close();
    const rv = await currentResourceVersion(s);
    const expired = await openWatch(s, `/api/v1/pods?watch=true&resourceVersion=${rv}`);
    await expired.ended;
    expect(expired.events).toEqual([
      {
        type: "ERROR",
        object: expect.objectContaining({
          kind: "Status",
          code: 410,
          reason: "Expired",
          message: `too old resource version: ${rv} (${rv})`,
        }),
      },
    ]);
    expect((await control(s, "GET", "/faults")).body.kubeExpireWatchResume).toBe(0);
    const resumed = await openWatch(s, `/api/v1/pods?watch=true&resourceVersion=${rv}`);
    await control(s, "POST", "/kubernetes/pods", multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_B));
    expect((await resumed.until(1))[0]?.type).toBe("ADDED");
    resumed.close();
  });

  it("kubeErrorStatus answers every request with a Status of that code, until cleared", async () => {
    const s = await start();
    await setFaults(s, { kubeErrorStatus: { code: 503 } });
    for (const path of ["/api/v1/pods", "/api/v1/namespaces/cnf/pods/upf-0", "/version", "/api/v1"]) {
      expect((await kube(s, "GET", path)).body).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "the server is currently unable to handle the request",
        reason: "ServiceUnavailable",
        ...(path.includes("pods") ? { details: { kind: "pods" } } : {}),
        code: 503,
      });
    }
    const watch = await kube(s, "GET", "/api/v1/pods?watch=true");
    expect(watch.status).toBe(503);
    await setFaults(s, { kubeErrorStatus: { code: 500, message: "etcdserver: request timed out" } });
    expect((await kube(s, "GET", "/api/v1/pods")).body).toMatchObject({
      code: 500,
      reason: "InternalError",
      message: "etcdserver: request timed out",
    });
    await setFaults(s, { kubeErrorStatus: { code: 429 } });
    const throttled = await kube(s, "GET", "/api/v1/pods");
    expect(throttled.headers.get("retry-after")).toBe("1");
    expect(throttled.body).toMatchObject({ reason: "TooManyRequests", details: { retryAfterSeconds: 1 } });
    await setFaults(s, { kubeErrorStatus: null });
    expect((await kube(s, "GET", "/api/v1/pods")).status).toBe(200);
  });

  it("kubeErrorStatus limited to resources and verbs: a 403 with the RBAC wording, a 404 as for a missing CRD; the rest served", async () => {
    const s = await start();
    await setFaults(s, { kubeErrorStatus: { code: 403, resources: ["pods"], verbs: ["list", "watch"] } });
    expect((await kube(s, "GET", "/api/v1/pods")).body).toMatchObject({
      code: 403,
      reason: "Forbidden",
      message:
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope',
    });
    expect((await kube(s, "GET", "/api/v1/namespaces/cnf/pods?watch=true")).body.message).toBe(
      'pods is forbidden: User "system:anonymous" cannot watch resource "pods" in API group "" in the namespace "cnf"',
    );
    expect((await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-0")).status).toBe(200);
    expect((await kube(s, "GET", "/api/v1/nodes")).status).toBe(200);
    await setFaults(s, { kubeErrorStatus: { code: 404, resources: ["ippools"] } });
    expect((await kube(s, "GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/ippools")).body).toMatchObject({
      code: 404,
      reason: "NotFound",
      message: "the server could not find the requested resource",
      details: { kind: "ippools", group: "whereabouts.cni.cncf.io" },
    });
    expect((await kube(s, "GET", "/api/v1/pods")).status).toBe(200);
  });

  it("kubeErrorStatus with seconds lifts itself when they are over", async () => {
    const clock = new ManualClock();
    const s = await start({}, { clock });
    await setFaults(s, { kubeErrorStatus: { code: 500, seconds: 30 } });
    expect((await control(s, "GET", "/faults")).body.kubeErrorStatus).toEqual({
      code: 500,
      seconds: 30,
      expiresAt: new Date(clock.now() + 30_000).toISOString(),
    });
    await clock.advance(29_000);
    expect((await kube(s, "GET", "/api/v1/pods")).status).toBe(500);
    await clock.advance(1_000);
    expect((await kube(s, "GET", "/api/v1/pods")).status).toBe(200);
    expect((await control(s, "GET", "/faults")).body.kubeErrorStatus).toBeNull();
  });

  it("kubeLatencyMs delays every answer by that long on the simulator's clock", async () => {
    const clock = new ManualClock();
    const s = await start({}, { clock });
    await setFaults(s, { kubeLatencyMs: 2_000 });
    const answer = kube(s, "GET", "/api/v1/pods");
    await eventually(() => clock.sleeps.includes(2_000), "the request waiting out its latency");
    expect(await within(answer, 100)).toBe("pending");
    await clock.advance(2_000);
    expect((await answer).status).toBe(200);
  });

  it("kubeHangVerbs: a list never answers (the client's timeout fires), other verbs are served; dropping the verb answers the held lists", async () => {
    const s = await start();
    await setFaults(s, { kubeHangVerbs: ["list"] });
    expect(await fetchFailure(listPods(s, { signal: AbortSignal.timeout(300) }))).toBe("TimeoutError");
    expect((await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-0")).status).toBe(200);
    const watch = await openWatch(s, "/api/v1/pods?watch=true");
    await watch.until(1);
    watch.close();
    const held = listPods(s);
    expect(await within(held, 300)).toBe("pending");
    await setFaults(s, { kubeHangVerbs: [] });
    expect((await held).status).toBe(200);
  });

  it("refuses kube faults for a world without a kubernetes section, in PUT /faults and in the world file", async () => {
    const world = kubeWorld();
    const { kubernetes: _k, ...withoutKube } = world;
    sim = await startKubeSim(withoutKube);
    const answer = await control(sim, "PUT", "/faults", { kubeFreeze: true });
    expect(answer).toEqual({
      status: 400,
      body: {
        error: "kubeFreeze: the world has no kubernetes section, so there is no Kubernetes API to fail",
      },
    });
    const raw = {
      region: "us-east-1",
      vpc: { id: "vpc-0kube", cidr: "198.51.100.0/24" },
      subnets: [],
      instances: [],
      faults: { kubeLatencyMs: 5 },
    };
    expect(() => parseWorld(raw)).toThrow(
      "faults.kubeLatencyMs: acts on the Kubernetes API: add a kubernetes section, or remove it",
    );
  });
});
