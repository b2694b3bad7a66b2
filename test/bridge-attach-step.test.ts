/**
 * The attach step of the bridge's wave loop (attach/attach-step.ts): when a pass is due (first wave, resync,
 * the time the last pass asked for), the facts read once, a failed pass retried at the next wave, and what
 * each pass tells (metric states, Events on the Node, /readyz lines).
 */
import { describe, expect, it } from "vitest";
import type {
  AttachInstanceFacts,
  AttachNetworkReport,
  AttachReport,
} from "../src/ipam-whereabouts-bridge/attach/attach-mode.js";
import { AttachStep } from "../src/ipam-whereabouts-bridge/attach/attach-step.js";
import type { PodEvent } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { FakeClock } from "./helpers/fake-clock.js";

const FACTS: AttachInstanceFacts = { instanceId: "i-0a", availabilityZone: "us-east-1a", vpcId: "vpc-0a" };
const RESYNC = 60_000;
/** FakeClock's start. */
const T0 = new FakeClock().now();
const signal = new AbortController().signal;

function network(overrides: Partial<AttachNetworkReport> = {}): AttachNetworkReport {
  return {
    network: "multus1",
    networkCardIndex: 0,
    deviceIndex: 1,
    attached: true,
    state: "attached",
    eniId: "eni-0001",
    mac: "02:00:00:00:00:01",
    problems: [],
    calls: 0,
    ...overrides,
  };
}

function report(networks: AttachNetworkReport[], nextAt?: number): AttachReport {
  return { networks, allAttached: networks.every((n) => n.attached), calls: 1, nextAt };
}

function harness(reports: (AttachReport | Error)[]) {
  const clock = new FakeClock();
  const passes: number[] = [];
  const events: PodEvent[] = [];
  const states: string[][] = [];
  let factReads = 0;
  let woken = 0;
  const step = new AttachStep(
    {
      attach: {
        reconcile: async (facts) => {
          expect(facts).toEqual(FACTS);
          passes.push(clock.now());
          const next = reports.shift();
          if (next === undefined) throw new Error("no report left");
          if (next instanceof Error) throw next;
          return next;
        },
      },
      facts: async () => {
        factReads += 1;
        return FACTS;
      },
      clock,
      metrics: { attachPass: (s) => states.push([...s]) },
      events: { report: (e) => events.push(e) },
      onPass: () => {
        woken += 1;
      },
    },
    { nodeName: "node-a", resyncIntervalMs: RESYNC },
  );
  return { step, clock, passes, events, states, facts: () => factReads, woken: () => woken };
}

describe("AttachStep", () => {
  it("passes at the first wave and at each resync, not at the waves between; reads the facts once", async () => {
    const h = harness([report([network()]), report([network()])]);
    const start = h.clock.now();
    await h.step.step(signal);
    await h.clock.sleep(1_000);
    await h.step.step(signal);
    await h.clock.sleep(RESYNC - 1_001);
    await h.step.step(signal);
    expect(h.passes).toEqual([start]);
    await h.clock.sleep(1);
    await h.step.step(signal);
    expect(h.passes).toEqual([start, start + RESYNC]);
    expect(h.facts()).toBe(1);
    expect(h.woken()).toBe(2);
    expect(h.states).toEqual([["attached"], ["attached"]]);
  });

  it("passes again at the time the last pass asked for, before the resync", async () => {
    const h = harness([
      report([network({ attached: false, state: "waiting", problems: ["attaching"] })], T0 + 2_000),
      report([network()]),
    ]);
    await h.step.step(signal);
    expect(h.step.nextAt).toBe(T0 + 2_000);
    await h.clock.sleep(1_999);
    await h.step.step(signal);
    expect(h.passes).toHaveLength(1);
    await h.clock.sleep(1);
    await h.step.step(signal);
    expect(h.passes).toHaveLength(2);
    expect(h.step.nextAt).toBeUndefined();
  });

  it("a pass that throws fails the wave and is tried again at the next one; the last report stays", async () => {
    const h = harness([report([network()]), new Error("EC2 unavailable"), report([network()])]);
    await h.step.step(signal);
    await h.clock.sleep(RESYNC);
    await expect(h.step.step(signal)).rejects.toThrow("EC2 unavailable");
    expect(h.step.report?.allAttached).toBe(true);
    await h.clock.sleep(50);
    await h.step.step(signal);
    expect(h.passes).toHaveLength(3);
    expect(h.woken()).toBe(2);
  });

  it.each([
    [
      "refused",
      network({
        attached: false,
        state: "refused",
        code: "AttachmentLimitExceeded",
        problems: ["EC2 refused; ENI eni-0001 was deleted; tried again in 2 s"],
      }),
      "AttachRefused",
      "EC2 refused; ENI eni-0001 was deleted",
    ],
    [
      "retry-later",
      network({ attached: false, state: "retry-later", problems: ["EC2 throttled; tried again in 1 s"] }),
      "AttachFailed",
      "EC2 throttled",
    ],
    [
      "attached, a foreign ENI at the slot",
      network({ problems: ["network multus1: ENI eni-0f at card 0 device 1 is not ours"] }),
      "AttachProblem",
      "network multus1: ENI eni-0f at card 0 device 1 is not ours",
    ],
    ["attached", network(), undefined, undefined],
    [
      "waiting",
      network({ attached: false, state: "waiting", problems: ["attaching"] }),
      undefined,
      undefined,
    ],
  ] as const)("%s: the Event on the Node", async (_case, n, reason, message) => {
    const h = harness([report([n])]);
    await h.step.step(signal);
    expect(h.events).toEqual(
      reason === undefined
        ? []
        : [
            {
              pod: { namespace: "", name: "node-a", uid: "node-a", kind: "Node" },
              type: "Warning",
              reason,
              message,
            },
          ],
    );
    expect(h.states).toEqual([[n.state === "retry-later" ? "retry_later" : n.state]]);
  });

  it("says per network on /readyz what it is, and that nothing was read before the first pass", async () => {
    const h = harness([
      report([
        network(),
        network({
          network: "multus2",
          deviceIndex: 2,
          attached: false,
          state: "refused",
          problems: ["no subnet in us-east-1a; tried again in 1 s"],
        }),
      ]),
    ]);
    expect(h.step.lines()).toEqual(["attach mode: the instance's ENIs have not been read yet"]);
    await h.step.step(signal);
    expect(h.step.lines()).toEqual([
      "attach mode: network multus1: ENI eni-0001 attached at card 0 device 1",
      "attach mode: network multus2 (refused): no subnet in us-east-1a; tried again in 1 s",
    ]);
  });
});
