/**
 * doctor's one Kubernetes read, over real HTTP against the simulator's API server: this node's whereabouts
 * slices from the NodeSlicePool list; and where the in-cluster endpoint comes from.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { kubeconfigEndpoint } from "../src/doctor/kubeconfig.js";
import { inClusterEndpoint, KubeNodeSlices } from "../src/doctor/node-slices.js";
import { ConfigError } from "../src/eni/errors/config-error.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { writeKubeconfig } from "../src/sim/kube/kubeconfig.js";
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

/** The ConfigError `fail` builds in main.ts, here with the variable's name. */
const fail = (problem: string) => new ConfigError("IPMGR_KUBECONFIG", "the-file", problem);

describe("kubeconfigEndpoint", () => {
  it("reads the slices through the kubeconfig the simulator writes, from outside any pod", async () => {
    const base = kubeWorld().kubernetes as unknown as { networkAttachmentDefinitions: unknown[] };
    sim = await startKubeSim(
      kubeWorld({ networkAttachmentDefinitions: [...base.networkAttachmentDefinitions, SLICED] }),
    );
    const s = sim;
    dir = makeTempDir("ipmgr-kube-");
    const path = join(dir, "kubeconfig");
    await writeKubeconfig(path, kubeEndpointOf(s));
    const endpoint = await kubeconfigEndpoint(path, 2000, fail);
    expect(endpoint).toEqual({
      server: kubeEndpointOf(s),
      token: "multus-ipmgr-sim-token",
      insecure: true,
      kubeconfig: path,
      timeoutMs: 2000,
    });
    if (typeof endpoint === "string") return;
    const source = new KubeNodeSlices(endpoint);
    await eventually(async () => {
      const answer = await source.slicesOf(NODE_A);
      return answer.kind === "ok" && answer.slices.length === 1;
    }, "node A has its slice, read through the kubeconfig");
    expect(await source.slicesOf(NODE_A)).toMatchObject({
      kind: "ok",
      slices: [{ pool: "kube-system/slices", poolRange: "198.51.100.224/27" }],
    });
  });

  it("reads the CA, the token file and the client certificate beside the kubeconfig, or from -data", async () => {
    dir = makeTempDir("ipmgr-kube-");
    mkdirSync(join(dir, "pki"));
    writeFileSync(join(dir, "pki", "ca.crt"), "CA PEM");
    writeFileSync(join(dir, "token"), "the-token\n");
    const path = join(dir, "kubeconfig");
    writeFileSync(
      path,
      [
        "apiVersion: v1",
        "kind: Config",
        "current-context: c",
        "contexts: [{ name: c, context: { cluster: k, user: u } }]",
        "clusters: [{ name: k, cluster: { server: 'https://192.0.2.1:6443', certificate-authority: pki/ca.crt } }]",
        `users: [{ name: u, user: { tokenFile: token, client-certificate-data: ${Buffer.from("CERT PEM").toString("base64")}, client-key-data: ${Buffer.from("KEY PEM").toString("base64")} } }]`,
      ].join("\n"),
    );
    expect(await kubeconfigEndpoint(path, 1000, fail)).toEqual({
      server: "https://192.0.2.1:6443",
      token: "the-token",
      ca: "CA PEM",
      cert: "CERT PEM",
      key: "KEY PEM",
      kubeconfig: path,
      timeoutMs: 1000,
    });
  });

  it("says why when the user's credentials come from a command (EKS's aws eks get-token)", async () => {
    dir = makeTempDir("ipmgr-kube-");
    const path = join(dir, "kubeconfig");
    writeFileSync(
      path,
      JSON.stringify({
        "current-context": "eks",
        contexts: [{ name: "eks", context: { cluster: "k", user: "u" } }],
        clusters: [{ name: "k", cluster: { server: "https://192.0.2.1" } }],
        users: [{ name: "u", user: { exec: { command: "aws", args: ["eks", "get-token"] } } }],
      }),
    );
    expect(await kubeconfigEndpoint(path, 1000, fail)).toBe(
      `not checked: the kubeconfig ${path} gets its credentials from a command (exec), which doctor does not run. Fix: give doctor a kubeconfig with a token (kubectl create token), or run doctor in the bridge's pod.`,
    );
  });

  it.each<[string, string | undefined, RegExp]>([
    [
      "a file that does not exist",
      undefined,
      /^IPMGR_KUBECONFIG="the-file": cannot read the kubeconfig \(ENOENT: .*\); name a kubeconfig file, e\.g\. the one multus-ipmgr sim --kubeconfig writes$/,
    ],
    [
      "no current context",
      "clusters: []\n",
      /^IPMGR_KUBECONFIG="the-file": the kubeconfig's current-context is not set; set one \(kubectl config use-context NAME --kubeconfig .*\)$/,
    ],
    [
      "a cluster without a server",
      "current-context: c\ncontexts: [{ name: c, context: { cluster: k } }]\nclusters: [{ name: k, cluster: {} }]\n",
      /^IPMGR_KUBECONFIG="the-file": the current context "c" names cluster "k", which has no server in the kubeconfig; add the API server's URL as its server$/,
    ],
  ])("refuses %s with a ConfigError naming the setting and the fix", async (_, content, message) => {
    dir = makeTempDir("ipmgr-kube-");
    const path = join(dir, "kubeconfig");
    if (content !== undefined) writeFileSync(path, content);
    const error = await kubeconfigEndpoint(path, 1000, fail).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
  });
});

describe("inClusterEndpoint", () => {
  it("says there is no Kubernetes API outside a pod, and how to give one", async () => {
    expect(await inClusterEndpoint({}, 1000)).toBe(
      "not checked: no Kubernetes API (KUBERNETES_SERVICE_HOST is not set: doctor does not run in a pod; outside one, IPMGR_KUBECONFIG or --kubeconfig names a kubeconfig, NODE_NAME or --node-name the node).",
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
