import { afterEach, describe, expect, it } from "vitest";
import type { Ec2Api, Ec2CallRecord } from "../src/eni/ec2-api.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import type { Clock } from "../src/eni/process/clock.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";

/**
 * Attach mode's EC2 calls (Ec2EniLifecycleApi, part of Ec2Api) through our adapter against the simulator.
 * World: VPC vpc-1 (198.51.100.0/24, 2001:db8::/56), subnet-a 198.51.100.0/25 (us-east-1a, tagged
 * multus=yes), group sg-0multus (tagged multus=yes); i-1 (m5.large: 3 ENIs) with eni-0a at device 0. The
 * simulator and the adapter share one clock whose sleeps move it forward, so backoff waits take no real time.
 */

let sim: SimulatorHandle | undefined;
let now = 1_700_000_000_000;
const clock: Clock = {
  now: () => now,
  sleep: async (ms) => {
    now += ms;
  },
};

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function start(
  extra: Record<string, unknown> = {},
): Promise<{ api: Ec2Api; records: Ec2CallRecord[] }> {
  const world = parseWorld({
    region: "us-east-1",
    vpc: { id: "vpc-1", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8::/56" },
    securityGroups: [{ id: "sg-0multus", name: "multus", tags: { multus: "yes" } }],
    subnets: [
      {
        id: "subnet-a",
        cidr: "198.51.100.0/25",
        ipv6Cidr: "2001:db8::/64",
        availabilityZone: "us-east-1a",
        tags: { multus: "yes" },
      },
    ],
    instances: [
      {
        id: "i-1",
        instanceType: "m5.large",
        enis: [
          {
            id: "eni-0a",
            mac: "02:00:00:00:0a:01",
            deviceIndex: 0,
            subnet: "subnet-a",
            primaryIpv4: "198.51.100.10",
          },
        ],
      },
    ],
    ...extra,
  });
  sim = await startSimulator(world, { clock });
  const records: Ec2CallRecord[] = [];
  const api = ec2ApiFor(sim, {
    clock,
    observer: (r) => records.push(r),
    retry: { baseDelayMs: 100, maxDelayMs: 1000 },
  });
  return { api, records };
}

const request = (extra: Record<string, unknown> = {}) => ({
  subnetId: "subnet-a",
  securityGroupIds: ["sg-0multus"],
  description: "multus-ipmgr net1",
  tags: { "node.k8s.amazonaws.com/no_manage": "true", "multus-ipmgr.io/cluster": "c1" },
  clientToken: "multus-ipmgr-0123456789abcdef0123456789abcdef01234567",
  ...extra,
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Ec2Error) return error.code;
    throw error;
  }
  throw new Error("expected an Ec2Error");
}

describe("Ec2Api: attach mode's ENI lifecycle against the simulator", () => {
  it("creates with tags and prefixes at creation, once per ClientToken, and maps the new fields", async () => {
    const { api } = await start();
    const eni = await api.createNetworkInterface(request({ ipv4Prefixes: ["198.51.100.48/28"] }));
    expect(eni).toMatchObject({
      subnetId: "subnet-a",
      vpcId: "vpc-1",
      status: "available",
      availabilityZone: "us-east-1a",
      sourceDestCheck: true,
      instanceId: undefined,
      primaryIpv4: "198.51.100.4",
      ipv4Prefixes: ["198.51.100.48/28"],
      securityGroupIds: ["sg-0multus"],
      tags: { "node.k8s.amazonaws.com/no_manage": "true", "multus-ipmgr.io/cluster": "c1" },
    });
    expect(eni.attachment).toBeUndefined();
    expect((await api.createNetworkInterface(request({ ipv4Prefixes: ["198.51.100.48/28"] }))).eniId).toBe(
      eni.eniId,
    );
    expect(sim?.state().enis).toHaveLength(2);
  });

  it("attaches, sets DeleteOnTermination and SourceDestCheck, and reads the attachment back", async () => {
    const { api } = await start();
    const { eniId } = await api.createNetworkInterface(request());
    const attachmentId = await api.attachNetworkInterface(eniId, "i-1", 1, 0);
    await api.setDeleteOnTermination(eniId, attachmentId, true);
    await api.setSourceDestCheck(eniId, false);
    const enis = await api.describeInstanceEnis("i-1");
    expect(enis.map((e) => e.eniId)).toEqual(["eni-0a", eniId]);
    expect(enis[1]).toMatchObject({
      status: "in-use",
      sourceDestCheck: false,
      instanceId: "i-1",
      deviceIndex: 1,
      attachment: {
        attachmentId,
        instanceId: "i-1",
        deviceIndex: 1,
        networkCardIndex: 0,
        status: "attached",
        deleteOnTermination: true,
      },
    });
  });

  it("fails an attach EC2 refuses at once with its code (AttachmentLimitExceeded), one attempt", async () => {
    const { api, records } = await start();
    await api.attachNetworkInterface((await api.createNetworkInterface(request())).eniId, "i-1", 1, 0);
    await api.attachNetworkInterface(
      (await api.createNetworkInterface(request({ clientToken: "t2" }))).eniId,
      "i-1",
      2,
      0,
    );
    const third = await api.createNetworkInterface(request({ clientToken: "t3" }));
    expect(await codeOf(api.attachNetworkInterface(third.eniId, "i-1", 3, 0))).toBe(
      "AttachmentLimitExceeded",
    );
    expect(records.at(-1)).toMatchObject({
      operation: "AttachNetworkInterface",
      attempts: 1,
      outcome: "error",
    });
  });

  it("deletes a detached ENI, counts one already gone as deleted, and refuses an attached one", async () => {
    const { api } = await start();
    const { eniId } = await api.createNetworkInterface(request());
    await api.deleteNetworkInterface(eniId);
    await api.deleteNetworkInterface(eniId);
    expect(sim?.state().enis.map((e) => e.eniId)).toEqual(["eni-0a"]);
    const other = await api.createNetworkInterface(request({ clientToken: "t2" }));
    await api.attachNetworkInterface(other.eniId, "i-1", 1, 0);
    expect(await codeOf(api.deleteNetworkInterface(other.eniId))).toBe("InvalidNetworkInterface.InUse");
  });

  it("rides out EC2's eventual consistency after a create: the attach is retried until the ENI is seen", async () => {
    const { api, records } = await start({ ec2ReadLagMs: 100 });
    const { eniId } = await api.createNetworkInterface(request());
    const attachmentId = await api.attachNetworkInterface(eniId, "i-1", 1, 0);
    expect(attachmentId).toMatch(/^eni-attach-/);
    const attach = records.find((r) => r.operation === "AttachNetworkInterface");
    expect(attach?.outcome).toBe("ok");
    expect(attach?.attempts).toBeGreaterThan(1);
  });

  it("selects ENIs, subnets and groups by tags", async () => {
    const { api } = await start();
    const ours = await api.createNetworkInterface(request());
    const attached = await api.createNetworkInterface(request({ clientToken: "t2" }));
    await api.attachNetworkInterface(attached.eniId, "i-1", 1, 0);
    const found = await api.describeEnisByTags({
      tags: { "multus-ipmgr.io/cluster": "c1" },
      status: "available",
      vpcId: "vpc-1",
    });
    expect(found.map((e) => e.eniId)).toEqual([ours.eniId]);
    expect((await api.describeSubnetsByTags("vpc-1", { multus: "yes" })).map((s) => s.subnetId)).toEqual([
      "subnet-a",
    ]);
    expect(await api.describeSubnetsByTags("vpc-1", { multus: "no" })).toEqual([]);
    expect(
      (await api.describeSecurityGroupsByTags("vpc-1", { multus: "yes" })).map((g) => g.groupId),
    ).toEqual(["sg-0multus"]);
  });

  it("reads the instance type's ENI limits: per instance and per network card", async () => {
    const { api } = await start();
    expect(await api.describeInstanceType("c6in.32xlarge")).toMatchObject({
      maxNetworkInterfaces: 16,
      networkCards: [
        { index: 0, maxNetworkInterfaces: 8 },
        { index: 1, maxNetworkInterfaces: 8 },
      ],
    });
    expect(await api.describeInstanceType("m5.large")).toMatchObject({
      maxNetworkInterfaces: 3,
      networkCards: [{ index: 0, maxNetworkInterfaces: 3 }],
    });
  });
});
