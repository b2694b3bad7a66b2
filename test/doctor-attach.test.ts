/**
 * `doctor --profile node` with the bridge's attach mode on: runNodeDoctor with the real IMDS client and EC2
 * adapter against the simulator on 127.0.0.1. Each network's subnet and groups are found, the instance type's
 * ENI limits counted, and each action attach mode sends probed with DryRun: allowed rows say so, a denied
 * action (the simulator's deny fault) fails its row with the attach policy's fix, and attach mode off adds no
 * row. Nothing is made: every create, attach, modify or delete the simulator sees carries DryRun.
 */

import { afterEach, describe, expect, it } from "vitest";
import type { AttachDoctorOptions } from "../src/doctor/attach-results.js";
import type { CheckResult } from "../src/doctor/check.js";
import { HttpImdsProbe } from "../src/doctor/imds-probe.js";
import type { LinkSource } from "../src/doctor/links.js";
import { type NodeDoctorDeps, runNodeDoctor } from "../src/doctor/run-node-doctor.js";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import { systemClock } from "../src/eni/process/clock.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { silentLogger } from "./helpers/loggers.js";
import { ScriptedInterfaces } from "./helpers/scripted-interfaces.js";
import { credentials } from "./helpers/sim-fixtures.js";
import { ENI, NODE1, twoNodeWorld } from "./helpers/worlds.js";

let sim: SimulatorHandle | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const CLUSTER = "prod-1";
const SUBNET_A = "subnet-00000000000000e00";
const SUBNET_B = "subnet-00000000000000b00";
const GROUP = "sg-000000000000000a1";
const ALLOWED = ["198.51.100.32/28"];
const WRITES = [
  "CreateNetworkInterface",
  "AttachNetworkInterface",
  "ModifyNetworkInterfaceAttribute",
  "DeleteNetworkInterface",
];

type World = ReturnType<typeof twoNodeWorld>;
type Eni = { id: string; tags?: Record<string, string> };

/**
 * Node 1 (m5.xlarge, 4 ENIs, all attached) with ENI A1 at device 1 made by attach mode (the cluster's tag), a
 * security group tagged for the Multus networks, and subnet A tagged `multus=a`.
 */
function attachWorld(change: (world: World) => void = () => undefined): World {
  const world = twoNodeWorld();
  world.securityGroups = [{ id: GROUP, name: "multus", tags: { role: "multus" } }];
  const subnets = world.subnets as { id: string; tags?: Record<string, string> }[];
  for (const s of subnets) if (s.id === SUBNET_A) s.tags = { multus: "a" };
  const eni = enis(world).find((e) => e.id === ENI.node1A1);
  if (eni === undefined) throw new Error("no ENI A1");
  eni.tags = { ...eni.tags, "multus-ipmgr.io/cluster": CLUSTER, "multus-ipmgr.io/network": "eth1" };
  change(world);
  return world;
}

const enis = (world: World): Eni[] =>
  (world.instances as { id: string; enis: Eni[] }[]).flatMap((i) => (i.id === NODE1 ? i.enis : []));

/** eth1 at device 1 (ENI A1's slot), its subnet by zone and its group by tag. */
const ETH1 = {
  name: "eth1",
  deviceIndex: 1,
  subnet: { byZone: { "us-east-1a": SUBNET_A } },
  securityGroups: { tags: { role: "multus" } },
};

function attachOn(networks: unknown[] = [ETH1], clusterName = CLUSTER): AttachDoctorOptions {
  return { attach: "on", networks: JSON.stringify(networks), clusterName };
}

class NoLinks implements LinkSource {
  async names(): Promise<string[]> {
    return [];
  }
  async read(): Promise<undefined> {
    return undefined;
  }
}

async function nodeDoctor(world: World, attach: AttachDoctorOptions | undefined): Promise<CheckResult[]> {
  sim = await startSimulator(parseWorld(world));
  const logger = silentLogger();
  const imdsEndpoint = sim.imdsEndpoints[NODE1] ?? "";
  const deps: NodeDoctorDeps = {
    imds: new ImdsClient({ endpoint: imdsEndpoint, requestTimeoutMs: 300 }),
    ec2: createEc2Api({
      region: "us-east-1",
      endpoint: sim.ec2Endpoint,
      credentials,
      retry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 20 },
      requestTimeoutMs: 1000,
      logger,
    }),
    logger,
    imdsProbe: new HttpImdsProbe({ endpoint: imdsEndpoint, timeoutMs: 300, clock: systemClock }),
    links: new NoLinks(),
    hostInterfaces: new ScriptedInterfaces([]),
    rpFilter: { read: async () => 0 },
    nodeSlices: {
      source: { slicesOf: async () => ({ kind: "ok" as const, slices: [] }) },
      nodeName: "node-1",
    },
  };
  return runNodeDoctor(deps, { allowedCidrs: ALLOWED, region: undefined, ...(attach ? { attach } : {}) });
}

const attachRows = (results: readonly CheckResult[]): CheckResult[] =>
  results.filter((r) => r.name.startsWith("attach"));

const row = (results: readonly CheckResult[], name: string, subject?: string): CheckResult => {
  const found = results.filter((r) => r.name === name && (subject === undefined || r.subject === subject));
  expect(found, `${name} ${subject ?? ""}`).toHaveLength(1);
  return found[0] as CheckResult;
};

/** Every create, attach, modify and delete the simulator saw carried DryRun and was answered without effect. */
function nothingMade(): void {
  const writes = (sim?.calls() ?? []).filter((c) => WRITES.includes(c.action));
  for (const call of writes) {
    expect({ action: call.action, dryRun: call.params.DryRun }).toEqual({
      action: call.action,
      dryRun: "true",
    });
    expect(["DryRunOperation", "UnauthorizedOperation"]).toContain(call.outcome);
  }
}

describe("doctor --profile node, attach mode", () => {
  it("attach mode off: no attach row, and none of attach mode's calls is sent", async () => {
    const results = await nodeDoctor(attachWorld(), { attach: "off", networks: "", clusterName: "" });
    expect(attachRows(results)).toEqual([]);
    expect((sim?.calls() ?? []).filter((c) => WRITES.includes(c.action))).toEqual([]);
    const without = await nodeDoctor(attachWorld(), undefined);
    expect(attachRows(without)).toEqual([]);
  });

  it("attach mode on adds 8 EC2 calls for one network (docs/doctor.md)", async () => {
    await nodeDoctor(attachWorld(), undefined);
    const off = (sim?.calls() ?? []).map((c) => c.action);
    await nodeDoctor(attachWorld(), attachOn());
    const on = (sim?.calls() ?? []).map((c) => c.action);
    const added = [...on];
    for (const action of off) added.splice(added.indexOf(action), 1);
    expect(added.sort()).toEqual(
      [
        "DescribeNetworkInterfaces",
        "DescribeSubnets",
        "DescribeSecurityGroups",
        "DescribeInstanceTypes",
        ...WRITES,
      ].sort(),
    );
  });

  it("everything granted: the subnet, the limits and the four actions are ok, probed with DryRun", async () => {
    const results = await nodeDoctor(attachWorld(), attachOn());
    expect(attachRows(results).map((r) => [r.name, r.subject, r.status])).toEqual([
      ["attach-subnet", "eth1", "ok"],
      ["attach-limit", "m5.xlarge", "ok"],
      ["attach-permission", "ec2:CreateNetworkInterface", "ok"],
      ["attach-permission", "ec2:AttachNetworkInterface", "ok"],
      ["attach-permission", "ec2:ModifyNetworkInterfaceAttribute", "ok"],
      ["attach-permission", "ec2:DeleteNetworkInterface", "ok"],
    ]);
    expect(row(results, "attach-subnet").detail).toBe(`the ENI is made in ${SUBNET_A} with ${GROUP}.`);
    expect(row(results, "attach-limit").detail).toBe(
      "4 ENIs (4 attached now, 0 to make) within m5.xlarge's 4.",
    );
    expect(row(results, "attach-permission", "ec2:CreateNetworkInterface").detail).toBe(
      `allowed on network eth1 (${SUBNET_A}) (probed with DryRun).`,
    );
    expect(row(results, "attach-permission", "ec2:DeleteNetworkInterface").detail).toBe(
      `allowed on ${ENI.node1A1} (probed with DryRun).`,
    );
    nothingMade();
    // The create's DryRun is the request attach mode sends: the subnet, the group and the four tags at creation.
    const create = (sim?.calls() ?? []).find((c) => c.action === "CreateNetworkInterface");
    expect(create?.params).toMatchObject({
      SubnetId: SUBNET_A,
      "SecurityGroupId.1": GROUP,
      "TagSpecification.1.ResourceType": "network-interface",
    });
    const tags = Object.fromEntries(
      [1, 2, 3, 4].map((n) => [
        create?.params[`TagSpecification.1.Tag.${n}.Key`],
        create?.params[`TagSpecification.1.Tag.${n}.Value`],
      ]),
    );
    expect(tags).toEqual({
      "node.k8s.amazonaws.com/no_manage": "true",
      "multus-ipmgr.io/cluster": CLUSTER,
      "multus-ipmgr.io/instance-id": NODE1,
      "multus-ipmgr.io/network": "eth1",
    });
    // The SDK fills a random ClientToken; never one of the bridge's (multus-ipmgr-<sha256>).
    expect(create?.params.ClientToken).not.toMatch(/^multus-ipmgr-/);
  });

  it.each(WRITES)(
    "%s denied: its row fails with the attach policy's fix, the others stay ok",
    async (action) => {
      const results = await nodeDoctor(
        attachWorld((w) => {
          w.faults = { deny: [action] };
        }),
        attachOn(),
      );
      const denied = row(results, "attach-permission", `ec2:${action}`);
      expect(denied.status).toBe("problem");
      expect(denied.detail).toContain("denied on ");
      expect(denied.detail).toContain(`ec2:${action}`);
      expect(denied.fix).toContain(
        `add deploy/iam/iam-policy-attach.json to the bridge's role, with <CLUSTER_NAME> replaced by ${CLUSTER}: its statement`,
      );
      expect(denied.fix).toContain(
        action === "CreateNetworkInterface"
          ? `aws:RequestTag: the request carries multus-ipmgr.io/cluster=${CLUSTER}`
          : `aws:ResourceTag: the ENI carries multus-ipmgr.io/cluster=${CLUSTER}`,
      );
      const others = results.filter((r) => r.name === "attach-permission" && r.subject !== `ec2:${action}`);
      expect(others.map((r) => r.status)).toEqual(["ok", "ok", "ok"]);
      nothingMade();
    },
  );

  it("no ENI of this cluster yet: attach, modify and delete are not probed, and that is no failure", async () => {
    const results = await nodeDoctor(
      attachWorld((w) => {
        for (const e of enis(w))
          if (e.id === ENI.node1A1) e.tags = { "node.k8s.amazonaws.com/no_manage": "true" };
      }),
      attachOn([{ ...ETH1, deviceIndex: 1 }]),
    );
    expect(row(results, "attach-permission", "ec2:CreateNetworkInterface").status).toBe("ok");
    for (const action of WRITES.slice(1)) {
      const r = row(results, "attach-permission", `ec2:${action}`);
      expect(r.status).toBe("skipped");
      expect(r.detail).toMatch(/^not probed: no ENI of this cluster yet/);
    }
    expect(attachRows(results).filter((r) => r.status === "problem")).toEqual([]);
    expect((sim?.calls() ?? []).filter((c) => WRITES.slice(1).includes(c.action))).toEqual([]);
  });

  it("a network beyond the instance type's ENIs: attach-limit fails, naming the device and the limit", async () => {
    const results = await nodeDoctor(
      attachWorld(),
      attachOn([ETH1, { ...ETH1, name: "eth4", deviceIndex: 4 }]),
    );
    const limit = row(results, "attach-limit");
    expect(limit.status).toBe("problem");
    expect(limit.detail).toBe(
      "network eth4 names device 4, but card 0 of m5.xlarge takes 4 ENIs (devices 0 to 3); the instance would need 5 ENIs (4 attached now, 1 to make) but m5.xlarge takes 4: the bridge refuses these networks, with no EC2 call.",
    );
  });

  it("a subnet that cannot be resolved: attach-subnet fails for that network, and its create is not probed", async () => {
    const results = await nodeDoctor(
      attachWorld(),
      attachOn([{ ...ETH1, subnet: { tags: { multus: "nowhere" } } }]),
    );
    const subnet = row(results, "attach-subnet", "eth1");
    expect(subnet.status).toBe("problem");
    expect(subnet.detail).toBe(
      "network eth1: 0 subnets of VPC vpc-0000000000000d0c5 in us-east-1a carry the tags multus=nowhere (none); exactly one must.",
    );
    expect(row(results, "attach-permission", "ec2:CreateNetworkInterface").status).toBe("skipped");
    const byZone = await nodeDoctor(
      attachWorld(),
      attachOn([{ ...ETH1, subnet: { byZone: { "us-east-1b": SUBNET_B } } }]),
    );
    expect(row(byZone, "attach-subnet", "eth1").detail).toBe(
      "network eth1: subnet.byZone names no subnet for the node's zone us-east-1a (it names us-east-1b).",
    );
  });

  it("DescribeInstanceTypes denied: attach-limit fails naming the action, and is not called unknown", async () => {
    const results = await nodeDoctor(
      attachWorld((w) => {
        w.faults = { deny: ["DescribeInstanceTypes"] };
      }),
      attachOn(),
    );
    const limit = row(results, "attach-limit");
    expect(limit.status).toBe("problem");
    expect(limit.detail).toContain("ec2:DescribeInstanceTypes");
  });

  it("a subnet found by tags: the one tagged subnet of the node's VPC in its zone", async () => {
    const results = await nodeDoctor(
      attachWorld(),
      attachOn([{ ...ETH1, subnet: { tags: { multus: "a" } } }]),
    );
    expect(row(results, "attach-subnet", "eth1")).toMatchObject({ status: "ok" });
    expect(row(results, "attach-subnet", "eth1").detail).toContain(SUBNET_A);
  });

  it("IPMGR_CLUSTER_NAME unset or the networks unreadable: attach-config fails, and nothing is probed", async () => {
    const results = await nodeDoctor(attachWorld(), { attach: "on", networks: "[{", clusterName: "" });
    const config = results.filter((r) => r.name === "attach-config");
    expect(config.map((r) => r.status)).toEqual(["problem", "problem"]);
    expect(config[0]?.detail).toMatch(/^IPMGR_BRIDGE_ATTACH_NETWORKS is not JSON/);
    expect(config[1]?.detail).toBe(
      "IPMGR_CLUSTER_NAME is not set: attach mode tags every ENI it makes with it, and the bridge exits 2 without it.",
    );
    expect(results.filter((r) => r.name === "attach-permission")).toEqual([]);
  });
});
