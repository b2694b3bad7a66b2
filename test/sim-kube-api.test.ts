import { afterEach, describe, expect, it } from "vitest";
import type { SimulatorHandle } from "../src/sim/index.js";
import {
  control,
  eventually,
  kube,
  kubeEndpointOf,
  kubeWorld,
  MAC_A,
  multusPod,
  NODE_A,
  NODE_B,
  type OpenWatch,
  openWatch,
  startKubeSim,
} from "./helpers/kube-worlds.js";

let sim: SimulatorHandle | undefined;
const watches: OpenWatch[] = [];

afterEach(async () => {
  for (const w of watches.splice(0)) w.close();
  await sim?.close();
  sim = undefined;
});

async function start(kubernetes: Record<string, unknown> = {}): Promise<SimulatorHandle> {
  sim = await startKubeSim(kubeWorld(kubernetes));
  return sim;
}

async function watch(s: SimulatorHandle, path: string): Promise<OpenWatch> {
  const w = await openWatch(s, path);
  watches.push(w);
  return w;
}

const pod = (name: string, labels: Record<string, string> = {}, nodeName = NODE_A) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, labels },
  spec: { nodeName, containers: [{ name: "app", image: "registry.example/app:1" }] },
});

const lease = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: "coordination.k8s.io/v1",
  kind: "Lease",
  metadata: { name, ...extra },
  spec: { holderIdentity: "replica-a", leaseDurationSeconds: 15 },
});

describe("discovery", () => {
  it("serves /version, /api, /api/v1, /apis and each group version's APIResourceList", async () => {
    const s = await start();
    expect((await kube(s, "GET", "/version")).body).toMatchObject({ major: "1", minor: "31" });
    expect((await kube(s, "GET", "/api")).body).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const core = (await kube(s, "GET", "/api/v1")).body;
    expect(core.kind).toBe("APIResourceList");
    expect(core.resources.find((r: { name: string }) => r.name === "pods")).toEqual({
      name: "pods",
      singularName: "pod",
      namespaced: true,
      kind: "Pod",
      verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
      shortNames: ["po"],
      categories: ["all"],
    });
    expect(core.resources.find((r: { name: string }) => r.name === "nodes")).toMatchObject({
      namespaced: false,
      verbs: ["get", "list", "patch", "watch"],
    });
    const groups = (await kube(s, "GET", "/apis")).body;
    expect(groups.kind).toBe("APIGroupList");
    expect(
      groups.groups.map(
        (g: { name: string; preferredVersion: { groupVersion: string } }) => g.preferredVersion.groupVersion,
      ),
    ).toEqual([
      "coordination.k8s.io/v1",
      "events.k8s.io/v1",
      "k8s.cni.cncf.io/v1",
      "whereabouts.cni.cncf.io/v1alpha1",
      "apps/v1",
      "rbac.authorization.k8s.io/v1",
      "monitoring.coreos.com/v1",
    ]);
    const whereabouts = (await kube(s, "GET", "/apis/whereabouts.cni.cncf.io/v1alpha1")).body;
    expect(whereabouts.resources.map((r: { kind: string }) => r.kind)).toEqual([
      "IPPool",
      "OverlappingRangeIPReservation",
      "NodeSlicePool",
    ]);
    expect((await kube(s, "GET", "/apis/k8s.cni.cncf.io")).body).toMatchObject({
      kind: "APIGroup",
      name: "k8s.cni.cncf.io",
    });
  });

  it("answers an unknown path with a NotFound Status", async () => {
    const s = await start();
    expect(await kube(s, "GET", "/apis/batch/v1/jobs")).toMatchObject({
      status: 404,
      body: { kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 },
    });
  });
});

describe("the world's objects", () => {
  it("has nodes named as EKS names them, pods with Multus' annotation, the NAD and the IPPool", async () => {
    const s = await start();
    const node = (await kube(s, "GET", `/api/v1/nodes/${NODE_A}`)).body;
    expect(node.spec.providerID).toBe("aws:///us-east-1a/i-0a");
    expect(node.metadata.labels["topology.kubernetes.io/zone"]).toBe("us-east-1a");
    expect(node.status.addresses[0]).toEqual({ type: "InternalIP", address: "198.51.100.10" });
    const upf = (await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-0")).body;
    expect(upf.spec.nodeName).toBe(NODE_A);
    expect(JSON.parse(upf.metadata.annotations["k8s.v1.cni.cncf.io/network-status"])[1]).toEqual({
      name: "cnf/multus-ipvlan",
      interface: "net1",
      ips: ["198.51.100.193"],
      mac: MAC_A,
    });
    expect(upf.status).toMatchObject({ phase: "Running", podIP: "198.51.100.30", hostIP: "198.51.100.10" });
    const nad = (
      await kube(
        s,
        "GET",
        "/apis/k8s.cni.cncf.io/v1/namespaces/cnf/network-attachment-definitions/multus-ipvlan",
      )
    ).body;
    expect(JSON.parse(nad.spec.config).ipam.range).toBe("198.51.100.192/27");
    const pool = (
      await kube(
        s,
        "GET",
        "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools/198.51.100.192-27",
      )
    ).body;
    expect(pool.spec.allocations["1"]).toEqual({ id: "c0ffee", podref: "cnf/upf-0", ifname: "net1" });
    expect(s.state().kubernetes?.pods.map((p) => p.metadata.name)).toEqual(["upf-0"]);
  });
});

describe("list", () => {
  it("answers a typed list with the resourceVersion it was read at; custom resources keep apiVersion and kind", async () => {
    const s = await start();
    const pods = (await kube(s, "GET", "/api/v1/pods")).body;
    expect(pods).toMatchObject({
      kind: "PodList",
      apiVersion: "v1",
      metadata: { resourceVersion: s.state().kubernetes?.resourceVersion },
    });
    expect(pods.items[0].kind).toBeUndefined();
    const nads = (await kube(s, "GET", "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions")).body;
    expect(nads.kind).toBe("NetworkAttachmentDefinitionList");
    expect(nads.items[0]).toMatchObject({
      apiVersion: "k8s.cni.cncf.io/v1",
      kind: "NetworkAttachmentDefinition",
    });
  });

  it("filters by field selector (spec.nodeName, metadata.*) and label selector (equality and sets)", async () => {
    const s = await start();
    await kube(s, "POST", "/api/v1/namespaces/cnf/pods", pod("b1", { app: "smf", tier: "control" }, NODE_B));
    await kube(s, "POST", "/api/v1/namespaces/default/pods", pod("d1", { app: "amf" }));
    const names = async (query: string) =>
      (await kube(s, "GET", `/api/v1/pods?${query}`)).body.items.map(
        (p: { metadata: { name: string } }) => p.metadata.name,
      );
    expect(await names(`fieldSelector=spec.nodeName%3D${NODE_A}`)).toEqual(["upf-0", "d1"]);
    expect(await names("fieldSelector=metadata.namespace%3Dcnf,metadata.name!%3Dupf-0")).toEqual(["b1"]);
    expect(await names("labelSelector=app+in+(upf,amf)")).toEqual(["upf-0", "d1"]);
    expect(await names("labelSelector=app+notin+(upf),!tier")).toEqual(["d1"]);
    expect(await names("labelSelector=tier")).toEqual(["b1"]);
    expect(
      (await kube(s, "GET", "/api/v1/namespaces/cnf/pods?labelSelector=app%3Dsmf")).body.items,
    ).toHaveLength(1);
  });

  it("refuses a field the resource does not offer, and a malformed selector, with 400", async () => {
    const s = await start();
    expect((await kube(s, "GET", "/api/v1/pods?fieldSelector=spec.hostname%3Dx")).body).toMatchObject({
      code: 400,
      reason: "BadRequest",
      message: "field label not supported: spec.hostname",
    });
    expect(
      (
        await kube(
          s,
          "GET",
          "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions?fieldSelector=spec.config%3Dx",
        )
      ).body.message,
    ).toBe('"spec.config" is not a known field selector: only "metadata.name", "metadata.namespace"');
    const bad = await kube(s, "GET", "/api/v1/pods?labelSelector=app+in+upf");
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("unable to parse requirement");
  });

  it("pages with limit and continue over one consistent snapshot, counting what remains", async () => {
    const s = await start();
    for (const name of ["p1", "p2", "p3", "p4"])
      await kube(s, "POST", "/api/v1/namespaces/default/pods", pod(name));
    const first = (await kube(s, "GET", "/api/v1/namespaces/default/pods?limit=3")).body;
    expect(first.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual([
      "p1",
      "p2",
      "p3",
    ]);
    expect(first.metadata.remainingItemCount).toBe(1);
    // Changes after the first page do not show in the next ones.
    await kube(s, "DELETE", "/api/v1/namespaces/default/pods/p4");
    await kube(s, "POST", "/api/v1/namespaces/default/pods", pod("p5"));
    const second = (
      await kube(s, "GET", `/api/v1/namespaces/default/pods?limit=3&continue=${first.metadata.continue}`)
    ).body;
    expect(second.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(["p4"]);
    expect(second.metadata.continue).toBeUndefined();
    expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
  });

  it("answers an expired continue token with 410 Expired and an inconsistent token to go on with", async () => {
    const s = await start();
    for (const name of ["p1", "p2", "p3"])
      await kube(s, "POST", "/api/v1/namespaces/default/pods", pod(name));
    const first = (await kube(s, "GET", "/api/v1/namespaces/default/pods?limit=1")).body;
    await kube(s, "POST", "/api/v1/namespaces/default/pods", pod("p4"));
    await control(s, "POST", "/kubernetes/compact");
    const gone = await kube(
      s,
      "GET",
      `/api/v1/namespaces/default/pods?limit=1&continue=${first.metadata.continue}`,
    );
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({ kind: "Status", reason: "Expired", code: 410 });
    const rest = (
      await kube(s, "GET", `/api/v1/namespaces/default/pods?continue=${gone.body.metadata.continue}`)
    ).body;
    expect(rest.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual([
      "p2",
      "p3",
      "p4",
    ]);
    expect((await kube(s, "GET", "/api/v1/pods?continue=garbage")).status).toBe(400);
  });

  it("serves resourceVersionMatch=Exact from history, and 504 for a resourceVersion from the future", async () => {
    const s = await start();
    const before = (await kube(s, "GET", "/api/v1/namespaces/default/pods")).body.metadata.resourceVersion;
    await kube(s, "POST", "/api/v1/namespaces/default/pods", pod("p1"));
    const exact = (
      await kube(
        s,
        "GET",
        `/api/v1/namespaces/default/pods?resourceVersion=${before}&resourceVersionMatch=Exact`,
      )
    ).body;
    expect(exact.items).toEqual([]);
    expect(exact.metadata.resourceVersion).toBe(before);
    const future = await kube(s, "GET", "/api/v1/pods?resourceVersion=99999");
    expect(future.status).toBe(504);
    expect(future.body.details.causes[0].reason).toBe("ResourceVersionTooLarge");
  });
});

describe("watch", () => {
  it("streams ADDED, MODIFIED and DELETED as chunked newline-delimited JSON from the list's resourceVersion", async () => {
    const s = await start({ kubelet: false }); // only the API's own changes
    const rv = (await kube(s, "GET", "/api/v1/namespaces/default/pods")).body.metadata.resourceVersion;
    const w = await watch(s, `/api/v1/namespaces/default/pods?watch=true&resourceVersion=${rv}`);
    expect(w.status).toBe(200);
    expect(w.headers.get("transfer-encoding")).toBe("chunked");
    expect(w.headers.get("content-type")).toBe("application/json");
    const created = (await kube(s, "POST", "/api/v1/namespaces/default/pods", pod("p1"))).body;
    await kube(
      s,
      "PATCH",
      "/api/v1/namespaces/default/pods/p1",
      { metadata: { labels: { a: "b" } } },
      "application/merge-patch+json",
    );
    await kube(s, "DELETE", "/api/v1/namespaces/default/pods/p1?gracePeriodSeconds=0");
    const events = await w.until(3);
    expect(events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
    expect(events[0]?.object).toMatchObject({
      kind: "Pod",
      apiVersion: "v1",
      metadata: { uid: created.metadata.uid },
    });
    const versions = events.map((e) => Number(e.object.metadata.resourceVersion));
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(w.chunks.join("")).toMatch(/^(\{.*\}\n)+$/);
  });

  it("resumes from a resourceVersion with only the later changes, and starts from the current objects without one", async () => {
    const s = await start({ kubelet: false }); // only the API's own changes
    const p1 = (await kube(s, "POST", "/api/v1/namespaces/default/pods", pod("p1"))).body;
    await kube(s, "POST", "/api/v1/namespaces/default/pods", pod("p2"));
    const resumed = await watch(
      s,
      `/api/v1/namespaces/default/pods?watch=1&resourceVersion=${p1.metadata.resourceVersion}`,
    );
    expect((await resumed.until(1)).map((e) => e.object.metadata.name)).toEqual(["p2"]);
    const fresh = await watch(s, "/api/v1/namespaces/default/pods?watch=true");
    expect((await fresh.until(2)).map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
      "ADDED p1",
      "ADDED p2",
    ]);
  });

  it("answers a too old resourceVersion with an ERROR event carrying a 410 Expired Status, then ends", async () => {
    const s = await start();
    const old = (await kube(s, "GET", "/api/v1/pods")).body.metadata.resourceVersion;
    await kube(s, "POST", "/api/v1/namespaces/default/pods", pod("p1"));
    await control(s, "POST", "/kubernetes/compact");
    const w = await watch(s, `/api/v1/pods?watch=true&resourceVersion=${old}`);
    expect(w.status).toBe(200);
    await w.ended;
    expect(w.events).toEqual([
      {
        type: "ERROR",
        object: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: `too old resource version: ${old} (${s.state().kubernetes?.resourceVersion})`,
          reason: "Expired",
          code: 410,
        },
      },
    ]);
  });

  it("keeps a bounded history (eventHistory): resuming from past it is 410", async () => {
    const s = await start({ eventHistory: 3 });
    const old = (await kube(s, "GET", "/api/v1/pods")).body.metadata.resourceVersion;
    for (const name of ["p1", "p2", "p3", "p4"])
      await kube(s, "POST", "/api/v1/namespaces/default/pods", pod(name));
    const w = await watch(s, `/api/v1/pods?watch=true&resourceVersion=${old}`);
    await w.ended;
    expect(w.events[0]?.object.code).toBe(410);
  });

  it("sends BOOKMARKs with the latest resourceVersion when allowWatchBookmarks=true, never otherwise", async () => {
    const s = await start({ bookmarkIntervalSeconds: 0.05 });
    const rv = (await kube(s, "GET", "/api/v1/pods")).body.metadata.resourceVersion;
    const selective = await watch(
      s,
      `/api/v1/pods?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true&labelSelector=app%3Dnone`,
    );
    const plain = await watch(s, `/api/v1/pods?watch=true&resourceVersion=${rv}&labelSelector=app%3Dnone`);
    const lease1 = (
      await kube(s, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease("l1"))
    ).body;
    await eventually(
      () =>
        selective.events.some((e) => e.object.metadata.resourceVersion === lease1.metadata.resourceVersion),
      "a bookmark past the lease's change",
    );
    expect(selective.events[0]).toEqual({
      type: "BOOKMARK",
      object: { kind: "Pod", apiVersion: "v1", metadata: { resourceVersion: expect.any(String) } },
    });
    expect(new Set(selective.events.map((e) => e.type))).toEqual(new Set(["BOOKMARK"]));
    expect(plain.events).toEqual([]);
  });

  it("marks the end of the initial events with a bookmark when sendInitialEvents=true", async () => {
    const s = await start();
    const w = await watch(
      s,
      "/api/v1/namespaces/cnf/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
    );
    const events = await w.until(2);
    expect(events.map((e) => e.type)).toEqual(["ADDED", "BOOKMARK"]);
    expect(events[1]?.object.metadata.annotations).toEqual({ "k8s.io/initial-events-end": "true" });
  });

  it("follows selectors: an object that stops matching is DELETED from the watch, one that starts is ADDED", async () => {
    const s = await start();
    const w = await watch(
      s,
      `/api/v1/pods?watch=true&labelSelector=app%3Dupf&fieldSelector=spec.nodeName%3D${NODE_A}`,
    );
    await w.until(1);
    const relabel = (app: string) =>
      kube(
        s,
        "PATCH",
        "/api/v1/namespaces/cnf/pods/upf-0",
        { metadata: { labels: { app } } },
        "application/strategic-merge-patch+json",
      );
    await relabel("other");
    await relabel("upf");
    await kube(s, "POST", "/api/v1/namespaces/cnf/pods", pod("elsewhere", { app: "upf" }, NODE_B));
    await relabel("upf2");
    const events = await w.until(4);
    expect(events.map((e) => `${e.type} ${e.object.metadata.labels.app}`)).toEqual([
      "ADDED upf",
      "DELETED other",
      "ADDED upf",
      "DELETED upf2",
    ]);
  });

  it("ends after timeoutSeconds", async () => {
    const s = await start();
    const w = await watch(s, "/api/v1/nodes?watch=true&timeoutSeconds=1");
    await w.ended;
    expect(w.events.map((e) => e.type)).toEqual(["ADDED", "ADDED"]);
  });

  it("ends every open watch when the simulator closes, so that close() returns", async () => {
    const s = await start();
    const w = await watch(s, "/api/v1/pods?watch=true");
    await w.until(1);
    await s.close();
    sim = undefined;
    await w.ended;
  });
});

describe("writes", () => {
  it("creates with server-set metadata, and answers a second create with 409 AlreadyExists", async () => {
    const s = await start();
    const created = await kube(
      s,
      "POST",
      "/apis/coordination.k8s.io/v1/namespaces/default/leases",
      lease("l1"),
    );
    expect(created.status).toBe(201);
    expect(created.body.metadata).toMatchObject({
      name: "l1",
      namespace: "default",
      uid: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(created.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(
      await kube(s, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease("l1")),
    ).toEqual({
      status: 409,
      headers: expect.anything(),
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: 'leases.coordination.k8s.io "l1" already exists',
        reason: "AlreadyExists",
        details: { name: "l1", group: "coordination.k8s.io", kind: "leases" },
        code: 409,
      },
    });
  });

  it("creates a pod with status.phase Pending and its QoS class, whatever status the body carries", async () => {
    const s = await start({ kubelet: false });
    const body = { ...pod("p1", {}, ""), status: { phase: "Running", podIP: "198.51.100.99" } };
    delete (body.spec as { nodeName?: string }).nodeName;
    const created = await kube(s, "POST", "/api/v1/namespaces/default/pods", body);
    expect(created.body.status).toEqual({ phase: "Pending", qosClass: "BestEffort" });
    const limited = pod("p2");
    limited.spec.containers = [
      {
        name: "app",
        image: "registry.example/app:1",
        resources: { limits: { cpu: "1", memory: "1Gi" } },
      } as (typeof limited.spec.containers)[number],
    ];
    expect((await kube(s, "POST", "/api/v1/namespaces/default/pods", limited)).body.status).toEqual({
      phase: "Pending",
      qosClass: "Guaranteed",
    });
    expect((await kube(s, "GET", "/api/v1/namespaces/default/pods/p1")).body.status.phase).toBe("Pending");
  });

  it("answers an update with a stale resourceVersion with 409 Conflict, and a current one with a new version", async () => {
    const s = await start();
    const created = (
      await kube(s, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease("l1"))
    ).body;
    const renewed = { ...created, spec: { ...created.spec, holderIdentity: "replica-b" } };
    const first = await kube(s, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l1", renewed);
    expect(first.status).toBe(200);
    expect(Number(first.body.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.metadata.resourceVersion),
    );
    const stale = await kube(s, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l1", renewed);
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({
      reason: "Conflict",
      message:
        'Operation cannot be fulfilled on leases.coordination.k8s.io "l1": the object has been modified; please apply your changes to the latest version and try again',
    });
    // The same body again changes nothing: no new resourceVersion.
    const again = await kube(
      s,
      "PUT",
      "/apis/coordination.k8s.io/v1/namespaces/default/leases/l1",
      first.body,
    );
    expect(again.body.metadata.resourceVersion).toBe(first.body.metadata.resourceVersion);
  });

  it("requires a resourceVersion to update a custom resource, and bumps its generation on a spec change", async () => {
    const s = await start();
    const path = "/apis/k8s.cni.cncf.io/v1/namespaces/cnf/network-attachment-definitions/multus-ipvlan";
    const nad = (await kube(s, "GET", path)).body;
    const { resourceVersion: _rv, ...metadata } = nad.metadata;
    const unconditional = await kube(s, "PUT", path, { ...nad, metadata });
    expect(unconditional.status).toBe(422);
    expect(unconditional.body.details.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        message: "Invalid value: 0x0: must be specified for an update",
        field: "metadata.resourceVersion",
      },
    ]);
    const updated = (await kube(s, "PUT", path, { ...nad, spec: { config: "{}" } })).body;
    expect([nad.metadata.generation, updated.metadata.generation]).toEqual([1, 2]);
  });

  it("answers 404 NotFound, 422 Invalid and a missing namespace as the API server does", async () => {
    const s = await start();
    expect((await kube(s, "GET", "/api/v1/namespaces/cnf/pods/nope")).body).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'pods "nope" not found',
      reason: "NotFound",
      details: { name: "nope", kind: "pods" },
      code: 404,
    });
    const invalid = await kube(s, "POST", "/api/v1/namespaces/cnf/pods", { ...pod("Bad_Name"), spec: {} });
    expect(invalid.status).toBe(422);
    expect(invalid.body.message).toMatch(
      /^Pod "Bad_Name" is invalid: \[metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
    );
    expect(invalid.body.details.causes.map((c: { field: string }) => c.field)).toEqual([
      "metadata.name",
      "spec.containers",
    ]);
    expect((await kube(s, "POST", "/api/v1/namespaces/nowhere/pods", pod("p1"))).body).toMatchObject({
      code: 404,
      message: 'namespaces "nowhere" not found',
    });
    expect(
      (
        await kube(s, "POST", "/api/v1/namespaces/cnf/pods", {
          ...pod("p1"),
          metadata: { name: "p1", namespace: "other" },
        })
      ).body,
    ).toMatchObject({
      code: 400,
      message: "the namespace of the provided object does not match the namespace sent on the request",
    });
    expect((await kube(s, "PUT", `/api/v1/nodes/${NODE_A}`, {})).status).toBe(405);
  });

  it("patches with merge, strategic merge and JSON patch; a stale resourceVersion in a patch is a conflict", async () => {
    const s = await start();
    const path = "/api/v1/namespaces/cnf/pods/upf-0";
    const merged = await kube(
      s,
      "PATCH",
      path,
      { metadata: { annotations: { x: "1" } } },
      "application/merge-patch+json",
    );
    expect(merged.body.metadata.annotations.x).toBe("1");
    const smp = await kube(
      s,
      "PATCH",
      path,
      { spec: { containers: [{ name: "sidecar", image: "s:1" }] } },
      "application/strategic-merge-patch+json",
    );
    expect(smp.body.spec.containers.map((c: { name: string }) => c.name)).toEqual(["app", "sidecar"]);
    const json = await kube(
      s,
      "PATCH",
      path,
      [{ op: "replace", path: "/metadata/labels/app", value: "smf" }],
      "application/json-patch+json",
    );
    expect(json.body.metadata.labels.app).toBe("smf");
    const stale = await kube(
      s,
      "PATCH",
      path,
      { metadata: { resourceVersion: merged.body.metadata.resourceVersion, labels: { a: "b" } } },
      "application/merge-patch+json",
    );
    expect(stale.body.reason).toBe("Conflict");
    const nad = "/apis/k8s.cni.cncf.io/v1/namespaces/cnf/network-attachment-definitions/multus-ipvlan";
    expect(
      (await kube(s, "PATCH", nad, { spec: { config: "{}" } }, "application/strategic-merge-patch+json"))
        .status,
    ).toBe(415);
    expect(
      (await kube(s, "PATCH", nad, { spec: { config: "{}" } }, "application/vnd.example+json")).body,
    ).toMatchObject({ code: 415, reason: "UnsupportedMediaType" });
    expect(
      (
        await kube(
          s,
          "PATCH",
          path,
          [{ op: "test", path: "/spec/nodeName", value: "x" }],
          "application/json-patch+json",
        )
      ).status,
    ).toBe(422);
  });

  it("patches a node's taints (as kubectl taint and attach mode's startup taint do), seen by a watch", async () => {
    const s = await start();
    const path = `/api/v1/nodes/${NODE_A}`;
    const w = await watch(s, "/api/v1/nodes?watch=true");
    const taint = { key: "multus-ipmgr.io/enis-not-ready", effect: "NoSchedule" };
    const added = await kube(s, "PATCH", path, { spec: { taints: [taint] } }, "application/merge-patch+json");
    expect(added.status).toBe(200);
    expect(added.body.spec.taints).toEqual([taint]);
    await eventually(
      () => w.events.some((e) => e.type === "MODIFIED" && e.object.spec?.taints?.[0]?.key === taint.key),
      "a MODIFIED event with the taint",
    );
    const removed = await kube(
      s,
      "PATCH",
      path,
      [{ op: "remove", path: "/spec/taints/0" }],
      "application/json-patch+json",
    );
    expect(removed.body.spec.taints).toEqual([]);
    expect((await kube(s, "DELETE", path)).status).toBe(405);
  });

  it("deletes: Pods answer with the object, other kinds with a Success Status; preconditions are checked", async () => {
    const s = await start();
    const nad = "/apis/k8s.cni.cncf.io/v1/namespaces/cnf/network-attachment-definitions/multus-ipvlan";
    const { uid } = (await kube(s, "GET", nad)).body.metadata;
    expect((await kube(s, "DELETE", nad, { preconditions: { uid: "other" } })).body).toMatchObject({
      code: 409,
      message: `Operation cannot be fulfilled on network-attachment-definitions.k8s.cni.cncf.io "multus-ipvlan": Precondition failed: UID in precondition: other, UID in object meta: ${uid}`,
    });
    expect((await kube(s, "DELETE", nad)).body).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: {
        name: "multus-ipvlan",
        group: "k8s.cni.cncf.io",
        kind: "network-attachment-definitions",
        uid,
      },
      code: 200,
    });
    expect((await kube(s, "DELETE", "/api/v1/namespaces/cnf/pods/upf-0")).body).toMatchObject({
      kind: "Pod",
      metadata: { name: "upf-0" },
    });
    expect(s.state().kubernetes?.pods).toEqual([]);
  });

  it("deletes a bound pod gracefully: MODIFIED with deletionTimestamp, then DELETED", async () => {
    const s = await start();
    const w = await watch(s, "/api/v1/namespaces/cnf/pods?watch=true");
    await w.until(1);
    await kube(s, "DELETE", "/api/v1/namespaces/cnf/pods/upf-0");
    const events = await w.until(3);
    expect(events.slice(1).map((e) => [e.type, e.object.metadata.deletionGracePeriodSeconds])).toEqual([
      ["MODIFIED", 30],
      ["DELETED", 30],
    ]);
    expect(events[1]?.object.metadata.deletionTimestamp).toEqual(expect.any(String));
  });

  it("keeps an object with finalizers until an update removes them", async () => {
    const s = await start();
    const path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l1";
    await kube(
      s,
      "POST",
      "/apis/coordination.k8s.io/v1/namespaces/default/leases",
      lease("l1", { finalizers: ["example.com/hold"] }),
    );
    const marked = await kube(s, "DELETE", path);
    expect(marked.body.metadata.deletionTimestamp).toEqual(expect.any(String));
    expect((await kube(s, "GET", path)).status).toBe(200);
    await kube(s, "PATCH", path, { metadata: { finalizers: null } }, "application/merge-patch+json");
    expect((await kube(s, "GET", path)).status).toBe(404);
  });

  it("validates but stores nothing with dryRun=All", async () => {
    const s = await start();
    const dry = await kube(s, "POST", "/api/v1/namespaces/default/pods?dryRun=All", pod("p1"));
    expect(dry.status).toBe(201);
    expect((await kube(s, "GET", "/api/v1/namespaces/default/pods/p1")).status).toBe(404);
  });
});

describe("Events: core/v1 and events.k8s.io/v1 over one store", () => {
  const newEvent = {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: "upf-0.1" },
    eventTime: "2024-01-01T00:00:00.000000Z",
    reportingController: "multus-ipmgr.example.com/bridge",
    reportingInstance: "bridge-node-a",
    action: "AssignAddresses",
    reason: "AddressesAssigned",
    type: "Normal",
    note: "198.51.100.193 assigned to eni-0a1",
    regarding: { kind: "Pod", namespace: "cnf", name: "upf-0", apiVersion: "v1" },
  };

  it("shows an events.k8s.io/v1 Event through core/v1 with its renamed fields, and selects on them", async () => {
    const s = await start();
    expect((await kube(s, "POST", "/apis/events.k8s.io/v1/namespaces/cnf/events", newEvent)).status).toBe(
      201,
    );
    const core = (
      await kube(
        s,
        "GET",
        "/api/v1/namespaces/cnf/events?fieldSelector=involvedObject.name%3Dupf-0,reason%3DAddressesAssigned",
      )
    ).body;
    expect(core.items).toHaveLength(1);
    expect(core.items[0]).toMatchObject({
      involvedObject: newEvent.regarding,
      message: newEvent.note,
      reportingComponent: newEvent.reportingController,
      reportingInstance: "bridge-node-a",
    });
    const patched = await kube(
      s,
      "PATCH",
      "/apis/events.k8s.io/v1/namespaces/cnf/events/upf-0.1",
      { series: { count: 2, lastObservedTime: "2024-01-01T00:01:00.000000Z" } },
      "application/merge-patch+json",
    );
    expect(patched.body.series.count).toBe(2);
    expect(
      (
        await kube(
          s,
          "GET",
          "/apis/events.k8s.io/v1/namespaces/cnf/events?fieldSelector=regarding.name%3Dupf-0",
        )
      ).body.items,
    ).toHaveLength(1);
  });

  it("requires the new API's fields on events.k8s.io/v1", async () => {
    const s = await start();
    const { reportingController: _c, type: _t, ...incomplete } = newEvent;
    const refused = await kube(s, "POST", "/apis/events.k8s.io/v1/namespaces/cnf/events", incomplete);
    expect(refused.status).toBe(422);
    expect(refused.body.details.causes.map((c: { field: string }) => c.field)).toEqual([
      "reportingController",
      "type",
    ]);
  });

  it("creates a legacy core/v1 Event", async () => {
    const s = await start();
    const created = await kube(s, "POST", "/api/v1/namespaces/cnf/events", {
      metadata: { generateName: "upf-0." },
      involvedObject: { kind: "Pod", namespace: "cnf", name: "upf-0" },
      reason: "AddressesAssigned",
      message: "assigned",
      type: "Normal",
      count: 1,
      source: { component: "multus-ipmgr-bridge" },
    });
    expect(created.status).toBe(201);
    expect(created.body.metadata.name).toMatch(/^upf-0\.[a-z0-9]{5}$/);
    expect(
      (await kube(s, "GET", "/api/v1/events?fieldSelector=source%3Dmultus-ipmgr-bridge")).body.items,
    ).toHaveLength(1);
  });

  it("stores an Event without timestamps as given; its Table row's Last Seen is <unknown>, as kubectl shows it", async () => {
    const s = await start();
    await kube(s, "POST", "/api/v1/namespaces/cnf/events", {
      metadata: { name: "upf-0.bare" },
      involvedObject: { kind: "Pod", namespace: "cnf", name: "upf-0" },
      reason: "AddressConflict",
      message: "conflict",
      type: "Warning",
    });
    const stored = (await kube(s, "GET", "/api/v1/namespaces/cnf/events/upf-0.bare")).body;
    for (const field of ["firstTimestamp", "lastTimestamp", "eventTime"])
      expect(stored[field]).toBeUndefined();
    const response = await fetch(`${kubeEndpointOf(s)}/api/v1/namespaces/cnf/events`, {
      headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
    });
    const table = (await response.json()) as { rows: { cells: unknown[] }[] };
    expect(table.rows.map((r) => r.cells)).toEqual([
      ["<unknown>", "Warning", "AddressConflict", "pod/upf-0", "conflict"],
    ]);
  });
});

describe("the control API's scripted changes", () => {
  it("adds, replaces, patches, terminates and deletes pods, each seen by a watch and in GET /state", async () => {
    const s = await start();
    const w = await watch(s, "/api/v1/namespaces/cnf/pods?watch=true");
    await w.until(1);
    const added = await control(
      s,
      "POST",
      "/kubernetes/pods",
      multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_A, { uid: "uid-1" }),
    );
    expect(added.status).toBe(201);
    expect(added.body.metadata.uid).toBe("uid-1");
    await control(s, "PATCH", "/kubernetes/pods/cnf/upf-1", { status: { phase: "Failed" } });
    // A new uid is a new pod of the same name, as a StatefulSet restart makes.
    await control(
      s,
      "PUT",
      "/kubernetes/pods/cnf/upf-1",
      multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_A, { uid: "uid-2" }),
    );
    await control(s, "DELETE", "/kubernetes/pods/cnf/upf-1?gracePeriodSeconds=30");
    const terminating = (await fetch(`${s.controlEndpoint}/state`).then((r) => r.json())) as {
      kubernetes: { pods: { metadata: { name: string; deletionTimestamp?: string } }[] };
    };
    expect(
      terminating.kubernetes.pods.find((p) => p.metadata.name === "upf-1")?.metadata.deletionTimestamp,
    ).toEqual(expect.any(String));
    await control(s, "DELETE", "/kubernetes/pods/cnf/upf-1");
    const events = await w.until(7);
    expect(events.slice(1).map((e) => `${e.type} ${e.object.metadata.uid}`)).toEqual([
      "ADDED uid-1",
      "MODIFIED uid-1",
      "DELETED uid-1",
      "ADDED uid-2",
      "MODIFIED uid-2",
      "DELETED uid-2",
    ]);
    expect(s.state().kubernetes?.pods.map((p) => p.metadata.name)).toEqual(["upf-0"]);
  });

  it("adds an array of pods at once, all or none", async () => {
    const s = await start();
    const w = await watch(s, "/api/v1/namespaces/cnf/pods?watch=true");
    await w.until(1);
    const batch = [
      multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_A),
      multusPod("upf-2", NODE_B, ["198.51.100.195"], MAC_A),
    ];
    const added = await control(s, "POST", "/kubernetes/pods", batch);
    expect(added).toMatchObject({ status: 201, body: { added: 2, resourceVersion: expect.any(String) } });
    const events = await w.until(3);
    expect(events.slice(1).map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
      "ADDED upf-1",
      "ADDED upf-2",
    ]);
    // One that exists, one given twice, one on an unknown node: refused whole, nothing added.
    const names = () => s.state().kubernetes?.pods.map((p) => p.metadata.name);
    expect(
      await control(s, "POST", "/kubernetes/pods", [
        multusPod("upf-3", NODE_B, ["198.51.100.196"], MAC_A),
        multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_A),
      ]),
    ).toMatchObject({ status: 409, body: { error: 'pods "upf-1" already exists' } });
    expect(
      (
        await control(s, "POST", "/kubernetes/pods", [
          multusPod("upf-3", NODE_B, ["198.51.100.196"], MAC_A),
          multusPod("upf-3", NODE_B, ["198.51.100.196"], MAC_A),
        ])
      ).body.error,
    ).toBe("invalid pods: cnf/upf-3 is given twice");
    expect(
      (
        await control(s, "POST", "/kubernetes/pods", [
          multusPod("upf-3", NODE_B, ["198.51.100.196"], MAC_A),
          multusPod("upf-4", "ip-203-0-113-1.ec2.internal", [], MAC_A),
        ])
      ).status,
    ).toBe(400);
    expect(names()).toEqual(["upf-0", "upf-1", "upf-2"]);
  });

  it("refuses a pod on an unknown node, and answers 404 without a kubernetes section", async () => {
    const s = await start();
    expect(
      await control(s, "POST", "/kubernetes/pods", multusPod("x", "ip-203-0-113-1.ec2.internal", [], MAC_A)),
    ).toMatchObject({
      status: 400,
      body: {
        error: expect.stringContaining(
          `unknown node ip-203-0-113-1.ec2.internal; the nodes are ${NODE_A}, ${NODE_B}`,
        ),
      },
    });
    expect((await control(s, "POST", "/kubernetes/pods", { name: "x", nodeName: 5 })).status).toBe(400);
  });

  it("ends every open watch on POST /kubernetes/watches/close", async () => {
    const s = await start();
    const w = await watch(s, "/api/v1/pods?watch=true");
    await w.until(1);
    expect((await control(s, "POST", "/kubernetes/watches/close")).body).toEqual({ closed: 1 });
    await w.ended;
  });
});

describe("a watch client that stops reading", () => {
  it("is cut off once too much piles up unread, instead of growing the server's memory", async () => {
    const { connect } = await import("node:net");
    const errors: string[] = [];
    sim = await startKubeSim(kubeWorld(), {
      errorLog: (line) => errors.push(line),
      kubeWatchBufferBytes: 1024 * 1024,
    });
    const s = sim;
    const url = new URL(s.kubernetesEndpoint as string);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((done) => socket.once("connect", () => done()));
    socket.write("GET /api/v1/namespaces/cnf/pods?watch=true HTTP/1.1\r\nHost: sim\r\n\r\n");
    socket.pause();
    const closed = new Promise<void>((done) => socket.once("close", () => done()));
    const big = "x".repeat(900 * 1024);
    for (let i = 0; i < 40 && errors.length === 0; i++) {
      await control(s, "PATCH", "/kubernetes/pods/cnf/upf-0", {
        metadata: { annotations: { big: `${i}${big}` } },
      });
    }
    expect(errors).toEqual([
      expect.stringMatching(/^kubernetes: cutting off a watch of pods: the client left \d+ bytes unread$/),
    ]);
    socket.resume();
    await closed;
  });
});
