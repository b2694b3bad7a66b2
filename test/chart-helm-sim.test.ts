/**
 * `helm install`, `helm upgrade` and `helm uninstall` of charts/multus-ipmgr against the simulator's
 * Kubernetes API: helm is a real client nobody here wrote (server-side apply by default, its release
 * records in protobuf Secrets, client-go's discovery and OpenAPI download). The objects are checked through
 * the simulator's API, and after the uninstall every served resource lists exactly what it listed before.
 */
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { CHART, RELEASE } from "../scripts/manifests.mjs";
import type { SimulatorHandle } from "../src/sim/index.js";
import { writeKubeconfig } from "../src/sim/kube/kubeconfig.js";
import { type HelmRun, helmAgainst, helmUnavailableReason, idOf, renderChart } from "./helpers/helm.js";
import { type Json, kube, kubeEndpointOf, kubeWorld, startKubeSim } from "./helpers/kube-worlds.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const unavailable = helmUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; the helm install tests are skipped\n`);

let sim: SimulatorHandle | undefined;
let dir: string | undefined;

beforeEach(async () => {
  // The two nodes and nothing else: no cnf namespace, no NAD, no pod (the demo brings its own).
  sim = await startKubeSim(
    kubeWorld({ networkAttachmentDefinitions: [], ipPools: [], pods: [], namespaces: [] }),
  );
  dir = makeTempDir("ipmgr-kube-");
  await writeKubeconfig(join(dir, "kubeconfig"), kubeEndpointOf(sim));
});

afterEach(async () => {
  await sim?.close();
  sim = undefined;
  removeTempDir(dir);
  dir = undefined;
});

async function run(args: string[], values?: Record<string, unknown>): Promise<HelmRun> {
  const result = await helmAgainst(
    join(dir as string, "kubeconfig"),
    join(dir as string, "helm"),
    [...args, "--namespace", RELEASE.namespace],
    values === undefined ? undefined : stringify(values),
  );
  if (result.status !== 0) throw new Error(`helm ${args[0]} failed (${result.status}): ${result.stderr}`);
  return result;
}

const install = (values: Record<string, unknown>, extra: string[] = []) =>
  run(["install", RELEASE.name, CHART, ...extra], values);
const upgrade = (values: Record<string, unknown>, extra: string[] = []) =>
  run(["upgrade", RELEASE.name, CHART, ...extra], values);
const uninstall = () => run(["uninstall", RELEASE.name]);

/** Every object of every resource the API lists, as `Kind namespace/name`, found through discovery. */
async function inventory(): Promise<string[]> {
  const s = sim as SimulatorHandle;
  const groupVersions = ["/api/v1"];
  for (const group of (await kube(s, "GET", "/apis")).body.groups as Json[]) {
    groupVersions.push(`/apis/${group.preferredVersion.groupVersion}`);
  }
  const out: string[] = [];
  for (const path of groupVersions) {
    for (const resource of (await kube(s, "GET", path)).body.resources as Json[]) {
      if (!resource.verbs.includes("list")) continue;
      const list = await kube(s, "GET", `${path}/${resource.name}`);
      expect(list.status, `${path}/${resource.name}`).toBe(200);
      for (const item of list.body.items as Json[]) {
        out.push(`${path} ${resource.kind} ${item.metadata.namespace ?? ""}/${item.metadata.name}`);
      }
    }
  }
  return out.sort();
}

/** The object as the API serves it at the path of its apiVersion and kind. */
async function get(apiVersion: string, plural: string, namespace: string | undefined, name: string) {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const scope = namespace === undefined ? "" : `/namespaces/${namespace}`;
  return kube(sim as SimulatorHandle, "GET", `${base}${scope}/${plural}/${name}`);
}

const pluralOf = (kind: string): string =>
  kind === "NetworkAttachmentDefinition" ? "network-attachment-definitions" : `${kind.toLowerCase()}s`;

const bridgeEnv = async (): Promise<Record<string, string>> => {
  const ds = await get("apps/v1", "daemonsets", RELEASE.namespace, "multus-ipmgr-bridge");
  expect(ds.status).toBe(200);
  const container = (ds.body.spec.template.spec.containers as Json[]).find((c) => c.name === "bridge");
  return Object.fromEntries((container.env as Json[]).map((e) => [e.name, e.value]));
};

/** helm's release records: `sh.helm.release.v1.<name>.v<n>` Secrets, by revision, with their status label. */
async function releaseRecords(): Promise<Record<string, string>> {
  const list = await kube(
    sim as SimulatorHandle,
    "GET",
    `/api/v1/namespaces/${RELEASE.namespace}/secrets?labelSelector=owner%3Dhelm,name%3D${RELEASE.name}`,
  );
  return Object.fromEntries(
    (list.body.items as Json[]).map((s) => [s.metadata.labels.version, s.metadata.labels.status]),
  );
}

const demoWithMonitoring = {
  demo: { enabled: true },
  monitoring: { enabled: true, sidecar: { enabled: true } },
  bridge: { extraEnv: [{ name: "IPMGR_LOG_LEVEL", value: "debug" }] },
};

describe.skipIf(unavailable !== undefined)("helm against the simulator's Kubernetes API", () => {
  it("installs the demo with monitoring, upgrades to monitoring off with changed values, uninstalls and leaves nothing", async () => {
    const before = await inventory();

    await install(demoWithMonitoring);
    // What an install creates: the `helm test` pod is a hook that only `helm test` creates.
    const rendered = renderChart(stringify(demoWithMonitoring), ["--skip-tests"]);
    expect(rendered.length).toBeGreaterThan(10);
    for (const object of rendered) {
      const namespaced = object.kind !== "Namespace" && !object.kind.startsWith("ClusterRole");
      const found = await get(
        object.apiVersion,
        pluralOf(object.kind),
        namespaced ? (object.metadata.namespace ?? RELEASE.namespace) : undefined,
        object.metadata.name,
      );
      expect(found.status, idOf(object)).toBe(200);
      expect(found.body.metadata.annotations?.["meta.helm.sh/release-name"], idOf(object)).toBe(RELEASE.name);
      expect(found.body.metadata.managedFields, idOf(object)).toEqual([
        expect.objectContaining({ manager: "helm", operation: "Apply", fieldsType: "FieldsV1" }),
      ]);
    }
    expect(await releaseRecords()).toEqual({ "1": "deployed" });
    expect(await bridgeEnv()).toMatchObject({
      IPMGR_BRIDGE_RELEASE_GRACE_MS: "300000",
      IPMGR_LOG_LEVEL: "debug",
    });

    await upgrade({ demo: { enabled: true }, bridge: { releaseGraceMs: 60000 } });
    const env = await bridgeEnv();
    expect(env.IPMGR_BRIDGE_RELEASE_GRACE_MS).toBe("60000");
    // Applied before and not any more: server-side apply removes the field helm no longer applies.
    expect(env.IPMGR_LOG_LEVEL).toBeUndefined();
    for (const [apiVersion, plural, name] of [
      ["monitoring.coreos.com/v1", "servicemonitors", "multus-ipmgr-bridge"],
      ["monitoring.coreos.com/v1", "prometheusrules", "multus-ipmgr"],
      ["v1", "services", "multus-ipmgr-bridge-metrics"],
    ] as const) {
      expect((await get(apiVersion, plural, RELEASE.namespace, name)).status, `${plural}/${name}`).toBe(404);
    }
    expect((await get("v1", "namespaces", undefined, "cnf")).status).toBe(200);
    expect(await releaseRecords()).toEqual({ "1": "superseded", "2": "deployed" });

    await uninstall();
    expect(await inventory()).toEqual(before);
  });

  it("refuses a misspelt value before it writes anything: no object, no release record", async () => {
    const before = await inventory();
    const refused = await helmAgainst(
      join(dir as string, "kubeconfig"),
      join(dir as string, "helm"),
      ["install", RELEASE.name, CHART, "--namespace", RELEASE.namespace],
      stringify({ bridge: { releaseGraceMS: 1000 } }),
    );
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("releaseGraceMS");
    expect(await inventory()).toEqual(before);
  });

  it("installs the bridge alone with client-side apply, upgrades it and uninstalls: no demo object, nothing left", async () => {
    const before = await inventory();
    await install({}, ["--server-side=false"]);
    const installed = (await inventory()).filter((id) => !before.includes(id));
    expect(installed).toEqual(
      [
        "/api/v1 Secret kube-system/sh.helm.release.v1.multus-ipmgr.v1",
        "/api/v1 ServiceAccount kube-system/multus-ipmgr-bridge",
        "/apis/apps/v1 DaemonSet kube-system/multus-ipmgr-bridge",
        "/apis/rbac.authorization.k8s.io/v1 ClusterRole /multus-ipmgr-bridge",
        "/apis/rbac.authorization.k8s.io/v1 ClusterRoleBinding /multus-ipmgr-bridge",
        "/apis/rbac.authorization.k8s.io/v1 Role kube-system/multus-ipmgr-bridge-lease",
        "/apis/rbac.authorization.k8s.io/v1 RoleBinding kube-system/multus-ipmgr-bridge-lease",
      ].sort(),
    );
    // Created with POST, so no field manager applied anything.
    const ds = await get("apps/v1", "daemonsets", RELEASE.namespace, "multus-ipmgr-bridge");
    expect(ds.body.metadata.managedFields).toBeUndefined();

    await upgrade({ bridge: { prefixMode: "defer" } }, ["--server-side=false"]);
    expect((await bridgeEnv()).IPMGR_BRIDGE_PREFIX_MODE).toBe("defer");
    expect(await releaseRecords()).toEqual({ "1": "superseded", "2": "deployed" });

    await uninstall();
    expect(await inventory()).toEqual(before);
  });
});
