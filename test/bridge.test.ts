/**
 * The bridge in-process against the simulator: EC2 and IMDS of node A, and the Kubernetes API through the
 * real @kubernetes/client-node. Every test checks the simulator's state (the ENIs' addresses, the EC2 calls).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { BridgeOptions } from "../src/ipam-whereabouts-bridge/bridge.js";
import type { SimulatorHandle, World } from "../src/sim/index.js";
import { type BridgeHarness, startBridgeOn, stopAll } from "./helpers/bridge-harness.js";
import {
  eventually,
  kubeWorld,
  MAC_A,
  MAC_A2,
  MAC_B,
  multusPod,
  NODE_A,
  NODE_B,
} from "./helpers/kube-worlds.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";

const MUTATING = new Set([
  "AssignPrivateIpAddresses",
  "UnassignPrivateIpAddresses",
  "AssignIpv6Addresses",
  "UnassignIpv6Addresses",
]);

interface Harness extends BridgeHarness {
  mutatingCalls(): string[];
}

afterEach(stopAll);

/** A bridge on node A of a new simulator running `world`; or on `node` of a simulator already started. */
async function startBridge(
  world: World | { sim: SimulatorHandle; node: string; instance: string },
  options: Partial<BridgeOptions> = {},
): Promise<Harness> {
  const h =
    "sim" in world
      ? await startBridgeOn(kubeWorld(), options, {
          sim: world.sim,
          node: world.node,
          instance: world.instance,
        })
      : await startBridgeOn(world, options);
  return {
    ...h,
    mutatingCalls: () =>
      h.sim
        .calls()
        .filter((c) => MUTATING.has(c.action) && c.outcome === "ok")
        .map((c) => c.action),
  };
}

const ipv4 = (n: number) => `198.51.100.${n}`;

describe("bridge against the simulator (EC2, IMDS, Kubernetes API)", () => {
  it("assigns the addresses of a burst of 40 pods in a handful of EC2 calls, not one per pod", async () => {
    const h = await startBridge(kubeWorld({}, { ipv4AddressesPerEni: 50 }));
    await eventually(() => h.held("eni-0a1").includes(ipv4(193)), "upf-0's address on eni-0a1");
    h.sim.clearCalls();
    for (let i = 0; i < 40; i++) {
      h.sim.kubernetes?.addPod(multusPod(`burst-${i}`, NODE_A, [ipv4(200 + i)], MAC_A));
    }
    await eventually(
      () => h.held("eni-0a1").length === 42,
      "41 pod addresses and the primary on eni-0a1",
      15_000,
    );
    const calls = h.mutatingCalls();
    expect(calls.length).toBeGreaterThanOrEqual(1);
    expect(calls.length).toBeLessThanOrEqual(4);
    expect(new Set(calls)).toEqual(new Set(["AssignPrivateIpAddresses"]));
    // Node B's ENI is never touched.
    expect(h.held("eni-0b1")).toEqual(["198.51.100.150"]);
  });

  it("releases a deleted pod's address only after the grace period, and never an address outside the managed ranges", async () => {
    const world = kubeWorld({
      pods: [multusPod("upf-0", NODE_A, [ipv4(193)], MAC_A), multusPod("upf-1", NODE_A, [ipv4(195)], MAC_A)],
    });
    const h = await startBridge(world);
    await eventually(() => h.held("eni-0a1").includes(ipv4(195)), "upf-1's address");
    // An address outside every whereabouts range (a sidecar's floating address), held by the Multus ENI.
    const ec2 = ec2ApiFor(h.sim);
    await ec2.assignPrivateIpv4("eni-0a1", ["198.51.100.170"], false);
    const deletedAt = Date.now();
    h.sim.kubernetes?.deletePod("cnf", "upf-1");
    await eventually(() => !h.held("eni-0a1").includes(ipv4(195)), "upf-1's address released", 10_000);
    expect(Date.now() - deletedAt).toBeGreaterThanOrEqual(1_500);
    expect(h.held("eni-0a1")).toEqual(["198.51.100.140", ipv4(193), "198.51.100.170"]);
    const unassigns = h.sim.calls().filter((c) => c.action === "UnassignPrivateIpAddresses");
    expect(unassigns.map((c) => c.params)).toEqual([
      expect.objectContaining({ NetworkInterfaceId: "eni-0a1", "PrivateIpAddress.1": ipv4(195) }),
    ]);
  });

  it("keeps a StatefulSet pod's address while it restarts with the same address: no release, no second assign", async () => {
    const h = await startBridge(kubeWorld(), { releaseGraceMs: 3_000 });
    await eventually(() => h.held("eni-0a1").includes(ipv4(193)), "upf-0's address");
    h.sim.clearCalls();
    h.sim.kubernetes?.deletePod("cnf", "upf-0", 30);
    await new Promise((r) => setTimeout(r, 400));
    h.sim.kubernetes?.deletePod("cnf", "upf-0");
    // The bridge has seen the pod gone: its address waits out the grace.
    await eventually(() => (h.bridge.report?.pendingReleases ?? 0) > 0, "upf-0's address pending release");
    h.sim.kubernetes?.addPod(
      multusPod("upf-0", NODE_A, [ipv4(193)], MAC_A, { uid: "4d7e2c6a-0000-4000-8000-000000000001" }),
    );
    // A wait to show that nothing happens: past the grace, the address stays and nothing is assigned.
    await new Promise((r) => setTimeout(r, 3_500));
    expect(h.held("eni-0a1")).toEqual(["198.51.100.140", ipv4(193)]);
    expect(h.mutatingCalls()).toEqual([]);
  });

  it("assigns IPv6 and dual-stack addresses, one call per family", async () => {
    const h = await startBridge(
      kubeWorld({
        networkAttachmentDefinitions: [
          {
            namespace: "cnf",
            name: "multus-ipvlan",
            config: {
              type: "ipvlan",
              master: "eth1",
              ipam: {
                type: "whereabouts",
                ipRanges: [{ range: "198.51.100.192/27" }, { range: "2001:db8:100:2::100/120" }],
              },
            },
          },
        ],
        pods: [
          multusPod("dual", NODE_A, [ipv4(196), "2001:db8:100:2::196"], MAC_A),
          multusPod("v6", NODE_A, ["2001:db8:100:2::197"], MAC_A),
        ],
      }),
    );
    await eventually(
      () => (h.sim.state().enis.find((e) => e.eniId === "eni-0a1")?.ipv6s.length ?? 0) === 2,
      "two IPv6 addresses on eni-0a1",
    );
    expect(
      h.sim
        .state()
        .enis.find((e) => e.eniId === "eni-0a1")
        ?.ipv6s.sort(),
    ).toEqual(["2001:db8:100:2::196", "2001:db8:100:2::197"]);
    expect(h.held("eni-0a1")).toContain(ipv4(196));
    expect(h.mutatingCalls().sort()).toEqual(["AssignIpv6Addresses", "AssignPrivateIpAddresses"]);
  });

  it("does not move an address whereabouts allocates to another pod, and posts an Event on both pods", async () => {
    const h = await startBridge(
      kubeWorld({
        pods: [multusPod("intruder", NODE_A, [ipv4(193)], MAC_A)],
      }),
    );
    await eventually(() => (h.sim.state().kubernetes?.events.length ?? 0) >= 2, "two AddressConflict events");
    const events = (h.sim.state().kubernetes?.events ?? []) as unknown as {
      reason: string;
      involvedObject: { name: string };
    }[];
    expect(events.map((e) => `${e.reason} ${e.involvedObject.name}`).sort()).toEqual([
      "AddressConflict intruder",
      "AddressConflict upf-0",
    ]);
    expect(h.held("eni-0a1")).toEqual(["198.51.100.140"]);
    expect(
      h.bridge
        .readiness()
        .lines.some((l) => l.startsWith("conflict: address 198.51.100.193 on cnf/intruder")),
    ).toBe(true);
  });

  it("posts the conflict Event on whereabouts' owner, a pod of another node, with its uid, so that kubectl describe shows it", async () => {
    const ownerUid = "4d7e2c6a-0000-4000-8000-0000000000b0";
    const intruderUid = "4d7e2c6a-0000-4000-8000-0000000000a0";
    const h = await startBridge(
      kubeWorld({
        pods: [
          multusPod("upf-0", NODE_B, [ipv4(193)], MAC_B, { uid: ownerUid }),
          multusPod("intruder", NODE_A, [ipv4(193)], MAC_A, { uid: intruderUid }),
        ],
      }),
    );
    type Event = { reason: string; involvedObject: { name: string; uid?: string } };
    const conflicts = () =>
      ((h.sim.state().kubernetes?.events ?? []) as unknown as Event[]).filter(
        (e) => e.reason === "AddressConflict",
      );
    await eventually(() => conflicts().length >= 2, "two AddressConflict events");
    expect(
      conflicts()
        .map((e) => `${e.involvedObject.name} ${e.involvedObject.uid}`)
        .sort(),
    ).toEqual([`intruder ${intruderUid}`, `upf-0 ${ownerUid}`]);
  });

  it("leaves pods on other nodes and opted-out pods alone, and catches up after the watches break and history is compacted", async () => {
    const h = await startBridge(kubeWorld());
    await eventually(() => h.held("eni-0a1").includes(ipv4(193)), "upf-0's address");
    h.sim.kubernetes?.addPod(multusPod("on-b", NODE_B, [ipv4(210)], MAC_B));
    h.sim.kubernetes?.addPod(
      multusPod("own", NODE_A, [ipv4(211)], MAC_A, { annotations: { "multus-ipmgr.io/managed": "false" } }),
    );
    h.sim.kubernetes?.compact();
    h.sim.kubernetes?.closeWatches();
    h.sim.kubernetes?.addPod(multusPod("after", NODE_A, [ipv4(212)], MAC_A));
    await eventually(() => h.held("eni-0a1").includes(ipv4(212)), "the pod added after the break");
    expect(h.held("eni-0a1")).toEqual(["198.51.100.140", ipv4(193), ipv4(212)]);
    expect(h.held("eni-0b1")).toEqual(["198.51.100.150"]);
  });

  it("runs a throttled wave again whole after a backoff, and loses nothing", async () => {
    const h = await startBridge(kubeWorld());
    await eventually(() => h.held("eni-0a1").includes(ipv4(193)), "upf-0's address");
    h.sim.setFaults({
      failNext: [
        { action: "AssignPrivateIpAddresses", code: "RequestLimitExceeded", status: 503, count: 20 },
      ],
    });
    h.sim.kubernetes?.addPod(multusPod("t1", NODE_A, [ipv4(220)], MAC_A));
    h.sim.kubernetes?.addPod(multusPod("t2", NODE_A, [ipv4(221)], MAC_A));
    await eventually(
      () => h.held("eni-0a1").includes(ipv4(220)) && h.held("eni-0a1").includes(ipv4(221)),
      "both addresses after the throttling",
      20_000,
    );
    expect(await h.metrics.text()).toMatch(/multus_ipmgr_bridge_waves_total\{outcome="error"\} [1-9]/);
  });

  it("counts no release EC2 refused, and releases the address again once its memory of the refusal ends", async () => {
    const world = kubeWorld({
      pods: [multusPod("upf-0", NODE_A, [ipv4(193)], MAC_A), multusPod("upf-1", NODE_A, [ipv4(195)], MAC_A)],
    });
    const h = await startBridge(world, { releaseGraceMs: 300, recentMemoryMs: 500, resyncIntervalMs: 1_000 });
    await eventually(() => h.held("eni-0a1").includes(ipv4(195)), "upf-1's address");
    h.sim.setFaults({
      failNext: [
        { action: "UnassignPrivateIpAddresses", code: "InvalidParameterValue", status: 400, count: 1 },
      ],
    });
    h.sim.clearCalls();
    h.sim.kubernetes?.deletePod("cnf", "upf-1");
    const released = /multus_ipmgr_bridge_releases_total\{mode="released"\} (\d+)/;
    await eventually(
      () => h.sim.calls().some((c) => c.action === "UnassignPrivateIpAddresses"),
      "the first release, refused",
    );
    expect((await h.metrics.text()).match(released)?.[1]).toBe("0");
    await eventually(() => !h.held("eni-0a1").includes(ipv4(195)), "released on a later wave", 10_000);
    const unassigns = h.sim.calls().filter((c) => c.action === "UnassignPrivateIpAddresses");
    expect(unassigns.map((c) => c.outcome)).toEqual(["InvalidParameterValue", "ok"]);
    await eventually(
      async () => (await h.metrics.text()).match(released)?.[1] === "1",
      "one release counted",
    );
  });

  it("in dry-run mode counts the release it would make once, and makes none", async () => {
    const world = kubeWorld({
      pods: [multusPod("upf-0", NODE_A, [ipv4(193)], MAC_A), multusPod("upf-1", NODE_A, [ipv4(195)], MAC_A)],
    });
    const h = await startBridge(world, { releaseDryRun: true, releaseGraceMs: 300 });
    await eventually(() => h.held("eni-0a1").includes(ipv4(195)), "upf-1's address");
    h.sim.clearCalls();
    h.sim.kubernetes?.deletePod("cnf", "upf-1");
    const dryRuns = /multus_ipmgr_bridge_releases_total\{mode="dry-run"\} (\d+)/;
    await eventually(
      async () => (await h.metrics.text()).match(dryRuns)?.[1] === "1",
      "one dry-run release counted",
    );
    // Another wave (a pod appears) finds the same address unused: not counted again, still not released.
    h.sim.kubernetes?.addPod(multusPod("upf-2", NODE_A, [ipv4(196)], MAC_A));
    await eventually(() => h.held("eni-0a1").includes(ipv4(196)), "upf-2's address");
    expect(h.held("eni-0a1")).toEqual(["198.51.100.140", ipv4(193), ipv4(195), ipv4(196)]);
    expect(h.mutatingCalls()).toEqual(["AssignPrivateIpAddresses"]);
    expect((await h.metrics.text()).match(dryRuns)?.[1]).toBe("1");
    expect(await h.metrics.text()).not.toMatch(/releases_total\{mode="released"\} [1-9]/);
  });

  it("refuses what does not fit on a full ENI before any call, with an Event naming the ENI and the fix", async () => {
    const h = await startBridge(kubeWorld({}, { ipv4AddressesPerEni: 4 }), { addressesPerEni: 4 });
    await eventually(() => h.held("eni-0a1").includes(ipv4(193)), "upf-0's address");
    h.sim.clearCalls();
    const burst = [200, 201, 202, 203].map(ipv4);
    burst.forEach((ip, i) => {
      h.sim.kubernetes?.addPod(multusPod(`full-${i}`, NODE_A, [ip], MAC_A));
    });
    type Event = { reason: string; message: string; involvedObject: { name: string } };
    const refusedEvents = () =>
      ((h.sim.state().kubernetes?.events ?? []) as unknown as Event[]).filter(
        (e) => e.reason === "AddressesNotAssigned",
      );
    // Two pods refused; a wave that follows at once may say so again with its own count.
    await eventually(
      () => new Set(refusedEvents().map((e) => e.involvedObject.name)).size === 2,
      "AddressesNotAssigned events on two pods",
    );
    await eventually(() => h.held("eni-0a1").length === 4, "the ENI full: the primary and three");
    const heldBurst = burst.filter((ip) => h.held("eni-0a1").includes(ip));
    expect(heldBurst).toHaveLength(2);
    const refusedPods = [...new Set(refusedEvents().map((e) => e.involvedObject.name))].sort();
    expect(refusedPods).toEqual(
      burst
        .map((ip, i) => [ip, `full-${i}`])
        .filter(([ip]) => !heldBurst.includes(ip as string))
        .map(([, name]) => name),
    );
    for (const e of refusedEvents()) {
      expect(e.message).toMatch(
        /^address 198\.51\.100\.20\d on cnf\/full-\d\/net1 does not fit on ENI eni-0a1: it holds \d IPv4 addresses of the 4 its instance type allows per ENI, and this wave assigns \d more; release addresses no pod uses, or spread the pods over more nodes\.$/,
      );
    }
    // No call that EC2 would refuse whole.
    expect(h.sim.calls().filter((c) => c.outcome === "PrivateIpAddressLimitExceeded")).toEqual([]);
    expect(await h.metrics.text()).toMatch(/multus_ipmgr_bridge_addresses_refused\S* 2/);
  });

  it("moves pods between two nearly full ENIs of the node wave after wave, not one address per resync", async () => {
    const p = [ipv4(201), ipv4(202)];
    const q = [ipv4(211), ipv4(212)];
    const h = await startBridge(
      kubeWorld(
        {
          pods: [
            ...p.map((ip, i) => multusPod(`p-${i}`, NODE_A, [ip], MAC_A)),
            ...q.map((ip, i) => multusPod(`q-${i}`, NODE_A, [ip], MAC_A2)),
          ],
        },
        { ipv4AddressesPerEni: 4, secondMultusEni: true },
      ),
      // 4 per ENI: the primary, two pods and one free slot on each. No resync, no release during the test.
      { addressesPerEni: 4, resyncIntervalMs: 600_000, releaseGraceMs: 600_000 },
    );
    await eventually(
      () => h.held("eni-0a1").length === 3 && h.held("eni-0a2").length === 3,
      "both ENIs holding their two pods",
    );
    // Every pod is recreated on the other ENI, keeping its address: both ENIs need two slots, have one.
    for (const [i, ip] of p.entries()) {
      h.sim.kubernetes?.deletePod("cnf", `p-${i}`);
      h.sim.kubernetes?.addPod(multusPod(`p-${i}`, NODE_A, [ip], MAC_A2, { uid: `p-${i}-second` }));
    }
    for (const [i, ip] of q.entries()) {
      h.sim.kubernetes?.deletePod("cnf", `q-${i}`);
      h.sim.kubernetes?.addPod(multusPod(`q-${i}`, NODE_A, [ip], MAC_A, { uid: `q-${i}-second` }));
    }
    await eventually(
      () =>
        q.every((ip) => h.held("eni-0a1").includes(ip)) && p.every((ip) => h.held("eni-0a2").includes(ip)),
      "the pods' addresses on their new ENIs",
      15_000,
    );
    expect(h.sim.calls().filter((c) => c.outcome === "PrivateIpAddressLimitExceeded")).toEqual([]);
  });

  it("does not trade an address that pods on two nodes both carry (no whereabouts record): a conflict on both sides, taken back with backoff", async () => {
    const twin = ipv4(205);
    const world = kubeWorld({
      pods: [
        multusPod("twin-a", NODE_A, [twin], MAC_A, { uid: "4d7e2c6a-0000-4000-8000-00000000000a" }),
        multusPod("twin-b", NODE_B, [twin], MAC_B, { uid: "4d7e2c6a-0000-4000-8000-00000000000b" }),
      ],
    });
    // A wave every 300 ms on each node, as when the pods' other changes keep waking both bridges.
    // IMDS here shows an assign at once: our own assign is trusted over IMDS for 500 ms only.
    const fast = {
      resyncIntervalMs: 300,
      recentMemoryMs: 500,
      repairBackoff: { baseMs: 1_000, maxMs: 60_000 },
    };
    const a = await startBridge(world, fast);
    const b = await startBridge({ sim: a.sim, node: NODE_B, instance: "i-0b" }, fast);
    const assignsOfTwin = () =>
      a.sim
        .calls()
        .filter(
          (c) =>
            c.action === "AssignPrivateIpAddresses" &&
            c.outcome === "ok" &&
            Object.values(c.params).includes(twin),
        ).length;
    await eventually(() => assignsOfTwin() >= 2, "both bridges assigned the address once");
    const conflictLine = (h: Harness, pod: string) =>
      h.bridge.readiness().lines.find((l) => l.startsWith(`conflict: address ${twin} on cnf/${pod} (net1)`));
    await eventually(
      () => conflictLine(a, "twin-a") !== undefined && conflictLine(b, "twin-b") !== undefined,
      "a conflict on both sides",
    );
    for (const [h, pod] of [
      [a, "twin-a"],
      [b, "twin-b"],
    ] as const) {
      expect(conflictLine(h, pod)).toMatch(/but ENI eni-0[ab]1 took it back after ours held it/);
      expect(await h.metrics.text()).toMatch(/^multus_ipmgr_bridge_conflicts 1$/m);
    }
    // Trading at every wave: about 8 assigns in 5 s. Paced: each side's next repair comes 4 s, then 8 s later.
    const from = assignsOfTwin();
    // A wait to show what does not happen: a trade at every wave.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(assignsOfTwin() - from).toBeLessThanOrEqual(3);
    type Event = { reason: string; message: string; involvedObject: { name: string; uid?: string } };
    const conflictEvents = () =>
      ((a.sim.state().kubernetes?.events ?? []) as unknown as Event[]).filter(
        (e) => e.reason === "AddressConflict",
      );
    await eventually(() => conflictEvents().length >= 2, "an AddressConflict Event on each pod");
    expect(
      conflictEvents()
        .map((e) => `${e.involvedObject.name} ${e.involvedObject.uid}`)
        .sort(),
    ).toEqual(["twin-a 4d7e2c6a-0000-4000-8000-00000000000a", "twin-b 4d7e2c6a-0000-4000-8000-00000000000b"]);
  });
  it("reads back who holds an address of a conflict at the next wave when a rival takes it back after a repair IMDS never showed, not once the memory of the repair ends", async () => {
    const twin = ipv4(206);
    const world = kubeWorld({
      pods: [multusPod("twin-a", NODE_A, [twin], MAC_A, { uid: "4d7e2c6a-0000-4000-8000-00000000001a" })],
    });
    // Our own assign trusted over IMDS for 30 s, as by default; a wave every 2 s, so that the rival (this
    // test, on EC2) takes the address back after our repair before the next wave reads IMDS.
    const a = await startBridge(world, {
      resyncIntervalMs: 2_000,
      episodeCheckMs: 2_000,
      recentMemoryMs: 30_000,
      repairBackoff: { baseMs: 500, maxMs: 60_000 },
    });
    const rival = ec2ApiFor(a.sim);
    const assignsToUs = () =>
      a.sim
        .calls()
        .filter(
          (c) =>
            c.action === "AssignPrivateIpAddresses" &&
            c.outcome === "ok" &&
            Object.values(c.params).includes("eni-0a1") &&
            Object.values(c.params).includes(twin),
        ).length;
    await eventually(() => a.held("eni-0a1").includes(twin), "the address on our ENI");
    await eventually(() => a.bridge.report?.held === a.bridge.report?.wanted, "every address held");
    // A wave after the assign has read IMDS showing it: the first take is seen at the next wave.
    const assignedIn = a.bridge.report;
    await eventually(() => a.bridge.report !== assignedIn, "a wave after the assign", 15_000);
    await rival.assignPrivateIpv4("eni-0b1", [twin], true);
    await eventually(() => assignsToUs() === 2, "our repair", 40_000);
    await rival.assignPrivateIpv4("eni-0b1", [twin], true);
    const readsBack = () =>
      a.sim
        .calls()
        .filter(
          (c) =>
            c.action === "DescribeNetworkInterfaces" &&
            c.params["Filter.1.Name"] === "addresses.private-ip-address",
        ).length;
    const readsBefore = readsBack();
    // The next wave asks EC2 who holds it, and counts it not held, or takes it back (the rival quiet since).
    await eventually(
      () =>
        readsBack() > readsBefore &&
        ((a.bridge.report?.held ?? 0) < (a.bridge.report?.wanted ?? 0) || assignsToUs() === 3),
      "the take seen at the next wave, not once the memory of the repair ends (30 s)",
      20_000,
    );
    expect(a.bridge.readiness().lines.join("\n")).toMatch(
      new RegExp(`conflict: address ${twin.replaceAll(".", "\\.")} on cnf/twin-a \\(net1\\)`),
    );
  }, 90_000);
});
