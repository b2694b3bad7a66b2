import { describe, expect, it } from "vitest";
import type { AttachNetwork } from "../src/eni/attach-networks.js";
import { ExitCode } from "../src/eni/errors/exit-codes.js";
import {
  applyAttachPlan,
  DEFAULT_NOT_FOUND_RETRY,
} from "../src/ipam-whereabouts-bridge/attach/attach-apply.js";
import type { AttachOutcome } from "../src/ipam-whereabouts-bridge/attach/attach-outcome.js";
import { planAttach } from "../src/ipam-whereabouts-bridge/attach/attach-plan.js";
import { clientToken, SlotTokens } from "../src/ipam-whereabouts-bridge/attach/client-token.js";
import { AttachError } from "../src/ipam-whereabouts-bridge/attach/errors/attach-error.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { silentLogger } from "./helpers/loggers.js";
import { ec2Error, MemoryEniLifecycle } from "./helpers/memory-eni-lifecycle.js";

const INSTANCE = "i-0a1";
const CLUSTER = "prod";
const ZONE = "us-west-2a";

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
  ec2.put({ eniId: "eni-primary" }, { instanceId: INSTANCE, deviceIndex: 0, deleteOnTermination: true });
  return ec2;
}

/** One pass as attach mode makes it: read, plan, apply. */
async function pass(
  ec2: MemoryEniLifecycle,
  networks: readonly AttachNetwork[],
  tokens: SlotTokens,
  clock = new FakeClock(),
): Promise<AttachOutcome[]> {
  const plans = planAttach({
    clusterName: CLUSTER,
    instance: { instanceId: INSTANCE, availabilityZone: ZONE, vpcId: "vpc-0a" },
    networks,
    instanceEnis: await ec2.describeInstanceEnis(INSTANCE),
    availableEnis: await ec2.describeEnisByTags({
      tags: { "multus-ipmgr.io/cluster": CLUSTER, "multus-ipmgr.io/instance-id": INSTANCE },
      status: "available",
    }),
    targets: new Map(networks.map((n) => [n.name, { subnetId: "subnet-0a", securityGroupIds: ["sg-0a"] }])),
  });
  ec2.calls.length = 0;
  return await applyAttachPlan(
    plans,
    { clusterName: CLUSTER, instanceId: INSTANCE },
    { ec2, clock, logger: silentLogger(), tokens, random: () => 0 },
    new AbortController().signal,
  );
}

const ours = (ec2: MemoryEniLifecycle) =>
  [...ec2.enis.values()].filter((e) => e.tags["multus-ipmgr.io/cluster"] === CLUSTER);

describe("applyAttachPlan", () => {
  it("makes a missing ENI in EC2's order: create with tags and token, attach, DeleteOnTermination, SourceDestCheck", async () => {
    const ec2 = world();
    const [outcome] = await pass(ec2, [network()], new SlotTokens(INSTANCE));
    expect(ec2.calls).toEqual([
      "CreateNetworkInterface subnet-0a",
      "AttachNetworkInterface eni-0001 i-0a1 0/1",
      "ModifyNetworkInterfaceAttribute eni-0001 DeleteOnTermination=true",
      "ModifyNetworkInterfaceAttribute eni-0001 SourceDestCheck=false",
    ]);
    const [eni] = ours(ec2);
    expect(eni?.tags).toEqual({
      "node.k8s.amazonaws.com/no_manage": "true",
      "multus-ipmgr.io/cluster": "prod",
      "multus-ipmgr.io/instance-id": "i-0a1",
      "multus-ipmgr.io/network": "multus1",
    });
    expect(eni?.attachment).toMatchObject({ deviceIndex: 1, networkCardIndex: 0, deleteOnTermination: true });
    expect(eni?.sourceDestCheck).toBe(false);
    expect(outcome).toMatchObject({
      kind: "attached",
      network: "multus1",
      eniId: "eni-0001",
      mac: eni?.mac,
      attachmentId: eni?.attachment?.attachmentId,
      calls: 4,
      changed: true,
      problems: [],
    });
  });

  it("leaves SourceDestCheck alone when the network wants it on, as EC2 makes it: 3 calls", async () => {
    const ec2 = world();
    const [outcome] = await pass(ec2, [network({ sourceDestCheck: true })], new SlotTokens(INSTANCE));
    expect(ec2.calls.filter((c) => c.includes("SourceDestCheck"))).toEqual([]);
    expect(outcome).toMatchObject({ kind: "attached", calls: 3 });
  });

  it("device index in use: the ENI it made is deleted at once, said so, and the slot's token moves on", async () => {
    const ec2 = world();
    const tokens = new SlotTokens(INSTANCE);
    ec2.failNext(
      "AttachNetworkInterface",
      ec2Error("AttachNetworkInterface", "InvalidParameterValue", "refused"),
    );
    const [outcome] = await pass(ec2, [network()], tokens);
    expect(ec2.calls).toEqual([
      "CreateNetworkInterface subnet-0a",
      "AttachNetworkInterface eni-0001 i-0a1 0/1",
      "DeleteNetworkInterface eni-0001",
    ]);
    expect(ours(ec2)).toEqual([]);
    expect(outcome).toMatchObject({ kind: "refused", code: "InvalidParameterValue", calls: 3 });
    expect(outcome?.kind === "refused" && outcome.detail).toBe(
      "EC2 refused to attach ENI eni-0001 of network multus1 at card 0 device 1 (EC2 AttachNetworkInterface failed: InvalidParameterValue); ENI eni-0001 was deleted",
    );
    expect(tokens.generation({ networkCardIndex: 0, deviceIndex: 1 })).toBe(1);
    // The next create asks with the new token: a new ENI, not the deleted one answered again.
    const [again] = await pass(ec2, [network()], tokens);
    expect(again).toMatchObject({ kind: "attached" });
    expect(again?.kind === "attached" && again.eniId).not.toBe("eni-0001");
  });

  it("attachment limit exceeded: the ENI is deleted, the outcome carries an AttachError with EC2's code as its cause", async () => {
    const ec2 = world(1);
    const [outcome] = await pass(ec2, [network()], new SlotTokens(INSTANCE));
    expect(ec2.calls.at(-1)).toBe("DeleteNetworkInterface eni-0001");
    expect(ours(ec2)).toEqual([]);
    expect(outcome).toMatchObject({ kind: "refused", code: "AttachmentLimitExceeded" });
    const error = outcome?.kind === "refused" ? outcome.error : undefined;
    expect(error).toBeInstanceOf(AttachError);
    expect(error).toMatchObject({
      network: "multus1",
      step: "attach",
      eniId: "eni-0001",
      exitCode: ExitCode.ec2Refused,
    });
  });

  it("a refused attach whose delete fails too says both, and the ENI stays for the next pass", async () => {
    const ec2 = world(1);
    ec2.failNext(
      "DeleteNetworkInterface",
      ec2Error("DeleteNetworkInterface", "RequestLimitExceeded", "unavailable"),
    );
    const [outcome] = await pass(ec2, [network()], new SlotTokens(INSTANCE));
    expect(ours(ec2)).toHaveLength(1);
    expect(outcome?.kind === "refused" && outcome.detail).toMatch(
      /EC2 refused to attach ENI eni-0001 .*AttachmentLimitExceeded\); deleting the ENI failed \(EC2 DeleteNetworkInterface failed: RequestLimitExceeded\); it is tagged and attached again at the next pass$/,
    );
  });

  it("NotFound right after the create is EC2's read lag: the attach is retried with a backoff, nothing deleted", async () => {
    const ec2 = world();
    ec2.notFoundAfterCreate = 2;
    const clock = new FakeClock();
    const [outcome] = await pass(ec2, [network()], new SlotTokens(INSTANCE), clock);
    expect(ec2.calls.filter((c) => c.startsWith("AttachNetworkInterface"))).toHaveLength(3);
    expect(ec2.calls.filter((c) => c.startsWith("Delete"))).toEqual([]);
    expect(clock.sleeps).toEqual([200, 400]);
    expect(outcome).toMatchObject({ kind: "attached", calls: 6 });
  });

  it("NotFound that outlasts the retries: retry-later, nothing deleted; the token's ENI is attached at the next pass", async () => {
    const ec2 = world();
    ec2.notFoundAfterCreate = DEFAULT_NOT_FOUND_RETRY.attempts;
    const tokens = new SlotTokens(INSTANCE);
    const [outcome] = await pass(ec2, [network()], tokens);
    expect(outcome).toMatchObject({
      kind: "retry-later",
      code: "InvalidNetworkInterfaceID.NotFound",
      calls: 7,
    });
    expect(ours(ec2)).toHaveLength(1);
    const [again] = await pass(ec2, [network()], tokens);
    expect(again).toMatchObject({ kind: "attached", eniId: "eni-0001", changed: true });
    expect(ours(ec2)).toHaveLength(1);
  });

  it("a token that answers an ENI an earlier pass lost (deleted meanwhile) moves to its next generation and makes a new one", async () => {
    const ec2 = world();
    ec2.notFoundAfterCreate = DEFAULT_NOT_FOUND_RETRY.attempts;
    const tokens = new SlotTokens(INSTANCE);
    await pass(ec2, [network()], tokens);
    ec2.enis.delete("eni-0001");
    ec2.notFoundAfterCreate = 0;
    const [again] = await pass(ec2, [network()], tokens);
    expect(ec2.calls.filter((c) => c.startsWith("CreateNetworkInterface"))).toHaveLength(2);
    expect(again).toMatchObject({ kind: "attached" });
    expect(again?.kind === "attached" && again.eniId).not.toBe("eni-0001");
    expect(tokens.generation({ networkCardIndex: 0, deviceIndex: 1 })).toBe(1);
  });

  it("a restart between create and attach: the available ENI of ours is attached again, no second create", async () => {
    const ec2 = world();
    // The first bridge's create, then it was killed: the ENI is there, available, with its tags.
    await ec2.createNetworkInterface({
      subnetId: "subnet-0a",
      securityGroupIds: ["sg-0a"],
      description: `multus-ipmgr ${CLUSTER} ${INSTANCE} multus1`,
      tags: {
        "node.k8s.amazonaws.com/no_manage": "true",
        "multus-ipmgr.io/cluster": CLUSTER,
        "multus-ipmgr.io/instance-id": INSTANCE,
        "multus-ipmgr.io/network": "multus1",
      },
      clientToken: clientToken(INSTANCE, { networkCardIndex: 0, deviceIndex: 1 }, 0),
    });
    const [outcome] = await pass(ec2, [network()], new SlotTokens(INSTANCE));
    expect(ec2.calls).toEqual([
      "AttachNetworkInterface eni-0001 i-0a1 0/1",
      "ModifyNetworkInterfaceAttribute eni-0001 DeleteOnTermination=true",
      "ModifyNetworkInterfaceAttribute eni-0001 SourceDestCheck=false",
    ]);
    expect(ours(ec2)).toHaveLength(1);
    expect(outcome).toMatchObject({ kind: "attached", eniId: "eni-0001", changed: true });
  });

  it("throttling on the attach: retry-later, the ENI is not deleted, and the next pass attaches it", async () => {
    const ec2 = world();
    ec2.failNext(
      "AttachNetworkInterface",
      ec2Error("AttachNetworkInterface", "RequestLimitExceeded", "unavailable"),
    );
    const tokens = new SlotTokens(INSTANCE);
    const [outcome] = await pass(ec2, [network()], tokens);
    expect(outcome).toMatchObject({ kind: "retry-later", code: "RequestLimitExceeded", calls: 2 });
    expect(ec2.calls.filter((c) => c.startsWith("Delete"))).toEqual([]);
    expect(ours(ec2).map((e) => e.status)).toEqual(["available"]);
    const [again] = await pass(ec2, [network()], tokens);
    expect(ec2.calls.filter((c) => c.startsWith("Create"))).toEqual([]);
    expect(again).toMatchObject({ kind: "attached", eniId: "eni-0001" });
  });

  it("a refused attach of an ENI found available does not delete it: it is ours and tried again", async () => {
    const ec2 = world();
    ec2.put({
      eniId: "eni-0old",
      tags: {
        "multus-ipmgr.io/cluster": CLUSTER,
        "multus-ipmgr.io/instance-id": INSTANCE,
        "multus-ipmgr.io/network": "multus1",
      },
    });
    ec2.failNext(
      "AttachNetworkInterface",
      ec2Error("AttachNetworkInterface", "AttachmentLimitExceeded", "refused"),
    );
    const [outcome] = await pass(ec2, [network()], new SlotTokens(INSTANCE));
    expect(ec2.calls).toEqual(["AttachNetworkInterface eni-0old i-0a1 0/1"]);
    expect(ec2.enis.has("eni-0old")).toBe(true);
    expect(outcome?.kind === "refused" && outcome.detail).toMatch(
      /; the ENI is ours and left available; the next pass tries again$/,
    );
  });

  it("a refused create: nothing made, the outcome names the subnet", async () => {
    const ec2 = world();
    ec2.failNext(
      "CreateNetworkInterface",
      ec2Error("CreateNetworkInterface", "InsufficientFreeAddressesInSubnet", "refused"),
    );
    const [outcome] = await pass(ec2, [network()], new SlotTokens(INSTANCE));
    expect(ours(ec2)).toEqual([]);
    expect(outcome).toMatchObject({
      kind: "refused",
      code: "InsufficientFreeAddressesInSubnet",
      calls: 1,
      detail:
        "EC2 refused to create the ENI of network multus1 in subnet subnet-0a (EC2 CreateNetworkInterface failed: InsufficientFreeAddressesInSubnet); nothing was made",
    });
  });

  it("a token EC2 already saw with other parameters: refused, and the slot's next create uses a new token", async () => {
    const ec2 = world();
    const tokens = new SlotTokens(INSTANCE);
    ec2.failNext(
      "CreateNetworkInterface",
      ec2Error("CreateNetworkInterface", "IdempotentParameterMismatch", "refused"),
    );
    const [outcome] = await pass(ec2, [network()], tokens);
    expect(outcome).toMatchObject({ kind: "refused", code: "IdempotentParameterMismatch" });
    expect(tokens.generation({ networkCardIndex: 0, deviceIndex: 1 })).toBe(1);
  });

  it("DeleteOnTermination failing leaves the ENI attached, with the problem; the next pass sets it", async () => {
    const ec2 = world();
    ec2.failNext(
      "ModifyNetworkInterfaceAttribute",
      ec2Error("ModifyNetworkInterfaceAttribute", "RequestLimitExceeded", "unavailable"),
    );
    const tokens = new SlotTokens(INSTANCE);
    const [outcome] = await pass(ec2, [network()], tokens);
    expect(outcome).toMatchObject({ kind: "attached", calls: 4 });
    expect(outcome?.kind === "attached" && outcome.problems.map((p) => p.message)).toEqual([
      "network multus1: ENI eni-0001 is attached at card 0 device 1, but setting DeleteOnTermination failed (EC2 ModifyNetworkInterfaceAttribute failed: RequestLimitExceeded); it is set again at the next pass",
    ]);
    const [again] = await pass(ec2, [network()], tokens);
    expect(ec2.calls).toEqual(["ModifyNetworkInterfaceAttribute eni-0001 DeleteOnTermination=true"]);
    expect(again).toMatchObject({ kind: "attached", changed: false, problems: [] });
  });

  it("two networks: one refused does not stop the other", async () => {
    const ec2 = world();
    ec2.failNext(
      "CreateNetworkInterface",
      ec2Error("CreateNetworkInterface", "InvalidGroup.NotFound", "refused"),
    );
    const outcomes = await pass(
      ec2,
      [network(), network({ name: "multus2", deviceIndex: 2 })],
      new SlotTokens(INSTANCE),
    );
    expect(outcomes.map((o) => [o.network, o.kind])).toEqual([
      ["multus1", "refused"],
      ["multus2", "attached"],
    ]);
  });
});
