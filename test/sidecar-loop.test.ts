/**
 * The sidecar in-process: real IMDS client and EC2 adapter against the simulator on 127.0.0.1, with pod
 * interfaces the test controls (a small InterfaceSource). Every test checks the simulator's state.
 */
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { Ec2Api } from "../src/eni/ec2-api.js";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import type { InterfaceSource } from "../src/eni/interface-source.js";
import { systemClock } from "../src/eni/process/clock.js";
import type { PodInterface } from "../src/eni/types.js";
import { SidecarMetrics } from "../src/sidecar/metrics.js";
import { Sidecar, type SidecarOptions } from "../src/sidecar/sidecar.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { ENI, floatingPairWorld, MAC, NODE1, NODE2 } from "./helpers/worlds.js";

/** The world is floatingPairWorld: two nodes, one Multus ENI each, in one subnet. */
const ALLOWED_CIDRS = ["198.51.100.64/26", "2001:db8:100:1::100/120"];

const FLOAT4 = "198.51.100.80";
const FLOAT6 = "2001:db8:100:1::180";

/** The pod's interfaces, as the test sets them. */
class TestInterfaces implements InterfaceSource {
  #addresses: string[];
  constructor(
    readonly mac: string,
    addresses: string[],
  ) {
    this.#addresses = addresses;
  }
  async read(): Promise<PodInterface[]> {
    return [{ name: "net1", mac: this.mac, addresses: [...this.#addresses] }];
  }
  add(address: string): void {
    this.#addresses = [...this.#addresses, address];
  }
  remove(address: string): void {
    this.#addresses = this.#addresses.filter((a) => a !== address);
  }
}

interface Pod {
  readonly sidecar: Sidecar;
  readonly interfaces: TestInterfaces;
  readonly metrics: SidecarMetrics;
  readonly logs: Record<string, unknown>[];
  running: Promise<void>;
  startupError: unknown;
}

let sim: SimulatorHandle | undefined;
const pods: Pod[] = [];

afterEach(async () => {
  for (const pod of pods.splice(0)) await pod.sidecar.shutdown({ graceMs: 5000, releaseOnExit: false });
  await sim?.close();
  sim = undefined;
});

async function simulator(options: Parameters<typeof floatingPairWorld>[0] = {}): Promise<SimulatorHandle> {
  sim = await startSimulator(parseWorld(floatingPairWorld(options)));
  return sim;
}

function ec2For(s: SimulatorHandle, observer?: SidecarMetrics): Ec2Api {
  return createEc2Api({
    region: "us-east-1",
    endpoint: s.ec2Endpoint,
    credentials: { accessKeyId: "AKIDSIMULATOR", secretAccessKey: "simulator" },
    logger: pino({ level: "silent" }),
    retry: { maxAttempts: 8, baseDelayMs: 10, maxDelayMs: 50 },
    ...(observer === undefined ? {} : { observer: observer.ec2Observer }),
  });
}

async function startPod(
  s: SimulatorHandle,
  instanceId: string,
  mac: string,
  addresses: string[],
  options: Partial<SidecarOptions> & { wait?: boolean } = {},
): Promise<Pod> {
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => logs.push(JSON.parse(line)) });
  const metrics = new SidecarMetrics();
  const interfaces = new TestInterfaces(mac, addresses);
  const endpoint = s.imdsEndpoints[instanceId];
  if (endpoint === undefined) throw new Error(`no IMDS for ${instanceId}`);
  const sidecar = new Sidecar({
    deps: {
      imds: new ImdsClient({ endpoint, requestTimeoutMs: 2000, clock: systemClock }),
      ec2: ec2For(s, metrics),
      interfaces,
      clock: systemClock,
      logger,
    },
    metrics,
    policy: { allowedCidrs: ALLOWED_CIDRS },
    waitForAddressesMs: 5000,
    confirm: { timeoutMs: 5000, intervalMs: 10 },
    releaseOnRemove: true,
    pollIntervalMs: 10,
    resyncIntervalMs: 60_000,
    driftCheckIntervalMs: 100,
    http: { host: "127.0.0.1", port: 0 },
    repairBackoff: { baseMs: 300, maxMs: 1200 },
    failureBackoff: { baseMs: 50, maxMs: 200 },
    preloadEc2: false,
    ...options,
  });
  await sidecar.start();
  const pod: Pod = {
    sidecar,
    interfaces,
    metrics,
    logs,
    running: Promise.resolve(),
    startupError: undefined,
  };
  pod.running = sidecar.run().catch((error: unknown) => {
    pod.startupError = error;
  });
  pods.push(pod);
  if (options.wait ?? true) {
    await eventually(async () => (await readyz(pod)).status === 200, "pod ready").catch(async (e) => {
      console.log(JSON.stringify(logs, null, 1).slice(0, 5000), (await readyz(pod)).body);
      throw e;
    });
  }
  return pod;
}

async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function readyz(pod: Pod): Promise<{ status: number; body: string }> {
  const http = pod.sidecar.http;
  if (http === undefined) throw new Error("no HTTP server");
  const response = await fetch(`http://127.0.0.1:${http.port}/readyz`);
  return { status: response.status, body: await response.text() };
}

function eni(s: SimulatorHandle, eniId: string): { ipv4s: string[]; ipv6s: string[] } {
  const found = s.state().enis.find((e) => e.eniId === eniId);
  if (found === undefined) throw new Error(`no ${eniId}`);
  return found;
}

function holds(s: SimulatorHandle, eniId: string, address: string): boolean {
  const e = eni(s, eniId);
  return e.ipv4s.includes(address) || e.ipv6s.includes(address);
}

function logged(pod: Pod, pattern: RegExp): Record<string, unknown>[] {
  return pod.logs.filter((l) => pattern.test(String(l.msg)));
}

async function metric(pod: Pod, line: string): Promise<number> {
  const text = await pod.metrics.text();
  const found = text.split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? Number.NaN : Number(found.slice(line.length + 1));
}

const assignsOf = (s: SimulatorHandle, address: string) =>
  s
    .calls()
    .filter((c) => c.action === "AssignPrivateIpAddresses" && Object.values(c.params).includes(address));

describe("the sidecar against the simulator", () => {
  it("moves a floating IPv4 from pod A (node 1) to pod B (node 2) and back (failback)", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT4]);
    const b = await startPod(s, NODE2, MAC.node2A1, ["198.51.100.90"]);
    expect(holds(s, ENI.node1A1, FLOAT4)).toBe(true);

    a.interfaces.remove(FLOAT4);
    b.interfaces.add(FLOAT4);
    await eventually(
      () => holds(s, ENI.node2A1, FLOAT4) && !holds(s, ENI.node1A1, FLOAT4),
      "moved to node 2",
    );
    await eventually(
      async () => (await readyz(b)).body.includes(`${FLOAT4} on net1 held by ${ENI.node2A1}`),
      "B ready",
    );

    b.interfaces.remove(FLOAT4);
    a.interfaces.add(FLOAT4);
    await eventually(
      () => holds(s, ENI.node1A1, FLOAT4) && !holds(s, ENI.node2A1, FLOAT4),
      "failback to node 1",
    );
    await eventually(async () => (await readyz(a)).status === 200, "A ready after failback");
    expect(eni(s, ENI.node1A1).ipv4s).toEqual(["198.51.100.11", "198.51.100.70", FLOAT4]);
    expect(eni(s, ENI.node2A1).ipv4s).toEqual(["198.51.100.21", "198.51.100.90"]);
    expect(await metric(b, "multus_ipmgr_change_to_assigned_seconds_count")).toBeGreaterThanOrEqual(1);
    expect(await metric(a, "multus_ipmgr_conflicts_total")).toBe(0);
  });

  it("in prefix mode holds the pod's own address with no call, and refuses a floating address added inside the node's slice", async () => {
    // Node 1's Multus ENI holds 198.51.100.64/28, the node's whereabouts slice; .70 is the pod's IPAM address.
    const s = await simulator({ node1A1Ipv4Prefixes: ["198.51.100.64/28"] });
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"]);
    await eventually(
      async () => (await readyz(a)).body.includes(`198.51.100.70 on net1 held by ${ENI.node1A1}`),
      "held by the prefix",
    );
    expect(s.calls()).toEqual([]);

    a.interfaces.add("198.51.100.72");
    const sentence =
      `floating address 198.51.100.72 on net1 lies inside the prefix 198.51.100.64/28 that its own ENI ${ENI.node1A1} ` +
      `(MAC ${MAC.node1A1}) holds: that prefix is this node's whereabouts slice (node_slice_size)`;
    await eventually(
      async () => (await readyz(a)).body.includes(`refused: ${sentence}`),
      "refused on /readyz",
    );
    expect((await readyz(a)).status).toBe(503);
    await eventually(() => logged(a, /^floating address 198\.51\.100\.72 /).length > 0, "logged");
    const errors = logged(a, /^floating address 198\.51\.100\.72 /);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ level: 50, address: "198.51.100.72", reason: "floating-in-prefix" });
    expect(String(errors[0]?.msg)).toContain(
      "give floating addresses a range without node_slice_size, or take them out of the sliced range",
    );
    // Refused before EC2: no call at all, and the ENI holds nothing but its primary and the prefix.
    expect(s.calls()).toEqual([]);
    expect(eni(s, ENI.node1A1).ipv4s).toEqual(["198.51.100.11"]);

    // Taken off the interface: ready again, still with no call.
    a.interfaces.remove("198.51.100.72");
    await eventually(async () => (await readyz(a)).status === 200, "ready again");
    expect(s.calls()).toEqual([]);
  });

  describe("times a change that a drift check's read saw before the watcher's own read", () => {
    // The watcher polls once an hour here, so that the drift check (every 100 ms) finds the new address. Its
    // read is the watcher's too: the change is reported from that read, and its reconcile is timed from it.
    async function assignedByDriftCheck(): Promise<{ pod: Pod; seenAt: number; assignedBy: number }> {
      const s = await simulator();
      const pod = await startPod(s, NODE2, MAC.node2A1, ["198.51.100.90"], { pollIntervalMs: 3_600_000 });
      const acceptedBefore = logged(pod, /^EC2 accepted the changes$/).length;
      const seenAt = systemClock.now();
      pod.interfaces.add(FLOAT4);
      await eventually(() => holds(s, ENI.node2A1, FLOAT4), "assigned by the drift check's reconcile");
      // The simulator holds the address before the sidecar has EC2's answer: wait for the step to take its
      // moment of acceptance (it logs right after), so that `assignedBy` is not earlier than that moment.
      await eventually(
        () => logged(pod, /^EC2 accepted the changes$/).length > acceptedBefore,
        "the step's acceptance",
      );
      return { pod, seenAt, assignedBy: systemClock.now() };
    }

    const NOOPS = 'multus_ipmgr_reconciles_total{outcome="noop"}';
    const TIMED = "multus_ipmgr_change_to_assigned_seconds_count";

    /** Reports a change seen at `seenAt`, and waits for the reconcile it triggers (nothing left to do). */
    async function report(pod: Pod, seenAt: number): Promise<void> {
      const noops = await metric(pod, NOOPS);
      pod.sidecar.loop.notifyChange(seenAt);
      await eventually(async () => (await metric(pod, NOOPS)) > noops, "the reported change's reconcile");
    }

    it("timed once, from the drift check's read, and not again when the same change is reported later", async () => {
      const { pod, seenAt, assignedBy } = await assignedByDriftCheck();
      await eventually(async () => (await metric(pod, TIMED)) === 1, "timed");
      const seconds = await metric(pod, "multus_ipmgr_change_to_assigned_seconds_sum");
      expect(seconds).toBeGreaterThan(0);
      expect(seconds).toBeLessThanOrEqual((assignedBy - seenAt) / 1000);
      expect(pod.sidecar.watcher.snapshot()[0]?.addresses).toContain(FLOAT4);
      await report(pod, seenAt);
      expect(await metric(pod, TIMED)).toBe(1);
    });

    it("a change reported later with a later moment (another change) is not timed by that reconcile's calls", async () => {
      const { pod } = await assignedByDriftCheck();
      await eventually(async () => (await metric(pod, TIMED)) === 1, "timed");
      await report(pod, systemClock.now());
      expect(await metric(pod, TIMED)).toBe(1);
    });
  });

  it("moves a floating IPv6 address by unassigning it from the other node first", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, [FLOAT6]);
    const b = await startPod(s, NODE2, MAC.node2A1, ["198.51.100.90"]);
    expect(eni(s, ENI.node1A1).ipv6s).toEqual([FLOAT6]);
    b.interfaces.add(FLOAT6);
    a.interfaces.remove(FLOAT6);
    await eventually(() => holds(s, ENI.node2A1, FLOAT6) && !holds(s, ENI.node1A1, FLOAT6), "IPv6 moved");
    b.interfaces.remove(FLOAT6);
    a.interfaces.add(FLOAT6);
    await eventually(() => holds(s, ENI.node1A1, FLOAT6) && !holds(s, ENI.node2A1, FLOAT6), "IPv6 back");
  });

  it("releases a removed address from our ENI when release is on", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT4]);
    a.interfaces.remove(FLOAT4);
    await eventually(() => !holds(s, ENI.node1A1, FLOAT4), "released");
    expect(eni(s, ENI.node1A1).ipv4s).toEqual(["198.51.100.11", "198.51.100.70"]);
  });

  it("goes on with the pod's IPv6 address when EC2 refuses its IPv4 address, and keeps retrying the refused one", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"]);
    s.setFaults({
      failNext: [
        { action: "AssignPrivateIpAddresses", code: "InvalidParameterValue", status: 400, count: 1_000 },
      ],
    });
    a.interfaces.add(FLOAT4);
    a.interfaces.add(FLOAT6);
    await eventually(() => holds(s, ENI.node1A1, FLOAT6), "the IPv6 address assigned", 5_000);
    await eventually(
      async () => (await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}')) >= 2,
      "the refused IPv4 address tried again",
    );
    expect(holds(s, ENI.node1A1, FLOAT4)).toBe(false);
    expect((await readyz(a)).status).toBe(503);
  });

  it("asks EC2 once per resync about another instance's primary address, shows the refusal on /readyz, and goes on", async () => {
    // 198.51.100.21 is node 2's ENI's primary: only EC2 can tell, so the planner lets it through.
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"], {
      policy: { allowedCidrs: ["198.51.100.0/24", "2001:db8:100:1::100/120"] },
      resyncIntervalMs: 1_500,
    });
    a.interfaces.add("198.51.100.21");
    a.interfaces.add(FLOAT6);
    await eventually(() => holds(s, ENI.node1A1, FLOAT6), "the IPv6 address assigned");
    await eventually(
      async () => (await readyz(a)).body.includes(`primary private IPv4 address of ENI ${ENI.node2A1}`),
      "the refusal on /readyz",
    );
    const firstAsked = assignsOf(s, "198.51.100.21").length;
    expect(firstAsked).toBe(1);
    // Within the resync interval the planner refuses it up front: no call, no failed step.
    await new Promise((r) => setTimeout(r, 500));
    expect(assignsOf(s, "198.51.100.21")).toHaveLength(1);
    expect(await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}')).toBe(1);
    expect((await readyz(a)).status).toBe(503);
    expect(logged(a, /is the primary private IPv4 address of ENI/)).toHaveLength(1);
    // Once it has passed, EC2 is asked again; the refusal stays shown and logged once meanwhile.
    await eventually(
      () => assignsOf(s, "198.51.100.21").length === 2,
      "asked again after the resync interval",
    );
    await eventually(
      async () => (await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}')) === 2,
      "the second refusal counted",
    );
    expect((await readyz(a)).body).toContain(`primary private IPv4 address of ENI ${ENI.node2A1}`);
    expect(logged(a, /is the primary private IPv4 address of ENI/)).toHaveLength(1);
    expect(logged(a, /^no address refused any more$/)).toHaveLength(0);
    expect(eni(s, ENI.node2A1).ipv4s).toEqual(["198.51.100.21"]);
    // Gone from the interface: forgotten, and nothing is refused any more.
    a.interfaces.remove("198.51.100.21");
    await eventually(async () => (await readyz(a)).status === 200, "ready without it");
    expect(logged(a, /^no address refused any more$/)).toHaveLength(1);
  });

  it("asks EC2 about an address on a full ENI once, shows it on /readyz, and again as soon as an address leaves the ENI", async () => {
    // m5.large: 10 IPv4 addresses per ENI, the primary counted. Node 1's ENI holds its primary and 8 addresses
    // outside the sidecar's CIDRs (another workload's); the pod's first address fills it.
    const others = Array.from({ length: 8 }, (_, i) => `198.51.100.${12 + i}`);
    const s = await simulator({ node1A1SecondaryIpv4s: others });
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"]);
    expect(eni(s, ENI.node1A1).ipv4s).toHaveLength(10);
    a.interfaces.add("198.51.100.71");
    const full = `ENI ${ENI.node1A1} holds as many private IPv4 addresses as its instance type allows`;
    await eventually(
      async () => (await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}')) >= 1,
      "EC2's refusal",
    );
    // Refused up front while the ENI stays full: no call, one failed step, logged once.
    await new Promise((r) => setTimeout(r, 600));
    expect(assignsOf(s, "198.51.100.71")).toHaveLength(1);
    expect(await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}')).toBe(1);
    const ready = await readyz(a);
    expect(ready.status).toBe(503);
    expect(ready.body).toContain(full);
    expect(logged(a, /holds as many private IPv4 addresses as its instance type allows/)).toHaveLength(1);
    // The first address leaves the pod and is released: the ENI has room, and EC2 is asked again at once,
    // long before the resync interval (60 s here).
    a.interfaces.remove("198.51.100.70");
    await eventually(() => holds(s, ENI.node1A1, "198.51.100.71"), "assigned once the ENI has room");
    expect(holds(s, ENI.node1A1, "198.51.100.70")).toBe(false);
    expect(assignsOf(s, "198.51.100.71")).toHaveLength(2);
    await eventually(async () => (await readyz(a)).status === 200, "ready");
    expect(eni(s, ENI.node1A1).ipv4s).toEqual(expect.arrayContaining(others));
  });

  it("asks EC2 again about an address on a full ENI right after its own release there, not at the next drift check", async () => {
    const others = Array.from({ length: 8 }, (_, i) => `198.51.100.${12 + i}`);
    const s = await simulator({ node1A1SecondaryIpv4s: others });
    // Drift checks a minute apart: only the release itself can tell the loop that the ENI has room.
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"], { driftCheckIntervalMs: 60_000 });
    a.interfaces.add("198.51.100.71");
    await eventually(() => assignsOf(s, "198.51.100.71").length === 1, "EC2's refusal");
    await eventually(
      async () => (await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}')) >= 1,
      "the failed step",
    );
    a.interfaces.remove("198.51.100.70");
    await eventually(() => holds(s, ENI.node1A1, "198.51.100.71"), "assigned after the release");
    expect(holds(s, ENI.node1A1, "198.51.100.70")).toBe(false);
    expect(assignsOf(s, "198.51.100.71")).toHaveLength(2);
  });

  it("releases an address that a drift check read and assigned, and that left before the watcher's next read", async () => {
    const s = await simulator();
    // The watcher's own reads a minute apart: only the drift checks (every 100 ms) see the address come and go.
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"], { pollIntervalMs: 60_000 });
    a.interfaces.add(FLOAT4);
    await eventually(() => holds(s, ENI.node1A1, FLOAT4), "assigned after a drift check saw it");
    a.interfaces.remove(FLOAT4);
    await eventually(() => !holds(s, ENI.node1A1, FLOAT4), "released after a drift check saw it gone");
    expect(eni(s, ENI.node1A1).ipv4s).toEqual(["198.51.100.11", "198.51.100.70"]);
  });

  describe("releases under lagging reads", () => {
    const ERRORS = 'multus_ipmgr_reconciles_total{outcome="error"}';
    const refusedRelease = /^EC2 refused to release the address from our ENI/;
    const unassignsOf = (s: SimulatorHandle, eniId: string, address: string) =>
      s
        .calls()
        .filter(
          (c) =>
            c.action === "UnassignPrivateIpAddresses" &&
            c.params.NetworkInterfaceId === eniId &&
            Object.values(c.params).includes(address),
        );

    /** Turns on stale reads once the world has been still for that long, so that reads only lag, never go back. */
    async function lagReads(s: SimulatorHandle, ms: number): Promise<void> {
      await new Promise((r) => setTimeout(r, ms + 100));
      s.setFaults({ staleReadsMs: ms });
    }

    it("an old holder whose reads still show the moved address lets go when EC2 refuses the release: no failed reconcile", async () => {
      const s = await simulator();
      const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT4], {
        releaseRetryBackoff: { baseMs: 200, maxMs: 400 },
      });
      const b = await startPod(s, NODE2, MAC.node2A1, ["198.51.100.90"]);
      // A lag well past the release settle time (250 ms), so that A's first release comes while it lags.
      await lagReads(s, 2000);
      b.interfaces.add(FLOAT4);
      a.interfaces.remove(FLOAT4);
      await eventually(() => holds(s, ENI.node2A1, FLOAT4) && !holds(s, ENI.node1A1, FLOAT4), "moved");
      await eventually(() => logged(a, refusedRelease).length > 0, "A's release refused");
      // Tried again until A's reads show its ENI without the address; then forgotten.
      await eventually(() => a.sidecar.watcher.released().size === 0, "A's release settled", 5_000);
      expect(await metric(a, ERRORS)).toBe(0);
      expect(unassignsOf(s, ENI.node1A1, FLOAT4).every((c) => c.outcome === "InvalidParameterValue")).toBe(
        true,
      );
      expect(holds(s, ENI.node2A1, FLOAT4)).toBe(true);
      expect(await metric(b, "multus_ipmgr_conflicts_total")).toBe(0);
    });

    it("releases an address EC2 accepted but IMDS did not show before it left (IMDS lagging past the confirm timeout)", async () => {
      const s = await simulator();
      const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"], {
        confirm: { timeoutMs: 300, intervalMs: 10 },
      });
      await lagReads(s, 1500);
      a.interfaces.add(FLOAT4);
      await eventually(() => assignsOf(s, FLOAT4).some((c) => c.outcome === "ok"), "assigned");
      a.interfaces.remove(FLOAT4);
      await eventually(() => !holds(s, ENI.node1A1, FLOAT4), "released", 5_000);
      expect(unassignsOf(s, ENI.node1A1, FLOAT4).map((c) => c.outcome)).toEqual(["ok"]);
      expect(eni(s, ENI.node1A1).ipv4s).toEqual(["198.51.100.11", "198.51.100.70"]);
    });

    it("tries a release EC2 keeps refusing again with backoff, warns once, and releases when EC2 accepts", async () => {
      const s = await simulator();
      const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT4], {
        releaseRetryBackoff: { baseMs: 50, maxMs: 100 },
      });
      s.setFaults({
        failNext: [
          { action: "UnassignPrivateIpAddresses", code: "InvalidParameterValue", status: 400, count: 4 },
        ],
      });
      a.interfaces.remove(FLOAT4);
      await eventually(() => !holds(s, ENI.node1A1, FLOAT4), "released");
      expect(unassignsOf(s, ENI.node1A1, FLOAT4).map((c) => c.outcome)).toEqual([
        "InvalidParameterValue",
        "InvalidParameterValue",
        "InvalidParameterValue",
        "InvalidParameterValue",
        "ok",
      ]);
      expect(logged(a, refusedRelease)).toHaveLength(4);
      expect(logged(a, /^EC2 refused 3 times in a row to release/)).toMatchObject([
        { level: 40, address: FLOAT4 },
      ]);
      expect(await metric(a, ERRORS)).toBe(0);
    });
  });

  it("keeps a removed address on our ENI when release is off", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT4], { releaseOnRemove: false });
    s.clearCalls();
    a.interfaces.remove(FLOAT4);
    await eventually(() => a.sidecar.watcher.snapshot()[0]?.addresses.length === 1, "removal seen");
    await eventually(() => a.sidecar.watcher.released().size === 0, "removal acted on");
    expect(holds(s, ENI.node1A1, FLOAT4)).toBe(true);
    expect(s.calls().filter((c) => c.action.startsWith("Unassign"))).toEqual([]);
  });

  it("repairs drift (our address unassigned behind our back), counts it and logs it once", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT4]);
    await ec2For(s).unassignPrivateIpv4(ENI.node1A1, [FLOAT4]);
    await eventually(() => holds(s, ENI.node1A1, FLOAT4), "repaired");
    await eventually(
      async () => (await metric(a, "multus_ipmgr_drift_repairs_total")) === 1,
      "repair counted",
    );
    expect(logged(a, /^drift: /)).toHaveLength(1);
    expect(await metric(a, "multus_ipmgr_conflicts_total")).toBe(0);
  });

  it("settles a conflict between two sidecars claiming one address, never faster than the backoff, and reports it once", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, [FLOAT4]);
    const b = await startPod(s, NODE2, MAC.node2A1, [FLOAT4], { wait: false });
    await eventually(
      async () => (await metric(a, "multus_ipmgr_drift_repairs_total")) >= 3,
      "A fought back three times",
    );

    // Each sidecar's own assigns are spaced by at least its nominal backoff once the episode began.
    for (const [pod, eniId] of [
      [a, ENI.node1A1],
      [b, ENI.node2A1],
    ] as const) {
      const times = assignsOf(s, FLOAT4)
        .filter((c) => c.params.NetworkInterfaceId === eniId)
        .map((c) => Date.parse(c.time));
      const gaps = times.slice(2).map((t, i) => t - (times[i + 1] ?? 0));
      for (const [i, gap] of gaps.entries()) expect(gap).toBeGreaterThanOrEqual(Math.min(1200, 300 * 2 ** i));
      expect(logged(pod, /^conflict: /).length).toBeLessThanOrEqual(1);
    }
    const conflictLine = logged(a, /^conflict: /);
    expect(conflictLine).toHaveLength(1);
    expect(conflictLine[0]).toMatchObject({
      address: FLOAT4,
      ourEniId: ENI.node1A1,
      otherEniId: ENI.node2A1,
    });
    expect(await metric(a, "multus_ipmgr_conflicts_total")).toBe(1);
    expect((await readyz(a)).status === 200 || (await readyz(b)).status === 200).toBe(true);

    // The operator fixes the split brain: B lets go; A keeps the address.
    b.interfaces.remove(FLOAT4);
    await eventually(
      async () => holds(s, ENI.node1A1, FLOAT4) && (await readyz(a)).status === 200,
      "A holds it",
    );
    expect(holds(s, ENI.node2A1, FLOAT4)).toBe(false);
  });

  it("converges a failover through throttling", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, [FLOAT4]);
    const b = await startPod(s, NODE2, MAC.node2A1, ["198.51.100.90"]);
    s.setFaults({
      failNext: [{ action: "AssignPrivateIpAddresses", code: "RequestLimitExceeded", status: 503, count: 3 }],
    });
    a.interfaces.remove(FLOAT4);
    b.interfaces.add(FLOAT4);
    await eventually(() => holds(s, ENI.node2A1, FLOAT4), "moved despite throttling");
    expect(assignsOf(s, FLOAT4).map((c) => c.outcome)).toEqual([
      "ok",
      "RequestLimitExceeded",
      "RequestLimitExceeded",
      "RequestLimitExceeded",
      "ok",
    ]);
  });

  it("retries a failing reconcile with backoff, counts every failure and logs it once", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"]);
    s.setFaults({ deny: ["AssignPrivateIpAddresses"] });
    a.interfaces.add(FLOAT4);
    await eventually(
      async () => (await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}')) >= 3,
      "three failures",
    );
    expect(logged(a, /^reconcile failed/)).toHaveLength(1);
    expect((await readyz(a)).body).toContain(`${FLOAT4} on net1: not held by ${ENI.node1A1} yet`);
    s.setFaults({ deny: [] });
    await eventually(() => holds(s, ENI.node1A1, FLOAT4), "assigned once allowed");
    await eventually(() => logged(a, /^reconcile works again/).length === 1, "recovery logged");
  });

  it("says a denied release recovered only once EC2 accepts it, and logs the denial once with its count", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT4], {
      releaseRetryBackoff: { baseMs: 100, maxMs: 200 },
    });
    s.setFaults({ deny: ["UnassignPrivateIpAddresses"] });
    a.interfaces.remove(FLOAT4);
    // Between the release's tries, steps that do not try it work: none of them is a recovery.
    await eventually(
      async () => (await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}')) >= 4,
      "four denied releases",
    );
    expect(holds(s, ENI.node1A1, FLOAT4)).toBe(true);
    expect(logged(a, /^reconcile works again/)).toHaveLength(0);
    const failed = logged(a, /^reconcile failed/);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ level: 40, failures: 1 });
    s.setFaults({ deny: [] });
    await eventually(() => !holds(s, ENI.node1A1, FLOAT4), "released once allowed");
    await eventually(() => logged(a, /^reconcile works again/).length === 1, "recovery logged");
    const denials = await metric(a, 'multus_ipmgr_reconciles_total{outcome="error"}');
    expect(logged(a, /^reconcile works again/)[0]).toMatchObject({ failures: denials });
    expect(logged(a, /^reconcile failed/)).toHaveLength(1);
  });

  it("reports not ready until startup has assigned the addresses, then ready", async () => {
    const s = await simulator();
    s.setFaults({ ec2LatencyMs: 400 });
    const a = await startPod(s, NODE1, MAC.node1A1, [FLOAT4], { wait: false });
    const before = await readyz(a);
    expect(before.status).toBe(503);
    await eventually(async () => (await readyz(a)).status === 200, "ready");
    expect(holds(s, ENI.node1A1, FLOAT4)).toBe(true);
  });

  it("finishes the EC2 call in progress on shutdown, then stops", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"]);
    s.setFaults({ ec2LatencyMs: 500 });
    a.interfaces.add(FLOAT4);
    await eventually(() => logged(a, /^applying changes/).length > 0, "call started");
    pods.splice(pods.indexOf(a), 1);
    expect(await a.sidecar.shutdown({ graceMs: 5000, releaseOnExit: false })).toBe("ok");
    expect(holds(s, ENI.node1A1, FLOAT4)).toBe(true);
    await a.running;
  });

  it("gives up waiting after the grace period", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"]);
    s.setFaults({ ec2LatencyMs: 2000 });
    a.interfaces.add(FLOAT4);
    await eventually(() => logged(a, /^applying changes/).length > 0, "call started");
    pods.splice(pods.indexOf(a), 1);
    expect(await a.sidecar.shutdown({ graceMs: 50, releaseOnExit: false })).toBe("grace-expired");
  });

  it("releases our addresses on exit when asked", async () => {
    const s = await simulator({ node2A1SecondaryIpv4s: ["198.51.100.99"] });
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT4]);
    pods.splice(pods.indexOf(a), 1);
    expect(await a.sidecar.shutdown({ graceMs: 5000, releaseOnExit: true })).toBe("ok");
    expect(eni(s, ENI.node1A1).ipv4s).toEqual(["198.51.100.11"]);
    expect(eni(s, ENI.node2A1).ipv4s).toEqual(["198.51.100.21", "198.51.100.99"]);
  });

  it("on exit, releases what it may when EC2 denies one family (IPv4, released first), then reports the denial", async () => {
    const s = await simulator();
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT6]);
    pods.splice(pods.indexOf(a), 1);
    s.setFaults({ deny: ["UnassignPrivateIpAddresses"] });
    const error = await a.sidecar.shutdown({ graceMs: 5000, releaseOnExit: true }).catch((e: unknown) => e);
    expect(error).toMatchObject({ operation: "UnassignPrivateIpAddresses", kind: "permission", exitCode: 4 });
    expect(eni(s, ENI.node1A1).ipv4s).toEqual(["198.51.100.11", "198.51.100.70"]);
    expect(eni(s, ENI.node1A1).ipv6s).toEqual([]);
    expect(logged(a, /^released our addresses$/)).toMatchObject([{ released: [FLOAT6] }]);
  });
});
