/**
 * applyPlan's handling of EC2 refusals, with the real EC2 adapter against the simulator: which refusals end
 * the plan and which the next action settles. Each test checks the simulator's state and call log.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { AddressNotAllowedError } from "../src/eni/errors/address-not-allowed-error.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import type { Clock } from "../src/eni/process/clock.js";
import { applyPlan } from "../src/eni/reconcile.js";
import type { Placement, Plan, PlanAction } from "../src/eni/types.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { captureLogger, type LogLine } from "./helpers/loggers.js";
import { ManualClock } from "./helpers/manual-clock.js";
import { credentials, fastRetry } from "./helpers/sim-fixtures.js";
import { ENI, MAC, NODE2, twoNodeWorld, type WorldOverrides } from "./helpers/worlds.js";

let sim: SimulatorHandle | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

/** `faults` and `simClock` go to the simulator; the adapter runs on the system clock. */
async function setUp(
  overrides: WorldOverrides,
  options: { faults?: Record<string, unknown>; simClock?: Clock } = {},
) {
  const world = {
    ...twoNodeWorld(overrides),
    ...(options.faults === undefined ? {} : { faults: options.faults }),
  };
  sim = await startSimulator(
    parseWorld(world),
    options.simClock === undefined ? {} : { clock: options.simClock },
  );
  const { logger, lines } = captureLogger();
  const ec2 = createEc2Api({
    region: "us-east-1",
    endpoint: sim.ec2Endpoint,
    credentials,
    retry: { ...fastRetry, maxAttempts: 2 },
    logger,
  });
  return { deps: { ec2, logger }, lines, sim };
}

function planOf(actions: PlanAction[], placements: Placement[] = []): Plan {
  return { actions, placements, satisfied: [], refusals: [], skipped: [] };
}

function placement(address: string, eniId: string, mac: string): Placement {
  return { address, family: address.includes(":") ? 6 : 4, interfaceName: "net1", eniId, mac };
}

const ipv6Of = (s: SimulatorHandle, eniId: string) => s.state().enis.find((e) => e.eniId === eniId)?.ipv6s;
const mutating = (s: SimulatorHandle) =>
  s
    .calls()
    .filter((c) => /assign/i.test(c.action))
    .map((c) => `${c.action} ${c.params.NetworkInterfaceId} ${c.outcome}`);
const moveLines = (lines: LogLine[]) =>
  lines.filter(
    (l) =>
      l.msg ===
      "EC2 refused to take the addresses from their previous holder, which may have let them go already (EC2's reads lag); assigning them anyway",
  );

describe("applyPlan", () => {
  const address = "2001:db8:100:1::177";
  const move = (): Plan =>
    planOf(
      [
        { kind: "unassign-ipv6", eniId: ENI.node2A1, addresses: [address], reason: "move" },
        { kind: "assign-ipv6", eniId: ENI.node1A1, addresses: [address] },
      ],
      [placement(address, ENI.node1A1, MAC.node1A1)],
    );

  it("goes on to the assign when the previous holder let the address go but EC2's reads still show it there", async () => {
    // The simulator's clock stands still: its reads show the world as it started, node 2 holding the address.
    const { deps, lines, sim } = await setUp(
      { node2A1: { ipv6s: [address] } },
      { faults: { staleReadsMs: 5000 }, simClock: new ManualClock() },
    );
    await deps.ec2.unassignIpv6(ENI.node2A1, [address]);
    sim.clearCalls();
    const result = await applyPlan(move(), deps);
    expect(result.mutatingCalls).toBe(2);
    expect(ipv6Of(sim, ENI.node1A1)).toEqual([address]);
    expect(mutating(sim)).toEqual([
      `UnassignIpv6Addresses ${ENI.node2A1} InvalidParameterValue`,
      `AssignIpv6Addresses ${ENI.node1A1} ok`,
    ]);
    expect(moveLines(lines)).toMatchObject([
      { level: 30, eniId: ENI.node2A1, addresses: [address], code: "InvalidParameterValue" },
    ]);
  });

  it("fails with the assign's refusal when the refused move left the address on its holder", async () => {
    const { deps, lines, sim } = await setUp({ node2A1: { ipv6s: [address] } });
    sim.setFaults({
      failNext: [{ action: "UnassignIpv6Addresses", code: "InvalidParameterValue", status: 400, count: 1 }],
    });
    const error = await applyPlan(move(), deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Ec2Error);
    expect(error).toMatchObject({ operation: "AssignIpv6Addresses", kind: "refused", eniId: ENI.node1A1 });
    expect(ipv6Of(sim, ENI.node2A1)).toEqual([address]);
    expect(ipv6Of(sim, ENI.node1A1)).toEqual([]);
    expect(moveLines(lines)).toHaveLength(1);
  });

  it("stops at a move EC2 denies for a missing permission, before the assign", async () => {
    const { deps, sim } = await setUp({ node2A1: { ipv6s: [address] } });
    sim.setFaults({ deny: ["UnassignIpv6Addresses"] });
    const error = await applyPlan(move(), deps).catch((e: unknown) => e);
    expect(error).toMatchObject({ operation: "UnassignIpv6Addresses", kind: "permission" });
    expect(mutating(sim)).toEqual([`UnassignIpv6Addresses ${ENI.node2A1} UnauthorizedOperation`]);
  });

  describe("goOnAfterRefusal (the sidecar)", () => {
    const v4 = "198.51.100.47";
    const v6 = "2001:db8:100:1::147";
    const both = (): Plan =>
      planOf(
        [
          { kind: "assign-ipv4", eniId: ENI.node1A1, addresses: [v4], allowReassignment: true },
          { kind: "assign-ipv6", eniId: ENI.node1A1, addresses: [v6] },
        ],
        [placement(v4, ENI.node1A1, MAC.node1A1), placement(v6, ENI.node1A1, MAC.node1A1)],
      );

    it("tries every action and reports the refused one instead of throwing", async () => {
      const { deps, sim } = await setUp({});
      sim.setFaults({
        failNext: [
          { action: "AssignPrivateIpAddresses", code: "InvalidParameterValue", status: 400, count: 9 },
        ],
      });
      const applied = await applyPlan(both(), deps, { goOnAfterRefusal: true });
      expect(applied.mutatingCalls).toBe(1);
      expect(applied.failures.map((f) => [f.action.kind, f.error.name])).toEqual([
        ["assign-ipv4", "Ec2Error"],
      ]);
      expect(ipv6Of(sim, ENI.node1A1)).toEqual([v6]);
    });

    it("still stops at once when EC2 is unavailable (throttled past every retry)", async () => {
      const { deps, sim } = await setUp({});
      sim.setFaults({
        failNext: [
          { action: "AssignPrivateIpAddresses", code: "RequestLimitExceeded", status: 503, count: 9 },
        ],
      });
      const error = await applyPlan(both(), deps, { goOnAfterRefusal: true }).catch((e: unknown) => e);
      expect(error).toMatchObject({ operation: "AssignPrivateIpAddresses", kind: "unavailable" });
      expect(ipv6Of(sim, ENI.node1A1)).toEqual([]);
    });

    it("without it, stops at the first refusal (init)", async () => {
      const { deps, sim } = await setUp({});
      sim.setFaults({
        failNext: [
          { action: "AssignPrivateIpAddresses", code: "InvalidParameterValue", status: 400, count: 9 },
        ],
      });
      const error = await applyPlan(both(), deps).catch((e: unknown) => e);
      expect(error).toMatchObject({ operation: "AssignPrivateIpAddresses", kind: "refused" });
      expect(ipv6Of(sim, ENI.node1A1)).toEqual([]);
    });
  });

  describe("a release EC2 refuses", () => {
    const refusedLines = (lines: LogLine[]) =>
      lines.filter((l) => String(l.msg).startsWith("EC2 refused to release the address from our ENI"));

    it("is reported, not thrown, when EC2 refuses it even though our ENI still holds the address", async () => {
      const { deps, lines, sim } = await setUp({ node1A1: { ipv6s: [address] } });
      sim.setFaults({
        failNext: [{ action: "UnassignIpv6Addresses", code: "InvalidParameterValue", status: 400, count: 1 }],
      });
      const release = planOf([
        { kind: "unassign-ipv6", eniId: ENI.node1A1, addresses: [address], reason: "release" },
      ]);
      expect(await applyPlan(release, deps)).toEqual({
        mutatingCalls: 0,
        refusedReleases: [address],
        failures: [],
      });
      expect(ipv6Of(sim, ENI.node1A1)).toEqual([address]);
      expect(refusedLines(lines)).toMatchObject([
        { level: 30, eniId: ENI.node1A1, addresses: [address], code: "InvalidParameterValue" },
      ]);
      expect(moveLines(lines)).toEqual([]);
    });

    it("when another ENI took one address over and our reads lag: the rest is released address by address", async () => {
      // The simulator's clock stands still: its reads show the world as it started, our ENI holding both.
      const moved = "198.51.100.45";
      const ours = "198.51.100.46";
      const { deps, lines, sim } = await setUp(
        { node1A1: { secondaryIpv4s: [moved, ours] } },
        { faults: { staleReadsMs: 5000 }, simClock: new ManualClock() },
      );
      const ipv4Of = (eniId: string) => sim.state().enis.find((e) => e.eniId === eniId)?.ipv4s;
      expect(ipv4Of(ENI.node1A1)).toEqual(expect.arrayContaining([moved, ours]));
      await deps.ec2.assignPrivateIpv4(ENI.node2A1, [moved], true);
      sim.clearCalls();
      const release = planOf([{ kind: "unassign-ipv4", eniId: ENI.node1A1, addresses: [moved, ours] }]);
      expect(await applyPlan(release, deps)).toEqual({
        mutatingCalls: 1,
        refusedReleases: [moved],
        failures: [],
      });
      expect(ipv4Of(ENI.node1A1)).not.toContain(ours);
      expect(ipv4Of(ENI.node2A1)).toContain(moved);
      const unassigns = sim.calls().filter((c) => c.action === "UnassignPrivateIpAddresses");
      expect(
        unassigns.map((c) => [Object.values(c.params).filter((v) => v.startsWith("198.")), c.outcome]),
      ).toEqual([
        [[moved, ours], "InvalidParameterValue"],
        [[moved], "InvalidParameterValue"],
        [[ours], "ok"],
      ]);
      expect(refusedLines(lines)).toMatchObject([{ eniId: ENI.node1A1, addresses: [moved] }]);
    });

    it("still fails when EC2 denies the release for a missing permission", async () => {
      const { deps, sim } = await setUp({ node1A1: { ipv6s: [address] } });
      sim.setFaults({ deny: ["UnassignIpv6Addresses"] });
      const release = planOf([
        { kind: "unassign-ipv6", eniId: ENI.node1A1, addresses: [address], reason: "release" },
      ]);
      const error = await applyPlan(release, deps).catch((e: unknown) => e);
      expect(error).toMatchObject({ operation: "UnassignIpv6Addresses", kind: "permission" });
      expect(ipv6Of(sim, ENI.node1A1)).toEqual([address]);
    });
  });

  describe("IPv4 assign refused", () => {
    const assign = (address: string): Plan =>
      planOf(
        [{ kind: "assign-ipv4", eniId: ENI.node1A1, addresses: [address], allowReassignment: true }],
        [placement(address, ENI.node1A1, MAC.node1A1)],
      );

    it("names another instance's ENI whose primary address it is, exit code 6", async () => {
      const { deps, sim } = await setUp({});
      const before = sim.state();
      const error = await applyPlan(assign("198.51.100.21"), deps).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AddressNotAllowedError);
      const e = error as AddressNotAllowedError;
      expect(e.exitCode).toBe(6);
      expect(e.message).toBe(
        `address 198.51.100.21 on net1 is the primary private IPv4 address of ENI ${ENI.node2A1} of instance ` +
          `${NODE2}, which EC2 never reassigns (it refused AssignPrivateIpAddresses on ${ENI.node1A1}); ` +
          "exclude it from the IPAM range and from IPMGR_ALLOWED_CIDRS.",
      );
      expect(e.refusals).toMatchObject([
        { address: "198.51.100.21", interfaceName: "net1", mac: MAC.node1A1, reason: "eni-primary-address" },
      ]);
      expect(e.cause).toBeInstanceOf(Ec2Error);
      expect(sim.state()).toEqual(before);
    });

    it("stays EC2's refusal, exit code 5, when the address is no ENI's primary", async () => {
      const { deps, sim } = await setUp({});
      // In subnet-b, not in node1A1's subnet-a: EC2 refuses, and no ENI has it as its primary.
      const error = await applyPlan(assign("198.51.100.100"), deps).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Ec2Error);
      expect(error).toMatchObject({ operation: "AssignPrivateIpAddresses", kind: "refused", exitCode: 5 });
      expect(sim.calls().map((c) => c.action)).toContain("DescribeNetworkInterfaces");
    });

    it("stays EC2's refusal, with a warning, when the addresses cannot be re-read", async () => {
      const { deps, lines, sim } = await setUp({});
      // Both re-reads fail: the adapter's own (is it already assigned?) and the primary-address check.
      sim.setFaults({ deny: ["DescribeNetworkInterfaces"] });
      const error = await applyPlan(assign("198.51.100.21"), deps).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Ec2Error);
      expect(error).toMatchObject({ operation: "AssignPrivateIpAddresses", kind: "refused", exitCode: 5 });
      // The adapter's failed re-read is in the refusal's cause, by message, for the caller's error line.
      expect((error as Error).cause).toMatchObject({
        message: expect.stringMatching(
          /^refused, and the ENI could not be re-read: EC2 denied DescribeNetworkInterfaces on eni-0000000000000a001: UnauthorizedOperation /,
        ),
      });
      const warning = lines.find(
        (l) =>
          l.msg ===
          "could not re-read the refused addresses to see whether one is another ENI's primary address",
      );
      expect(warning).toMatchObject({ level: 40, eniId: ENI.node1A1, addresses: ["198.51.100.21"] });
    });
  });
});
