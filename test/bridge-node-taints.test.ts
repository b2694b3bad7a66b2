/**
 * The bridge's node taints: the JSON patch that changes one taint (tables and properties: every other taint
 * kept, the list it replaces tested), and the Kubernetes adapter's getNodeTaints/setNodeTaint with the real
 * client-node against the simulator, where writers racing on one node's taints lose none of them.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger } from "../src/eni/process/logger.js";
import type { KubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { createKubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-client.js";
import {
  type NodeTaint,
  type NodeTaints,
  taintPatch,
} from "../src/ipam-whereabouts-bridge/kube/node-taints.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { type KubeProxy, startKubeProxy, tempKubeconfig } from "./helpers/kube-proxy.js";
import { kubeEndpointOf, kubeWorld, NODE_A, startKubeSim } from "./helpers/kube-worlds.js";

const OURS: NodeTaint = { key: "multus-ipmgr.io/enis-not-ready", effect: "NoSchedule" };
const OTHER: NodeTaint = { key: "karpenter.sh/disrupted", effect: "NoSchedule" };
const at = (taints: NodeTaint[] | undefined): NodeTaints => ({ taints, resourceVersion: "7" });

describe("taintPatch", () => {
  it("puts the taint on after the others, testing the list it replaces", () => {
    expect(taintPatch(at([OTHER]), OURS, true)).toEqual([
      { op: "test", path: "/spec/taints", value: [OTHER] },
      { op: "replace", path: "/spec/taints", value: [OTHER, OURS] },
    ]);
  });

  it("takes it off, others kept, an equal value or not", () => {
    expect(taintPatch(at([{ ...OURS, value: "x" }, OTHER]), OURS, false)).toEqual([
      { op: "test", path: "/spec/taints", value: [{ ...OURS, value: "x" }, OTHER] },
      { op: "replace", path: "/spec/taints", value: [OTHER] },
    ]);
  });

  it("on a node with no taints field, tests the resourceVersion and adds the list", () => {
    expect(taintPatch(at(undefined), OURS, true)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      { op: "add", path: "/spec/taints", value: [OURS] },
    ]);
  });

  it("is nothing when the node is already so", () => {
    expect(taintPatch(at([OTHER, OURS]), OURS, true)).toBeUndefined();
    expect(taintPatch(at([OTHER]), OURS, false)).toBeUndefined();
    expect(taintPatch(at(undefined), OURS, false)).toBeUndefined();
    expect(taintPatch(at([{ ...OURS, effect: "NoExecute" }]), OURS, false)).toBeUndefined();
  });

  it("replaces a taint of our key and effect whose value differs", () => {
    expect(taintPatch(at([{ ...OURS, value: "old" }]), OURS, true)?.[1]).toEqual({
      op: "replace",
      path: "/spec/taints",
      value: [OURS],
    });
  });

  const taint = fc.record({
    key: fc.constantFrom(OURS.key, OTHER.key, "a", "b"),
    value: fc.option(fc.constantFrom("x", "y"), { nil: undefined }),
    effect: fc.constantFrom("NoSchedule" as const, "NoExecute" as const, "PreferNoSchedule" as const),
  });

  it("keeps every other taint as it was, in order, and leaves ours as asked", () => {
    fc.assert(
      fc.property(fc.array(taint, { maxLength: 5 }), fc.boolean(), (taints, present) => {
        const patch = taintPatch(at(taints), OURS, present);
        const after = (patch?.[1]?.value as NodeTaint[] | undefined) ?? taints;
        const isOurs = (t: NodeTaint) => t.key === OURS.key && t.effect === OURS.effect;
        const others = (list: NodeTaint[]) =>
          list.filter((t) => !isOurs(t)).map((t) => `${t.key}=${t.value ?? ""}:${t.effect}`);
        expect(others(after)).toEqual(others(taints));
        if (present) expect(after.some((t) => isOurs(t) && (t.value ?? "") === "")).toBe(true);
        else expect(after.some(isOurs)).toBe(false);
        // What it replaces is what was read, undefined values left out as JSON leaves them.
        if (patch !== undefined)
          expect(patch[0]).toEqual({
            op: "test",
            path: "/spec/taints",
            value: JSON.parse(JSON.stringify(taints)),
          });
      }),
    );
  });

  it("is idempotent: the list it writes asks for no second patch", () => {
    fc.assert(
      fc.property(fc.array(taint, { maxLength: 5 }), fc.boolean(), (taints, present) => {
        const patch = taintPatch(at(taints), OURS, present);
        if (patch === undefined) return;
        expect(taintPatch(at(patch[1]?.value as NodeTaint[]), OURS, present)).toBeUndefined();
      }),
    );
  });
});

let sim: SimulatorHandle | undefined;
let proxy: KubeProxy | undefined;
const apis: KubeApi[] = [];
const cleanups: (() => unknown)[] = [];

afterEach(async () => {
  for (const a of apis.splice(0)) await a.close();
  for (const c of cleanups.splice(0)) await c();
  await proxy?.close();
  proxy = undefined;
  await sim?.close();
  sim = undefined;
});

async function client(): Promise<KubeApi> {
  const kubeconfig = await tempKubeconfig((proxy as KubeProxy).url);
  cleanups.push(kubeconfig.remove);
  const api = createKubeApi({
    kubeconfig: kubeconfig.path,
    clock: systemClock,
    logger: createLogger("silent"),
    watchTimeoutSeconds: 300,
    requestTimeoutMs: 5_000,
    restartBaseMs: 50,
    restartMaxMs: 200,
    component: "multus-ipmgr-bridge",
    host: NODE_A,
  });
  apis.push(api);
  return api;
}

async function start(taints?: unknown[]): Promise<void> {
  sim = await startKubeSim(
    kubeWorld({
      nodes: [{ instance: "i-0a", ...(taints === undefined ? {} : { taints }) }, { instance: "i-0b" }],
    }),
  );
  proxy = await startKubeProxy(kubeEndpointOf(sim));
}

describe("the adapter's node taints, against the simulator", () => {
  it("reads a node's taints, timeAdded as the API wrote it, and none on a node without", async () => {
    const notReady = {
      key: "node.kubernetes.io/not-ready",
      effect: "NoExecute",
      timeAdded: "2026-11-27T10:00:00Z",
    };
    await start([OURS, notReady]);
    const k = await client();
    expect(await k.getNodeTaints(NODE_A)).toEqual([OURS, notReady]);
    // The test of the list, timeAdded included, matches what the server holds: the patch goes through.
    expect(await k.setNodeTaint(NODE_A, OURS, false)).toBe(true);
    expect(await k.getNodeTaints(NODE_A)).toEqual([notReady]);
    expect(await k.setNodeTaint(NODE_A, OURS, false)).toBe(false);
  });

  it("puts the taint on a node with no taints field, and says the second time that nothing changed", async () => {
    await start();
    const k = await client();
    expect(await k.getNodeTaints(NODE_A)).toEqual([]);
    expect(await k.setNodeTaint(NODE_A, OURS, true)).toBe(true);
    expect(await k.setNodeTaint(NODE_A, OURS, true)).toBe(false);
    expect(await k.getNodeTaints(NODE_A)).toEqual([OURS]);
    expect(proxy?.requests.filter((r) => r.startsWith("PATCH"))).toEqual([
      `PATCH /api/v1/nodes/${NODE_A} 200`,
    ]);
  });

  it("loses no taint when writers race: a patch whose test fails (422) is read and tried again", async () => {
    await start([OTHER]);
    const writers = await Promise.all([client(), client(), client(), client()]);
    const keys = writers.map((_, i) => ({ key: `example.com/t${i}`, effect: "NoSchedule" as const }));
    expect(
      await Promise.all(writers.map((w, i) => w.setNodeTaint(NODE_A, keys[i] as NodeTaint, true))),
    ).toEqual([true, true, true, true]);
    const patches = proxy?.requests.filter((r) => r.startsWith("PATCH")) ?? [];
    expect(patches.filter((r) => r.endsWith(" 422")).length).toBeGreaterThan(0);
    const read = await writers[0]?.getNodeTaints(NODE_A);
    expect(read?.[0]).toEqual(OTHER);
    expect(new Set(read)).toEqual(new Set([OTHER, ...keys]));
    await Promise.all(writers.map((w, i) => w.setNodeTaint(NODE_A, keys[i] as NodeTaint, false)));
    expect(await writers[0]?.getNodeTaints(NODE_A)).toEqual([OTHER]);
  });

  it("fails naming the node when it does not exist", async () => {
    await start();
    const k = await client();
    await expect(k.setNodeTaint("ip-192-0-2-9.ec2.internal", OURS, true)).rejects.toThrow(
      /get Node ip-192-0-2-9\.ec2\.internal failed \(404 NotFound/,
    );
  });
});
