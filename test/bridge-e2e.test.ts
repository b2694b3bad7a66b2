/**
 * `multus-ipmgr bridge`, the built binary, on the node (not in a pod namespace), against `multus-ipmgr sim`
 * as a process on 127.0.0.1 with examples/world-bridge.yaml and the kubeconfig the simulator writes.
 * The bridge plays node ip-198-51-100-10.ec2.internal (i-0bridge1, Multus ENI eni-0b1multus).
 * Every test checks the simulator's state through its control API.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { closedPortUrl } from "./helpers/closed-port.js";
import { callCni, cniRequest, ipvlanResult } from "./helpers/cni-socket-client.js";
import { eventually } from "./helpers/kube-worlds.js";
import { type SimReady, startSimProcess } from "./helpers/sim-process.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

/** The image's entry: the bridge starts from dist/bridge.cjs with its code cache. */
const BINARY = resolve("dist/multus-ipmgr.cjs");
const unbuilt = !existsSync(BINARY) && process.env.IPMGR_TEST_SKIP_BUILD === "1";
if (unbuilt) console.warn("bridge end-to-end tests skipped: dist/multus-ipmgr.mjs is not built");

const NODE = "ip-198-51-100-10.ec2.internal";
const MAC = "02:00:00:00:01:01";
const ENI = "eni-0b1multus";
const MUTATING = new Set([
  "AssignPrivateIpAddresses",
  "UnassignPrivateIpAddresses",
  "AssignIpv6Addresses",
  "UnassignIpv6Addresses",
]);

interface Running {
  readonly child: ChildProcess;
  readonly logs: Record<string, unknown>[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: string;
}

function started(child: ChildProcess): Running {
  const running: Running = {
    child,
    logs: [],
    stderr: "",
    exited: new Promise((done) => child.once("exit", (code, signal) => done({ code, signal }))),
  };
  child.stderr?.on("data", (d: Buffer) => {
    running.stderr += d.toString();
  });
  return running;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function stop(r: Running): Promise<void> {
  if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
  await r.exited;
}

async function startSim(): Promise<{ ready: SimReady; kubeconfig: string }> {
  const dir = makeTempDir("ipmgr-kube-");
  cleanups.push(async () => removeTempDir(dir));
  const kubeconfig = join(dir, "kubeconfig");
  const sim = await startSimProcess(
    ["--world", "examples/world-bridge.yaml", "--kubeconfig", kubeconfig],
    BINARY,
  );
  cleanups.push(async () => {
    await sim.stop("SIGKILL");
  });
  return { ready: sim.ready, kubeconfig };
}

async function startBridge(
  ready: SimReady,
  kubeconfig: string,
  env: Record<string, string> = {},
): Promise<Running & { http: string }> {
  const port = new URL(await closedPortUrl()).port;
  const bridge = started(
    // --pending-deprecation: the deprecations newer Nodes print at run time (Node 24: url.parse in
    // client-node's fetch) reach stderr here on any Node, where the test wants nothing.
    spawn(process.execPath, ["--pending-deprecation", BINARY, "bridge"], {
      stdio: ["ignore", "pipe", "pipe"],
      // Nothing inherited but PATH: no AWS profile or kubeconfig of the machine leaks in.
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        AWS_EC2_METADATA_SERVICE_ENDPOINT: ready.imds["i-0bridge1"] ?? "",
        AWS_ENDPOINT_URL_EC2: ready.ec2,
        AWS_ACCESS_KEY_ID: "sim",
        AWS_SECRET_ACCESS_KEY: "sim",
        NODE_NAME: NODE,
        IPMGR_KUBECONFIG: kubeconfig,
        IPMGR_TERMINATION_LOG: "",
        IPMGR_ALLOWED_CIDRS: "198.51.100.192/27,2001:db8:100:2::/64",
        IPMGR_HTTP_HOST: "127.0.0.1",
        IPMGR_HTTP_PORT: port,
        IPMGR_BRIDGE_WAVE_WINDOW_MS: "500",
        IPMGR_BRIDGE_RELEASE_GRACE_MS: "1500",
        IPMGR_CONFIRM_TIMEOUT_MS: "1000",
        ...env,
      },
    }),
  );
  createInterface({ input: bridge.child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    try {
      bridge.logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      bridge.logs.push({ msg: line });
    }
  });
  cleanups.push(() => stop(bridge));
  // The same object: its stderr keeps growing.
  return Object.assign(bridge, { http: `http://127.0.0.1:${port}` });
}

async function controlJson<T>(ready: SimReady, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${ready.control}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

async function held(ready: SimReady): Promise<{ ipv4s: string[]; ipv6s: string[] }> {
  const state = await controlJson<{ enis: { eniId: string; ipv4s: string[]; ipv6s: string[] }[] }>(
    ready,
    "GET",
    "/state",
  );
  const eni = state.enis.find((e) => e.eniId === ENI);
  if (eni === undefined) throw new Error(`${ENI} is not in the simulator's state`);
  return eni;
}

async function mutatingCalls(ready: SimReady): Promise<{ action: string; params: Record<string, string> }[]> {
  const calls = await controlJson<{ action: string; outcome: string; params: Record<string, string> }[]>(
    ready,
    "GET",
    "/calls",
  );
  return calls.filter((c) => MUTATING.has(c.action) && c.outcome === "ok");
}

function pod(name: string, ip: string): Record<string, unknown> {
  return {
    namespace: "cnf",
    name,
    nodeName: NODE,
    labels: { app: "upf" },
    annotations: { "k8s.v1.cni.cncf.io/networks": "multus-ipvlan" },
    networkStatus: [
      { name: "aws-cni", interface: "eth0", ips: ["198.51.100.12"], default: true },
      { name: "cnf/multus-ipvlan", interface: "net1", ips: [ip], mac: MAC },
    ],
  };
}

async function metric(http: string, name: string): Promise<number> {
  const body = await (await fetch(`${http}/metrics`)).text();
  const line = body.split("\n").find((x) => x.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}

const ipv4 = (n: number) => `198.51.100.${n}`;

describe.skipIf(unbuilt)("multus-ipmgr bridge, the built binary, against multus-ipmgr sim", () => {
  it("assigns a burst of pods in one wave, releases a deleted pod's address after the grace, and exits 0 on SIGTERM", async () => {
    const { ready, kubeconfig } = await startSim();
    const bridge = await startBridge(ready, kubeconfig);
    // upf-0 (in the world file) is on this node: its two addresses come first.
    await eventually(async () => {
      const eni = await held(ready);
      return eni.ipv4s.includes(ipv4(193)) && eni.ipv6s.includes("2001:db8:100:2::101");
    }, "upf-0's addresses on eni-0b1multus");
    await eventually(async () => (await fetch(`${bridge.http}/readyz`)).status === 200, "/readyz 200");
    expect((await fetch(`${bridge.http}/healthz`)).status).toBe(200);
    await controlJson(ready, "DELETE", "/calls");

    // Eight pods appear together (m5.large: 10 addresses per ENI, the primary and upf-0's among them).
    const burst = Array.from({ length: 8 }, (_, i) => ipv4(200 + i));
    await Promise.all(
      burst.map((ip, i) => controlJson(ready, "POST", "/kubernetes/pods", pod(`burst-${i}`, ip))),
    );
    await eventually(
      async () => {
        const eni = await held(ready);
        return burst.every((ip) => eni.ipv4s.includes(ip));
      },
      "the 8 burst addresses on eni-0b1multus",
      15_000,
    );
    const assigns = await mutatingCalls(ready);
    expect(assigns.map((c) => c.action)).toEqual(["AssignPrivateIpAddresses"]);
    expect(assigns[0]?.params).toMatchObject({
      NetworkInterfaceId: ENI,
      "PrivateIpAddress.8": expect.any(String),
    });
    expect((await held(ready)).ipv4s).toEqual(["198.51.100.140", ipv4(193), ...burst]);

    // One pod deleted: its address stays for the grace period, then goes, alone.
    await controlJson(ready, "DELETE", "/calls");
    const deletedAt = Date.now();
    await controlJson(ready, "DELETE", "/kubernetes/pods/cnf/burst-3");
    await eventually(
      async () => !(await held(ready)).ipv4s.includes(ipv4(203)),
      "burst-3's address released",
      15_000,
    );
    expect(Date.now() - deletedAt).toBeGreaterThanOrEqual(1_500);
    const releases = await mutatingCalls(ready);
    expect(releases).toEqual([
      expect.objectContaining({
        action: "UnassignPrivateIpAddresses",
        params: expect.objectContaining({ NetworkInterfaceId: ENI, "PrivateIpAddress.1": ipv4(203) }),
      }),
    ]);
    expect((await held(ready)).ipv4s).toEqual([
      "198.51.100.140",
      ipv4(193),
      ...burst.filter((ip) => ip !== ipv4(203)),
    ]);
    expect(bridge.logs.filter((l) => l.msg === "releasing")).toEqual([
      expect.objectContaining({ eniId: ENI, address: ipv4(203), reason: expect.any(String) }),
    ]);
    expect(await metric(bridge.http, 'multus_ipmgr_bridge_releases_total{mode="released"}')).toBe(1);

    // Node 2's ENI (upf-1's node) is never touched.
    const state = await controlJson<{ enis: { eniId: string; ipv4s: string[] }[] }>(ready, "GET", "/state");
    expect(state.enis.find((e) => e.eniId === "eni-0b2multus")?.ipv4s).toEqual(["198.51.100.150"]);

    bridge.child.kill("SIGTERM");
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(bridge.logs.at(-1)).toMatchObject({ msg: "stopped" });
    expect(bridge.stderr).toBe("");
  });

  it("plugin mode: IPMGR_BRIDGE_CNI_SOCKET answers an ADD once EC2 holds the address; SIGTERM removes the socket", async () => {
    const { ready, kubeconfig } = await startSim();
    const dir = makeTempDir("ipmgr-cni-");
    cleanups.push(async () => removeTempDir(dir));
    const socket = join(dir, "cni", "cni.sock");
    const bridge = await startBridge(ready, kubeconfig, { IPMGR_BRIDGE_CNI_SOCKET: socket });
    await eventually(() => existsSync(socket), "the CNI socket");
    const prev = ipvlanResult(MAC, [ipv4(210)]);
    expect(await callCni(socket, cniRequest("ADD", "upf-9", prev))).toEqual({
      exitCode: 0,
      body: JSON.stringify(prev),
    });
    expect((await held(ready)).ipv4s).toContain(ipv4(210));
    bridge.child.kill("SIGTERM");
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(socket)).toBe(false);
    expect(bridge.stderr).toBe("");
  });

  it("keeps a NAD's subnet CIDR reservations in create mode while its configuration has a typo", async () => {
    const { ready, kubeconfig } = await startSim();
    const bridge = await startBridge(ready, kubeconfig, {
      IPMGR_BRIDGE_RESERVATIONS: "create",
      IPMGR_BRIDGE_RESERVATION_INTERVAL_MS: "1000",
    });
    const reservations = async (): Promise<string[]> =>
      (await controlJson<{ reservations: { cidr: string }[] }>(ready, "GET", "/state")).reservations
        .map((r) => r.cidr)
        .sort();
    await eventually(async () => (await reservations()).length === 2, "the two ranges reserved", 15_000);
    const nadPath = "/apis/k8s.cni.cncf.io/v1/namespaces/cnf/network-attachment-definitions/multus-ipvlan";
    const nad = (await (await fetch(`${ready.kubernetes}${nadPath}`)).json()) as { spec: { config: string } };
    const typo = nad.spec.config.slice(0, -1);
    const patched = await fetch(`${ready.kubernetes}${nadPath}`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ spec: { config: typo } }),
    });
    expect(patched.status).toBe(200);
    // Several reservation passes later, both reservations are still there.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await reservations()).toEqual(["198.51.100.192/27", "2001:db8:100:2::100/120"]);
    await eventually(
      async () =>
        (await (await fetch(`${bridge.http}/readyz`)).text()).includes("cannot read: NAD cnf/multus-ipvlan"),
      "the unreadable NAD on /readyz",
    );
    const calls = await controlJson<{ action: string }[]>(ready, "GET", "/calls");
    expect(calls.filter((c) => c.action === "DeleteSubnetCidrReservation")).toEqual([]);
    expect(bridge.logs).toContainEqual(
      expect.objectContaining({ level: 40, object: "NetworkAttachmentDefinition cnf/multus-ipvlan" }),
    );
    expect(
      await metric(bridge.http, 'multus_ipmgr_bridge_input_problems{kind="NetworkAttachmentDefinition"}'),
    ).toBe(1);
  });

  it("releases no live pod's address while the API refuses connections or is frozen, says why on /readyz, and recovers", async () => {
    const { ready, kubeconfig } = await startSim();
    const bridge = await startBridge(ready, kubeconfig, { IPMGR_BRIDGE_WATCH_SILENCE_MS: "3000" });
    await controlJson(ready, "POST", "/kubernetes/pods", pod("a", ipv4(200)));
    await eventually(async () => (await held(ready)).ipv4s.includes(ipv4(200)), "pod a's address held");
    await eventually(async () => (await fetch(`${bridge.http}/readyz`)).status === 200, "/readyz 200");
    const releasesOf200 = async () =>
      (await mutatingCalls(ready)).filter(
        (c) => c.action.startsWith("Unassign") && Object.values(c.params).includes(ipv4(200)),
      ).length;

    const pending = () => metric(bridge.http, "multus_ipmgr_bridge_releases_pending");
    const notReadyWith = async (pattern: RegExp) => {
      const response = await fetch(`${bridge.http}/readyz`);
      return response.status === 503 && pattern.test(await response.text());
    };

    // a deleted, then the API refuses; b is created with a's address meanwhile (grace 1.5 s).
    await controlJson(ready, "DELETE", "/kubernetes/pods/cnf/a");
    await eventually(async () => (await pending()) >= 1, "a's address pending release");
    await controlJson(ready, "PUT", "/faults", { kubeRefuseConnections: true });
    await controlJson(ready, "POST", "/kubernetes/pods", pod("b", ipv4(200)));
    // A wait to show that nothing happens: the grace passes twice and the address stays.
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await held(ready)).ipv4s).toContain(ipv4(200));
    expect(await releasesOf200()).toBe(0);
    await eventually(() => notReadyWith(/refused the connection/), "the refusal on /readyz");
    await controlJson(ready, "PUT", "/faults", { kubeRefuseConnections: false });
    await eventually(async () => (await fetch(`${bridge.http}/readyz`)).status === 200, "ready again");
    await eventually(async () => (await pending()) === 0, "b's use of the address seen");

    // b deleted, then the API freezes without a reset; c is created with the address meanwhile.
    await controlJson(ready, "DELETE", "/kubernetes/pods/cnf/b");
    await eventually(async () => (await pending()) >= 1, "b's address pending release");
    await controlJson(ready, "PUT", "/faults", { kubeFreeze: true });
    await controlJson(ready, "POST", "/kubernetes/pods", pod("c", ipv4(200)));
    // A wait to show that nothing happens, past the watch silence (3 s) and the grace.
    await new Promise((r) => setTimeout(r, 5_000));
    expect((await held(ready)).ipv4s).toContain(ipv4(200));
    expect(await releasesOf200()).toBe(0);
    await eventually(() => notReadyWith(/silent for \d+ s/), "the silence on /readyz");
    await controlJson(ready, "PUT", "/faults", { kubeFreeze: false });
    await eventually(
      async () => (await fetch(`${bridge.http}/readyz`)).status === 200,
      "ready after the thaw",
    );
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await held(ready)).ipv4s).toContain(ipv4(200));
    expect(await releasesOf200()).toBe(0);
    expect(bridge.child.exitCode).toBeNull();
  });

  it("keeps running, not ready, with the RBAC fix on /readyz when the API answers 403", async () => {
    const { ready, kubeconfig } = await startSim();
    await controlJson(ready, "PUT", "/faults", {
      kubeErrorStatus: { code: 403, resources: ["ippools"], verbs: ["list", "watch"] },
    });
    const bridge = await startBridge(ready, kubeconfig);
    await eventually(
      async () =>
        (
          await fetch(`${bridge.http}/readyz`).then(
            (r) => r.text(),
            () => "",
          )
        ).includes("403 Forbidden"),
      "the 403 on /readyz",
    );
    const body = await (await fetch(`${bridge.http}/readyz`)).text();
    expect(body).toContain(
      "the bridge's ClusterRole lacks list/watch on ippools: upgrade the chart (its ClusterRole grants it) or apply deploy/overlays/bridge/bridge-rbac.yaml",
    );
    expect((await fetch(`${bridge.http}/readyz`)).status).toBe(503);
    expect(bridge.child.exitCode).toBeNull();
    await controlJson(ready, "PUT", "/faults", { kubeErrorStatus: null });
    await eventually(async () => (await fetch(`${bridge.http}/readyz`)).status === 200, "ready once allowed");
  });

  it("releases a finished pod's address after the grace, and never one whose pod's network-status cannot be read", async () => {
    const { ready, kubeconfig } = await startSim();
    const bridge = await startBridge(ready, kubeconfig);
    await controlJson(ready, "POST", "/kubernetes/pods", pod("job", ipv4(201)));
    await controlJson(ready, "POST", "/kubernetes/pods", pod("odd", ipv4(202)));
    await eventually(async () => {
      const eni = await held(ready);
      return eni.ipv4s.includes(ipv4(201)) && eni.ipv4s.includes(ipv4(202));
    }, "both addresses held");
    await controlJson(ready, "PATCH", "/kubernetes/pods/cnf/job", { status: { phase: "Succeeded" } });
    await eventually(
      async () => !(await held(ready)).ipv4s.includes(ipv4(201)),
      "the finished pod's address released",
    );
    await controlJson(ready, "PATCH", "/kubernetes/pods/cnf/odd", {
      metadata: { annotations: { "k8s.v1.cni.cncf.io/network-status": "[{" } },
    });
    await eventually(
      async () => (await (await fetch(`${bridge.http}/readyz`)).text()).includes("cannot read: pod cnf/odd"),
      "the unreadable annotation on /readyz",
    );
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await held(ready)).ipv4s).toContain(ipv4(202));
  });

  it("exits 12 naming the kubeconfig when it cannot be read", async () => {
    const { ready } = await startSim();
    const bridge = await startBridge(ready, "/nonexistent/ipmgr-kubeconfig");
    const { code } = await bridge.exited;
    expect(code).toBe(12);
    expect(`${JSON.stringify(bridge.logs)}${bridge.stderr}`).toContain("/nonexistent/ipmgr-kubeconfig");
  });
});
