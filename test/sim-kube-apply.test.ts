/**
 * What the simulator's Kubernetes API gained for helm: server-side apply (the pure function, then over
 * HTTP with conflicts and force), the generic kinds, a namespace's delete, protobuf Secrets and
 * DeleteOptions, and /openapi/v2.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { SimulatorHandle } from "../src/sim/index.js";
import type { KubeObject } from "../src/sim/kube/kube-object.js";
import { openApiV2ProtobufType } from "../src/sim/kube/openapi.js";
import { decodeKubeProtobuf, protobufContentType } from "../src/sim/kube/protobuf.js";
import { findResource } from "../src/sim/kube/resources.js";
import { ApplyConflictError, fieldSetOf, serverSideApply } from "../src/sim/kube/server-side-apply.js";
import { kube, kubeEndpointOf, kubeWorld, startKubeSim } from "./helpers/kube-worlds.js";

let sim: SimulatorHandle | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function start(): Promise<SimulatorHandle> {
  sim = await startKubeSim(kubeWorld());
  return sim;
}

const daemonSets = findResource("apps", "v1", "daemonsets");
if (daemonSets === undefined) throw new Error("apps/v1 daemonsets is not served");
const strategies = daemonSets.patchStrategies;

/** A DaemonSet whose one container has `env` (none when undefined). */
const ds = (
  env: { name: string; value: string }[] | undefined,
  extra: Record<string, unknown> = {},
): KubeObject => ({
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: { name: "bridge", namespace: "kube-system", labels: { app: "bridge" } },
  spec: {
    template: {
      spec: {
        containers: [
          { name: "bridge", image: "registry.example/ipmgr:1", ...(env === undefined ? {} : { env }) },
        ],
      },
    },
    ...extra,
  },
});

const apply = (current: KubeObject | undefined, applied: KubeObject, manager = "helm", force = false) =>
  serverSideApply(current, applied, {
    manager,
    force,
    apiVersion: "apps/v1",
    time: "2026-01-01T00:00:00Z",
    strategies,
  });

const envOf = (o: KubeObject): unknown =>
  (o as unknown as { spec: { template: { spec: { containers: { env: unknown }[] } } } }).spec.template.spec
    .containers[0]?.env;

describe("server-side apply (pure)", () => {
  it("records the applied fields in kube-apiserver's FieldsV1 notation, list items by merge key", () => {
    expect(fieldSetOf(ds([{ name: "A", value: "1" }]), strategies)).toEqual({
      "f:metadata": { "f:labels": { "f:app": {} } },
      "f:spec": {
        "f:template": {
          "f:spec": {
            "f:containers": {
              'k:{"name":"bridge"}': {
                ".": {},
                "f:name": {},
                "f:image": {},
                "f:env": { 'k:{"name":"A"}': { ".": {}, "f:name": {}, "f:value": {} } },
              },
            },
          },
        },
      },
    });
  });

  it("creates with one Apply entry, and a second apply removes what it no longer applies", () => {
    const created = apply(
      undefined,
      ds([
        { name: "A", value: "1" },
        { name: "B", value: "2" },
      ]),
    );
    expect(created.metadata.managedFields).toEqual([
      expect.objectContaining({ manager: "helm", operation: "Apply", apiVersion: "apps/v1" }),
    ]);
    const next = apply(created, ds([{ name: "A", value: "3" }]));
    expect(envOf(next)).toEqual([{ name: "A", value: "3" }]);
    expect(next.metadata.managedFields).toHaveLength(1);
  });

  it("leaves exactly the last applied env when one manager applies any two in turn (property)", () => {
    const env = fc.uniqueArray(
      fc.record({ name: fc.constantFrom("A", "B", "C", "D"), value: fc.constantFrom("1", "2") }),
      { selector: (e) => e.name, maxLength: 4 },
    );
    fc.assert(
      fc.property(env, env, (first, second) => {
        const once = apply(apply(undefined, ds(first)), ds(second));
        const sorted = (list: unknown) =>
          [...((list as { name: string }[] | undefined) ?? [])].sort((a, b) => a.name.localeCompare(b.name));
        expect(sorted(envOf(once))).toEqual(sorted(second));
        expect(apply(once, ds(second))).toEqual(once);
      }),
    );
  });

  it("keeps a field another manager applied too, and the fields nobody applied", () => {
    const created = { ...apply(undefined, ds([{ name: "A", value: "1" }])), status: { numberReady: 1 } };
    const shared = apply(created, ds([{ name: "A", value: "1" }]), "other");
    const after = apply(shared, ds(undefined));
    expect(envOf(after)).toEqual([{ name: "A", value: "1" }]);
    expect(after.status).toEqual({ numberReady: 1 });
  });

  it("refuses a field another applier owns with another value, naming the manager and the field", () => {
    const created = apply(undefined, ds([{ name: "A", value: "1" }], { minReadySeconds: 5 }), "kubectl");
    let thrown: unknown;
    try {
      apply(created, ds([{ name: "A", value: "2" }], { minReadySeconds: 5 }));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ApplyConflictError);
    expect((thrown as ApplyConflictError).message).toBe(
      'Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.template.spec.containers[name="bridge"].env[name="A"].value',
    );
  });

  it("with force takes the field over: the other manager no longer owns it", () => {
    const created = apply(undefined, ds([{ name: "A", value: "1" }]), "kubectl");
    const forced = apply(created, ds([{ name: "A", value: "2" }]), "helm", true);
    expect(envOf(forced)).toEqual([{ name: "A", value: "2" }]);
    const kubectl = (forced.metadata.managedFields as { manager: string; fieldsV1: unknown }[]).find(
      (e) => e.manager === "kubectl",
    );
    expect(JSON.stringify(kubectl?.fieldsV1)).not.toContain('"f:value"');
  });
});

/** One length-delimited protobuf field. */
function field(n: number, payload: Buffer | string): Buffer {
  const bytes = typeof payload === "string" ? Buffer.from(payload) : payload;
  const length: number[] = [];
  let rest = bytes.length;
  while (rest >= 0x80) {
    length.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  length.push(rest);
  return Buffer.concat([Buffer.from([(n << 3) | 2, ...length]), bytes]);
}

/** The `k8s\0` envelope (runtime.Unknown) of an object's protobuf. */
function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  const typeMeta = Buffer.concat([field(1, apiVersion), field(2, kind)]);
  return Buffer.concat([Buffer.from("k8s\0", "latin1"), field(1, typeMeta), field(2, raw)]);
}

/** A Secret in protobuf, encoded here by hand from generated.proto's field numbers. */
function secretProtobuf(name: string, labels: Record<string, string>, data: Record<string, Buffer>): Buffer {
  const entry = (key: string, value: Buffer | string) => Buffer.concat([field(1, key), field(2, value)]);
  const metadata = Buffer.concat([
    field(1, name),
    ...Object.entries(labels).map(([k, v]) => field(11, entry(k, v))),
  ]);
  const secret = Buffer.concat([
    field(1, metadata),
    ...Object.entries(data).map(([k, v]) => field(2, entry(k, v))),
    field(3, "helm.sh/release.v1"),
  ]);
  return envelope("v1", "Secret", secret);
}

describe("protobuf bodies", () => {
  it("decodes a Secret as JSON, its data base64 (300 bytes: a two-byte length)", () => {
    const release = Buffer.alloc(300, 0xfe);
    expect(decodeKubeProtobuf(secretProtobuf("r1", { owner: "helm" }, { release }))).toEqual({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "r1", labels: { owner: "helm" } },
      data: { release: release.toString("base64") },
      type: "helm.sh/release.v1",
    });
  });

  it.each([
    ["no magic", Buffer.from("{}"), "no k8s magic"],
    ["a kind read only as JSON", envelope("v1", "Pod", Buffer.alloc(0)), "kind v1/Pod is read only as JSON"],
  ])("refuses %s with a 415 naming it", (_, body, detail) => {
    expect(() => decodeKubeProtobuf(body)).toThrow(detail);
  });

  it("creates a Secret sent as protobuf, lists it by label and deletes it with protobuf DeleteOptions", async () => {
    const s = await start();
    const base = `${kubeEndpointOf(s)}/api/v1/namespaces/kube-system/secrets`;
    const created = await fetch(base, {
      method: "POST",
      headers: { "content-type": protobufContentType },
      body: secretProtobuf(
        "sh.helm.release.v1.r.v1",
        { owner: "helm", name: "r" },
        { release: Buffer.from("x") },
      ),
    });
    expect(created.status).toBe(201);
    const listed = await kube(
      s,
      "GET",
      "/api/v1/namespaces/kube-system/secrets?labelSelector=owner%3Dhelm,name%3Dr",
    );
    expect(listed.body.items.map((i: { data: unknown }) => i.data)).toEqual([{ release: "eA==" }]);
    // DeleteOptions {gracePeriodSeconds: 0}: field 1, varint 0.
    const options = envelope("meta.k8s.io/v1", "DeleteOptions", Buffer.from([0x08, 0x00]));
    const deleted = await fetch(`${base}/sh.helm.release.v1.r.v1`, {
      method: "DELETE",
      headers: { "content-type": protobufContentType },
      body: options,
    });
    expect(deleted.status).toBe(200);
    expect(
      (await kube(s, "GET", "/api/v1/namespaces/kube-system/secrets/sh.helm.release.v1.r.v1")).status,
    ).toBe(404);
  });
});

describe("server-side apply over HTTP", () => {
  const path = "/apis/apps/v1/namespaces/kube-system/daemonsets/bridge";
  const applyType = "application/apply-patch+yaml";

  it("creates (201), applies again (200), and answers a conflict with 409 FieldManagerConflict", async () => {
    const s = await start();
    const first = await kube(
      s,
      "PATCH",
      `${path}?fieldManager=helm`,
      ds([{ name: "A", value: "1" }]),
      applyType,
    );
    expect(first.status).toBe(201);
    expect(first.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    const again = await kube(
      s,
      "PATCH",
      `${path}?fieldManager=helm`,
      ds([{ name: "A", value: "2" }]),
      applyType,
    );
    expect(again.status).toBe(200);
    expect(envOf(again.body)).toEqual([{ name: "A", value: "2" }]);
    const conflict = await kube(
      s,
      "PATCH",
      `${path}?fieldManager=kubectl`,
      ds([{ name: "A", value: "3" }]),
      applyType,
    );
    expect(conflict.status).toBe(409);
    expect(conflict.body.details.causes).toEqual([
      {
        reason: "FieldManagerConflict",
        message: 'conflict with "helm" using apps/v1',
        field: '.spec.template.spec.containers[name="bridge"].env[name="A"].value',
      },
    ]);
    const forced = await kube(
      s,
      "PATCH",
      `${path}?fieldManager=kubectl&force=true`,
      ds([{ name: "A", value: "3" }]),
      applyType,
    );
    expect(forced.status).toBe(200);
    expect(envOf(forced.body)).toEqual([{ name: "A", value: "3" }]);
  });

  it("requires a fieldManager (422) and an apiVersion and kind (400)", async () => {
    const s = await start();
    const missing = await kube(s, "PATCH", path, ds([]), applyType);
    expect(missing.status).toBe(422);
    expect(missing.body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
    const bare = await kube(
      s,
      "PATCH",
      `${path}?fieldManager=helm`,
      { metadata: { name: "bridge" } },
      applyType,
    );
    expect(bare.status).toBe(400);
  });
});

describe("generic kinds and namespaces", () => {
  it("serves /openapi/v2 as protobuf, which client-go downloads before validating", async () => {
    const s = await start();
    const response = await fetch(`${kubeEndpointOf(s)}/openapi/v2`);
    expect(response.headers.get("content-type")).toBe(openApiV2ProtobufType);
    expect(
      Buffer.from(await response.arrayBuffer())
        .subarray(0, 5)
        .toString("latin1"),
    ).toBe("\n\u00032.0");
  });

  it("answers /api and /apis in aggregated form when asked first, in the plain form otherwise", async () => {
    const s = await start();
    const accept =
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    const aggregated = await fetch(`${kubeEndpointOf(s)}/apis`, { headers: { accept } });
    expect(aggregated.headers.get("content-type")).toBe(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    );
    const list = (await aggregated.json()) as {
      kind: string;
      items: { metadata: { name: string }; versions: { version: string; resources: unknown[] }[] }[];
    };
    expect(list.kind).toBe("APIGroupDiscoveryList");
    const apps = list.items.find((g) => g.metadata.name === "apps");
    expect(apps?.versions[0]?.resources).toContainEqual({
      resource: "daemonsets",
      responseKind: { group: "apps", version: "v1", kind: "DaemonSet" },
      scope: "Namespaced",
      singularResource: "daemonset",
      verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
      shortNames: ["ds"],
      categories: ["all"],
    });
    const core = (await (await fetch(`${kubeEndpointOf(s)}/api`, { headers: { accept } })).json()) as {
      items: { metadata: object; versions: { version: string }[] }[];
    };
    expect(core.items.map((g) => [g.metadata, g.versions.map((v) => v.version)])).toEqual([[{}, ["v1"]]]);
    expect((await kube(s, "GET", "/apis")).body.kind).toBe("APIGroupList");
  });

  it("deletes a namespace with everything in it, and nothing outside it", async () => {
    const s = await start();
    const cm = (namespace: string) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c" },
      data: { namespace },
    });
    expect((await kube(s, "POST", "/api/v1/namespaces", { metadata: { name: "demo" } })).body.status).toEqual(
      {
        phase: "Active",
      },
    );
    expect((await kube(s, "POST", "/api/v1/namespaces/demo/configmaps", cm("demo"))).status).toBe(201);
    expect((await kube(s, "POST", "/api/v1/namespaces/default/configmaps", cm("default"))).status).toBe(201);
    expect((await kube(s, "DELETE", "/api/v1/namespaces/demo")).status).toBe(200);
    expect((await kube(s, "GET", "/api/v1/namespaces/demo")).status).toBe(404);
    const left = await kube(s, "GET", "/api/v1/configmaps");
    expect(left.body.items.map((i: { metadata: { namespace: string } }) => i.metadata.namespace)).toEqual([
      "default",
    ]);
  });
});
