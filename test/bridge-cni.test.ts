/**
 * Plugin mode's socket against the real bridge and the simulator: the test speaks the plugin's wire
 * protocol (test/helpers/cni-socket-client.ts), the bridge runs in-process, EC2 is the simulator's.
 */
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger } from "../src/eni/process/logger.js";
import type { BridgeOptions } from "../src/ipam-whereabouts-bridge/bridge.js";
import { CniClaims } from "../src/ipam-whereabouts-bridge/cni/cni-claims.js";
import { answerCniRequest } from "../src/ipam-whereabouts-bridge/cni/cni-handler.js";
import { EMPTY_SUCCESS } from "../src/ipam-whereabouts-bridge/cni/cni-result.js";
import { CniServer } from "../src/ipam-whereabouts-bridge/cni/cni-server.js";
import type { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import type { SimulatorHandle, World } from "../src/sim/index.js";
import { startBridgeOn, stopAll } from "./helpers/bridge-harness.js";
import { callCni, cniRequest, ipvlanResult } from "./helpers/cni-socket-client.js";
import { control, eventually, kube, kubeWorld, MAC_A, multusPod, NODE_A } from "./helpers/kube-worlds.js";
import { SLICE_A, startPrefixBridge, stopPrefixBridges } from "./helpers/prefix-bridge.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const logger = createLogger("silent");
const opened: { server: CniServer; dir: string }[] = [];

afterEach(async () => {
  for (const { server, dir } of opened.splice(0)) {
    await server.stop();
    removeTempDir(dir);
  }
  await stopAll();
  await stopPrefixBridges();
});

/** A socket server for `claims` in a fresh temp dir (its `cni/` subdirectory made by the server). */
async function serve(claims: CniClaims, sim: SimulatorHandle, metrics: BridgeMetrics, readMs?: number) {
  const dir = makeTempDir("ipmgr-cni-");
  const path = join(dir, "cni", "cni.sock");
  const server = new CniServer({
    path,
    answer: (request) =>
      answerCniRequest(request, { claims, ec2: ec2ApiFor(sim), clock: systemClock, logger, metrics }),
    stopping: () => claims.stop(),
    logger,
    ...(readMs === undefined ? {} : { readMs }),
  });
  await server.start();
  opened.push({ server, dir });
  return { path, server, dir };
}

async function cniBridge(world: World = kubeWorld({ pods: [] }), options: Partial<BridgeOptions> = {}) {
  const claims = new CniClaims({ clock: systemClock, logger, nodeName: NODE_A });
  const h = await startBridgeOn(world, options, { cni: claims });
  const socket = await serve(claims, h.sim, h.metrics);
  const assigns = () =>
    h.sim.calls().filter((c) => c.action === "AssignPrivateIpAddresses" && c.outcome === "ok");
  return { ...h, claims, ...socket, assigns };
}

const A = (n: number) => `198.51.100.${n}`;

describe("the bridge's CNI socket", () => {
  it("listens 0600 in a directory it made 0700, and removes the socket when stopped", async () => {
    const h = await cniBridge();
    expect(statSync(join(h.dir, "cni")).mode & 0o777).toBe(0o700);
    expect(statSync(h.path).mode & 0o777).toBe(0o600);
    await h.server.stop();
    expect(() => statSync(h.path)).toThrow(/ENOENT/);
  });

  it("replaces a socket an earlier bridge left, and refuses a path that is no socket", async () => {
    const h = await cniBridge();
    const next = new CniServer({
      path: h.path,
      answer: async () => EMPTY_SUCCESS,
      stopping: () => undefined,
      logger,
    });
    await next.start();
    opened.push({ server: next, dir: h.dir });
    expect(await callCni(h.path, cniRequest("DEL", "upf-1", undefined))).toEqual({ exitCode: 0, body: "" });
    const file = join(h.dir, "plain");
    writeFileSync(file, "");
    const refused = new CniServer({
      path: file,
      answer: async () => EMPTY_SUCCESS,
      stopping: () => undefined,
      logger,
    });
    await expect(refused.start()).rejects.toThrow(
      `IPMGR_BRIDGE_CNI_SOCKET="${file}": a file that is no socket is there; remove it, or name another path`,
    );
  });

  it("ADD: answers prevResult unchanged once EC2 holds the address", async () => {
    const h = await cniBridge();
    const prev = ipvlanResult(MAC_A, [A(200)]);
    const reply = await callCni(h.path, cniRequest("ADD", "upf-1", prev));
    expect(reply).toEqual({ exitCode: 0, body: JSON.stringify(prev) });
    expect(h.held("eni-0a1")).toContain(A(200));
    expect(await h.metric('multus_ipmgr_bridge_cni_requests_total{command="ADD",outcome="ok"}')).toBe(1);
  });

  it("ADD twice for one container: the same answer, one claim, one assign", async () => {
    const h = await cniBridge();
    const prev = ipvlanResult(MAC_A, [A(201)], "0.4.0");
    const request = cniRequest("ADD", "upf-1", prev, { cniVersion: "0.4.0" });
    const first = await callCni(h.path, request);
    const second = await callCni(h.path, request);
    expect(second).toEqual(first);
    expect(first.exitCode).toBe(0);
    expect(h.claims.all()).toHaveLength(1);
    expect(h.assigns()).toHaveLength(1);
  });

  it("50 concurrent ADDs: every one answered, in at most 2 assign calls for the ENI", async () => {
    const h = await cniBridge(kubeWorld({ pods: [] }, { ipv4AddressesPerEni: 60 }), {
      addressesPerEni: 60,
      // Room for 50 connections to arrive on a loaded machine; the count is what the test is about.
      waveWindowMs: 300,
      cniWaveWindowMs: 300,
    });
    const pods = Array.from({ length: 50 }, (_, i) => i);
    const replies = await Promise.all(
      pods.map((i) => callCni(h.path, cniRequest("ADD", `p${i}`, ipvlanResult(MAC_A, [A(200 + i)])))),
    );
    expect(replies.map((r) => r.exitCode)).toEqual(pods.map(() => 0));
    for (const i of pods) expect(h.held("eni-0a1")).toContain(A(200 + i));
    expect(h.assigns().length).toBeLessThanOrEqual(2);
  });

  it("an ADD does not wait out the wave window: with a window of ten minutes it is answered and assigned", async () => {
    const h = await cniBridge(kubeWorld({ pods: [] }), { waveWindowMs: 600_000 });
    const reply = await callCni(h.path, cniRequest("ADD", "upf-1", ipvlanResult(MAC_A, [A(230)])));
    expect(reply.exitCode).toBe(0);
    expect(h.held("eni-0a1")).toContain(A(230));
  });

  it("prefix mode: an ADD a prefix of the ENI covers is answered with no EC2 write", async () => {
    const claims = new CniClaims({ clock: systemClock, logger, nodeName: NODE_A });
    const h = await startPrefixBridge("defer", { cni: claims });
    await eventually(
      async () => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the slice held as a prefix",
    );
    const { path } = await serve(claims, h.sim, h.metrics);
    const before = h.mutating();
    const reply = await callCni(path, cniRequest("ADD", "upf-1", ipvlanResult(MAC_A, [A(165)])));
    expect(reply.exitCode).toBe(0);
    expect(h.mutating()).toEqual(before);
  });

  it("DEL: releases the address at once; DEL again and DEL of an unknown container answer 0", async () => {
    // A grace no test waits for: the release is DEL's, not the view's.
    const h = await cniBridge(kubeWorld({ pods: [] }), { releaseGraceMs: 600_000 });
    const prev = ipvlanResult(MAC_A, [A(202)]);
    expect((await callCni(h.path, cniRequest("ADD", "upf-1", prev))).exitCode).toBe(0);
    expect(await callCni(h.path, cniRequest("DEL", "upf-1", prev))).toEqual({ exitCode: 0, body: "" });
    await eventually(() => !h.held("eni-0a1").includes(A(202)), "the address released");
    expect(await callCni(h.path, cniRequest("DEL", "upf-1", prev))).toEqual({ exitCode: 0, body: "" });
    expect(await callCni(h.path, cniRequest("DEL", "nobody", undefined))).toEqual({ exitCode: 0, body: "" });
  });

  it("a claim merges with its pod once the view shows it: one address counted, never released in between", async () => {
    const h = await cniBridge(kubeWorld({ pods: [] }), { releaseGraceMs: 600_000 });
    const prev = ipvlanResult(MAC_A, [A(207)]);
    // No K8S_POD_UID: the claim's pod is told by its name alone.
    const request = cniRequest("ADD", "upf-1", prev);
    const add = { ...request, args: request.args.replace(/;K8S_POD_UID=[^;]*/, "") };
    expect((await callCni(h.path, add)).exitCode).toBe(0);
    const status = [{ name: "cnf/multus-ipvlan", interface: "net1", ips: [A(207)], mac: MAC_A }];
    const created = await kube(h.sim, "POST", "/api/v1/namespaces/cnf/pods", {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "upf-1",
        namespace: "cnf",
        annotations: { "k8s.v1.cni.cncf.io/network-status": JSON.stringify(status) },
      },
      spec: { nodeName: NODE_A, containers: [{ name: "app", image: "registry.example/app:1" }] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const uid: string = created.body.metadata.uid;
    await eventually(
      () => h.bridge.lastDesired?.managedPods.some((p) => p.uid === uid) === true,
      "a wave that sees the pod",
    );
    expect(h.bridge.lastDesired?.managedPods).toEqual([{ namespace: "cnf", name: "upf-1", uid }]);
    expect(h.bridge.lastDesired?.interfaces.map((i) => i.addresses)).toEqual([[A(207)]]);
    expect(h.bridge.lastDesired?.conflicts).toEqual([]);
    expect(h.bridge.report).toMatchObject({ wanted: 1, held: 1 });
    expect(h.sim.calls().filter((c) => c.action === "UnassignPrivateIpAddresses")).toEqual([]);
  });

  it("ADD for a pod the bridge leaves alone (opted out) answers prevResult after a wave, and holds nothing", async () => {
    const optedOut = {
      namespace: "cnf",
      name: "upf-s",
      nodeName: NODE_A,
      annotations: { "multus-ipmgr.io/managed": "false" },
    };
    const h = await cniBridge(kubeWorld({ pods: [optedOut] }));
    await eventually(() => h.bridge.lastDesired?.skippedPods.length === 1, "a wave that sees the pod");
    const prev = ipvlanResult(MAC_A, [A(208)]);
    const reply = await callCni(h.path, cniRequest("ADD", "upf-s", prev));
    expect(reply).toEqual({ exitCode: 0, body: JSON.stringify(prev) });
    expect(h.held("eni-0a1")).not.toContain(A(208));
    expect(h.claims.all()).toEqual([]);
  });

  it("DEL: keeps the address while another pod of the node carries it", async () => {
    const h = await cniBridge(kubeWorld({ pods: [multusPod("upf-7", NODE_A, [A(215)], MAC_A)] }), {
      releaseGraceMs: 600_000,
    });
    await eventually(() => h.held("eni-0a1").includes(A(215)), "upf-7's address held");
    const prev = ipvlanResult(MAC_A, [A(215)]);
    expect((await callCni(h.path, cniRequest("ADD", "upf-8", prev))).exitCode).toBe(0);
    expect((await callCni(h.path, cniRequest("DEL", "upf-8", prev))).exitCode).toBe(0);
    // A wave after the DEL has run: it kept the address.
    const after = Date.now();
    h.bridge.changed();
    await eventually(() => (h.bridge.report?.at ?? 0) >= after, "a wave after the DEL");
    expect(h.held("eni-0a1")).toContain(A(215));
  });

  it("CHECK: 0 while the ENI holds the address, 101 once another ENI took it, in one describe each", async () => {
    const h = await cniBridge();
    const prev = ipvlanResult(MAC_A, [A(203)]);
    expect((await callCni(h.path, cniRequest("ADD", "upf-1", prev))).exitCode).toBe(0);
    const describes = () => h.sim.calls().filter((c) => c.action === "DescribeNetworkInterfaces").length;
    let n = describes();
    expect(await callCni(h.path, cniRequest("CHECK", "upf-1", prev))).toEqual({ exitCode: 0, body: "" });
    expect(describes()).toBe(n + 1);
    await ec2ApiFor(h.sim).assignPrivateIpv4("eni-0b1", [A(203)], true);
    n = describes();
    const reply = await callCni(h.path, cniRequest("CHECK", "upf-1", prev));
    expect(describes()).toBe(n + 1);
    expect(reply.exitCode).toBe(1);
    expect(JSON.parse(reply.body)).toEqual({
      cniVersion: "1.0.0",
      code: 101,
      msg: `EC2 no longer holds address ${A(203)} on ENI eni-0a1 (interface net1)`,
      details:
        "another ENI took it (two pods with one address?); the bridge assigns it again at its next wave if the pod still carries it",
    });
  });

  it("ADD for a MAC of no Multus ENI: one error naming the MAC, the interface and the Multus ENIs' MACs", async () => {
    const h = await cniBridge();
    await eventually(() => h.bridge.report !== undefined, "a first wave");
    const reply = await callCni(
      h.path,
      cniRequest("ADD", "upf-1", ipvlanResult("02:00:00:00:09:09", [A(204)])),
    );
    expect(reply.exitCode).toBe(1);
    const error = JSON.parse(reply.body);
    expect(error.code).toBe(100);
    expect(error.msg).toBe(
      `interface net1 has MAC 02:00:00:00:09:09, which is the MAC of no Multus ENI of this node (Multus ENIs: ${MAC_A})`,
    );
    expect(h.claims.all()).toEqual([]);
  });

  it("past deadlineSeconds: code 11 naming the address, the ENI and EC2's error", async () => {
    const h = await cniBridge(kubeWorld({ pods: [] }), { retry: { baseMs: 50, maxMs: 100 } });
    await eventually(() => h.bridge.report !== undefined, "a first wave");
    await control(h.sim, "PUT", "/faults", {
      failNext: [
        { action: "AssignPrivateIpAddresses", code: "InsufficientCapacity", status: 400, count: 1000 },
      ],
    });
    const reply = await callCni(
      h.path,
      cniRequest("ADD", "upf-1", ipvlanResult(MAC_A, [A(205)]), { deadlineSeconds: 1 }),
    );
    expect(reply.exitCode).toBe(1);
    const error = JSON.parse(reply.body);
    expect(error.code).toBe(11);
    expect(error.msg).toMatch(
      new RegExp(`^EC2 did not confirm address ${A(205)} on ENI eni-0a1 within 1 s: .*InsufficientCapacity`),
    );
  });

  it("a bridge stopping in the middle of an ADD answers code 11, and later requests too", async () => {
    const h = await cniBridge();
    await eventually(() => h.bridge.report !== undefined, "a first wave");
    await control(h.sim, "PUT", "/faults", {
      failNext: [
        { action: "AssignPrivateIpAddresses", code: "InsufficientCapacity", status: 400, count: 1000 },
      ],
    });
    const pending = callCni(h.path, cniRequest("ADD", "upf-1", ipvlanResult(MAC_A, [A(206)])));
    await eventually(() => h.claims.all().length === 1, "the ADD waiting");
    await h.server.stop();
    const reply = await pending;
    expect(reply.exitCode).toBe(1);
    expect(JSON.parse(reply.body)).toMatchObject({ code: 11, msg: "the bridge is stopping" });
  });

  it("a request not complete in time gets code 6", async () => {
    const h = await cniBridge();
    const slow = await serve(h.claims, h.sim, h.metrics, 200);
    const { createConnection } = await import("node:net");
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = createConnection(slow.path);
      const chunks: Buffer[] = [];
      socket.on("data", (c: Buffer) => chunks.push(c));
      socket.on("error", reject);
      socket.on("close", () => resolve(Buffer.concat(chunks).toString()));
      socket.write("MULTUS-IPMGR-CNI 1\nCNI_COMMAND=ADD\n");
    });
    expect(reply.split("\n")[0]).toBe("1");
    expect(JSON.parse(reply.slice(2))).toMatchObject({ code: 6 });
  });
});
