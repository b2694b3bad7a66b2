/**
 * A shutdown in the middle of a `swap` (issue 27): the swap is one unit. A SIGTERM while its unassign is in
 * flight still ends with the prefix assigned (the pod's address held); when the shutdown grace runs out
 * first, the outcome is grace-expired (exit 8, main.ts) and the log names the addresses held by no ENI.
 * The bridge runs in a BridgeLifecycle, as main.ts runs it, against the simulator with EC2 latency.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Ec2Api } from "../src/eni/ec2-api.js";
import { systemClock } from "../src/eni/process/clock.js";
import { BridgeLifecycle } from "../src/ipam-whereabouts-bridge/bridge-lifecycle.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { MAC_A, multusPod, NODE_A } from "./helpers/kube-worlds.js";
import { captureLogger } from "./helpers/loggers.js";
import { SLICE_A, startPrefixBridge, stopPrefixBridges } from "./helpers/prefix-bridge.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";

afterEach(stopPrefixBridges);

const OLD = "198.51.100.165";

/** The EC2 adapter as it is, telling when an unassign of single IPv4 addresses starts (a pass-through). */
function watchUnassign(onStart: () => void): (ec2: Ec2Api) => Ec2Api {
  return (ec2) =>
    new Proxy(ec2, {
      get(target, property) {
        if (property === "unassignPrivateIpv4")
          return (eniId: string, addresses: readonly string[]) => {
            onStart();
            return target.unassignPrivateIpv4(eniId, addresses);
          };
        const value = Reflect.get(target, property);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
}

/** Node A's bridge in swap mode in a lifecycle, its old pod's single inside the slice, EC2 answering late. */
async function swapInLifecycle(ec2LatencyMs: number) {
  const inflight = new AbortController();
  const { logger, lines } = captureLogger();
  let unassignStarted = (): void => undefined;
  const unassigning = new Promise<void>((resolve) => {
    unassignStarted = resolve;
  });
  const h = await startPrefixBridge("swap", {
    run: false,
    logger,
    ec2Signal: inflight.signal,
    wrapEc2: watchUnassign(() => unassignStarted()),
    pods: [multusPod("old", NODE_A, [OLD], MAC_A)],
    before: async (sim: SimulatorHandle) => {
      await ec2ApiFor(sim).assignPrivateIpv4("eni-0a1", [OLD], false);
      sim.clearCalls();
      sim.setFaults({ ec2LatencyMs });
    },
  });
  const lifecycle = new BridgeLifecycle({
    waves: h.bridge,
    reservations: undefined,
    events: h.events,
    kube: h.kubeApi,
    metrics: h.metrics,
    clock: systemClock,
    logger,
    inflight,
    http: undefined,
  });
  await lifecycle.start();
  const loop = lifecycle.run();
  return { ...h, lifecycle, loop, unassigning, lines };
}

describe("prefix mode: a shutdown in the middle of a swap (issue 27)", () => {
  it("a SIGTERM while the swap's unassign is in flight: the prefix assign still runs, the address is held, ok", async () => {
    const s = await swapInLifecycle(300);
    await s.unassigning;
    expect(await s.lifecycle.shutdown(30_000)).toBe("ok");
    await s.loop;
    const calls = s.sim.calls().filter((c) => c.action.includes("PrivateIpAddresses"));
    expect(calls.map((c) => [c.action, c.outcome])).toEqual([
      ["UnassignPrivateIpAddresses", "ok"],
      ["AssignPrivateIpAddresses", "ok"],
    ]);
    expect(calls[1]?.params["Ipv4Prefix.1"]).toBe(SLICE_A);
    // OLD lies in SLICE_A: the prefix holds it.
    expect(s.eni()?.ipv4Prefixes).toEqual([SLICE_A]);
    expect(s.lines.filter((l) => l.level === 50)).toEqual([]);
  });

  it("the grace running out during the swap: grace-expired (exit 8), and the log names the address held by no ENI", async () => {
    const s = await swapInLifecycle(2_000);
    await s.unassigning;
    expect(await s.lifecycle.shutdown(300)).toBe("grace-expired");
    const errors = s.lines.filter((l) => l.level === 50);
    expect(errors).toEqual([
      expect.objectContaining({
        eniId: "eni-0a1",
        addresses: [OLD],
        msg: expect.stringContaining("held by no ENI"),
      }),
    ]);
  });
});
