/**
 * Attach mode wired into the bridge (attach-wiring.ts, bridge.ts' attach step, the lifecycle's startup taint)
 * in-process against the simulator, built from the settings a pod would get: the ENI made and attached
 * before the first wave reads the node's ENIs, the Multus ENI set holding it, /readyz and /metrics saying
 * so, the taint off, and a Multus pod created before all this scheduled and routed on the new ENI.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type SimulatorHandle, startSimulator, type World } from "../src/sim/index.js";
import {
  attachWorld,
  madeEnis,
  multusPodSpec,
  nodeTaints,
  startAttachBridge,
  stopAttachBridges,
  TAINT,
} from "./helpers/attach-bridge.js";
import { eventually, type Json, kube, NODE_A } from "./helpers/kube-worlds.js";

let sim: SimulatorHandle | undefined;

afterEach(async () => {
  await stopAttachBridges();
  await sim?.close();
  sim = undefined;
});

async function startSim(world: World): Promise<SimulatorHandle> {
  sim = await startSimulator(world);
  return sim;
}

describe("attach mode wired into the bridge", () => {
  it("makes and attaches the ENI before the first wave, which manages it; /readyz and /metrics say so; the taint goes and a pod waiting for it runs, routed on the new ENI", async () => {
    const s = await startSim(attachWorld());
    expect((await kube(s, "POST", "/api/v1/namespaces/cnf/pods", multusPodSpec("upf-0"))).status).toBe(201);
    const pod = async () => (await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-0")).body;
    await eventually(
      async () => ((await pod()).status.conditions ?? []).some((c: Json) => c.reason === "Unschedulable"),
      "upf-0 unschedulable while the node is tainted",
    );

    const h = await startAttachBridge(s);
    await eventually(() => h.bridge.report !== undefined, "the first wave");
    // The first wave ran after the attach pass: the ENI is attached, and the wave counted it a Multus ENI.
    const [eni] = madeEnis(s);
    expect(madeEnis(s)).toHaveLength(1);
    expect(eni).toMatchObject({
      instanceId: "i-0a",
      deviceIndex: 1,
      networkCardIndex: 0,
      subnetId: "subnet-0b0b",
      deleteOnTermination: true,
      sourceDestCheck: false,
      securityGroupIds: ["sg-0c0c"],
      tags: {
        "node.k8s.amazonaws.com/no_manage": "true",
        "multus-ipmgr.io/cluster": "lab",
        "multus-ipmgr.io/instance-id": "i-0a",
        "multus-ipmgr.io/network": "eth1",
      },
    });
    expect(h.parts.step.report?.allAttached).toBe(true);
    expect(h.bridge.lastSubnets.map((x) => x.subnetId)).toEqual(["subnet-0b0b"]);
    const writes = h.calls.map((c) => c.operation).filter((o) => !o.startsWith("Describe"));
    expect(writes).toEqual([
      "CreateNetworkInterface",
      "AttachNetworkInterface",
      // DeleteOnTermination, then SourceDestCheck (a new ENI checks, the network says false).
      "ModifyNetworkInterfaceAttribute",
      "ModifyNetworkInterfaceAttribute",
    ]);

    await eventually(() => !nodeTaints(s).includes(TAINT), "the startup taint removed");
    await eventually(async () => (await pod()).status.phase === "Running", "upf-0 running");
    expect((await pod()).spec.nodeName).toBe(NODE_A);
    const [status] = JSON.parse((await pod()).metadata.annotations["k8s.v1.cni.cncf.io/network-status"])
      .slice(1)
      .map((n: Json) => n);
    expect(status.mac).toBe(eni?.mac);
    const [address] = status.ips;
    await eventually(
      () => (madeEnis(s)[0]?.ipv4s ?? []).includes(address),
      `${address} assigned on ${eni?.eniId}`,
    );

    await eventually(async () => (await fetch(`${h.base}/readyz`)).status === 200, "ready");
    expect(await (await fetch(`${h.base}/readyz`)).text()).toContain(
      `attach mode: network eth1: ENI ${eni?.eniId} attached at card 0 device 1`,
    );
    expect(await h.metric('multus_ipmgr_bridge_attach_networks{state="attached"}')).toBe(1);
    expect(await h.metric('multus_ipmgr_bridge_attach_networks{state="refused"}')).toBe(0);
    await eventually(
      async () => (await h.metric("multus_ipmgr_bridge_startup_taint")) === 0,
      "the taint gauge at 0",
    );
    expect(await h.metric("multus_ipmgr_bridge_attach_ec2_calls_total")).toBeGreaterThanOrEqual(5);
  });
});
