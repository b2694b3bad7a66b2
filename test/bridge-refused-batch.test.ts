/**
 * An assign EC2 refuses whole for some of its addresses: the bridge holds every other address in the same
 * wave, posts an Event per refused address, counts the wave as an error and is not ready while a live pod's
 * address is unheld. Against the simulator, which refuses AssignPrivateIpAddresses whole as EC2 does.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../src/eni/process/logger.js";
import type { Plan, PlanAction } from "../src/eni/types.js";
import { applyWave } from "../src/ipam-whereabouts-bridge/waves/wave-apply.js";
import { type BridgeHarness, startBridgeOn, stopAll } from "./helpers/bridge-harness.js";
import { eventually, kubeWorld, MAC_A, multusPod, NODE_A, startKubeSim } from "./helpers/kube-worlds.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";

afterEach(stopAll);

const ipv4 = (n: number) => `198.51.100.${n}`;
/** The old node's prefix: node B's Multus ENI still holds it after the slice went to node A. */
const OLD_PREFIX = "198.51.100.208/28";
const PLAIN = [ipv4(196), ipv4(197)];
const SLICED = [ipv4(209), ipv4(210), ipv4(211), ipv4(212)];

/** Node A's pods: two plain addresses and four inside the prefix node B's ENI still holds. */
function handedOverWorld() {
  return kubeWorld({
    ipPools: [],
    pods: [
      ...PLAIN.map((ip, i) => multusPod(`plain-${i}`, NODE_A, [ip], MAC_A)),
      ...SLICED.map((ip, i) => multusPod(`sliced-${i}`, NODE_A, [ip], MAC_A)),
    ],
  });
}

const readiness = (h: BridgeHarness) => h.bridge.readiness();

describe("an assign EC2 refuses whole", () => {
  it("holds the plain addresses in the same wave, posts an Event per refused address, counts the error and is not ready", async () => {
    const sim = await startKubeSim(handedOverWorld());
    try {
      await ec2ApiFor(sim).assignIpv4Prefixes("eni-0b1", [OLD_PREFIX]);
      sim.clearCalls();
      const h = await startBridgeOn(handedOverWorld(), {}, { sim });
      await eventually(() => PLAIN.every((ip) => h.held("eni-0a1").includes(ip)), "the plain addresses held");
      expect(h.held("eni-0a1")).toEqual(["198.51.100.140", ...PLAIN]);
      // The prefix stays with node B: nothing inside it is taken.
      expect(sim.state().enis.find((e) => e.eniId === "eni-0b1")?.ipv4Prefixes).toEqual([OLD_PREFIX]);

      // Every wave that changed EC2 counts as an error (the refusals): the plain addresses were held in the
      // wave that found the batch refused, not in a later one.
      await eventually(
        async () => ((await h.metric('multus_ipmgr_bridge_waves_total{outcome="error"}')) ?? 0) >= 1,
        "the wave counted as an error",
      );
      expect(await h.metric('multus_ipmgr_bridge_waves_total{outcome="applied"}')).toBe(0);
      const assigns = sim.calls().filter((c) => c.action === "AssignPrivateIpAddresses");
      expect(assigns.filter((c) => c.outcome === "ok").map((c) => c.params)).toEqual([
        expect.objectContaining({ "PrivateIpAddress.1": PLAIN[0], "PrivateIpAddress.2": PLAIN[1] }),
      ]);
      expect(assigns[0]?.outcome).toBe("InvalidParameterValue");

      await eventually(
        () =>
          new Set(
            h
              .events()
              .filter((e) => e.reason === "AddressesNotAssigned")
              .map((e) => e.pod),
          ).size === 4,
        "an AddressesNotAssigned Event on each sliced pod",
      );
      const refused = h.events().filter((e) => e.reason === "AddressesNotAssigned");
      for (const [i, ip] of SLICED.entries()) {
        const mine = refused.filter((e) => e.pod === `sliced-${i}`);
        expect(mine.length).toBeGreaterThanOrEqual(1);
        for (const e of mine) {
          expect(e.message).toMatch(
            new RegExp(
              `^address ${ip.replaceAll(".", "\\.")} on cnf/sliced-${i}/net1 was not assigned to ENI eni-0a1: .*Address ${ip.replaceAll(".", "\\.")} is in use`,
            ),
          );
        }
      }
      await eventually(
        () => h.events().filter((e) => e.reason === "AddressesAssigned").length === 2,
        "AddressesAssigned on both plain pods",
      );
      expect(
        h
          .events()
          .filter((e) => e.pod.startsWith("plain-"))
          .map((e) => e.reason),
      ).toEqual(["AddressesAssigned", "AddressesAssigned"]);

      const ready = readiness(h);
      expect(ready.ok).toBe(false);
      expect(ready.lines).toContain("2 of 6 pod addresses held by their ENI; 0 releases pending");
      expect(ready.lines.filter((l) => l.startsWith("not held: "))).toEqual(
        SLICED.map((ip, i) => `not held: ${ip} (cnf/sliced-${i}/net1)`),
      );

      // A later wave does not send the refused addresses in its batch again: they are asked alone, after a
      // backoff, and the new pod's address goes through in one call.
      const firstWaveCalls = sim.calls().length;
      sim.kubernetes?.addPod(multusPod("plain-2", NODE_A, [ipv4(198)], MAC_A));
      await eventually(() => h.held("eni-0a1").includes(ipv4(198)), "the new plain address held");
      const later = sim
        .calls()
        .slice(firstWaveCalls)
        .filter((c) => c.action === "AssignPrivateIpAddresses");
      expect(later.filter((c) => Object.values(c.params).includes(ipv4(198)))).toEqual([
        expect.objectContaining({
          outcome: "ok",
          params: expect.objectContaining({ "PrivateIpAddress.1": ipv4(198) }),
        }),
      ]);
      for (const c of later) expect(c.params["PrivateIpAddress.2"]).toBeUndefined();
      await eventually(
        () => readiness(h).lines.includes("3 of 7 pod addresses held by their ENI; 0 releases pending"),
        "the new pod counted",
      );

      // The old node lets its prefix go: a later try holds the rest, and the bridge is ready.
      await ec2ApiFor(sim).unassignIpv4Prefixes("eni-0b1", [OLD_PREFIX]);
      await eventually(
        () => SLICED.every((ip) => h.held("eni-0a1").includes(ip)),
        "the sliced addresses held",
        70_000,
      );
      await eventually(() => readiness(h).ok, "ready once every address is held");
      expect(readiness(h).lines).toContain("7 of 7 pod addresses held by their ENI; 0 releases pending");
    } finally {
      await stopAll();
      await sim.close();
    }
  });

  it("counts a pod that appeared after the last wave as unheld on /readyz until a wave holds its address", async () => {
    const h = await startBridgeOn(kubeWorld(), {}, { manualWaves: true });
    const signal = new AbortController().signal;
    expect(await h.bridge.runWave(signal)).toBe("applied");
    expect(readiness(h).ok).toBe(true);
    // No wave runs now: /readyz sees the new pod from the watch alone.
    h.sim.kubernetes?.addPod(multusPod("late-0", NODE_A, [ipv4(200)], MAC_A));
    await eventually(() => !readiness(h).ok, "not ready while the new pod's address is unheld");
    expect(readiness(h).lines).toEqual(
      expect.arrayContaining([
        "1 of 2 pod addresses held by their ENI; 0 releases pending",
        `not held: ${ipv4(200)} (cnf/late-0/net1)`,
      ]),
    );
    expect(h.held("eni-0a1")).not.toContain(ipv4(200));
    expect(await h.bridge.runWave(signal)).toBe("applied");
    expect(readiness(h)).toEqual({
      ok: true,
      lines: ["2 of 2 pod addresses held by their ENI; 0 releases pending"],
    });
  });
});

describe("applyWave against the simulator", () => {
  const logger = createLogger("silent");
  const cases: { name: string; addresses: number[]; refusedByPrefix: boolean; held: number[] }[] = [
    {
      name: "nothing refused: one call",
      addresses: [196, 197, 198],
      refusedByPrefix: false,
      held: [196, 197, 198],
    },
    {
      name: "one refused among eight",
      addresses: [196, 197, 198, 199, 200, 201, 202, 209],
      refusedByPrefix: true,
      held: [196, 197, 198, 199, 200, 201, 202],
    },
    { name: "all refused", addresses: [209, 210, 211], refusedByPrefix: true, held: [] },
    {
      name: "refused ones first and last",
      addresses: [196, 209, 215, 222],
      refusedByPrefix: true,
      held: [196],
    },
  ];
  for (const c of cases) {
    it(`splits a refused assign until each address EC2 accepts is held: ${c.name}`, async () => {
      const sim = await startKubeSim(kubeWorld());
      try {
        const ec2 = ec2ApiFor(sim);
        if (c.refusedByPrefix) await ec2.assignIpv4Prefixes("eni-0b1", [OLD_PREFIX]);
        const action: PlanAction = {
          kind: "assign-ipv4",
          eniId: "eni-0a1",
          addresses: c.addresses.map(ipv4),
          allowReassignment: true,
        };
        const plan: Plan = { actions: [action], placements: [], satisfied: [], refusals: [], skipped: [] };
        const applied = await applyWave(
          plan,
          { actions: [action], placements: [], refusals: [] },
          { ec2, logger },
          new AbortController().signal,
        );
        const held = c.held.map(ipv4);
        const refused = c.addresses.map(ipv4).filter((a) => !held.includes(a));
        expect(sim.state().enis.find((e) => e.eniId === "eni-0a1")?.ipv4s).toEqual([ipv4(140), ...held]);
        expect([...applied.done].flatMap((a) => a.addresses).sort()).toEqual(held);
        // Each refused address fails on its own, with EC2's word for it.
        expect(applied.failures.map((f) => f.action.addresses)).toEqual(refused.map((a) => [a]));
        for (const f of applied.failures)
          expect((f.error as Error).message).toContain(`Address ${f.action.addresses[0]} is in use`);
      } finally {
        await sim.close();
      }
    });
  }
});
