/**
 * The simulator's scheduler stand-in: Kubernetes' toleration matching and kube-scheduler's filters as tables
 * and properties (no I/O), then through the API with client-node: a pod on no node stays Pending while every
 * node carries a taint it does not tolerate, and is bound and run once a PATCH removes the taint.
 */
import { execFile, spawnSync } from "node:child_process";
import { join } from "node:path";
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from "@kubernetes/client-node";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { SimulatorHandle } from "../src/sim/index.js";
import type { KubeObject } from "../src/sim/kube/kube-object.js";
import { writeKubeconfig } from "../src/sim/kube/kubeconfig.js";
import { pickNode, type Taint, type Toleration, tolerates, unfitReason } from "../src/sim/kube/node-fit.js";
import { wantsScheduling } from "../src/sim/kube/scheduler.js";
import {
  control,
  eventually,
  type Json,
  kubeConfigFor,
  kubeEndpointOf,
  kubeWorld,
  NODE_A,
  NODE_B,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const TAINT: Taint = { key: "multus-ipmgr.io/enis-not-ready", effect: "NoSchedule" };

describe("tolerates, as Kubernetes' Toleration.ToleratesTaint", () => {
  const cases: [string, Toleration, Taint, boolean][] = [
    [
      "Exists on the key and effect",
      { key: TAINT.key, operator: "Exists", effect: "NoSchedule" },
      TAINT,
      true,
    ],
    ["Exists on the key, any effect", { key: TAINT.key, operator: "Exists" }, TAINT, true],
    ["Exists with no key: every taint", { operator: "Exists" }, TAINT, true],
    ["Exists on another key", { key: "other", operator: "Exists" }, TAINT, false],
    ["Exists with another effect", { key: TAINT.key, operator: "Exists", effect: "NoExecute" }, TAINT, false],
    ["Equal, both values empty", { key: TAINT.key, operator: "Equal" }, TAINT, true],
    ["no operator means Equal", { key: TAINT.key, value: "" }, TAINT, true],
    ["Equal with a value the taint lacks", { key: TAINT.key, operator: "Equal", value: "x" }, TAINT, false],
    [
      "Equal, same value",
      { key: "k", operator: "Equal", value: "v" },
      { key: "k", value: "v", effect: "NoSchedule" },
      true,
    ],
    [
      "Equal, other value",
      { key: "k", operator: "Equal", value: "w" },
      { key: "k", value: "v", effect: "NoSchedule" },
      false,
    ],
    ["an unknown operator matches nothing", { key: TAINT.key, operator: "Lt" }, TAINT, false],
  ];
  it.each(cases)("%s", (_, toleration, taint, expected) => {
    expect(tolerates(toleration, taint)).toBe(expected);
  });

  it("Exists with no key and no effect tolerates any taint", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.constantFrom("NoSchedule", "NoExecute", "PreferNoSchedule"),
        (key, value, effect) => tolerates({ operator: "Exists" }, { key, value, effect }),
      ),
    );
  });

  it("a toleration naming another key never tolerates", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.string(), (a, b, value) => {
        fc.pre(a !== b);
        return !tolerates({ key: a, operator: "Exists" }, { key: b, value, effect: "NoSchedule" });
      }),
    );
  });
});

function node(name: string, spec: Json = {}, labels: Record<string, string> = {}): KubeObject {
  return { metadata: { name, labels }, spec };
}
function pod(spec: Json = {}): KubeObject {
  return {
    metadata: { name: "p", namespace: "cnf" },
    spec: { containers: [{ name: "a", image: "i" }], ...spec },
  };
}

describe("the scheduler's filters", () => {
  const cases: [string, KubeObject, KubeObject, string | undefined][] = [
    ["an untainted node fits", pod(), node("a"), undefined],
    [
      "a NoSchedule taint keeps an intolerant pod off",
      pod(),
      node("a", { taints: [TAINT] }),
      `node(s) had untolerated taint {${TAINT.key}: }`,
    ],
    [
      "a NoExecute taint too",
      pod(),
      node("a", { taints: [{ key: "k", value: "v", effect: "NoExecute" }] }),
      "node(s) had untolerated taint {k: v}",
    ],
    [
      "a PreferNoSchedule taint does not",
      pod(),
      node("a", { taints: [{ key: "k", effect: "PreferNoSchedule" }] }),
      undefined,
    ],
    [
      "a tolerated taint does not",
      pod({ tolerations: [{ key: TAINT.key, operator: "Exists" }] }),
      node("a", { taints: [TAINT] }),
      undefined,
    ],
    ["a cordoned node", pod(), node("a", { unschedulable: true }), "node(s) were unschedulable"],
    [
      "a cordoned node, the unschedulable taint tolerated",
      pod({
        tolerations: [{ key: "node.kubernetes.io/unschedulable", operator: "Exists", effect: "NoSchedule" }],
      }),
      node("a", { unschedulable: true }),
      undefined,
    ],
    [
      "a nodeSelector the labels match",
      pod({ nodeSelector: { role: "cnf" } }),
      node("a", {}, { role: "cnf" }),
      undefined,
    ],
    [
      "a nodeSelector they do not",
      pod({ nodeSelector: { role: "cnf" } }),
      node("a", {}, { role: "web" }),
      "node(s) didn't match Pod's node affinity/selector",
    ],
  ];
  it.each(cases)("%s", (_, p, n, expected) => {
    expect(unfitReason(p, n)).toBe(expected);
  });

  it("picks the first fitting node by name, or says why none fits as kube-scheduler does", () => {
    expect(pickNode(pod(), [node("b"), node("a", { taints: [TAINT] }), node("c")])).toEqual({ node: "b" });
    expect(
      pickNode(pod(), [
        node("a", { taints: [TAINT] }),
        node("b", { taints: [TAINT] }),
        node("c", { unschedulable: true }),
      ]),
    ).toEqual({
      unschedulable:
        `0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint {${TAINT.key}: }. ` +
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    });
  });

  it("never picks a node carrying a NoSchedule taint the pod does not tolerate", () => {
    const taint = fc.record({
      key: fc.constantFrom("a", "b", TAINT.key),
      value: fc.option(fc.constantFrom("x", "y"), { nil: undefined }),
      effect: fc.constantFrom("NoSchedule", "NoExecute", "PreferNoSchedule"),
    });
    const toleration = fc.record(
      {
        key: fc.constantFrom("a", "b", TAINT.key),
        operator: fc.constantFrom("Exists", "Equal"),
        value: fc.constantFrom("x", "y"),
        effect: fc.constantFrom("NoSchedule", "NoExecute"),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(
        fc.array(fc.array(taint, { maxLength: 3 }), { minLength: 1, maxLength: 4 }),
        fc.array(toleration, { maxLength: 3 }),
        (taintsByNode, tolerations) => {
          const nodes = taintsByNode.map((taints, i) => node(`n${i}`, { taints }));
          const p = pod({ tolerations });
          const choice = pickNode(p, nodes);
          if (!("node" in choice)) return nodes.every((n) => unfitReason(p, n) !== undefined);
          const chosen = nodes.find((n) => n.metadata.name === choice.node) as KubeObject;
          return (chosen.spec as { taints: Taint[] }).taints.every(
            (t) => t.effect === "PreferNoSchedule" || tolerations.some((tol) => tolerates(tol, t)),
          );
        },
      ),
    );
  });

  it("schedules only unbound, Pending pods of the default scheduler", () => {
    expect(wantsScheduling(pod())).toBe(true);
    expect(wantsScheduling(pod({ nodeName: "a" }))).toBe(false);
    expect(wantsScheduling(pod({ schedulerName: "other" }))).toBe(false);
    expect(wantsScheduling({ ...pod(), status: { phase: "Running" } })).toBe(false);
  });
});

let sim: SimulatorHandle | undefined;
let errors: string[] = [];

afterEach(async () => {
  await sim?.close();
  sim = undefined;
  expect(errors).toEqual([]);
  errors = [];
});

const manifest = (name: string, extra: Json = {}): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "cnf", annotations: { "k8s.v1.cni.cncf.io/networks": "multus-ipvlan" } },
  spec: { containers: [{ name: "app", image: "registry.example/app:1" }], ...extra },
});

describe("the scheduler stand-in, through the API with client-node", () => {
  async function start() {
    sim = await startKubeSim(
      kubeWorld({
        nodes: [
          { instance: "i-0a", taints: [TAINT] },
          { instance: "i-0b", taints: [TAINT] },
        ],
      }),
      { errorLog: (line) => errors.push(line) },
    );
    return kubeConfigFor(sim).makeApiClient(CoreV1Api);
  }
  const read = (core: CoreV1Api, name: string) => core.readNamespacedPod({ namespace: "cnf", name });

  it("keeps a pod Pending and Unschedulable while every node is tainted, then binds and runs it when a JSON patch removes a taint", async () => {
    const core = await start();
    await core.createNamespacedPod({ namespace: "cnf", body: manifest("upf-1") });
    await eventually(
      async () =>
        (await read(core, "upf-1")).status?.conditions?.some((c) => c.type === "PodScheduled") === true,
      "the scheduler's verdict",
    );
    const pending = await read(core, "upf-1");
    expect(pending.spec?.nodeName).toBeUndefined();
    expect(pending.status?.phase).toBe("Pending");
    expect(pending.status?.conditions?.find((c) => c.type === "PodScheduled")).toMatchObject({
      status: "False",
      reason: "Unschedulable",
      message:
        `0/2 nodes are available: 2 node(s) had untolerated taint {${TAINT.key}: }. ` +
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    });

    const nodeB = await core.readNode({ name: NODE_B });
    await core.patchNode(
      {
        name: NODE_B,
        body: [
          { op: "test", path: "/spec/taints", value: nodeB.spec?.taints },
          { op: "replace", path: "/spec/taints", value: [] },
        ],
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    await eventually(async () => (await read(core, "upf-1")).status?.phase === "Running", "upf-1 running");
    const running = await read(core, "upf-1");
    expect(running.spec?.nodeName).toBe(NODE_B);
    expect(running.status?.podIP).toMatch(/^198\.51\.100\./);
    expect((await core.readNode({ name: NODE_A })).spec?.taints).toEqual([TAINT]);
  });

  it("refuses a JSON patch whose test of the taints fails (422), leaving the node as it was", async () => {
    const core = await start();
    const stale = [{ key: "other", effect: "NoSchedule" }];
    const refused = await core
      .patchNode(
        {
          name: NODE_A,
          body: [
            { op: "test", path: "/spec/taints", value: stale },
            { op: "replace", path: "/spec/taints", value: [] },
          ],
        },
        setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
      )
      .then(
        () => undefined,
        (error: { code?: number }) => error.code,
      );
    expect(refused).toBe(422);
    expect((await core.readNode({ name: NODE_A })).spec?.taints).toEqual([TAINT]);
  });

  it("binds a tolerating pod at once, and a pod whose node a merge or strategic merge patch untaints", async () => {
    const core = await start();
    await core.createNamespacedPod({
      namespace: "cnf",
      body: manifest("bridge", {
        tolerations: [{ key: TAINT.key, operator: "Exists", effect: "NoSchedule" }],
      }),
    });
    await eventually(
      async () => (await read(core, "bridge")).status?.phase === "Running",
      "the tolerating pod running",
    );
    expect((await read(core, "bridge")).spec?.nodeName).toBe(NODE_A);

    await core.createNamespacedPod({
      namespace: "cnf",
      body: manifest("upf-1", { nodeSelector: { "kubernetes.io/hostname": NODE_B } }),
    });
    await core.patchNode(
      { name: NODE_A, body: { spec: { taints: null } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    // Node A is free now, but upf-1 selects node B: it stays unbound until node B is untainted.
    await eventually(
      async () =>
        (await read(core, "upf-1")).status?.conditions?.some((c) => c.type === "PodScheduled") === true,
      "the scheduler's verdict",
    );
    expect((await read(core, "upf-1")).spec?.nodeName).toBeUndefined();
    await core.patchNode(
      { name: NODE_B, body: { spec: { taints: [{ key: "prefer", effect: "PreferNoSchedule" }] } } },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    await eventually(async () => (await read(core, "upf-1")).status?.phase === "Running", "upf-1 running");
    expect((await read(core, "upf-1")).spec?.nodeName).toBe(NODE_B);
    expect((await core.readNode({ name: NODE_B })).spec?.taints).toEqual([
      { key: "prefer", effect: "PreferNoSchedule" },
    ]);
  });
});

describe("the scheduler stand-in and scripted pods", () => {
  it("takes pods of the world file and the control API as given: unbound ones stay unbound", async () => {
    sim = await startKubeSim(
      kubeWorld({
        pods: [{ namespace: "cnf", name: "world-pending", phase: "Pending" }],
      }),
      { errorLog: (line) => errors.push(line) },
    );
    const s = sim;
    await control(s, "POST", "/kubernetes/pods", {
      namespace: "cnf",
      name: "control-pending",
      phase: "Pending",
    });
    const core = kubeConfigFor(s).makeApiClient(CoreV1Api);
    // A pod created through the API afterwards is bound: the stand-in is running, and left the others alone.
    await core.createNamespacedPod({ namespace: "cnf", body: manifest("api-pod") });
    await eventually(
      async () =>
        (await core.readNamespacedPod({ namespace: "cnf", name: "api-pod" })).spec?.nodeName !== undefined,
      "api-pod bound",
    );
    for (const name of ["world-pending", "control-pending"]) {
      const pod = await core.readNamespacedPod({ namespace: "cnf", name });
      expect(pod.spec?.nodeName).toBeUndefined();
      expect((pod.status?.conditions ?? []).filter((c) => c.reason === "Unschedulable")).toEqual([]);
    }
  });
});

const probe = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8", timeout: 30_000 });
const kubectlMissing =
  probe.error !== undefined || probe.status !== 0
    ? `kubectl is not installed (${probe.error?.message ?? probe.stderr.trim()}); the kubectl taint test is skipped`
    : undefined;
if (kubectlMissing !== undefined) process.stderr.write(`note: ${kubectlMissing}\n`);

describe.skipIf(kubectlMissing !== undefined)(
  "kubectl taint against the simulator (a strategic merge patch)",
  () => {
    let dir: string | undefined;
    afterEach(() => {
      removeTempDir(dir);
      dir = undefined;
    });

    it("takes the taint off with kubectl taint, and the pod Pending for it is bound and runs", async () => {
      sim = await startKubeSim(kubeWorld({ nodes: [{ instance: "i-0a", taints: [TAINT] }] }), {
        errorLog: (line) => errors.push(line),
      });
      dir = makeTempDir("ipmgr-kube-");
      const kubeconfig = join(dir, "kubeconfig");
      await writeKubeconfig(kubeconfig, kubeEndpointOf(sim));
      const core = kubeConfigFor(sim).makeApiClient(CoreV1Api);
      await core.createNamespacedPod({ namespace: "cnf", body: manifest("upf-1") });
      const kubectl = (...args: string[]) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
          execFile(
            "kubectl",
            [
              "--kubeconfig",
              kubeconfig,
              "--cache-dir",
              join(dir as string, "cache"),
              "--request-timeout=20s",
              ...args,
            ],
            { encoding: "utf8", timeout: 60_000 },
            (error, stdout, stderr) =>
              resolve({
                code: error === null ? 0 : typeof error.code === "number" ? error.code : 1,
                stdout,
                stderr,
              }),
          );
        });
      expect(await kubectl("taint", "nodes", NODE_A, `${TAINT.key}:NoSchedule-`)).toEqual({
        code: 0,
        stdout: `node/${NODE_A} untainted\n`,
        stderr: "",
      });
      await eventually(
        async () =>
          (await core.readNamespacedPod({ namespace: "cnf", name: "upf-1" })).status?.phase === "Running",
        "upf-1 running",
      );
      expect((await core.readNode({ name: NODE_A })).spec?.taints ?? []).toEqual([]);
      expect((await kubectl("taint", "nodes", NODE_A, `${TAINT.key}=:NoSchedule`)).code).toBe(0);
      expect((await core.readNode({ name: NODE_A })).spec?.taints).toEqual([TAINT]);
    });
  },
);
