/**
 * doctor's one Kubernetes read, over real HTTP against the simulator's API server: this node's whereabouts
 * slices from the NodeSlicePool list; and where the in-cluster endpoint comes from.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { inClusterEndpoint, KubeNodeSlices } from "../src/doctor/node-slices.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { closedPortUrl } from "./helpers/closed-port.js";
import {
  eventually,
  kube,
  kubeEndpointOf,
  kubeWorld,
  NODE_A,
  NODE_B,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

let sim: SimulatorHandle | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
  removeTempDir(dir);
  dir = undefined;
});

const SLICED = {
  namespace: "kube-system",
  name: "slices",
  config: {
    cniVersion: "0.3.1",
    name: "slices",
    type: "ipvlan",
    master: "eth1",
    ipam: { type: "whereabouts", network_name: "slices", range: "198.51.100.224/27", node_slice_size: "/28" },
  },
};

describe("KubeNodeSlices against the simulator's API server", () => {
  it("reads each node's slice of a node-sliced NAD with one GET", async () => {
    const base = kubeWorld().kubernetes as unknown as { networkAttachmentDefinitions: unknown[] };
    sim = await startKubeSim(
      kubeWorld({ networkAttachmentDefinitions: [...base.networkAttachmentDefinitions, SLICED] }),
    );
    const s = sim;
    await eventually(async () => {
      const pools = await kube(s, "GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/nodeslicepools");
      return (
        (pools.body.items?.[0]?.status?.allocations ?? []).filter((a: { nodeName: string }) => a.nodeName)
          .length === 2
      );
    }, "both nodes have a slice");
    const source = new KubeNodeSlices({ server: kubeEndpointOf(s), token: "t", timeoutMs: 2000 });
    const a = await source.slicesOf(NODE_A);
    const b = await source.slicesOf(NODE_B);
    expect(a.kind).toBe("ok");
    if (a.kind !== "ok" || b.kind !== "ok") return;
    expect(a.slices).toHaveLength(1);
    expect(a.slices[0]).toMatchObject({ pool: "kube-system/slices", poolRange: "198.51.100.224/27" });
    expect(["198.51.100.224/28", "198.51.100.240/28"]).toContain(a.slices[0]?.sliceRange);
    expect(b.slices.map((x) => x.sliceRange)).not.toEqual(a.slices.map((x) => x.sliceRange));
    expect(await source.slicesOf("no-such-node")).toEqual({ kind: "ok", slices: [] });
  });

  it("says why when the API server does not answer", async () => {
    const source = new KubeNodeSlices({ server: await closedPortUrl(), timeoutMs: 500 });
    const answer = await source.slicesOf(NODE_A);
    expect(answer.kind).toBe("not-read");
    if (answer.kind === "not-read")
      expect(answer.why).toMatch(/^not checked: the Kubernetes API at http:\/\/.* did not answer/);
  });
});

describe("inClusterEndpoint", () => {
  it("says there is no Kubernetes API outside a pod", async () => {
    expect(await inClusterEndpoint({}, 1000)).toBe(
      "not checked: no Kubernetes API (KUBERNETES_SERVICE_HOST is not set: doctor does not run in a pod).",
    );
  });

  it("takes the service host and port, the token and the CA, and brackets an IPv6 host", async () => {
    dir = makeTempDir("ipmgr-sa-");
    writeFileSync(join(dir, "token"), "the-token\n");
    writeFileSync(join(dir, "ca.crt"), "-----BEGIN CERTIFICATE-----\n");
    expect(
      await inClusterEndpoint(
        { KUBERNETES_SERVICE_HOST: "2001:db8::1", KUBERNETES_SERVICE_PORT: "6443" },
        1000,
        dir,
      ),
    ).toEqual({
      server: "https://[2001:db8::1]:6443",
      token: "the-token",
      ca: "-----BEGIN CERTIFICATE-----\n",
      timeoutMs: 1000,
    });
  });

  it("says the credentials are missing when the service account is not mounted", async () => {
    dir = makeTempDir("ipmgr-sa-");
    const answer = await inClusterEndpoint({ KUBERNETES_SERVICE_HOST: "192.0.2.1" }, 1000, dir);
    expect(answer).toMatch(
      /^not checked: no Kubernetes API credentials \(.*automountServiceAccountToken may be false\)\.$/,
    );
  });
});
