import { describe, expect, it } from "vitest";
import type { AttachNetwork } from "../src/eni/attach-networks.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import {
  type AttachInstanceFacts,
  AttachMode,
  type AttachReport,
} from "../src/ipam-whereabouts-bridge/attach/attach-mode.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { captureLogger, silentLogger } from "./helpers/loggers.js";
import { ec2Error, MemoryEniLifecycle } from "./helpers/memory-eni-lifecycle.js";

const INSTANCE = "i-0a1";
const ZONE = "us-west-2a";
const FACTS: AttachInstanceFacts = { instanceId: INSTANCE, availabilityZone: ZONE, vpcId: "vpc-0a" };

function network(overrides: Partial<AttachNetwork> = {}): AttachNetwork {
  return {
    name: "multus1",
    deviceIndex: 1,
    networkCardIndex: 0,
    subnet: { byZone: { [ZONE]: "subnet-0a" } },
    securityGroups: { ids: ["sg-0a"] },
    mtu: 9001,
    sourceDestCheck: false,
    ...overrides,
  };
}

const TWO = [network(), network({ name: "multus2", deviceIndex: 2 })];

function world(maxEnis = 8): MemoryEniLifecycle {
  const ec2 = new MemoryEniLifecycle();
  ec2.instances.set(INSTANCE, { availabilityZone: ZONE, maxEnis });
  ec2.subnets.push({
    subnetId: "subnet-0a",
    vpcId: "vpc-0a",
    availabilityZone: ZONE,
    ipv4Cidr: "198.51.100.0/24",
    ipv6Cidrs: [],
  });
  ec2.subnetTags.set("subnet-0a", { "multus-ipmgr.io/net": "multus1" });
  ec2.put({ eniId: "eni-primary" }, { instanceId: INSTANCE, deviceIndex: 0, deleteOnTermination: true });
  return ec2;
}

function attachMode(
  ec2: MemoryEniLifecycle,
  networks: readonly AttachNetwork[],
  clock = new FakeClock(),
  logger = silentLogger(),
  random = () => 0,
): AttachMode {
  return new AttachMode({ ec2, clock, logger, random }, { clusterName: "prod", networks });
}

const signal = new AbortController().signal;
const writes = (ec2: MemoryEniLifecycle) => ec2.calls.filter((c) => !c.startsWith("Describe"));

describe("AttachMode", () => {
  it("first pass makes every missing ENI in at most 5 EC2 calls per ENI; the next pass reads once and changes nothing", async () => {
    const ec2 = world();
    const mode = attachMode(ec2, TWO);
    const report = await mode.reconcile(FACTS, signal);
    expect(report.allAttached).toBe(true);
    expect(report.calls).toBe(10);
    expect(ec2.calls).toHaveLength(10);
    const enis = [...ec2.enis.values()].filter((e) => e.eniId !== "eni-primary");
    expect(report.networks).toEqual(
      ["multus1", "multus2"].map((name, i) => {
        const eni = enis.find((e) => e.tags["multus-ipmgr.io/network"] === name);
        return {
          network: name,
          networkCardIndex: 0,
          deviceIndex: i + 1,
          attached: true,
          state: "attached",
          eniId: eni?.eniId,
          mac: eni?.mac,
          attachmentId: eni?.attachment?.attachmentId,
          problems: [],
          calls: 4,
        };
      }),
    );
    expect(report.nextAt).toBeUndefined();
    ec2.calls.length = 0;
    const again = await mode.reconcile(FACTS, signal);
    expect(ec2.calls).toEqual([`DescribeNetworkInterfaces instance ${INSTANCE}`]);
    expect(again.calls).toBe(1);
    expect(again.allAttached).toBe(true);
  });

  it("an attach EC2 refuses: the ENI deleted, the network reported and tried again after 1 s, then 2 s", async () => {
    const ec2 = world(1);
    const clock = new FakeClock();
    const start = clock.now();
    const mode = attachMode(ec2, [network()], clock);
    const first = await mode.reconcile(FACTS, signal);
    expect([...ec2.enis.keys()]).toEqual(["eni-primary"]);
    expect(first.allAttached).toBe(false);
    expect(first.networks[0]).toMatchObject({
      attached: false,
      state: "refused",
      code: "AttachmentLimitExceeded",
      retryAt: start + 1_000,
      problems: [
        "EC2 refused to attach ENI eni-0001 of network multus1 at card 0 device 1 (EC2 AttachNetworkInterface failed: AttachmentLimitExceeded); ENI eni-0001 was deleted; tried again in 1 s",
      ],
    });
    expect(first.nextAt).toBe(start + 1_000);
    // Inside the backoff: one read, no write, the same report.
    await clock.sleep(999);
    ec2.calls.length = 0;
    const held = await mode.reconcile(FACTS, signal);
    expect(ec2.calls).toEqual([`DescribeNetworkInterfaces instance ${INSTANCE}`]);
    expect(held.networks[0]).toMatchObject({ state: "refused", retryAt: start + 1_000, calls: 0 });
    await clock.sleep(1);
    const second = await mode.reconcile(FACTS, signal);
    expect(writes(ec2)).toEqual([
      "CreateNetworkInterface subnet-0a",
      "AttachNetworkInterface eni-0002 i-0a1 0/1",
      "DeleteNetworkInterface eni-0002",
    ]);
    expect(second.networks[0]?.retryAt).toBe(clock.now() + 2_000);
  });

  it("a network the plan refuses makes no call; its backoff doubles from 1 s to 5 min, jitter on top", async () => {
    const ec2 = world();
    const clock = new FakeClock();
    const facts = { ...FACTS, type: { instanceType: "t3.nano", maxNetworkInterfaces: 1 } };
    const mode = attachMode(ec2, [network()], clock, silentLogger(), () => 1);
    const delays: number[] = [];
    for (let i = 0; i < 11; i += 1) {
      const report: AttachReport = await mode.reconcile(facts, signal);
      const retryAt = report.networks[0]?.retryAt ?? 0;
      delays.push(retryAt - clock.now());
      await clock.sleep(retryAt - clock.now());
    }
    expect(writes(ec2)).toEqual([]);
    expect(delays).toEqual([
      1_250, 2_500, 5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 375_000, 375_000,
    ]);
  });

  it("an ENI not ours at a network's slot: reported, attached as far as the node goes, never called on", async () => {
    const ec2 = world();
    ec2.put({ eniId: "eni-0theirs" }, { instanceId: INSTANCE, deviceIndex: 1, deleteOnTermination: false });
    const { logger, lines } = captureLogger();
    const mode = attachMode(ec2, [network()], new FakeClock(), logger);
    const report = await mode.reconcile(FACTS, signal);
    await mode.reconcile(FACTS, signal);
    expect(writes(ec2)).toEqual([]);
    expect(report.networks[0]).toMatchObject({ attached: true, eniId: "eni-0theirs" });
    const problem =
      "network multus1: ENI eni-0theirs at card 0 device 1 is not made by multus-ipmgr for cluster prod (no multus-ipmgr.io/cluster=prod tag); it is left alone. Give the network a free device index, or detach that ENI yourself";
    expect(report.networks[0]?.problems).toEqual([problem]);
    // Logged once, not at every pass.
    expect(lines.filter((l) => l.msg === problem)).toHaveLength(1);
  });

  it("an ENI of ours detached by hand is attached again, with DeleteOnTermination: no second ENI", async () => {
    const ec2 = world();
    const mode = attachMode(ec2, [network()]);
    const first = await mode.reconcile(FACTS, signal);
    const eniId = first.networks[0]?.eniId as string;
    ec2.detach(eniId);
    ec2.calls.length = 0;
    const second = await mode.reconcile(FACTS, signal);
    expect(writes(ec2)).toEqual([
      `AttachNetworkInterface ${eniId} i-0a1 0/1`,
      `ModifyNetworkInterfaceAttribute ${eniId} DeleteOnTermination=true`,
    ]);
    expect(second.networks[0]).toMatchObject({ attached: true, eniId });
    expect(ec2.enis.size).toBe(2);
  });

  it("an ENI of ours deleted by hand: the next pass makes a new one with the slot's next token, at once", async () => {
    const ec2 = world();
    const mode = attachMode(ec2, [network()]);
    const first = await mode.reconcile(FACTS, signal);
    const eniId = first.networks[0]?.eniId as string;
    ec2.detach(eniId);
    await ec2.deleteNetworkInterface(eniId);
    ec2.calls.length = 0;
    const second = await mode.reconcile(FACTS, signal);
    expect(writes(ec2)).toEqual([
      "CreateNetworkInterface subnet-0a",
      "AttachNetworkInterface eni-0002 i-0a1 0/1",
      "ModifyNetworkInterfaceAttribute eni-0002 DeleteOnTermination=true",
      "ModifyNetworkInterfaceAttribute eni-0002 SourceDestCheck=false",
    ]);
    expect(second.networks[0]).toMatchObject({ attached: true, eniId: "eni-0002" });
  });

  it("a bridge killed between create and attach: the next one attaches that ENI, no second create", async () => {
    const ec2 = world();
    ec2.failNext(
      "AttachNetworkInterface",
      ec2Error("AttachNetworkInterface", "RequestLimitExceeded", "unavailable"),
    );
    const first = await attachMode(ec2, [network()]).reconcile(FACTS, signal);
    expect(first.networks[0]).toMatchObject({ state: "retry-later", code: "RequestLimitExceeded" });
    ec2.calls.length = 0;
    const restarted = await attachMode(ec2, [network()]).reconcile(FACTS, signal);
    expect(writes(ec2).filter((c) => c.startsWith("Create"))).toEqual([]);
    expect(restarted.networks[0]).toMatchObject({ attached: true, eniId: "eni-0001" });
    expect(ec2.enis.size).toBe(2);
  });

  it("two bridges on one node at once: one ENI per network, attached, nothing left over", async () => {
    const ec2 = world();
    const [a, b] = await Promise.all([
      attachMode(ec2, TWO).reconcile(FACTS, signal),
      attachMode(ec2, TWO).reconcile(FACTS, signal),
    ]);
    const ours = [...ec2.enis.values()].filter((e) => e.eniId !== "eni-primary");
    expect(ours.map((e) => [e.tags["multus-ipmgr.io/network"], e.attachment?.deviceIndex])).toEqual([
      ["multus1", 1],
      ["multus2", 2],
    ]);
    // Each network attached by one of the two; the other met its ENI in use and deleted nothing.
    expect(a.networks.map((n, i) => n.attached || b.networks[i]?.attached)).toEqual([true, true]);
    expect(ec2.calls.filter((c) => c.startsWith("Delete"))).toEqual([]);
    // The one that lost the race sees the other's ENIs at its next pass.
    const next = await attachMode(ec2, TWO).reconcile(FACTS, signal);
    expect(next.allAttached).toBe(true);
    expect(next.networks.map((n) => n.eniId)).toEqual(ours.map((e) => e.eniId));
  });

  it("a subnet chosen by tags is looked up once per process, and again after EC2 refused a create in it", async () => {
    const ec2 = world();
    const clock = new FakeClock();
    const mode = attachMode(
      ec2,
      [network({ subnet: { tags: { "multus-ipmgr.io/net": "multus1" } } })],
      clock,
    );
    const first = await mode.reconcile(FACTS, signal);
    ec2.detach(first.networks[0]?.eniId as string);
    ec2.enis.delete(first.networks[0]?.eniId as string);
    ec2.failNext(
      "CreateNetworkInterface",
      ec2Error("CreateNetworkInterface", "InvalidSubnetID.NotFound", "refused"),
    );
    await mode.reconcile(FACTS, signal);
    await clock.sleep(1_000);
    const third = await mode.reconcile(FACTS, signal);
    expect(third.allAttached).toBe(true);
    expect(ec2.calls.filter((c) => c.startsWith("DescribeSubnets"))).toHaveLength(2);
  });

  it("a subnet lookup EC2 fails: that network waits for its backoff, the other goes on", async () => {
    const ec2 = world();
    ec2.failNext("DescribeSubnets", ec2Error("DescribeSubnets", "UnauthorizedOperation", "permission"));
    const mode = attachMode(ec2, [
      network({ subnet: { tags: { "multus-ipmgr.io/net": "multus1" } } }),
      network({ name: "multus2", deviceIndex: 2 }),
    ]);
    const report = await mode.reconcile(FACTS, signal);
    expect(report.networks.map((n) => [n.network, n.state])).toEqual([
      ["multus1", "refused"],
      ["multus2", "attached"],
    ]);
    expect(report.networks[0]?.problems[0]).toBe(
      "network multus1: could not look up its subnet or security groups (EC2 DescribeSubnets failed: UnauthorizedOperation)",
    );
  });

  it("the instance's ENIs unreadable: the pass throws for the caller's loop to retry", async () => {
    const ec2 = world();
    ec2.failNext(
      "DescribeNetworkInterfaces",
      ec2Error("DescribeNetworkInterfaces", "RequestLimitExceeded", "unavailable"),
    );
    await expect(attachMode(ec2, [network()]).reconcile(FACTS, signal)).rejects.toBeInstanceOf(Ec2Error);
    expect(writes(ec2)).toEqual([]);
  });
});
