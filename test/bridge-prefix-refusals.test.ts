/**
 * Prefix mode's refusals that only EC2, or the rest of the subnet, can tell (issue 27): a `swap` whose prefix
 * EC2 refuses must not unroute the pods' singles again at every wave, and where the refusal can be known
 * before the swap, nothing is unassigned at all. The bridge in-process against the simulator; each test
 * counts the EC2 calls in the simulator's log.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SimulatorHandle } from "../src/sim/index.js";
import { eventually, type Json, kube, MAC_A, multusPod, NODE_A } from "./helpers/kube-worlds.js";
import { runPod, SLICE_A, startPrefixBridge, stopPrefixBridges } from "./helpers/prefix-bridge.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";

afterEach(stopPrefixBridges);

/** The pod started before prefix mode, whose single address lies in node A's slice. */
const OLD = "198.51.100.165";

async function holdOld(sim: SimulatorHandle): Promise<void> {
  await ec2ApiFor(sim).assignPrivateIpv4("eni-0a1", [OLD], false);
}

/** The unrouted windows: the unassigns of single addresses inside the slice, refused or not. */
function unassigns(sim: SimulatorHandle) {
  return sim.calls().filter((c) => c.action === "UnassignPrivateIpAddresses");
}
function prefixAssigns(sim: SimulatorHandle) {
  return sim
    .calls()
    .filter((c) => c.action === "AssignPrivateIpAddresses" && c.params["Ipv4Prefix.1"] !== undefined);
}

async function refusalEvent(sim: SimulatorHandle, reason: string): Promise<Json> {
  let event: Json;
  await eventually(async () => {
    const items = (await kube(sim, "GET", "/api/v1/namespaces/kube-system/events")).body.items;
    event = items.find((e: Json) => e.reason === "PrefixModeRefused" && e.message.includes(reason));
    return event !== undefined;
  }, `a PrefixModeRefused Event (${reason})`);
  return event;
}

describe("prefix mode: refusals EC2 or the subnet make (issue 27)", () => {
  it("swap, EC2 refusing the prefix (not Nitro, unknown to the bridge): one unrouted window, then the slice is refused and pods that follow cost no swap", async () => {
    const h = await startPrefixBridge("swap", {
      nitro: false,
      instanceType: "m5.large",
      pods: [multusPod("old", NODE_A, [OLD], MAC_A)],
      before: async (sim) => {
        await holdOld(sim);
        sim.clearCalls();
        // The bridge cannot look the type up: only EC2's answer to the assign tells.
        sim.setFaults({ deny: ["DescribeInstanceTypes"] });
      },
    });
    await eventually(
      async () =>
        (await h.metrics.text()).includes(
          'multus_ipmgr_bridge_prefix_refused{nad="kube-system/slices",reason="ec2-refused"} 1',
        ),
      "the refusal counted",
    );
    const event = await refusalEvent(h.sim, "EC2 refused the prefixes 198.51.100.160/28 on ENI eni-0a1");
    expect(event.involvedObject).toMatchObject({ kind: "NetworkAttachmentDefinition", name: "slices" });
    expect(event.message).toContain("or set IPMGR_BRIDGE_PREFIX_MODE=defer");
    expect(
      h.prefixes
        .lines()
        .some((l) => l.startsWith("prefix mode refused: NAD kube-system/slices: EC2 refused")),
    ).toBe(true);

    // Three pods start on the refused network: each is a wave, each address assigned singly.
    const started = [
      ...(await runPod(h.sim, "p1")),
      ...(await runPod(h.sim, "p2")),
      ...(await runPod(h.sim, "p3")),
    ];
    await eventually(
      async () => started.every((a) => h.eni()?.ipv4s.includes(a)) && h.bridge.report?.held === 4,
      "the new pods' addresses held singly",
    );
    expect(unassigns(h.sim)).toHaveLength(1);
    expect(prefixAssigns(h.sim)).toHaveLength(1);
    expect(h.eni()?.ipv4s).toContain(OLD);
    expect(await h.metrics.text()).toMatch(/multus_ipmgr_bridge_prefix_swap_gap_seconds_count 1\n/);
  });

  it("swap, another instance's ENI holding an address inside the slice: nothing is unassigned at all; the slice is refused held-in-subnet", async () => {
    const h = await startPrefixBridge("swap", {
      pods: [multusPod("old", NODE_A, [OLD], MAC_A)],
      before: async (sim) => {
        await holdOld(sim);
        await ec2ApiFor(sim).assignPrivateIpv4("eni-0b1", ["198.51.100.170"], false);
        sim.clearCalls();
      },
    });
    const event = await refusalEvent(
      h.sim,
      "overlaps address 198.51.100.170 on eni-0b1 (i-0b) in subnet subnet-0multus",
    );
    expect(event.message).toContain("so the single addresses inside were not unassigned");
    expect(await h.metrics.text()).toContain(
      'multus_ipmgr_bridge_prefix_refused{nad="kube-system/slices",reason="held-in-subnet"} 1',
    );
    const address = (await runPod(h.sim, "p1"))[0] ?? "";
    await eventually(
      async () => h.eni()?.ipv4s.includes(address) === true,
      "the new pod's address held singly",
    );
    expect(unassigns(h.sim)).toEqual([]);
    expect(prefixAssigns(h.sim)).toEqual([]);
    // The subnet was read once, before the first swap; the refusal is remembered, not read again at each wave.
    const subnetReads = h.sim
      .calls()
      .filter(
        (c) => c.action === "DescribeNetworkInterfaces" && Object.values(c.params).includes("subnet-0multus"),
      );
    expect(subnetReads).toHaveLength(1);
    expect(h.eni()?.ipv4s).toContain(OLD);
  });

  it("a non-Nitro type known from DescribeInstanceTypes: the slice is refused not-nitro, with no EC2 write at all", async () => {
    const h = await startPrefixBridge("swap", {
      nitro: false,
      instanceType: "m4.large",
      pods: [multusPod("old", NODE_A, [OLD], MAC_A)],
      before: async (sim) => {
        await holdOld(sim);
        sim.clearCalls();
      },
    });
    const event = await refusalEvent(h.sim, "not built on the Nitro System");
    expect(event.message).toBe(
      `NAD kube-system/slices: node ${NODE_A} is of instance type m4.large, not built on the Nitro System (DescribeInstanceTypes: hypervisor xen), and EC2 delegates prefixes to Nitro instances only: run node-sliced workloads on a Nitro instance type; the network stays in per-address mode`,
    );
    expect(h.mutating()).toEqual([]);
    expect(h.eni()?.ipv4s).toContain(OLD);
    expect(h.eni()?.ipv4Prefixes ?? []).toEqual([]);
    expect(SLICE_A).toBe("198.51.100.160/28");
  });
});
