/**
 * Prefix mode's fresh list that confirms a prefix release runs beside the waves, as the address releases'
 * does (bridge-release-confirm.test.ts): a hung list never delays a wave's assigns, and releases nothing
 * until a list answers.
 */
import { afterEach, describe, expect, it } from "vitest";
import { control, eventually, type Json, kube, MAC_A, multusPod, NODE_A } from "./helpers/kube-worlds.js";
import { POOLS, SLICE_A, startPrefixBridge, stopPrefixBridges } from "./helpers/prefix-bridge.js";

afterEach(stopPrefixBridges);

describe("prefix mode: the list that confirms a prefix release runs beside the waves", () => {
  it("assigns a new pod's address while that list hangs, and releases the prefix only once a list answers", async () => {
    const h = await startPrefixBridge("defer");
    const prefixLine = () => h.bridge.readiness().lines.find((l) => l.startsWith("prefix mode:")) ?? "";
    await eventually(() => (h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A), "the slice held as a prefix");
    expect((await control(h.sim, "PUT", "/faults", { kubeHangVerbs: ["list"] })).status).toBe(200);

    // The node loses its slice: the prefix is pending for the grace, then due, its confirming list hanging.
    const pool = (await kube(h.sim, "GET", `${POOLS}/slices`)).body;
    pool.status.allocations = pool.status.allocations.map((a: Json) =>
      a.nodeName === NODE_A ? { ...a, nodeName: "" } : a,
    );
    expect((await kube(h.sim, "PUT", `${POOLS}/slices`, pool)).status).toBe(200);
    await eventually(() => prefixLine().endsWith("; 1 releases pending"), "the prefix release pending");
    await eventually(() => prefixLine().endsWith("; 0 releases pending"), "the prefix release due");
    expect(h.eni()?.ipv4Prefixes ?? []).toContain(SLICE_A);

    // A wave that waited for the hung list (60 s, the client's list timeout) would not assign this.
    h.sim.kubernetes?.addPod(multusPod("new-0", NODE_A, ["198.51.100.200"], MAC_A));
    await eventually(() => (h.eni()?.ipv4s ?? []).includes("198.51.100.200"), "the new pod's address held");
    expect(h.eni()?.ipv4Prefixes ?? []).toContain(SLICE_A);

    await control(h.sim, "PUT", "/faults", { kubeHangVerbs: [] });
    await eventually(
      () => !(h.eni()?.ipv4Prefixes ?? []).includes(SLICE_A),
      "the prefix released once a list answers",
      20_000,
    );
  });
});
