/**
 * Prefix mode end to end: the bridge in-process against the simulator (EC2, IMDS, and the Kubernetes API
 * with whereabouts' node-slice controller and node-slice IPAM played by its stand-ins). Each test checks the
 * simulator's state and the EC2 calls it logged.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { PrefixOverlapMode } from "../src/ipam-whereabouts-bridge/prefixes/prefix-plan.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { eventually, type Json, kube, MAC_A, multusPod, NODE_A } from "./helpers/kube-worlds.js";
import {
  MUTATING,
  POOLS,
  type PrefixBridgeOptions,
  runPod,
  SLICE_A,
  SLICED_NAD,
  startPrefixBridge,
  stopPrefixBridges,
} from "./helpers/prefix-bridge.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";

afterEach(stopPrefixBridges);

function startBridge(
  overlap: PrefixOverlapMode,
  pods: Record<string, unknown>[] = [],
  before: (sim: SimulatorHandle) => Promise<void> = async () => undefined,
  options: PrefixBridgeOptions = {},
) {
  return startPrefixBridge(overlap, { ...options, pods, before });
}

describe("bridge prefix mode against the simulator", () => {
  it("holds the node's slice as one prefix in one EC2 call, then three pods start with no EC2 call", async () => {
    const h = await startBridge("defer");
    await eventually(
      async () => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the slice held as a prefix",
    );
    const joined = h.mutating();
    expect(joined.map((c) => c.action)).toEqual(["AssignPrivateIpAddresses"]);
    expect(joined[0]?.params["Ipv4Prefix.1"]).toBe(SLICE_A);

    const addresses = [
      ...(await runPod(h.sim, "p1")),
      ...(await runPod(h.sim, "p2")),
      ...(await runPod(h.sim, "p3")),
    ];
    expect(addresses).toHaveLength(3);
    for (const a of addresses)
      expect(a.startsWith("198.51.100.16") || a.startsWith("198.51.100.17")).toBe(true);
    // A wave that has seen the three pods counts their addresses held, with no call.
    await eventually(
      async () => h.bridge.report?.wanted === 3 && h.bridge.report?.held === 3,
      "the pods' addresses held",
    );
    expect(h.mutating()).toEqual(joined);
    expect(h.eni()?.ipv4s).not.toContain(addresses[0]);
  });

  it("defer: a block where the ENI holds a pod's single address waits; the address stays routed", async () => {
    const h = await startBridge(
      "defer",
      [multusPod("old", NODE_A, ["198.51.100.165"], MAC_A)],
      async (sim) => {
        await ec2ApiFor(sim).assignPrivateIpv4("eni-0a1", ["198.51.100.165"], false);
        sim.clearCalls();
      },
    );
    await eventually(async () => h.bridge.report !== undefined, "a wave");
    expect(h.eni()?.ipv4s).toContain("198.51.100.165");
    expect(h.eni()?.ipv4Prefixes ?? []).toEqual([]);
    expect(h.mutating().filter((c) => c.action === "UnassignPrivateIpAddresses")).toEqual([]);
    expect(await h.metrics.text()).toContain("multus_ipmgr_bridge_prefixes_deferred 1");
  });

  it("swap: the single address is unassigned in the call right before the prefix assign, and covered after", async () => {
    const h = await startBridge(
      "swap",
      [multusPod("old", NODE_A, ["198.51.100.165"], MAC_A)],
      async (sim) => {
        await ec2ApiFor(sim).assignPrivateIpv4("eni-0a1", ["198.51.100.165"], false);
        sim.clearCalls();
      },
    );
    await eventually(
      async () => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the slice held as a prefix",
    );
    const calls = h.mutating();
    const unassign = calls.findIndex((c) => c.action === "UnassignPrivateIpAddresses");
    expect(calls[unassign]?.params["PrivateIpAddress.1"]).toBe("198.51.100.165");
    // Nothing between the unassign and the prefix assign: the address is unrouted for one call.
    expect(calls[unassign + 1]?.action).toBe("AssignPrivateIpAddresses");
    expect(calls[unassign + 1]?.params["Ipv4Prefix.1"]).toBe(SLICE_A);
    expect(calls[unassign + 1]?.seq).toBe((calls[unassign]?.seq ?? 0) + 1);
    expect(h.eni()?.ipv4s).not.toContain("198.51.100.165");
    await eventually(
      async () => /multus_ipmgr_bridge_prefix_swap_gap_seconds_count 1\n/.test(await h.metrics.text()),
      "the gap measured",
    );
  });

  it("swap: a prefix assign EC2 refuses puts the single address back in the next EC2 write", async () => {
    const h = await startBridge(
      "swap",
      [multusPod("old", NODE_A, ["198.51.100.165"], MAC_A)],
      async (sim) => {
        await ec2ApiFor(sim).assignPrivateIpv4("eni-0a1", ["198.51.100.165"], false);
        sim.clearCalls();
        sim.setFaults({
          failNext: [
            { action: "AssignPrivateIpAddresses", code: "InvalidParameterValue", status: 400, count: 1 },
          ],
        });
      },
    );
    const restored = () =>
      h.sim
        .calls()
        .some(
          (c) =>
            c.action === "AssignPrivateIpAddresses" &&
            c.params["PrivateIpAddress.1"] === "198.51.100.165" &&
            c.outcome === "ok",
        );
    await eventually(restored, "the single address assigned again");
    const calls = h.sim.calls().filter((c) => MUTATING.has(c.action));
    const refused = calls.findIndex((c) => c.outcome === "InvalidParameterValue");
    expect(calls[refused - 1]?.action).toBe("UnassignPrivateIpAddresses");
    expect(calls[refused]?.params["Ipv4Prefix.1"]).toBe(SLICE_A);
    expect(calls[refused + 1]?.params["PrivateIpAddress.1"]).toBe("198.51.100.165");
    expect(calls[refused + 1]?.outcome).toBe("ok");
    // EC2's refusal is reported and remembered: the swap waits for its backoff (bridge-prefix-refusals.test.ts).
    expect(h.eni()?.ipv4s).toContain("198.51.100.165");
    expect(h.eni()?.ipv4Prefixes ?? []).toEqual([]);
  });

  it("releases the prefix once the node no longer owns the slice and no pod uses it, after the grace", async () => {
    const h = await startBridge("defer");
    await eventually(
      async () => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the slice held as a prefix",
    );
    const pool = (await kube(h.sim, "GET", `${POOLS}/slices`)).body;
    pool.status.allocations = pool.status.allocations.map((a: Json) =>
      a.nodeName === NODE_A ? { ...a, nodeName: "" } : a,
    );
    const put = await kube(h.sim, "PUT", `${POOLS}/slices`, pool);
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    await eventually(
      async () => !(h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the prefix released",
      10_000,
    );
    // The simulator changes its state before it answers: the bridge counts the release once the answer is in.
    await eventually(
      async () =>
        (await h.metrics.text()).includes('multus_ipmgr_bridge_prefix_releases_total{mode="released"} 1'),
      "the release counted",
    );
  });

  it("dry run: logs and counts the prefix release, and makes none", async () => {
    const h = await startBridge("defer", [], async () => undefined, { releaseDryRun: true });
    await eventually(
      async () => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the slice held as a prefix",
    );
    const pool = (await kube(h.sim, "GET", `${POOLS}/slices`)).body;
    pool.status.allocations = pool.status.allocations.map((a: Json) =>
      a.nodeName === NODE_A ? { ...a, nodeName: "" } : a,
    );
    expect((await kube(h.sim, "PUT", `${POOLS}/slices`, pool)).status).toBe(200);
    await eventually(
      async () =>
        (await h.metrics.text()).includes('multus_ipmgr_bridge_prefix_releases_total{mode="dry-run"} 1'),
      "the dry-run release counted",
    );
    expect(h.eni()?.ipv4Prefixes).toContain(SLICE_A);
    expect(h.mutating().filter((c) => c.action === "UnassignPrivateIpAddresses")).toEqual([]);
  });

  it("refuses a slice smaller than a /28: an Event on the NAD and a metric naming it, and the network stays per-address", async () => {
    const nad = {
      ...SLICED_NAD,
      config: { ...SLICED_NAD.config, ipam: { ...SLICED_NAD.config.ipam, node_slice_size: "/29" } },
    };
    const h = await startBridge("defer", [], async () => undefined, { nad });
    await eventually(
      async () =>
        (await h.metrics.text()).includes(
          'multus_ipmgr_bridge_prefix_refused{nad="kube-system/slices",reason="slice-too-small"} 1',
        ),
      "the refusal counted",
    );
    let events: Json[] = [];
    await eventually(async () => {
      events = (await kube(h.sim, "GET", "/api/v1/namespaces/kube-system/events")).body.items;
      return events.some((e: Json) => e.reason === "PrefixModeRefused");
    }, "the NAD's Event");
    const event = events.find((e: Json) => e.reason === "PrefixModeRefused");
    expect(event.involvedObject).toMatchObject({ kind: "NetworkAttachmentDefinition", name: "slices" });
    expect(event.message).toContain("set node_slice_size to /28 or larger");
    expect(h.eni()?.ipv4Prefixes ?? []).toEqual([]);
    expect(h.mutating()).toEqual([]);
  });

  it("keeps the prefix while a pod of the node holds an address inside, even when the slice is gone", async () => {
    const h = await startBridge("defer", [multusPod("stays", NODE_A, ["198.51.100.170"], MAC_A)]);
    await eventually(
      async () => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the slice held as a prefix",
    );
    const pool = (await kube(h.sim, "GET", `${POOLS}/slices`)).body;
    pool.status.allocations = pool.status.allocations.map((a: Json) =>
      a.nodeName === NODE_A ? { ...a, nodeName: "" } : a,
    );
    expect((await kube(h.sim, "PUT", `${POOLS}/slices`, pool)).status).toBe(200);
    // A wave that has seen the slice go: the prefix is no longer wanted, and no grace runs for it (a pod uses it).
    await eventually(
      async () =>
        h.prefixes
          .lines()[0]
          ?.startsWith(
            "prefix mode: 0 of 0 prefixes held; 0 waiting for single addresses inside to go; 0 releases pending",
          ) === true,
      "a wave without the slice",
    );
    expect(h.eni()?.ipv4Prefixes).toContain(SLICE_A);
    expect(h.mutating().filter((c) => c.action === "UnassignPrivateIpAddresses")).toEqual([]);
  });
});
