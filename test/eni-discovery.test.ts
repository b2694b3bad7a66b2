import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { confirmHeld, readEnis } from "../src/eni/eni-discovery.js";
import { TimeoutError } from "../src/eni/errors/timeout-error.js";
import type { ImdsClient } from "../src/eni/imds-client.js";
import { systemClock } from "../src/eni/process/clock.js";
import { type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { ec2ApiFor, imdsFor, standardWorld } from "./helpers/sim-fixtures.js";

// i-1: eni-0a and eni-0b in subnet-a (198.51.100.0/25, 2001:db8::/64), eni-0c in subnet-b (198.51.100.128/25,
// no IPv6); MACs 02:00:00:00:0a:01, 0b:01, 0c:01 and primaries .10, .20, .140. See standardWorld.
const world = standardWorld({ eni0b: { secondaryIpv4s: ["198.51.100.21"], ipv6s: ["2001:db8::21"] } });

describe("ENI discovery from IMDS", () => {
  let sim: SimulatorHandle;
  let imds: ImdsClient;

  beforeAll(async () => {
    sim = await startSimulator(world);
    imds = imdsFor(sim, "i-1");
  });

  afterAll(async () => {
    await sim.close();
  });

  it("reads every ENI of the instance in IMDS order", async () => {
    const enis = await readEnis(imds);
    expect(enis).toEqual([
      {
        eniId: "eni-0a",
        mac: "02:00:00:00:0a:01",
        deviceIndex: 0,
        subnetId: "subnet-a",
        subnetIpv4Cidrs: ["198.51.100.0/25"],
        subnetIpv6Cidrs: ["2001:db8::/64"],
        primaryIpv4: "198.51.100.10",
        ipv4s: ["198.51.100.10"],
        ipv6s: [],
        ipv4Prefixes: [],
        ipv6Prefixes: [],
      },
      {
        eniId: "eni-0b",
        mac: "02:00:00:00:0b:01",
        deviceIndex: 1,
        subnetId: "subnet-a",
        subnetIpv4Cidrs: ["198.51.100.0/25"],
        subnetIpv6Cidrs: ["2001:db8::/64"],
        primaryIpv4: "198.51.100.20",
        ipv4s: ["198.51.100.20", "198.51.100.21"],
        ipv6s: ["2001:db8::21"],
        ipv4Prefixes: [],
        ipv6Prefixes: [],
      },
      {
        eniId: "eni-0c",
        mac: "02:00:00:00:0c:01",
        deviceIndex: 2,
        subnetId: "subnet-b",
        subnetIpv4Cidrs: ["198.51.100.128/25"],
        subnetIpv6Cidrs: [],
        primaryIpv4: "198.51.100.140",
        ipv4s: ["198.51.100.140"],
        ipv6s: [],
        ipv4Prefixes: [],
        ipv6Prefixes: [],
      },
    ]);
  });

  it("reads only the requested MACs, in any case, and leaves out MACs not attached", async () => {
    const enis = await readEnis(imds, ["02:00:00:00:0C:01", "02:00:00:00:ff:ff"]);
    expect(enis.map((e) => e.eniId)).toEqual(["eni-0c"]);
  });

  it("reads nothing per ENI when no MAC is requested", async () => {
    expect(await readEnis(imds, [])).toEqual([]);
  });

  it("confirms addresses that IMDS already shows at once", async () => {
    const clock = new FakeClock();
    await confirmHeld(
      imds,
      [
        { mac: "02:00:00:00:0b:01", address: "198.51.100.21", family: 4 },
        { mac: "02:00:00:00:0B:01", address: "2001:DB8::21", family: 6 },
      ],
      { timeoutMs: 1000, intervalMs: 100, clock },
    );
    expect(clock.sleeps).toEqual([]);
  });

  it("waits until IMDS reflects an assignment that lags (stale reads)", async () => {
    sim.setFaults({ staleReadsMs: 300 });
    try {
      await ec2ApiFor(sim).assignPrivateIpv4("eni-0c", ["198.51.100.150"], true);
      expect(await imds.localIpv4s("02:00:00:00:0c:01")).toEqual(["198.51.100.140"]);
      const started = performance.now();
      await confirmHeld(imds, [{ mac: "02:00:00:00:0c:01", address: "198.51.100.150", family: 4 }], {
        timeoutMs: 5000,
        intervalMs: 50,
        clock: systemClock,
      });
      expect(performance.now() - started).toBeGreaterThan(100);
      expect(await imds.localIpv4s("02:00:00:00:0c:01")).toEqual(["198.51.100.140", "198.51.100.150"]);
    } finally {
      sim.setFaults({ staleReadsMs: 0 });
    }
  });

  it("times out naming every missing address with its ENI, and a hint", async () => {
    const clock = new FakeClock();
    const err = await confirmHeld(
      imds,
      [
        { mac: "02:00:00:00:0b:01", address: "198.51.100.21", family: 4 },
        { mac: "02:00:00:00:0b:01", address: "198.51.100.99", family: 4 },
        { mac: "02:00:00:00:0a:01", address: "2001:db8::99", family: 6 },
      ],
      { timeoutMs: 1000, intervalMs: 300, clock },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).exitCode).toBe(8);
    expect((err as Error).message).toBe(
      "timed out after 1000 ms waiting for IMDS to show 198.51.100.99 on eni-0b (MAC 02:00:00:00:0b:01); " +
        "2001:db8::99 on eni-0a (MAC 02:00:00:00:0a:01). EC2 accepted the assignment but IMDS has not reflected " +
        "it yet. Check with aws ec2 describe-network-interfaces whether the addresses are on the ENI; if they " +
        "moved to another ENI, another node claimed them.",
    );
    expect(clock.sleeps).toEqual([300, 300, 300, 100]);
  });

  it("stops waiting when its signal is aborted", async () => {
    const controller = new AbortController();
    const reason = new Error("shutting down");
    controller.abort(reason);
    await expect(
      confirmHeld(imds, [{ mac: "02:00:00:00:0b:01", address: "198.51.100.99", family: 4 }], {
        timeoutMs: 1000,
        intervalMs: 100,
        clock: new FakeClock(),
        signal: controller.signal,
      }),
    ).rejects.toBe(reason);
  });
});
