/**
 * Plugin mode end to end: the real reference CNI plugins (Debian's containernetworking-plugins) and the
 * built host binary dist/cni/multus-ipmgr, run as a runtime runs a conflist (test/helpers/cni-chain.ts), in
 * network namespaces this test makes, against the bridge (in-process, its CNI socket in a temp dir) and the
 * simulator's EC2 and Kubernetes API. macvlan + static + tuning (the ENI's MAC) stand in for ipvlan
 * (test/helpers/cni-lab.ts). Root only; `npm run build` first.
 */
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger } from "../src/eni/process/logger.js";
import { CniClaims } from "../src/ipam-whereabouts-bridge/cni/cni-claims.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { referencePluginsUnavailableReason } from "./helpers/cni-chain.js";
import {
  CniGate,
  CniLab,
  referencePlugins,
  serve,
  startCniBridge,
  stopCniBridges,
} from "./helpers/cni-lab.js";
import { cniPluginUnavailableReason } from "./helpers/cni-plugin.js";
import {
  control,
  eventually,
  kube,
  kubeWorld,
  MAC_A,
  multusPod,
  NODE_A,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { labUnavailableReason } from "./helpers/netns.js";
import { SLICE_A, startPrefixBridge, stopPrefixBridges } from "./helpers/prefix-bridge.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";

const unavailable =
  labUnavailableReason() ?? referencePluginsUnavailableReason() ?? cniPluginUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/cni-e2e.test.ts is skipped\n`);

const A = (n: number) => `198.51.100.${n}`;
/** The pod's address as static IPAM gives it: in the Multus subnet 198.51.100.128/25. */
const cidr = (address: string) => `${address}/25`;

let lab: CniLab;
const sims: SimulatorHandle[] = [];
const gates: CniGate[] = [];

beforeAll(async () => {
  if (unavailable !== undefined) return;
  lab = await CniLab.open();
});

afterEach(async () => {
  for (const gate of gates.splice(0)) await gate.close();
  await stopCniBridges();
  await stopPrefixBridges();
  for (const sim of sims.splice(0)) await sim.close();
  if (unavailable === undefined) await lab.removePods();
});

afterAll(async () => {
  if (unavailable === undefined) await lab.close();
});

/** The chain of pod cnf/`name` at `address`, multus-ipmgr last with `conf` (its socket among it). */
async function podChain(name: string, address: string, conf: Record<string, unknown>) {
  const pod = await lab.newPod();
  return lab.chain(pod, name, [
    ...referencePlugins(cidr(address), MAC_A, pod.master),
    { type: "multus-ipmgr", ...conf },
  ]);
}

/** A simulator the test owns, so that the bridge can stop and start again on it. */
async function ownSim(world = kubeWorld({ pods: [] })): Promise<SimulatorHandle> {
  const sim = await startKubeSim(world);
  sims.push(sim);
  return sim;
}

/** The pod cnf/`name` on node A as Multus leaves it after ADD: its network-status lists `address` on the ENI's MAC. */
async function createPod(sim: SimulatorHandle, name: string, address: string): Promise<void> {
  const created = await control(sim, "POST", "/kubernetes/pods", multusPod(name, NODE_A, [address], MAC_A));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
}

describe.skipIf(unavailable !== undefined)(
  "plugin mode: the real CNI chain against the bridge and the simulator",
  () => {
    it("ADD returns once EC2 holds the address on the ENI of the pod interface's MAC; DEL releases it", async () => {
      // A grace no test waits for: the release is DEL's, not the view's.
      const b = await startCniBridge(kubeWorld({ pods: [] }), { releaseGraceMs: 600_000 });
      const chain = await podChain("upf-1", A(200), { socket: b.socket });

      const added = await chain.add();
      expect(added.error).toBeUndefined();
      expect(added.steps.map((s) => s.type)).toEqual(["macvlan", "tuning", "multus-ipmgr"]);
      // Routed when ADD returns: no wait here.
      expect(b.held("eni-0a1")).toContain(A(200));
      expect(b.okCalls("AssignPrivateIpAddresses")).toBe(1);
      // The chain's result is tuning's, unchanged.
      expect(added.result).toEqual(JSON.parse(added.steps[1]?.run.stdout ?? ""));

      const deleted = await chain.del();
      expect(deleted.error).toBeUndefined();
      expect(deleted.steps.map((s) => s.type)).toEqual(["multus-ipmgr", "tuning", "macvlan"]);
      expect(deleted.steps[0]?.run).toMatchObject({ code: 0, stdout: "" });
      await eventually(() => !b.held("eni-0a1").includes(A(200)), "the address released after DEL");
      expect(b.okCalls("UnassignPrivateIpAddresses")).toBe(1);
      // DEL again, as a runtime may: exit 0, nothing released twice.
      expect((await chain.del()).error).toBeUndefined();
      expect(b.okCalls("UnassignPrivateIpAddresses")).toBe(1);
    });

    it("50 pods' chains run at once: every ADD routed, in at most 2 assign calls for the ENI", {
      timeout: 120_000,
    }, async () => {
      const b = await startCniBridge(kubeWorld({ pods: [] }, { ipv4AddressesPerEni: 60 }), {
        addressesPerEni: 60,
        // Room for 50 connections to reach the bridge on a loaded machine; the count is what the test is about.
        waveWindowMs: 300,
        // An ADD's wave gathers for 10 ms in production; here the connections get the whole window to arrive.
        cniWaveWindowMs: 300,
      });
      // The 50 plugins' requests reach the bridge together, as those of 50 pods starting at once, whatever
      // the reference plugins before them (150 processes) took here.
      const gate = await CniGate.listen(join(dirname(b.socket), "gate.sock"), b.socket, 50);
      gates.push(gate);
      const pods = Array.from({ length: 50 }, (_, i) => i);
      const chains = [];
      for (const i of pods) chains.push(await podChain(`upf-${i}`, A(200 + i), { socket: gate.path }));
      const outcomes = await Promise.all(chains.map((c) => c.add()));
      expect(outcomes.filter((o) => !o.ok).map((o) => o.error)).toEqual([]);
      expect(gate.released).toBe(50);
      for (const i of pods) expect(b.held("eni-0a1")).toContain(A(200 + i));
      expect(b.okCalls("AssignPrivateIpAddresses")).toBeLessThanOrEqual(2);
      expect(b.okCalls("AssignIpv6Addresses")).toBe(0);
    });

    it("prefix mode: an ADD a delegated prefix of the ENI covers returns with no EC2 write", async () => {
      const claims = new CniClaims({ clock: systemClock, logger: createLogger("silent"), nodeName: NODE_A });
      const h = await startPrefixBridge("defer", { cni: claims });
      await eventually(
        async () => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
        "the slice held as a prefix",
      );
      const { path } = await serve(claims, h.sim, h.metrics);
      const before = h.sim.calls().length;
      const chain = await podChain("upf-p", A(165), { socket: path });
      const added = await chain.add();
      expect(added.error).toBeUndefined();
      // No EC2 call at all answered it, not even a describe.
      expect(h.sim.calls().slice(before)).toEqual([]);
      expect(h.eni()?.ipv4s).not.toContain(A(165));
    });

    it("bridge down, failOpen off: ADD fails with code 11 and the sentence; on: the pod's ADD passes with a warning, and the bridge catches up from the API", async () => {
      const sim = await ownSim();
      const first = await startCniBridge(kubeWorld({ pods: [] }), {}, { sim });
      const socket = first.socket;
      await first.stop();

      const refused = await podChain("upf-c", A(210), { socket });
      const failed = await refused.add();
      expect(failed.ok).toBe(false);
      expect(failed.error).toEqual({
        type: "multus-ipmgr",
        cniVersion: "1.0.0",
        code: 11,
        msg: "Try again later",
        details: `the bridge at ${socket} is unreachable (connect: No such file or directory): is the multus-ipmgr bridge running on this node, with IPMGR_BRIDGE_CNI_SOCKET set to this path? (failOpen: true in the NAD starts the pod without it)`,
      });
      expect((await refused.del()).error).toBeUndefined();

      const open = await podChain("upf-o", A(211), { socket, failOpen: true });
      const opened = await open.add();
      expect(opened.error).toBeUndefined();
      // failOpen passes prevResult on verbatim: the bytes the runtime gave the plugin.
      expect(opened.steps[2]?.run.stdout).toBe(
        JSON.stringify(JSON.parse(opened.steps[2]?.stdin ?? "").prevResult),
      );
      expect(opened.steps[2]?.run.stderr).toContain("failOpen: the pod starts before EC2 routes its address");
      expect(sim.state().enis.find((e) => e.eniId === "eni-0a1")?.ipv4s).not.toContain(A(211));

      // Multus writes the pod's network-status; the bridge, back, assigns the address from its view.
      await createPod(sim, "upf-o", A(211));
      const second = await startCniBridge(kubeWorld({ pods: [] }), {}, { sim });
      await eventually(() => second.held("eni-0a1").includes(A(211)), "the address assigned from the API");
    });

    it("DEL with the bridge down: exit 0, and the bridge's view-based release frees the address once back", async () => {
      const sim = await ownSim();
      const first = await startCniBridge(kubeWorld({ pods: [] }), { releaseGraceMs: 600_000 }, { sim });
      const chain = await podChain("upf-d", A(212), { socket: first.socket });
      expect((await chain.add()).error).toBeUndefined();
      await createPod(sim, "upf-d", A(212));
      expect(first.held("eni-0a1")).toContain(A(212));
      await first.stop();

      const deleted = await chain.del();
      expect(deleted.error).toBeUndefined();
      expect(deleted.steps[0]).toMatchObject({ type: "multus-ipmgr", run: { code: 0, stdout: "" } });
      expect(deleted.steps[0]?.run.stderr).toContain(
        `the bridge at ${first.socket} is unreachable (connect: No such file or directory); the bridge releases the address`,
      );
      expect(sim.state().enis.find((e) => e.eniId === "eni-0a1")?.ipv4s).toContain(A(212));

      // The pod goes from the API; a bridge started again has no claim, and releases after its grace.
      expect((await kube(sim, "DELETE", "/api/v1/namespaces/cnf/pods/upf-d")).status).toBe(200);
      const second = await startCniBridge(kubeWorld({ pods: [] }), { releaseGraceMs: 1_000 }, { sim });
      await eventually(() => !second.held("eni-0a1").includes(A(212)), "the address released by the view");
      expect(second.okCalls("UnassignPrivateIpAddresses")).toBe(1);
    });

    it("CHECK passes while the ENI holds the address, and fails with code 101 once another ENI took it; DEL then releases nothing", async () => {
      const b = await startCniBridge(kubeWorld({ pods: [] }));
      const chain = await podChain("upf-k", A(213), { socket: b.socket });
      expect((await chain.add()).error).toBeUndefined();
      const checked = await chain.check();
      expect(checked.error).toBeUndefined();
      expect(checked.steps.map((s) => s.type)).toEqual(["macvlan", "tuning", "multus-ipmgr"]);

      await ec2ApiFor(b.sim).assignPrivateIpv4("eni-0b1", [A(213)], true);
      const taken = await chain.check();
      expect(taken.ok).toBe(false);
      expect(taken.error).toEqual({
        type: "multus-ipmgr",
        cniVersion: "1.0.0",
        code: 101,
        msg: `EC2 no longer holds address ${A(213)} on ENI eni-0a1 (interface net1)`,
        details:
          "another ENI took it (two pods with one address?); the bridge assigns it again at its next wave if the pod still carries it",
      });
      // As a floating address a sidecar moved: another ENI holds it now, and DEL leaves it there.
      expect((await chain.del()).error).toBeUndefined();
      const after = Date.now();
      b.bridge.changed();
      await eventually(() => (b.bridge.report?.at ?? 0) >= after, "a wave after the DEL");
      // The release names this node's ENI, never the one holding the address now: the wave, working from its
      // last view of the ENI, may still try it there, and EC2 refuses (the address is not that ENI's).
      expect(b.okCalls("UnassignPrivateIpAddresses")).toBe(0);
      expect(
        b.sim
          .calls()
          .filter((c) => c.action.startsWith("Unassign"))
          .map((c) => c.params.NetworkInterfaceId),
      ).not.toContain("eni-0b1");
      expect(b.held("eni-0b1")).toContain(A(213));
    });

    it("a NAD with whereabouts-style IPAM: the plugin passes the ipam block and prevResult through untouched", async () => {
      const b = await startCniBridge(kubeWorld({ pods: [] }));
      const ipam = {
        type: "whereabouts",
        range: "198.51.100.192/27",
        exclude: ["198.51.100.192/30", "198.51.100.220/32"],
        range_start: "198.51.100.200",
        gateway: "198.51.100.193",
        routes: [{ dst: "203.0.113.0/24" }],
        enable_overlapping_ranges: true,
      };
      const chain = await podChain("upf-w", A(214), { socket: b.socket, deadlineSeconds: 20, ipam });
      const added = await chain.add();
      expect(added.error).toBeUndefined();
      const sent = JSON.parse(added.steps[2]?.stdin ?? "{}");
      expect(sent.ipam).toEqual(ipam);
      // What the bridge answered is the prevResult it got, byte for byte, and that is tuning's result.
      expect(added.steps[2]?.run.stdout).toBe(JSON.stringify(sent.prevResult));
      expect(sent.prevResult).toEqual(JSON.parse(added.steps[1]?.run.stdout ?? ""));
      expect(b.held("eni-0a1")).toContain(A(214));
    });
  },
);
