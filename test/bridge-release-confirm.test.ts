/**
 * The fresh list that confirms a release runs beside the waves: a list that hangs (the simulator's
 * kubeHangVerbs, or an independent proxy holding list requests) never delays an assign, times out as no
 * confirmation (nothing released), and a list that finds the address in use restarts the grace, counted as
 * pending, with the next try at the grace's end rather than at the resync.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type BridgeHarness, startBridgeOn, stopAll } from "./helpers/bridge-harness.js";
import {
  control,
  eventually,
  kubeEndpointOf,
  kubeWorld,
  MAC_A,
  multusPod,
  NODE_A,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { type ListHoldingProxy, startListHoldingProxy } from "./helpers/list-holding-proxy.js";

const proxies: ListHoldingProxy[] = [];
afterEach(async () => {
  await stopAll();
  for (const p of proxies.splice(0)) await p.close();
});

const ipv4 = (n: number) => `198.51.100.${n}`;
const twoPods = () =>
  kubeWorld({
    pods: [multusPod("upf-0", NODE_A, [ipv4(193)], MAC_A), multusPod("upf-1", NODE_A, [ipv4(195)], MAC_A)],
  });
const lines = (h: BridgeHarness) => h.bridge.readiness().lines;
const hangLists = (h: BridgeHarness, verbs: string[]) =>
  control(h.sim, "PUT", "/faults", { kubeHangVerbs: verbs });
const LIST_FAILED =
  /^releases are held: the fresh list that confirms them failed \(the (pods|ippools|overlappingrangeipreservations) list was not answered within 1 s\); tried again shortly$/;

describe("the list that confirms releases runs beside the waves", () => {
  it("assigns a new pod's address while that list hangs, and releases nothing until it answers (simulator's kubeHangVerbs)", async () => {
    // A timeout longer than the test: a wave that waited for the list would never assign.
    const h = await startBridgeOn(twoPods(), { releaseGraceMs: 300, confirmTimeoutMs: 600_000 });
    await eventually(() => h.held("eni-0a1").includes(ipv4(195)), "upf-1's address");
    expect((await hangLists(h, ["list"])).status).toBe(200);
    h.sim.kubernetes?.deletePod("cnf", "upf-1");
    await eventually(
      () => lines(h).includes("1 due releases wait for a fresh list that confirms them"),
      "the release due, its list hanging",
    );
    h.sim.kubernetes?.addPod(multusPod("new-0", NODE_A, [ipv4(200)], MAC_A));
    await eventually(
      () => h.held("eni-0a1").includes(ipv4(200)),
      "the new pod's address, the list still hanging",
    );
    expect(h.held("eni-0a1")).toContain(ipv4(195));
    await eventually(() => h.bridge.readiness().ok, "ready: every live pod's address held");
    expect(lines(h)).toContain("2 of 2 pod addresses held by their ENI; 1 releases pending");

    // The held lists are answered: the release is confirmed and made.
    await hangLists(h, []);
    await eventually(() => !h.held("eni-0a1").includes(ipv4(195)), "upf-1's address released");
    expect(h.held("eni-0a1")).toEqual([ipv4(140), ipv4(193), ipv4(200)]);
  });

  it("counts a list not answered within the confirm timeout as no confirmation: nothing released, the reason on /readyz", async () => {
    const h = await startBridgeOn(twoPods(), { releaseGraceMs: 300, confirmTimeoutMs: 1_000 });
    await eventually(() => h.held("eni-0a1").includes(ipv4(195)), "upf-1's address");
    await hangLists(h, ["list"]);
    h.sim.kubernetes?.deletePod("cnf", "upf-1");
    await eventually(() => lines(h).some((l) => LIST_FAILED.test(l)), "the timed-out list on /readyz");
    expect(await h.metric('multus_ipmgr_bridge_releases_held{reason="unconfirmed"}')).toBe(1);
    expect(lines(h)).toContain("1 of 1 pod addresses held by their ENI; 1 releases pending");
    expect(h.held("eni-0a1")).toContain(ipv4(195));
    await hangLists(h, []);
    await eventually(() => !h.held("eni-0a1").includes(ipv4(195)), "released once a list answers");
    await eventually(
      async () => (await h.metric('multus_ipmgr_bridge_releases_held{reason="unconfirmed"}')) === 0,
      "no release held",
    );
  });

  it("assigns while an independent proxy holds every list, and releases only after a list passes again", async () => {
    const sim = await startKubeSim(twoPods());
    const proxy = await startListHoldingProxy(kubeEndpointOf(sim));
    proxies.push(proxy);
    try {
      const h = await startBridgeOn(
        twoPods(),
        { releaseGraceMs: 300, confirmTimeoutMs: 1_000 },
        { sim, kubeServer: () => proxy.url },
      );
      await eventually(() => h.held("eni-0a1").includes(ipv4(195)), "upf-1's address");
      proxy.holdLists = true;
      h.sim.kubernetes?.deletePod("cnf", "upf-1");
      await eventually(() => proxy.heldLists.includes("/api/v1/pods"), "the confirming pod list held");
      h.sim.kubernetes?.addPod(multusPod("new-0", NODE_A, [ipv4(200)], MAC_A));
      await eventually(() => h.held("eni-0a1").includes(ipv4(200)), "the new pod's address, lists held");
      await eventually(() => lines(h).some((l) => LIST_FAILED.test(l)), "the held list timed out");
      expect(h.held("eni-0a1")).toContain(ipv4(195));
      proxy.holdLists = false;
      await eventually(() => !h.held("eni-0a1").includes(ipv4(195)), "released once a list passes");
      expect(h.held("eni-0a1")).toEqual([ipv4(140), ipv4(193), ipv4(200)]);
    } finally {
      await stopAll();
      await sim.close();
    }
  });

  it("keeps an address the fresh list finds in use, counts it pending and lists again when the grace ends, not at the resync", async () => {
    const sim = await startKubeSim(twoPods());
    const proxy = await startListHoldingProxy(kubeEndpointOf(sim));
    proxies.push(proxy);
    try {
      const h = await startBridgeOn(
        twoPods(),
        { releaseGraceMs: 1_000, resyncIntervalMs: 600_000 },
        { sim, kubeServer: () => proxy.url },
      );
      await eventually(() => h.held("eni-0a1").includes(ipv4(195)), "upf-1's address");
      h.sim.kubernetes?.deletePod("cnf", "upf-1");
      await eventually(() => (h.bridge.report?.pendingReleases ?? 0) === 1, "upf-1's address in its grace");
      // The watches lag from now on: a new pod with the same address reaches only the fresh lists.
      proxy.freezeWatches = true;
      h.sim.kubernetes?.addPod(multusPod("upf-2", NODE_A, [ipv4(195)], MAC_A));
      const podLists = () => proxy.passedLists.filter((p) => p === "/api/v1/pods").length;
      const before = podLists();
      await eventually(() => podLists() >= before + 2, "a second confirming list after the grace", 10_000);
      expect(h.held("eni-0a1")).toContain(ipv4(195));
      expect(lines(h)).toContain("1 of 1 pod addresses held by their ENI; 1 releases pending");
      expect(h.sim.calls().filter((c) => c.action === "UnassignPrivateIpAddresses")).toEqual([]);
    } finally {
      await stopAll();
      await sim.close();
    }
  });
});
