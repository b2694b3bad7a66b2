/**
 * runInit and the reconcile steps in-process: the real IMDS client and EC2 adapter against the simulator on
 * 127.0.0.1, the pod's interfaces scripted. The built binary in namespaces is covered by init-e2e.test.ts.
 */
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { AddressNotAllowedError } from "../src/eni/errors/address-not-allowed-error.js";
import { ElasticIpError } from "../src/eni/errors/elastic-ip-error.js";
import { EniNotFoundError } from "../src/eni/errors/eni-not-found-error.js";
import { TimeoutError } from "../src/eni/errors/timeout-error.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import { type Clock, systemClock } from "../src/eni/process/clock.js";
import type { Logger } from "../src/eni/process/logger.js";
import { observe, planFor, type ReconcileDeps } from "../src/eni/reconcile.js";
import { reconcileOnce } from "../src/eni/reconcile-once.js";
import { runInit } from "../src/init/run-init.js";
import { parseWorld, startSimulator } from "../src/sim/index.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { captureLogger } from "./helpers/loggers.js";
import { ScriptedInterfaces } from "./helpers/scripted-interfaces.js";
import { ALLOWED_CIDRS, ENI, MAC, NODE1, twoNodeWorld, type WorldOverrides } from "./helpers/worlds.js";

type Sim = Awaited<ReturnType<typeof startSimulator>>;
let sim: Sim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const logger = pino({ level: "silent" });
const policy = { allowedCidrs: ALLOWED_CIDRS.split(",") };
const confirm = { timeoutMs: 2000, intervalMs: 10 };

/** `clock` is shared by the simulator and the deps, so that its stale reads age as the deps wait. */
async function setUp(
  interfaces: ScriptedInterfaces,
  overrides: WorldOverrides = {},
  options: { faults?: Record<string, unknown>; clock?: Clock; logger?: Logger; elasticIps?: unknown[] } = {},
): Promise<ReconcileDeps> {
  const clock = options.clock ?? systemClock;
  const world = {
    ...twoNodeWorld(overrides),
    ...(options.faults === undefined ? {} : { faults: options.faults }),
    ...(options.elasticIps === undefined ? {} : { elasticIps: options.elasticIps }),
  };
  sim = await startSimulator(parseWorld(world), { clock });
  const imdsEndpoint = sim.imdsEndpoints[NODE1];
  if (imdsEndpoint === undefined) throw new Error("no IMDS endpoint");
  return {
    imds: new ImdsClient({ endpoint: imdsEndpoint, requestTimeoutMs: 1000 }),
    ec2: createEc2Api({
      region: "us-east-1",
      endpoint: sim.ec2Endpoint,
      credentials: { accessKeyId: "sim", secretAccessKey: "sim" },
      retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
      logger: options.logger ?? logger,
      clock,
    }),
    interfaces,
    clock,
    logger: options.logger ?? logger,
  };
}

function eni(id: string) {
  const found = sim?.state().enis.find((e) => e.eniId === id);
  if (found === undefined) throw new Error(`no ENI ${id}`);
  return found;
}

describe("runInit against the simulator", () => {
  it("reads in full only the ENIs the pod's interfaces use, and knows the others' primaries", async () => {
    const deps = await setUp(
      new ScriptedInterfaces([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40"] }]),
    );
    const observation = await observe(deps);
    const full = observation.enis.filter((e) => e.summary !== true).map((e) => e.eniId);
    expect(full).toEqual([ENI.node1A1]);
    expect(observation.enis.map((e) => e.primaryIpv4)).toEqual([
      "198.51.100.140",
      "198.51.100.11",
      "198.51.100.12",
      "198.51.100.70",
    ]);
  });

  it("refuses another ENI's primary address of the same instance without calling EC2", async () => {
    const deps = await setUp(
      new ScriptedInterfaces([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.12"] }]),
    );
    const error = await runInit(deps, {
      policy: { allowedCidrs: ["198.51.100.0/26"] },
      waitForAddressesMs: 0,
      confirm,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AddressNotAllowedError);
    expect((error as AddressNotAllowedError).refusals.map((r) => r.reason)).toEqual(["eni-primary-address"]);
    expect(sim?.calls()).toEqual([]);
  });

  it("reports an unknown MAC before any other refusal", async () => {
    const deps = await setUp(
      new ScriptedInterfaces([
        { name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.30"] },
        { name: "net2", mac: MAC.stranger, addresses: ["198.51.100.41"] },
      ]),
    );
    const error = await runInit(deps, { policy, waitForAddressesMs: 0, confirm }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EniNotFoundError);
    expect((error as EniNotFoundError).knownMacs).toEqual([
      MAC.node1Eth0,
      MAC.node1A1,
      MAC.node1A2,
      MAC.node1B1,
    ]);
    expect((error as EniNotFoundError).exitCode).toBe(7);
    expect((error as EniNotFoundError).message).toBe(
      `interface net2 has MAC ${MAC.stranger}, which matches no ENI of this instance (instance ENIs: ` +
        `${MAC.node1Eth0}, ${MAC.node1A1}, ${MAC.node1A2}, ${MAC.node1B1}). With ipvlan the pod interface carries ` +
        "its parent ENI's MAC: check the NetworkAttachmentDefinition's master, or exclude the interface with " +
        "IPMGR_EXCLUDE_INTERFACES.",
    );
    expect(eni(ENI.node1A1).ipv4s).toEqual(["198.51.100.11"]);
  });

  it("gives up with a timeout naming the wait when no managed interface has an address", async () => {
    const deps = await setUp(new ScriptedInterfaces([]));
    const error = await runInit(deps, { policy, waitForAddressesMs: 50, confirm }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(sim?.calls()).toEqual([]);
  });

  it("passes a pod without addresses at once, with nothing to assign, when addresses are not required (a restarted sidecar's releases)", async () => {
    const deps = await setUp(
      new ScriptedInterfaces([{ name: "net1", mac: MAC.node1A1, addresses: ["fe80::1"] }]),
    );
    const result = await reconcileOnce(deps, {
      policy,
      waitForAddressesMs: 60_000,
      addressesRequired: false,
      confirm,
    });
    expect(result).toMatchObject({ held: [], mutatingCalls: 0, plan: { placements: [], refusals: [] } });
    expect(sim?.calls().filter((c) => c.action !== "DescribeNetworkInterfaces")).toEqual([]);
    const required = await reconcileOnce(deps, { policy, waitForAddressesMs: 0, confirm }).catch(
      (e: unknown) => e,
    );
    expect(required).toBeInstanceOf(TimeoutError);
  });

  it("takes EC2's word over a lagging IMDS: an IPv6 address EC2 shows on the target ENI needs no action", async () => {
    const interfaces = new ScriptedInterfaces([
      { name: "net1", mac: MAC.node1A1, addresses: ["2001:db8:100:1::170"] },
    ]);
    const deps = await setUp(interfaces);
    await deps.ec2.assignIpv6(ENI.node1A1, ["2001:db8:100:1::170"]);
    sim?.clearCalls();
    const seen = await observe(deps);
    // IMDS reflects assignments asynchronously: an observation taken a moment earlier lacks the address.
    const lagging = {
      ...seen,
      enis: seen.enis.map((e) => (e.eniId === ENI.node1A1 ? { ...e, ipv6s: [] } : e)),
    };
    const plan = await planFor(lagging, { policy }, deps);
    expect(plan.actions).toEqual([]);
    expect(sim?.calls().map((c) => c.action)).toEqual(["DescribeNetworkInterfaces"]);
  });

  it("moves an IPv6 address between two ENIs of the same instance", async () => {
    const deps = await setUp(
      new ScriptedInterfaces([{ name: "net1", mac: MAC.node1A2, addresses: ["2001:db8:100:1::180"] }]),
      { node1A1: { ipv6s: ["2001:db8:100:1::180"] } },
    );
    const result = await runInit(deps, { policy, waitForAddressesMs: 0, confirm });
    expect(result.mutatingCalls).toBe(2);
    expect(eni(ENI.node1A2).ipv6s).toEqual(["2001:db8:100:1::180"]);
    expect(eni(ENI.node1A1).ipv6s).toEqual([]);
  });

  it("takes no IPv6 address from its holder when EC2 refuses the pod's IPv4 address (another instance's primary)", async () => {
    // 198.51.100.21 is node 2's ENI's primary: only EC2 can tell, so the planner lets it through.
    const floating = "2001:db8:100:1::181";
    const deps = await setUp(
      new ScriptedInterfaces([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.21", floating] }]),
      { node2A1: { ipv6s: [floating] } },
    );
    const error = await runInit(deps, {
      policy: { allowedCidrs: ["198.51.100.0/26", "2001:db8:100:1::/64"] },
      waitForAddressesMs: 0,
      confirm,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AddressNotAllowedError);
    expect((error as AddressNotAllowedError).refusals.map((r) => r.reason)).toEqual(["eni-primary-address"]);
    expect(eni(ENI.node2A1).ipv6s).toEqual([floating]);
    expect(
      sim
        ?.calls()
        .filter((c) => c.action !== "DescribeNetworkInterfaces")
        .map((c) => `${c.action} ${c.outcome}`),
    ).toEqual(["AssignPrivateIpAddresses InvalidParameterValue"]);
  });

  it("assigns nothing when the address is already held, and makes no EC2 call at all", async () => {
    const deps = await setUp(
      new ScriptedInterfaces([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.44"] }]),
      {
        node1A1: { secondaryIpv4s: ["198.51.100.44"] },
      },
    );
    const result = await runInit(deps, { policy, waitForAddressesMs: 0, confirm });
    expect(result.mutatingCalls).toBe(0);
    expect(result.plan.satisfied).toEqual(["198.51.100.44"]);
    expect(sim?.calls()).toEqual([]);
  });

  it("assigns an IPv6 address its previous holder let go while EC2's reads still show it there", async () => {
    const address = "2001:db8:100:1::175";
    const clock = new FakeClock();
    const { logger: captured, lines } = captureLogger();
    const deps = await setUp(
      new ScriptedInterfaces([{ name: "net1", mac: MAC.node1A1, addresses: [address] }]),
      { node2A1: { ipv6s: [address] } },
      { faults: { staleReadsMs: 5000 }, clock, logger: captured },
    );
    // Node 2 lets the address go just before this pod starts; reads show it on node 2 for 5 more seconds.
    await deps.ec2.unassignIpv6(ENI.node2A1, [address]);
    sim?.clearCalls();
    const result = await runInit(deps, {
      policy,
      waitForAddressesMs: 0,
      confirm: { timeoutMs: 30_000, intervalMs: 500 },
    });
    expect(result.held).toEqual([address]);
    expect(eni(ENI.node1A1).ipv6s).toEqual([address]);
    expect(eni(ENI.node2A1).ipv6s).toEqual([]);
    const mutating = sim
      ?.calls()
      .filter((c) => /assign/i.test(c.action))
      .map((c) => `${c.action} ${c.params.NetworkInterfaceId} ${c.outcome}`);
    expect(mutating).toEqual([
      `UnassignIpv6Addresses ${ENI.node2A1} InvalidParameterValue`,
      `AssignIpv6Addresses ${ENI.node1A1} ok`,
    ]);
    const moveLine = lines.find(
      (l) =>
        l.msg ===
        "EC2 refused to take the addresses from their previous holder, which may have let them go already (EC2's reads lag); assigning them anyway",
    );
    expect(moveLine).toMatchObject({ level: 30, eniId: ENI.node2A1, addresses: [address] });
  });
});

describe("runInit with IPMGR_ELASTIC_IPS: the pod starts with its public address in place", () => {
  const FLOAT = "198.51.100.40";
  const WEB = "eipalloc-0123456789abcdef0";
  const podOn = (addresses: string[]) =>
    new ScriptedInterfaces([{ name: "net1", mac: MAC.node1A1, addresses }]);
  const where = (allocationId: string) => {
    const eip = sim?.state().addresses.find((a) => a.allocationId === allocationId);
    return { eniId: eip?.eniId, privateIp: eip?.privateIp };
  };
  const eipCalls = () =>
    (sim?.calls() ?? []).filter((c) => c.action.endsWith("Address") || c.action === "DescribeAddresses");

  it("associates the Elastic IP of an address it assigned, and confirms it", async () => {
    const deps = await setUp(
      podOn([FLOAT]),
      {},
      { elasticIps: [{ allocationId: WEB, publicIp: "203.0.113.10" }] },
    );
    const result = await runInit(deps, {
      policy,
      waitForAddressesMs: 0,
      confirm,
      elasticIps: [{ address: FLOAT, allocationId: WEB }],
    });
    expect(where(WEB)).toEqual({ eniId: ENI.node1A1, privateIp: FLOAT });
    expect(result.elasticIps?.associated).toEqual([
      { allocationId: WEB, eniId: ENI.node1A1, privateIp: FLOAT, allowReassociation: false },
    ]);
    // Check, what sits on the address, associate, confirm.
    expect(eipCalls().map((c) => c.action)).toEqual([
      "DescribeAddresses",
      "DescribeAddresses",
      "AssociateAddress",
      "DescribeAddresses",
    ]);
  });

  it("makes one DescribeAddresses and no other Elastic IP call when the association is in place", async () => {
    const deps = await setUp(
      podOn([FLOAT]),
      { node1A1: { secondaryIpv4s: [FLOAT] } },
      {
        elasticIps: [
          {
            allocationId: WEB,
            publicIp: "203.0.113.10",
            association: { eni: ENI.node1A1, privateIp: FLOAT },
          },
        ],
      },
    );
    await runInit(deps, {
      policy,
      waitForAddressesMs: 0,
      confirm,
      elasticIps: [{ address: FLOAT, allocationId: WEB }],
    });
    expect(sim?.calls().map((c) => c.action)).toEqual(["DescribeAddresses"]);
  });

  it("makes no Elastic IP call for a mapping of an address the pod does not carry", async () => {
    const deps = await setUp(
      podOn(["198.51.100.41"]),
      {},
      { elasticIps: [{ allocationId: WEB, publicIp: "203.0.113.10" }] },
    );
    const result = await runInit(deps, {
      policy,
      waitForAddressesMs: 0,
      confirm,
      elasticIps: [{ address: FLOAT, allocationId: WEB }],
    });
    expect(eipCalls()).toEqual([]);
    expect(result.elasticIps?.plan.decisions.map((d) => d.status.kind)).toEqual(["not-held"]);
    expect(where(WEB)).toEqual({ eniId: null, privateIp: null });
  });

  it("fails with exit code 10 naming an allocation that does not exist, after assigning the addresses", async () => {
    const deps = await setUp(podOn([FLOAT]));
    const error = await runInit(deps, {
      policy,
      waitForAddressesMs: 0,
      confirm,
      elasticIps: [{ address: FLOAT, allocationId: WEB }],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ElasticIpError);
    expect((error as ElasticIpError).exitCode).toBe(11);
    expect((error as ElasticIpError).message).toBe(
      `Elastic IP ${WEB}, mapped to ${FLOAT} in IPMGR_ELASTIC_IPS, does not exist in this account and region; allocate one (aws ec2 allocate-address --domain vpc) and map its allocation id, or remove the mapping.`,
    );
    expect(eni(ENI.node1A1).ipv4s).toContain(FLOAT);
  });

  it("never pulls an Elastic IP off another private address: exit code 10 with the command that frees it", async () => {
    const deps = await setUp(
      podOn([FLOAT]),
      { node1A1: { secondaryIpv4s: ["198.51.100.41"] } },
      {
        elasticIps: [
          {
            allocationId: WEB,
            publicIp: "203.0.113.10",
            association: { eni: ENI.node1A1, privateIp: "198.51.100.41" },
          },
        ],
      },
    );
    const error = await runInit(deps, {
      policy,
      waitForAddressesMs: 0,
      confirm,
      elasticIps: [{ address: FLOAT, allocationId: WEB }],
    }).catch((e: unknown) => e);
    expect((error as ElasticIpError).message).toBe(
      `Elastic IP ${WEB} (203.0.113.10) points at 198.51.100.41 on ${ENI.node1A1}, not at ${FLOAT}, so multus-ipmgr leaves it alone; disassociate it there (aws ec2 disassociate-address --association-id eipassoc-00000000000000001) or fix IPMGR_ELASTIC_IPS.`,
    );
    expect(where(WEB)).toEqual({ eniId: ENI.node1A1, privateIp: "198.51.100.41" });
    expect(eipCalls().map((c) => c.action)).toEqual(["DescribeAddresses"]);
  });

  it("stops with exit code 4 naming ec2:AssociateAddress when the role lacks it", async () => {
    const deps = await setUp(
      podOn([FLOAT]),
      {},
      {
        elasticIps: [{ allocationId: WEB, publicIp: "203.0.113.10" }],
        faults: { deny: ["AssociateAddress"] },
      },
    );
    const error = await runInit(deps, {
      policy,
      waitForAddressesMs: 0,
      confirm,
      elasticIps: [{ address: FLOAT, allocationId: WEB }],
    }).catch((e: unknown) => e);
    expect((error as { exitCode: number }).exitCode).toBe(4);
    expect((error as Error).message).toContain("grant ec2:AssociateAddress");
  });
});
