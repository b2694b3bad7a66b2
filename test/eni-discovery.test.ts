import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/clock.js";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { confirmHeld, readEnis } from "../src/eni/eni-discovery.js";
import { TimeoutError } from "../src/eni/errors/timeout-error.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import { parseWorld, startSimulator } from "../src/sim/index.js";
import { FakeClock } from "./helpers/fake-clock.js";

const world = {
  region: "us-east-1",
  vpc: { id: "vpc-1", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8::/56" },
  subnets: [
    { id: "subnet-a", cidr: "198.51.100.0/25", ipv6Cidr: "2001:db8::/64", availabilityZone: "us-east-1a" },
    { id: "subnet-b", cidr: "198.51.100.128/25", availabilityZone: "us-east-1a" },
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
        {
          id: "eni-0b",
          mac: "02:00:00:00:0b:01",
          deviceIndex: 1,
          subnet: "subnet-a",
          primaryIpv4: "198.51.100.20",
          secondaryIpv4s: ["198.51.100.21"],
          ipv6s: ["2001:db8::21"],
        },
        {
          id: "eni-0c",
          mac: "02:00:00:00:0c:01",
          deviceIndex: 2,
          subnet: "subnet-b",
          primaryIpv4: "198.51.100.140",
        },
      ],
    },
  ],
};

type Sim = Awaited<ReturnType<typeof startSimulator>>;

describe("ENI discovery from IMDS", () => {
  let sim: Sim;
  let imds: ImdsClient;

  beforeAll(async () => {
    sim = await startSimulator(parseWorld(world));
    imds = new ImdsClient({ endpoint: sim.imdsEndpoints["i-1"] ?? "" });
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
      const ec2 = createEc2Api({
        region: "us-east-1",
        endpoint: sim.ec2Endpoint,
        credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "not-a-secret" },
        logger: pino({ level: "silent" }),
        retry: { baseDelayMs: 5, maxDelayMs: 50 },
      });
      await ec2.assignPrivateIpv4("eni-0c", ["198.51.100.150"], true);
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
