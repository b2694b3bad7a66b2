/**
 * `multus-ipmgr sidecar`, the built binary, in pod network namespaces against the simulator (two instances)
 * in a namespace of its own. The application's part is played with `ip addr add/del` in the pod namespace.
 * Every test checks the simulator's state.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { Lab, type LabPodSpec, labUnavailableReason, removeStaleLabs } from "./helpers/netns.js";
import {
  ec2Call,
  eventually,
  holds,
  httpGet,
  metric,
  pairPod,
  ready,
  type SidecarProcess,
  startSidecar,
} from "./helpers/sidecar-lab.js";
import { ENI, floatingPairWorld } from "./helpers/worlds.js";

const run = promisify(execFile);
const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`sidecar end-to-end tests skipped: ${unavailable}`);

const ALLOWED_CIDRS = "198.51.100.64/26,2001:db8:100:1::100/120";
const FLOAT4 = "198.51.100.80";
const FLOAT6 = "2001:db8:100:1::180";

const podA = (addresses: string[]): LabPodSpec => pairPod("a", addresses);
const podB = (addresses: string[]): LabPodSpec => pairPod("b", addresses);

let lab: Lab | undefined;
afterEach(async () => {
  await lab?.close();
  lab = undefined;
});

async function startLab(pods: LabPodSpec[], faults: Record<string, unknown> = {}): Promise<Lab> {
  await removeStaleLabs();
  lab = await Lab.start(floatingPairWorld({ faults }), pods);
  return lab;
}

function sidecar(l: Lab, pod: string, env: Record<string, string> = {}): SidecarProcess {
  return startSidecar(l, pod, { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS, ...env });
}

describe.skipIf(unavailable !== undefined)("multus-ipmgr sidecar in pod namespaces", () => {
  it("moves a floating IPv4 from pod A (node 1) to pod B (node 2) and back (failback)", async () => {
    const l = await startLab([podA(["198.51.100.70/25", `${FLOAT4}/25`]), podB(["198.51.100.90/25"])]);
    const a = sidecar(l, "a");
    const b = sidecar(l, "b");
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    expect(await holds(l, ENI.node1A1, FLOAT4)).toBe(true);
    // The default (auto) watches through `ip monitor`, which this machine has.
    for (const pod of [a, b]) {
      expect(pod.logged(/^watching pod addresses/).map((x) => x.addressEvents)).toEqual(["ip-monitor"]);
    }

    await l.removeAddress("a", "net1", `${FLOAT4}/25`);
    await l.addAddress("b", "net1", `${FLOAT4}/25`);
    await eventually(
      async () => (await holds(l, ENI.node2A1, FLOAT4)) && !(await holds(l, ENI.node1A1, FLOAT4)),
      "failover",
    );

    await l.removeAddress("b", "net1", `${FLOAT4}/25`);
    await l.addAddress("a", "net1", `${FLOAT4}/25`);
    await eventually(
      async () => (await holds(l, ENI.node1A1, FLOAT4)) && !(await holds(l, ENI.node2A1, FLOAT4)),
      "failback",
    );
    await eventually(() => ready(l, "a"), "A ready after failback");
    expect((await l.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11", "198.51.100.70", FLOAT4]);
    expect((await l.eni(ENI.node2A1)).ipv4s).toEqual(["198.51.100.21", "198.51.100.90"]);
  });

  it("moves a floating IPv6 address between nodes", async () => {
    const l = await startLab([podA([`${FLOAT6}/64`]), podB(["198.51.100.90/25"])]);
    sidecar(l, "a");
    sidecar(l, "b");
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    expect((await l.eni(ENI.node1A1)).ipv6s).toEqual([FLOAT6]);
    await l.removeAddress("a", "net1", `${FLOAT6}/64`);
    await l.addAddress("b", "net1", `${FLOAT6}/64`);
    await eventually(async () => (await l.eni(ENI.node2A1)).ipv6s.includes(FLOAT6), "IPv6 failover");
    expect((await l.eni(ENI.node1A1)).ipv6s).toEqual([]);
  });

  it("releases a removed address when release is on, and keeps it when off", async () => {
    const l = await startLab([
      podA(["198.51.100.70/25", `${FLOAT4}/25`]),
      podB(["198.51.100.90/25", "198.51.100.81/25"]),
    ]);
    sidecar(l, "a");
    const b = sidecar(l, "b", { IPMGR_RELEASE_ON_REMOVE: "false", IPMGR_LOG_LEVEL: "debug" });
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    await l.clearCalls();
    await l.removeAddress("a", "net1", `${FLOAT4}/25`);
    await l.removeAddress("b", "net1", "198.51.100.81/25");
    await eventually(async () => !(await holds(l, ENI.node1A1, FLOAT4)), "A released");
    await eventually(() => b.logged(/^pod addresses changed/).length > 0, "B saw the removal");
    // B's next resync or drift check must not release it either.
    await new Promise((r) => setTimeout(r, 500));
    expect(await holds(l, ENI.node2A1, "198.51.100.81")).toBe(true);
    const unassigns = (await l.calls()).filter((c) => c.action === "UnassignPrivateIpAddresses");
    expect(unassigns.map((c) => c.params.NetworkInterfaceId)).toEqual([ENI.node1A1]);
  });

  it("repairs drift: an address unassigned behind its back comes back, counted", async () => {
    const l = await startLab([podA(["198.51.100.70/25", `${FLOAT4}/25`])]);
    const a = sidecar(l, "a");
    await eventually(() => ready(l, "a"), "ready");
    await ec2Call(l, {
      Action: "UnassignPrivateIpAddresses",
      NetworkInterfaceId: ENI.node1A1,
      "PrivateIpAddress.1": FLOAT4,
    });
    await eventually(
      async () => (await l.calls()).at(-1)?.action === "AssignPrivateIpAddresses",
      "repair call",
    );
    await eventually(() => holds(l, ENI.node1A1, FLOAT4), "repaired");
    expect(await metric(l, "a", "multus_ipmgr_drift_repairs_total")).toBe(1);
    expect(a.logged(/^drift: /)).toHaveLength(1);
  });

  it("settles a conflict between two sidecars and reports it once, naming both ENIs", async () => {
    const l = await startLab([podA([`${FLOAT4}/25`]), podB(["198.51.100.90/25"])]);
    const a = sidecar(l, "a");
    sidecar(l, "b");
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    // Split brain: B takes the address while A still has it.
    await l.addAddress("b", "net1", `${FLOAT4}/25`);
    await eventually(
      async () => (await metric(l, "a", "multus_ipmgr_drift_repairs_total")) >= 2,
      "A fought back twice",
    );
    expect(await metric(l, "a", "multus_ipmgr_conflicts_total")).toBe(1);
    const conflict = a.logged(/^conflict: /);
    expect(conflict).toHaveLength(1);
    expect(conflict[0]).toMatchObject({ address: FLOAT4, ourEniId: ENI.node1A1, otherEniId: ENI.node2A1 });
    // With 1 s doubling backoff, two repairs of A take at least 1 s: A's assigns are never closer than that.
    const times = (await l.calls())
      .filter((c) => c.action === "AssignPrivateIpAddresses" && c.params.NetworkInterfaceId === ENI.node1A1)
      .map((c) => Date.parse(String(c.time)));
    const last = times.at(-1) ?? 0;
    const before = times.at(-2) ?? 0;
    expect(last - before).toBeGreaterThanOrEqual(1000);
    // The operator resolves it: B lets go; A keeps the address and is ready.
    await l.removeAddress("b", "net1", `${FLOAT4}/25`);
    await eventually(
      async () => (await holds(l, ENI.node1A1, FLOAT4)) && (await ready(l, "a")),
      "A holds it",
      40_000,
    );
    expect(await holds(l, ENI.node2A1, FLOAT4)).toBe(false);
    expect(a.logged(/^conflict: /)).toHaveLength(1);
  }, 60_000);

  it("finishes the EC2 call in progress on SIGTERM, then exits 0", async () => {
    const l = await startLab([podA(["198.51.100.70/25"])]);
    const a = sidecar(l, "a");
    await eventually(() => ready(l, "a"), "ready");
    await l.setFaults({ ec2LatencyMs: 1500 });
    await l.addAddress("a", "net1", `${FLOAT4}/25`);
    await eventually(() => a.logged(/^applying changes/).length > 0, "EC2 call started");
    a.child.kill("SIGTERM");
    const exit = await a.exited;
    expect(exit.code).toBe(0);
    expect(await holds(l, ENI.node1A1, FLOAT4)).toBe(true);
    const assign = (await l.calls()).find((c) => c.action === "AssignPrivateIpAddresses");
    expect(assign?.outcome).toBe("ok");
    expect(a.logged(/^stopped$/)).toHaveLength(1);
    // Nothing of the sidecar is left in the pod: its `ip monitor` child went with it.
    const { stdout } = await run("ip", ["netns", "pids", l.pods.get("a")?.ns ?? ""]);
    expect(stdout.trim()).toBe("");
  });

  it("moves a floating IPv4 with IPMGR_ADDRESS_EVENTS=poll, starting no ip monitor", async () => {
    const l = await startLab([podA(["198.51.100.70/25", `${FLOAT4}/25`]), podB(["198.51.100.90/25"])]);
    const poll = { IPMGR_ADDRESS_EVENTS: "poll" };
    const a = sidecar(l, "a", poll);
    sidecar(l, "b", poll);
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    expect(a.logged(/^watching pod addresses/).map((x) => x.addressEvents)).toEqual(["poll"]);
    const { stdout } = await run("ip", ["netns", "pids", l.pods.get("a")?.ns ?? ""]);
    expect(stdout.trim().split("\n")).toEqual([String(a.child.pid)]);
    await l.removeAddress("a", "net1", `${FLOAT4}/25`);
    await l.addAddress("b", "net1", `${FLOAT4}/25`);
    await eventually(
      async () => (await holds(l, ENI.node2A1, FLOAT4)) && !(await holds(l, ENI.node1A1, FLOAT4)),
      "failover",
    );
  });

  it("exits at once with 143 on a second SIGTERM", async () => {
    const l = await startLab([podA(["198.51.100.70/25"])]);
    const a = sidecar(l, "a");
    await eventually(() => ready(l, "a"), "ready");
    await l.setFaults({ ec2LatencyMs: 10_000 });
    await l.addAddress("a", "net1", `${FLOAT4}/25`);
    await eventually(() => a.logged(/^applying changes/).length > 0, "EC2 call started");
    a.child.kill("SIGTERM");
    await eventually(() => a.logged(/^shutting down/).length > 0, "shutdown begun");
    a.child.kill("SIGTERM");
    expect((await a.exited).code).toBe(143);
  });

  it("converges a failover through throttling", async () => {
    const l = await startLab([podA([`${FLOAT4}/25`]), podB(["198.51.100.90/25"])]);
    sidecar(l, "a");
    sidecar(l, "b");
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    await l.setFaults({
      failNext: [{ action: "AssignPrivateIpAddresses", code: "RequestLimitExceeded", status: 503, count: 4 }],
    });
    await l.removeAddress("a", "net1", `${FLOAT4}/25`);
    await l.addAddress("b", "net1", `${FLOAT4}/25`);
    await eventually(() => holds(l, ENI.node2A1, FLOAT4), "failover despite throttling");
    await eventually(() => ready(l, "b"), "B ready");
    const outcomes = (await l.calls())
      .filter((c) => c.action === "AssignPrivateIpAddresses")
      .map((c) => c.outcome);
    expect(outcomes.filter((o) => o === "RequestLimitExceeded")).toHaveLength(4);
    expect(outcomes.at(-1)).toBe("ok");
  });

  it("answers /readyz 503 until startup has assigned the addresses, then 200", async () => {
    // EC2 answers (and changes its state) 4 s after each request: time enough to look at /readyz before.
    const l = await startLab([podA(["198.51.100.70/25"])], { ec2LatencyMs: 4000 });
    const a = sidecar(l, "a");
    await eventually(async () => (await httpGet(l, "a", "/readyz")).status !== 0, "HTTP up");
    const before = await httpGet(l, "a", "/readyz");
    expect(before.status).toBe(503);
    expect(before.body).toContain("startup has not finished");
    expect(await holds(l, ENI.node1A1, "198.51.100.70")).toBe(false);
    await eventually(() => ready(l, "a"), "ready");
    expect(await holds(l, ENI.node1A1, "198.51.100.70")).toBe(true);
    expect((await httpGet(l, "a", "/healthz")).status).toBe(200);
    expect(a.stderr).toBe("");
  });

  it("exits 6 with the reason when startup refuses an address, as init does", async () => {
    const l = await startLab([podA(["198.51.100.30/25"])]);
    const a = sidecar(l, "a");
    const exit = await a.exited;
    expect(exit.code).toBe(6);
    expect(a.stderr).toContain("198.51.100.30");
    expect(await l.calls()).toEqual([]);
  });
});
