import { afterEach, describe, expect, it } from "vitest";
import { confirmHeld, readEnis, readInstanceEnis } from "../src/eni/eni-discovery.js";
import { AddressNotAllowedError } from "../src/eni/errors/address-not-allowed-error.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import { TimeoutError } from "../src/eni/errors/timeout-error.js";
import { plan } from "../src/eni/planner.js";
import { systemClock } from "../src/eni/process/clock.js";
import { runInit } from "../src/init/run-init.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { silentLogger } from "./helpers/loggers.js";
import { ScriptedInterfaces } from "./helpers/scripted-interfaces.js";
import { ec2ApiFor, imdsFor, standardWorld } from "./helpers/sim-fixtures.js";
import { ALLOWED_CIDRS, ENI, MAC, NODE1, twoNodeWorld } from "./helpers/worlds.js";

/*
 * The core's prefix paths against the simulator, with real clients: the EC2 adapter (assign, unassign,
 * describe), the IMDS getters, readEnis/readInstanceEnis, confirmHeld, and a plan from what they read.
 * World: standardWorld, i-1 with eni-0a (.10), eni-0b (.20) in subnet-a 198.51.100.0/25 (2001:db8::/64) and
 * eni-0c (.140) in subnet-b 198.51.100.128/25; eni-0b starts with the prefix 198.51.100.32/28.
 */

const MAC_B = "02:00:00:00:0b:01";
const MAC_C = "02:00:00:00:0c:01";

let sim: SimulatorHandle | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function start(): Promise<SimulatorHandle> {
  sim = await startSimulator(standardWorld({ eni0b: { ipv4Prefixes: ["198.51.100.32/28"] } }));
  return sim;
}

const simEni = (s: SimulatorHandle, eniId: string) => s.state().enis.find((e) => e.eniId === eniId);

describe("the EC2 adapter with prefixes", () => {
  it("assigns and unassigns IPv4 and IPv6 prefixes, one call each, and Describe reads them back", async () => {
    const s = await start();
    const ec2 = ec2ApiFor(s);
    await ec2.assignIpv4Prefixes("eni-0b", ["198.51.100.48/28"]);
    await ec2.assignIpv6Prefixes("eni-0b", ["2001:db8:0:0:1::/80"]);
    expect(simEni(s, "eni-0b")?.ipv4Prefixes).toEqual(["198.51.100.32/28", "198.51.100.48/28"]);
    const [described] = await ec2.describeNetworkInterfaces({ eniIds: ["eni-0b"] });
    expect(described?.ipv4Prefixes).toEqual(["198.51.100.32/28", "198.51.100.48/28"]);
    expect(described?.ipv6Prefixes).toEqual(["2001:db8:0:0:1::/80"]);
    expect(s.calls().map((c) => [c.action, c.params["Ipv4Prefix.1"] ?? c.params["Ipv6Prefix.1"]])).toEqual([
      ["AssignPrivateIpAddresses", "198.51.100.48/28"],
      ["AssignIpv6Addresses", "2001:db8:0:0:1::/80"],
      ["DescribeNetworkInterfaces", undefined],
    ]);
    await ec2.unassignIpv4Prefixes("eni-0b", ["198.51.100.48/28"]);
    await ec2.unassignIpv6Prefixes("eni-0b", ["2001:db8:0:0:1::/80"]);
    expect(simEni(s, "eni-0b")?.ipv4Prefixes).toEqual(["198.51.100.32/28"]);
    expect(simEni(s, "eni-0b")?.ipv6Prefixes).toEqual([]);
  });

  it("takes a prefix already gone as released (EC2 refuses, the re-read shows it gone)", async () => {
    const s = await start();
    await ec2ApiFor(s).unassignIpv4Prefixes("eni-0b", ["198.51.100.48/28"]);
    expect(s.calls().map((c) => [c.action, c.outcome])).toEqual([
      ["UnassignPrivateIpAddresses", "InvalidParameterValue"],
      ["DescribeNetworkInterfaces", "ok"],
    ]);
  });

  it("fails with EC2's code when the prefix overlaps another ENI's, leaving both ENIs as they were", async () => {
    const s = await start();
    const error = await ec2ApiFor(s)
      .assignIpv4Prefixes("eni-0a", ["198.51.100.32/28"])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Ec2Error);
    expect((error as Ec2Error).code).toBe("InvalidParameterValue");
    expect((error as Ec2Error).message).toContain("overlaps prefix 198.51.100.32/28");
    expect(simEni(s, "eni-0a")?.ipv4Prefixes).toEqual([]);
    expect(simEni(s, "eni-0b")?.ipv4Prefixes).toEqual(["198.51.100.32/28"]);
  });
});

describe("IMDS and ENI discovery with prefixes", () => {
  it("the typed getters list the prefixes, and none (404) as empty", async () => {
    const s = await start();
    await ec2ApiFor(s).assignIpv6Prefixes("eni-0b", ["2001:db8:0:0:1::/80"]);
    const imds = imdsFor(s, "i-1");
    expect(await imds.ipv4Prefixes(MAC_B)).toEqual(["198.51.100.32/28"]);
    expect(await imds.ipv6Prefixes(MAC_B)).toEqual(["2001:db8:0:0:1::/80"]);
    expect(await imds.ipv4Prefixes(MAC_C)).toEqual([]);
    expect(await imds.ipv6Prefixes(MAC_C)).toEqual([]);
  });

  it("readEnis fills ipv4Prefixes/ipv6Prefixes; readInstanceEnis reads IPv4 prefixes of summary ENIs too", async () => {
    const s = await start();
    const imds = imdsFor(s, "i-1");
    const [b] = await readEnis(imds, [MAC_B]);
    expect(b?.ipv4Prefixes).toEqual(["198.51.100.32/28"]);
    expect(b?.ipv6Prefixes).toEqual([]);
    const all = await readInstanceEnis(imds, [MAC_C]);
    expect(all.map((e) => [e.eniId, e.summary ?? false, e.ipv4Prefixes])).toEqual([
      ["eni-0a", true, []],
      ["eni-0b", true, ["198.51.100.32/28"]],
      ["eni-0c", false, []],
    ]);
  });

  it("confirmHeld takes an address inside the MAC's prefix as held, beside one listed singly, without waiting", async () => {
    const s = await start();
    const clock = new FakeClock();
    await confirmHeld(
      imdsFor(s, "i-1"),
      [
        { mac: MAC_B, address: "198.51.100.40", family: 4 },
        { mac: MAC_B, address: "198.51.100.20", family: 4 },
      ],
      { timeoutMs: 1000, intervalMs: 100, clock },
    );
    expect(clock.sleeps).toEqual([]);
  });

  it("confirmHeld waits for a prefix IMDS shows late (staleReadsMs), as for an address", async () => {
    const clock = new FakeClock();
    const s = await startSimulator(standardWorld(), { clock });
    sim = s;
    s.setFaults({ staleReadsMs: 2_000 });
    await clock.sleep(5_000);
    await ec2ApiFor(s).assignIpv4Prefixes("eni-0b", ["198.51.100.48/28"]);
    const assignedAt = clock.now();
    await confirmHeld(imdsFor(s, "i-1"), [{ mac: MAC_B, address: "198.51.100.50", family: 4 }], {
      timeoutMs: 5_000,
      intervalMs: 500,
      clock,
    });
    const waited = clock.now() - assignedAt;
    expect(waited).toBeGreaterThanOrEqual(2_000);
    expect(waited).toBeLessThan(5_000);
  });

  it("confirmHeld still times out for an address inside another MAC's prefix", async () => {
    const s = await start();
    const clock = new FakeClock();
    const error = await confirmHeld(
      imdsFor(s, "i-1"),
      [{ mac: MAC_C, address: "198.51.100.40", family: 4 }],
      {
        timeoutMs: 300,
        intervalMs: 100,
        clock,
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
  });

  it("a plan from what IMDS shows makes no EC2 call for an address inside the ENI's prefix", async () => {
    const s = await start();
    const enis = await readInstanceEnis(imdsFor(s, "i-1"), [MAC_B, MAC_C]);
    const result = plan({
      interfaces: [
        { name: "net1", mac: MAC_B, addresses: ["198.51.100.33", "198.51.100.47"] },
        { name: "net2", mac: MAC_C, addresses: ["198.51.100.150"] },
      ],
      enis,
      policy: { allowedCidrs: ["198.51.100.0/24"] },
    });
    expect(result.satisfied).toEqual(["198.51.100.33", "198.51.100.47"]);
    expect(result.actions).toEqual([
      { kind: "assign-ipv4", eniId: "eni-0c", addresses: ["198.51.100.150"], allowReassignment: true },
    ]);
    const foreign = plan({
      interfaces: [{ name: "net1", mac: "02:00:00:00:0a:01", addresses: ["198.51.100.34"] }],
      enis: await readInstanceEnis(imdsFor(s, "i-1"), ["02:00:00:00:0a:01"]),
      policy: { allowedCidrs: ["198.51.100.0/24"] },
    });
    expect(foreign.refusals.map((r) => [r.reason, r.detail.includes("eni-0b")])).toEqual([
      ["inside-prefix", true],
    ]);
  });
});

describe("runInit with a prefix on the node (exit 6 or no call)", () => {
  async function setUp(addresses: string[], mac: string) {
    const s = await startSimulator(parseWorld(twoNodeWorld()));
    sim = s;
    // The prefix is node 1's second Multus ENI's: 198.51.100.32/28, inside the allowed 198.51.100.32/27.
    await ec2ApiFor(s).assignIpv4Prefixes(ENI.node1A2, ["198.51.100.32/28"]);
    const before = s.calls().length;
    const deps = {
      imds: imdsFor(s, NODE1),
      ec2: ec2ApiFor(s),
      interfaces: new ScriptedInterfaces([{ name: "net1", mac, addresses }]),
      clock: systemClock,
      logger: silentLogger(),
    };
    const run = runInit(deps, {
      policy: { allowedCidrs: ALLOWED_CIDRS.split(",") },
      waitForAddressesMs: 0,
      confirm: { timeoutMs: 2000, intervalMs: 10 },
    });
    return { run, callsAfterSetUp: () => s.calls().slice(before) };
  }

  it("refuses an address inside another ENI's prefix: AddressNotAllowedError, exit 6, naming the ENI and the prefix, no call", async () => {
    const { run, callsAfterSetUp } = await setUp(["198.51.100.40"], MAC.node1A1);
    const error = await run.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AddressNotAllowedError);
    expect((error as AddressNotAllowedError).exitCode).toBe(6);
    const [refusal] = (error as AddressNotAllowedError).refusals;
    expect(refusal?.reason).toBe("inside-prefix");
    expect(refusal?.detail).toContain(`the prefix 198.51.100.32/28 that ENI ${ENI.node1A2}`);
    expect(callsAfterSetUp()).toEqual([]);
  });

  it("starts a pod whose addresses lie inside its own ENI's prefix with no EC2 call", async () => {
    const { run, callsAfterSetUp } = await setUp(["198.51.100.40", "198.51.100.41"], MAC.node1A2);
    const result = await run;
    expect(result.mutatingCalls).toBe(0);
    expect(callsAfterSetUp()).toEqual([]);
  });
});
