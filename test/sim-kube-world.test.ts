import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { parseWorld, WorldError } from "../src/sim/index.js";
import { main, type SimOutput } from "../src/sim/main.js";
import { kubeWorld, startKubeSim } from "./helpers/kube-worlds.js";
import { startSimProcess } from "./helpers/sim-process.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const BINARY = resolve("dist/multus-ipmgr.mjs");
const unbuilt = !existsSync(BINARY) && process.env.IPMGR_TEST_SKIP_BUILD === "1";

function problems(kubernetes: Record<string, unknown>): string[] {
  const world = JSON.parse(JSON.stringify(kubeWorldInput())) as Record<string, unknown>;
  world.kubernetes = kubernetes;
  try {
    parseWorld(world);
  } catch (error) {
    expect(error).toBeInstanceOf(WorldError);
    return [...(error as WorldError).problems];
  }
  return [];
}

/** The raw (unparsed) form of kubeWorld's EC2 part, for worlds with a broken kubernetes section. */
function kubeWorldInput(): Record<string, unknown> {
  const { kubernetes: _k, ...rest } = kubeWorld() as unknown as Record<string, unknown>;
  return rest;
}

describe("the world file's kubernetes section", () => {
  it.each([
    [
      { nodes: [{ instance: "i-0nope" }] },
      "kubernetes.nodes[0].instance: unknown instance i-0nope: list it under instances",
    ],
    [
      { nodes: [{ instance: "i-0a" }], pods: [{ name: "p", nodeName: "ip-203-0-113-9.ec2.internal" }] },
      "kubernetes.pods[0].nodeName: unknown node ip-203-0-113-9.ec2.internal: list it under kubernetes.nodes (the nodes are ip-198-51-100-10.ec2.internal)",
    ],
    [
      { nodes: [{ instance: "i-0a" }, { instance: "i-0a" }] },
      "kubernetes.nodes[1].name: duplicate node name ip-198-51-100-10.ec2.internal",
    ],
    [{ pods: [{ name: "p" }, { name: "p" }] }, "kubernetes.pods[1]: duplicate Pod default/p"],
    [
      { pods: [{ name: "Upper_Case" }] },
      'kubernetes.pods[0]: metadata.name: Invalid value: "Upper_Case": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters',
    ],
    [
      { pods: [{ name: "p", labels: { "-bad": "x" } }] },
      'kubernetes.pods[0]: metadata.labels: Invalid value: "-bad"',
    ],
    [
      {
        pods: [{ name: "p", networkStatus: [], annotations: { "k8s.v1.cni.cncf.io/network-status": "[]" } }],
      },
      "kubernetes.pods[0].networkStatus: set networkStatus or the k8s.v1.cni.cncf.io/network-status annotation, not both",
    ],
    [
      { ipPools: [{ range: "198.51.100.0" }] },
      'kubernetes.ipPools[0].range: must be a CIDR such as 198.51.100.192/27, got "198.51.100.0"',
    ],
    [
      { ipPools: [{ range: "198.51.100.0/24", allocations: { x: { id: "a", podref: "b" } } }] },
      "kubernetes.ipPools[0].allocations.x: must be a decimal offset from the range's first address, such as 5",
    ],
    [
      { overlappingRangeIPReservations: [{ ip: "nope", containerid: "c", podref: "ns/p" }] },
      'kubernetes.overlappingRangeIPReservations[0].ip: must be an IP address, got "nope"',
    ],
    [{ namespaces: ["Bad"] }, "kubernetes.namespaces[0]: Invalid value"],
    [
      { objects: [{ apiVersion: "batch/v1", kind: "Job", metadata: { name: "d" } }] },
      "kubernetes.objects[0]: Job of batch/v1 is not a kind the simulator serves",
    ],
    [
      {
        objects: [
          {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name: "l" },
            spec: { leaseDurationSeconds: 0 },
          },
        ],
      },
      "kubernetes.objects[0]: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
    ],
    [{ podz: [] }, 'kubernetes: Unrecognized key: "podz"'],
  ])("refuses %j: %s", (kubernetes, message) => {
    expect(problems(kubernetes).join("\n")).toContain(message);
  });

  it("fills in namespaces, node names and the objects' defaults", async () => {
    const sim = await startKubeSim(
      kubeWorld({
        objects: [
          {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name: "held", namespace: "ops" },
            spec: { holderIdentity: "x" },
          },
        ],
        overlappingRangeIPReservations: [{ ip: "2001:db8:100:2::", containerid: "c", podref: "cnf/upf-0" }],
      }),
    );
    try {
      const state = sim.state().kubernetes;
      expect(state?.namespaces.map((n) => n.metadata.name)).toEqual([
        "cnf",
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
        "ops",
      ]);
      expect(state?.nodes.map((n) => n.metadata.name)).toEqual([
        "ip-198-51-100-10.ec2.internal",
        "ip-198-51-100-20.ec2.internal",
      ]);
      expect(state?.leases.map((l) => `${l.metadata.namespace}/${l.metadata.name}`)).toEqual(["ops/held"]);
      // whereabouts' names: `:` as `-`, a trailing `:` padded with 0.
      expect(state?.overlappingRangeIPReservations.map((r) => r.metadata.name)).toEqual([
        "2001-db8-100-2--0",
      ]);
      expect(state?.ipPools.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual([
        "kube-system/198.51.100.192-27",
      ]);
    } finally {
      await sim.close();
    }
  });

  it("serves no Kubernetes API without the section", async () => {
    const sim = await startKubeSim(parseWorld(kubeWorldInput()));
    try {
      expect(sim.kubernetesEndpoint).toBeUndefined();
      expect(sim.state().kubernetes).toBeUndefined();
      expect((await fetch(`${sim.controlEndpoint}/kubernetes/compact`, { method: "POST" })).status).toBe(404);
    } finally {
      await sim.close();
    }
  });
});

describe("multus-ipmgr sim --kubeconfig", () => {
  let dir: string | undefined;
  afterEach(() => {
    removeTempDir(dir);
    dir = undefined;
  });

  it("is refused, exit 2 with one sentence, for a world without a kubernetes section", async () => {
    const err: string[] = [];
    const output: SimOutput = { stdout: () => undefined, stderr: (text) => err.push(text) };
    expect(
      await main(["--world", "examples/world-demo.yaml", "--kubeconfig", "/nonexistent/kc"], output),
    ).toBe(2);
    expect(err).toEqual([
      "multus-ipmgr sim: --kubeconfig is given but the world file examples/world-demo.yaml has no kubernetes section, so no " +
        "Kubernetes API runs; add one (kubernetes: {} serves an empty cluster) or drop the flag.\n",
    ]);
  });

  it.skipIf(unbuilt)(
    "writes a kubeconfig that client-node loads, names the API in the ready line, and exits 0 on SIGTERM with a watch open",
    async () => {
      dir = makeTempDir("ipmgr-kube-");
      const kubeconfig = join(dir, "kubeconfig");
      const sim = await startSimProcess(
        ["--world", "examples/world-bridge.yaml", "--kubeconfig", kubeconfig],
        BINARY,
      );
      try {
        const { ready } = sim;
        expect(ready.kubernetes).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);
        const kc = new KubeConfig();
        kc.loadFromFile(kubeconfig);
        expect(kc.getCurrentCluster()?.server).toBe(ready.kubernetes);
        const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: "cnf" });
        expect(pods.items.map((p) => p.metadata?.name)).toEqual(["upf-0", "upf-1"]);
        // A watch left open must not keep the process alive.
        const watch = await fetch(`${ready.kubernetes}/api/v1/pods?watch=true`);
        const reader = watch.body?.getReader();
        await reader?.read();
        expect(await sim.stop()).toBe(0);
        expect((await reader?.read())?.done).toBe(true);
        expect(sim.stderr()).toBe("multus-ipmgr sim: SIGTERM, closing\n");
      } finally {
        await sim.stop("SIGKILL");
      }
    },
  );
});
