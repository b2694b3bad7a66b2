/**
 * Attach mode's faults, in-process against the simulator with the bridge wired as main.ts wires it
 * (test/helpers/attach-bridge.ts): an attach refused for the limit, throttling, a bridge stopped between its
 * create and its attach, two bridges on one node, IMDS's lag, an ENI detached by hand, and the orphan sweep
 * (an orphan of the cluster deleted, an untagged ENI never touched).
 */
import {
  CreateNetworkInterfaceCommand,
  DetachNetworkInterfaceCommand,
  type EC2Client,
} from "@aws-sdk/client-ec2";
import { afterEach, describe, expect, it } from "vitest";
import { type SimulatorHandle, startSimulator, type World } from "../src/sim/index.js";
import {
  type AttachBridge,
  attachEnv,
  attachWorld,
  CLUSTER,
  madeEnis,
  nodeEvents,
  nodeTaints,
  startAttachBridge,
  stopAttachBridges,
  TAINT,
} from "./helpers/attach-bridge.js";
import { eventually } from "./helpers/kube-worlds.js";
import { ec2ClientFor, imdsFor } from "./helpers/sim-fixtures.js";

let sim: SimulatorHandle | undefined;
let client: EC2Client | undefined;

afterEach(async () => {
  await stopAttachBridges();
  client?.destroy();
  client = undefined;
  await sim?.close();
  sim = undefined;
});

async function startSim(world: World): Promise<SimulatorHandle> {
  sim = await startSimulator(world);
  return sim;
}

function ec2Of(s: SimulatorHandle): EC2Client {
  client ??= ec2ClientFor(s);
  return client;
}

/** The EC2 calls of `action` the simulator answered, by outcome (`ok` or the error code). */
function outcomes(s: SimulatorHandle, action: string): string[] {
  return s
    .calls()
    .filter((c) => c.action === action)
    .map((c) => c.outcome);
}

const settled = (h: AttachBridge) => h.parts.step.report?.allAttached === true;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("attach mode's faults", () => {
  it("an attach refused for the limit: the ENI made is deleted, the taint stays, an Event on the Node says why", async () => {
    const s = await startSim(
      attachWorld({
        faults: {
          failNext: [
            {
              action: "AttachNetworkInterface",
              code: "AttachmentLimitExceeded",
              status: 400,
              count: 1000,
              message:
                "Interface count 4 exceeds the limit: 3 network interfaces for instance type m5.large.",
            },
          ],
        },
      }),
    );
    const h = await startAttachBridge(s);
    await eventually(
      () => h.parts.step.report?.networks[0]?.state === "refused",
      "the pass reported the network refused",
    );
    expect(outcomes(s, "DeleteNetworkInterface")).toContain("ok");
    expect(madeEnis(s)).toEqual([]);
    expect(h.parts.step.report?.networks[0]).toMatchObject({
      state: "refused",
      attached: false,
      code: "AttachmentLimitExceeded",
    });
    await eventually(
      async () => (await h.metric('multus_ipmgr_bridge_attach_networks{state="refused"}')) === 1,
      "the metric",
    );
    await eventually(() => nodeEvents(s).some((e) => e.reason === "AttachRefused"), "the Event");
    const [event] = nodeEvents(s).filter((e) => e.reason === "AttachRefused");
    expect(event?.message).toMatch(
      /^EC2 refused to attach ENI eni-\w+ of network eth1 at card 0 device 1 \(.*AttachmentLimitExceeded.*\); ENI eni-\w+ was deleted$/,
    );
    // The taint controller has read the refusal and keeps the taint on.
    await pause(2_500);
    expect(nodeTaints(s)).toContain(TAINT);
    expect(await h.metric("multus_ipmgr_bridge_startup_taint")).toBe(1);
    expect(madeEnis(s)).toEqual([]);
  });

  it("throttling past the adapter's 8 attempts: the pass is tried again after its backoff and makes one ENI, no second", async () => {
    const s = await startSim(attachWorld());
    s.setFaults({
      failNext: [
        { action: "CreateNetworkInterface", code: "RequestLimitExceeded", status: 503, count: 10 },
        { action: "AttachNetworkInterface", code: "RequestLimitExceeded", status: 503, count: 10 },
      ],
    });
    const h = await startAttachBridge(s);
    await eventually(() => !nodeTaints(s).includes(TAINT), "the startup taint removed", 30_000);
    // 10 throttles each, more than one pass's 8 attempts: each call needed a second pass.
    expect(outcomes(s, "CreateNetworkInterface")).toEqual([...Array(10).fill("RequestLimitExceeded"), "ok"]);
    expect(outcomes(s, "AttachNetworkInterface")).toEqual([...Array(10).fill("RequestLimitExceeded"), "ok"]);
    expect(madeEnis(s)).toHaveLength(1);
    expect(madeEnis(s)[0]).toMatchObject({ instanceId: "i-0a", deviceIndex: 1 });
    expect(settled(h)).toBe(true);
  });

  it("a bridge stopped between its create and its attach: the next bridge attaches the same ENI, no second one, no leak", async () => {
    const s = await startSim(attachWorld());
    s.setFaults({
      failNext: [{ action: "AttachNetworkInterface", code: "InternalError", status: 500, count: 100_000 }],
    });
    const first = await startAttachBridge(s);
    await eventually(
      () => first.parts.step.report?.networks[0]?.state === "retry-later",
      "the first bridge's attach failed",
      30_000,
    );
    await first.stop();
    const [made] = madeEnis(s);
    expect(madeEnis(s)).toHaveLength(1);
    expect(made).toMatchObject({ instanceId: null, tags: { "multus-ipmgr.io/cluster": CLUSTER } });

    s.setFaults({ failNext: [] });
    const second = await startAttachBridge(s);
    await eventually(() => settled(second), "the second bridge attached");
    expect(madeEnis(s).map((e) => [e.eniId, e.instanceId, e.deviceIndex])).toEqual([
      [made?.eniId, "i-0a", 1],
    ]);
    expect(outcomes(s, "CreateNetworkInterface")).toEqual(["ok"]);
    await eventually(() => !nodeTaints(s).includes(TAINT), "the startup taint removed");
  });

  it("two bridges on one node: one ENI per network in the end", async () => {
    const s = await startSim(attachWorld());
    // Two networks, eth1 and eth2, on both bridges.
    const env = attachEnv(2);
    const [a, b] = await Promise.all([startAttachBridge(s, { env }), startAttachBridge(s, { env })]);
    await eventually(
      () => a !== undefined && b !== undefined && settled(a) && settled(b),
      "both bridges see both attached",
      30_000,
    );
    const made = madeEnis(s);
    expect(made.map((e) => e.deviceIndex).sort()).toEqual([1, 2]);
    expect(made.every((e) => e.instanceId === "i-0a")).toBe(true);
    await eventually(() => !nodeTaints(s).includes(TAINT), "the startup taint removed");
    expect(madeEnis(s)).toHaveLength(2);
  });

  it("IMDS's lag: the taint stays until the link is ready, and nothing is made twice", async () => {
    const s = await startSim(attachWorld({ imdsAttachmentLagMs: 3_000 }));
    const h = await startAttachBridge(s);
    await eventually(() => settled(h), "the ENI attached (EC2)");
    const mac = madeEnis(s)[0]?.mac ?? "";
    const imds = imdsFor(s, "i-0a");
    // The taint read first, IMDS after: once IMDS shows a MAC it keeps showing it, so a node without the
    // taint must show the MAC at the later read. Samples until the taint is off.
    const samples: { taint: boolean; inImds: boolean }[] = [];
    await eventually(async () => {
      const taint = nodeTaints(s).includes(TAINT);
      samples.push({ taint, inImds: (await imds.macs()).includes(mac) });
      return !taint;
    }, "the startup taint removed once IMDS shows the ENI");
    expect(samples.filter((x) => !x.taint && !x.inImds)).toEqual([]);
    // The lag was seen: EC2 showed the ENI attached, IMDS did not yet, and the taint stayed.
    expect(samples.some((x) => x.taint && !x.inImds)).toBe(true);
    expect(madeEnis(s)).toHaveLength(1);
    expect(outcomes(s, "CreateNetworkInterface")).toEqual(["ok"]);
    expect(outcomes(s, "AttachNetworkInterface")).toEqual(["ok"]);
  });

  it("an ENI detached by hand is attached again; the taint goes back on meanwhile, and comes off again", async () => {
    const s = await startSim(attachWorld());
    const h = await startAttachBridge(s, { env: { IPMGR_BRIDGE_RESYNC_INTERVAL_MS: "5000" } });
    await eventually(() => !nodeTaints(s).includes(TAINT), "the startup taint removed");
    const before = h.parts.step.report;
    await eventually(() => h.parts.step.report !== before, "an attach pass just ran", 10_000);
    const [eni] = madeEnis(s);
    await ec2Of(s).send(new DetachNetworkInterfaceCommand({ AttachmentId: eni?.attachmentId ?? "" }));
    // The next attach pass is about 5 s away; the startup taint checks every 2 s, and the link is gone.
    await eventually(() => nodeTaints(s).includes(TAINT), "the startup taint put back", 5_000);
    await eventually(() => madeEnis(s)[0]?.instanceId === "i-0a", "the ENI attached again", 15_000);
    expect(madeEnis(s).map((e) => e.eniId)).toEqual([eni?.eniId]);
    await eventually(() => !nodeTaints(s).includes(TAINT), "the startup taint removed again");
    expect(outcomes(s, "CreateNetworkInterface")).toEqual(["ok"]);
    expect(outcomes(s, "DetachNetworkInterface")).toEqual(["ok"]);
  });

  it("the Lease holder sweeps an orphan of the cluster past its grace; an untagged available ENI is never touched", async () => {
    const s = await startSim(attachWorld());
    const ec2 = ec2Of(s);
    const create = async (tags: Record<string, string>) =>
      (
        await ec2.send(
          new CreateNetworkInterfaceCommand({
            SubnetId: "subnet-0b0b",
            ...(Object.keys(tags).length === 0
              ? {}
              : {
                  TagSpecifications: [
                    {
                      ResourceType: "network-interface",
                      Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
                    },
                  ],
                }),
          }),
        )
      ).NetworkInterface?.NetworkInterfaceId ?? "";
    const orphan = await create({
      "multus-ipmgr.io/cluster": CLUSTER,
      "multus-ipmgr.io/instance-id": "i-0gone",
    });
    const untagged = await create({});
    const otherCluster = await create({ "multus-ipmgr.io/cluster": "elsewhere" });
    const h = await startAttachBridge(s, {
      env: {
        IPMGR_BRIDGE_RESERVATIONS: "report",
        IPMGR_BRIDGE_ORPHANS: "delete",
        IPMGR_BRIDGE_RESERVATION_INTERVAL_MS: "1000",
      },
      tweak: (config) => ({ ...config, orphanGraceMs: 500 }),
    });
    await eventually(() => !s.state().enis.some((e) => e.eniId === orphan), "the orphan deleted", 15_000);
    await eventually(
      async () => (await h.metric('multus_ipmgr_bridge_orphan_eni_deletions_total{outcome="deleted"}')) === 1,
      "the deletion counted",
    );
    // Two more sweeps: the untagged ENI and another cluster's stay.
    await pause(2_500);
    const ids = s.state().enis.map((e) => e.eniId);
    expect(ids).toContain(untagged);
    expect(ids).toContain(otherCluster);
    expect(outcomes(s, "DeleteNetworkInterface")).toEqual(["ok"]);
    expect(
      s
        .calls()
        .filter((c) => c.action === "DeleteNetworkInterface")
        .map((c) => c.params.NetworkInterfaceId),
    ).toEqual([orphan]);
    await eventually(() => settled(h), "the bridge's own ENI attached");
    expect(madeEnis(s).filter((e) => e.instanceId === "i-0a")).toHaveLength(1);
  });
});
