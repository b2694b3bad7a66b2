import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { Ec2Api } from "../src/eni/ec2-api.js";
import { addressOfValue, cidrBounds } from "../src/eni/ip.js";
import { type Clock, systemClock } from "../src/eni/process/clock.js";
import { createLogger, type Logger } from "../src/eni/process/logger.js";
import type { SubnetCidrReservation } from "../src/eni/types.js";
import { createKubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-client.js";
import {
  reservationGap,
  wantedReservations,
} from "../src/ipam-whereabouts-bridge/reservations/reservation-cover.js";
import {
  RESERVATION_TAG,
  ReservationKeeper,
} from "../src/ipam-whereabouts-bridge/reservations/reservation-keeper.js";
import {
  rangesOfNad,
  type WhereaboutsRange,
} from "../src/ipam-whereabouts-bridge/state/whereabouts-ranges.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { tempKubeconfig } from "./helpers/kube-proxy.js";
import { kube, kubeEndpointOf, kubeWorld, MAC_A, NODE_A, startKubeSim } from "./helpers/kube-worlds.js";
import { captureLogger } from "./helpers/loggers.js";
import { ec2ApiFor } from "./helpers/sim-fixtures.js";

function ranges(ipam: unknown): WhereaboutsRange[] {
  return rangesOfNad({
    namespace: "cnf",
    name: "n",
    config: JSON.stringify({ ipam: { type: "whereabouts", ...(ipam as object) } }),
  }).ranges;
}

const SUBNET = { subnetId: "subnet-0multus", cidrs: ["198.51.100.128/25", "2001:db8:100:2::/64"] };

describe("reservation cover", () => {
  it("covers each range inside each subnet with the fewest blocks, without excluded and AWS-reserved addresses", () => {
    expect(wantedReservations(ranges({ range: "198.51.100.192/27" }), [SUBNET]).map((w) => w.cidr)).toEqual([
      "198.51.100.192/27",
    ]);
    // The last address of the subnet (198.51.100.255) is AWS's; 198.51.100.200/30 is excluded.
    expect(
      wantedReservations(ranges({ range: "198.51.100.192/26", exclude: ["198.51.100.200/30"] }), [
        SUBNET,
      ]).map((w) => w.cidr),
    ).toEqual([
      "198.51.100.192/29",
      "198.51.100.204/30",
      "198.51.100.208/28",
      "198.51.100.224/28",
      "198.51.100.240/29",
      "198.51.100.248/30",
      "198.51.100.252/31",
      "198.51.100.254/32",
    ]);
    expect(wantedReservations(ranges({ range: "203.0.113.0/24" }), [SUBNET])).toEqual([]);
    expect(
      wantedReservations(ranges({ range: "2001:db8:100:2::100/120" }), [SUBNET]).map((w) => w.cidr),
    ).toEqual(["2001:db8:100:2::100/120"]);
  });

  it("covers the range whereabouts allocates from: the masked block of a range with host bits, from range_start on", () => {
    const cover = (ipam: unknown) => wantedReservations(ranges(ipam), [SUBNET]).map((w) => [w.cidr, w.range]);
    expect(cover({ range: "198.51.100.210/27" })).toEqual([["198.51.100.192/27", "198.51.100.192/27"]]);
    expect(cover({ range: "198.51.100.192/27", range_start: "198.51.100.200" })).toEqual([
      ["198.51.100.200/29", "198.51.100.200-198.51.100.222"],
      ["198.51.100.208/28", "198.51.100.200-198.51.100.222"],
    ]);
    expect(cover({ range: "198.51.100.192/27", exclude: ["198.51.100.193"] })).toEqual([
      ["198.51.100.192/32", "198.51.100.192/27"],
      ["198.51.100.194/31", "198.51.100.192/27"],
      ["198.51.100.196/30", "198.51.100.192/27"],
      ["198.51.100.200/29", "198.51.100.192/27"],
      ["198.51.100.208/28", "198.51.100.192/27"],
    ]);
  });

  it("finds what explicit reservations leave uncovered, and reports a prefix reservation in the way", () => {
    const wanted = wantedReservations(ranges({ range: "198.51.100.192/27" }), [SUBNET]);
    const explicit = (cidr: string, type: "explicit" | "prefix" = "explicit"): SubnetCidrReservation => ({
      reservationId: `scr-${cidr}`,
      subnetId: "subnet-0multus",
      cidr,
      type,
      description: undefined,
      tags: {},
    });
    expect(reservationGap(wanted, [explicit("198.51.100.192/27")]).missing).toEqual([]);
    expect(reservationGap(wanted, [explicit("198.51.100.192/28")]).missing.map((m) => m.cidr)).toEqual([
      "198.51.100.208/28",
    ]);
    const prefix = reservationGap(wanted, [explicit("198.51.100.192/28", "prefix")]);
    expect(prefix.missing.map((m) => m.cidr)).toEqual(["198.51.100.192/27"]);
    expect(prefix.problems[0]).toContain(
      "prefix reservation scr-198.51.100.192/28 (198.51.100.192/28) in subnet-0multus overlaps",
    );
  });

  it("wanted blocks cover exactly the range's addresses in the subnet outside AWS's five, and nothing else", () => {
    fc.assert(
      fc.property(fc.integer({ min: 128, max: 255 }), fc.integer({ min: 128, max: 255 }), (x, y) => {
        const [a, b] = x <= y ? [x, y] : [y, x];
        const wanted = wantedReservations(ranges({ range: `198.51.100.${a}-198.51.100.${b}/24` }), [SUBNET]);
        const covered = new Set<number>();
        for (const w of wanted) {
          const { first, last } = cidrBounds(w.cidr);
          for (let v = first; v <= last; v++) {
            const n = Number(addressOfValue(4, v).split(".")[3]);
            expect(covered.has(n)).toBe(false);
            covered.add(n);
          }
        }
        // whereabouts ignores a first or last outside the block's usable addresses (.1 to .254).
        const first = a >= 1 && a <= 254 ? a : 1;
        const last = b >= first && b <= 254 ? b : 254;
        for (let n = 128; n <= 255; n++) {
          expect(covered.has(n)).toBe(n >= first && n <= last && n >= 132 && n <= 254);
        }
      }),
      { numRuns: 300 },
    );
  });
});

let sim: SimulatorHandle | undefined;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await sim?.close();
  sim = undefined;
});

async function keeper(
  s: SimulatorHandle,
  identity: string,
  mode: "report" | "create",
  with_: {
    ec2?: Ec2Api;
    clock?: Clock;
    leaseDurationMs?: number;
    logger?: Logger;
    vpcId?: string;
    metrics?: BridgeMetrics;
  } = {},
): Promise<ReservationKeeper> {
  const kubeconfig = await tempKubeconfig(kubeEndpointOf(s));
  cleanups.push(kubeconfig.remove);
  const logger = with_.logger ?? createLogger("silent");
  const kube = createKubeApi({
    kubeconfig: kubeconfig.path,
    clock: systemClock,
    logger,
    watchTimeoutSeconds: 300,
    requestTimeoutMs: 5_000,
    restartBaseMs: 50,
    restartMaxMs: 200,
    component: "multus-ipmgr-bridge",
    host: NODE_A,
  });
  cleanups.push(() => kube.close());
  return new ReservationKeeper(
    {
      kube,
      ec2: with_.ec2 ?? ec2ApiFor(s),
      clock: with_.clock ?? systemClock,
      logger,
      metrics: with_.metrics ?? new BridgeMetrics(),
    },
    {
      mode,
      leaseNamespace: "kube-system",
      leaseName: "multus-ipmgr-reservations",
      leaseDurationMs: with_.leaseDurationMs ?? 60_000,
      identity,
      vpcId: with_.vpcId,
    },
  );
}

describe("reservation keeper against the simulator", () => {
  const dual = ranges({ ipRanges: [{ range: "198.51.100.192/27" }, { range: "2001:db8:100:2::100/120" }] });

  it("creates each missing reservation once, tagged as ours, when two replicas race; a second pass changes nothing", async () => {
    sim = await startKubeSim(kubeWorld());
    const a = await keeper(sim, "bridge-a", "create");
    const b = await keeper(sim, "bridge-b", "create");
    const [ra, rb] = await Promise.all([a.pass(dual, [SUBNET]), b.pass(dual, [SUBNET])]);
    expect([ra.leader, rb.leader].filter(Boolean)).toHaveLength(1);
    const reservations = sim.state().reservations;
    expect(reservations.map((r) => r.cidr).sort()).toEqual(["198.51.100.192/27", "2001:db8:100:2::100/120"]);
    expect(
      sim.calls().filter((c) => c.action === "CreateSubnetCidrReservation" && c.outcome === "ok"),
    ).toHaveLength(2);
    expect(sim.calls().find((c) => c.action === "CreateSubnetCidrReservation")?.params).toEqual(
      expect.objectContaining({ "TagSpecification.1.Tag.1.Key": RESERVATION_TAG }),
    );
    const leader = ra.leader ? a : b;
    sim.clearCalls();
    expect((await leader.pass(dual, [SUBNET])).missing).toEqual([]);
    expect(sim.calls().filter((c) => c.action === "CreateSubnetCidrReservation")).toEqual([]);
    expect(sim.state().kubernetes?.leases).toHaveLength(1);
  });

  it("reports what is missing without creating it in report mode", async () => {
    sim = await startKubeSim(kubeWorld());
    const reporter = await keeper(sim, "bridge-a", "report");
    const status = await reporter.pass(dual, [SUBNET]);
    expect(status.missing.map((m) => m.cidr)).toEqual(["198.51.100.192/27", "2001:db8:100:2::100/120"]);
    expect(reporter.lines()[0]).toContain("reservation missing: 198.51.100.192/27 in subnet-0multus");
    expect(sim.state().reservations).toEqual([]);
  });

  it("summarises the some 60 blocks of an IPv6 /64 range in one /readyz line, every block on the reservation_missing metric", async () => {
    sim = await startKubeSim(kubeWorld());
    const metrics = new BridgeMetrics();
    const reporter = await keeper(sim, "bridge-a", "report", { metrics });
    const wide = ranges({ range: "2001:db8:100:2::/64" });
    const status = await reporter.pass(wide, [SUBNET]);
    expect(status.missing.length).toBeGreaterThan(55);
    const lines = reporter.lines();
    expect(lines).toEqual([
      `${status.missing.length} reservation blocks missing in 1 subnet: ` +
        "2001:db8:100:2::4/126 in subnet-0multus (NAD cnf/n), 2001:db8:100:2::8/125 in subnet-0multus (NAD cnf/n), " +
        `2001:db8:100:2::10/124 in subnet-0multus (NAD cnf/n) and ${status.missing.length - 3} more, ` +
        "each a multus_ipmgr_bridge_reservation_missing series on /metrics; set IPMGR_BRIDGE_RESERVATIONS=create, " +
        "or create each with aws ec2 create-subnet-cidr-reservation --reservation-type explicit",
    ]);
    const text = await metrics.text();
    const series = text.split("\n").filter((l) => l.startsWith("multus_ipmgr_bridge_reservation_missing{"));
    expect(series).toHaveLength(status.missing.length);
    expect(series[0]).toBe(
      'multus_ipmgr_bridge_reservation_missing{subnet="subnet-0multus",cidr="2001:db8:100:2::4/126",nad="cnf/n"} 1',
    );
    expect(text).toContain(`multus_ipmgr_bridge_reservation_drift ${status.missing.length}`);
    // Three or fewer are still listed one by one, with the command for each.
    const few = await reporter.pass(ranges({ range: "198.51.100.192/27" }), [SUBNET]);
    expect(few.missing).toHaveLength(1);
    expect(reporter.lines()).toEqual([
      "reservation missing: 198.51.100.192/27 in subnet-0multus (whereabouts range 198.51.100.192/27 of NAD cnf/n); " +
        "set IPMGR_BRIDGE_RESERVATIONS=create, or aws ec2 create-subnet-cidr-reservation --subnet-id subnet-0multus --cidr 198.51.100.192/27 --reservation-type explicit",
    ]);
    expect(
      (await metrics.text())
        .split("\n")
        .filter((l) => l.startsWith("multus_ipmgr_bridge_reservation_missing{")),
    ).toHaveLength(1);
  });

  it("keeps our reservation that no range wants while a pod carries an address in it, says why once, and deletes it once none does", async () => {
    sim = await startKubeSim(kubeWorld());
    const { logger, lines } = captureLogger();
    const k = await keeper(sim, "bridge-a", "create", { logger });
    const reserved = () => sim?.state().reservations.map((r) => r.cidr) ?? [];
    await k.pass(ranges({ range: "198.51.100.192/27" }), [SUBNET]);
    expect(reserved()).toEqual(["198.51.100.192/27"]);
    // No range wants it any more (a bridge started after a typo took the NAD's range never saw the range).
    await k.pass([], [SUBNET]);
    expect(await k.prune([], [SUBNET], ["2001:db8:100:2::101", "198.51.100.193"])).toEqual([]);
    expect(await k.prune([], [SUBNET], ["198.51.100.193"])).toEqual([]);
    expect(reserved()).toEqual(["198.51.100.192/27"]);
    const kept =
      "is kept though no whereabouts range covers it: a pod carries 198.51.100.193 in it; it goes once no pod does (or delete it by hand)";
    expect(k.lines()).toEqual([expect.stringContaining(kept)]);
    expect(k.lines()[0]).toContain("198.51.100.192/27 in subnet-0multus");
    expect(lines.filter((l) => typeof l.msg === "string" && l.msg.includes(kept))).toHaveLength(1);
    expect(sim.calls().filter((c) => c.action === "DeleteSubnetCidrReservation")).toEqual([]);

    expect(await k.prune([], [SUBNET], ["203.0.113.5"])).toHaveLength(1);
    expect(reserved()).toEqual([]);
    expect(k.lines()).toEqual([]);
  });

  it("never deletes a reservation it did not create", async () => {
    sim = await startKubeSim(kubeWorld());
    const ec2 = ec2ApiFor(sim);
    await ec2.createSubnetCidrReservation(
      "subnet-0multus",
      "198.51.100.224/28",
      "explicit",
      "someone else's",
      {},
    );
    const k = await keeper(sim, "bridge-a", "create");
    await k.pass(dual, [SUBNET]);
    expect(await k.prune([], [SUBNET])).toHaveLength(2);
    expect(sim.state().reservations.map((r) => r.cidr)).toEqual(["198.51.100.224/28"]);
  });

  it("counts a create refused as an overlap as done when the re-read finds the reservation (a retried create whose first answer was lost)", async () => {
    sim = await startKubeSim(kubeWorld());
    const real = ec2ApiFor(sim);
    // EC2 takes no client token: the first create is made but its answer is lost, the retry is refused as
    // an overlap with it. Both calls are real calls to the simulator.
    const lossy = new Proxy(real, {
      get(target, property) {
        if (property === "createSubnetCidrReservation") {
          return async (...args: Parameters<Ec2Api["createSubnetCidrReservation"]>) => {
            await target.createSubnetCidrReservation(...args);
            return target.createSubnetCidrReservation(...args);
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const { logger, lines } = captureLogger();
    const k = await keeper(sim, "bridge-a", "create", { ec2: lossy, logger });
    const v4 = ranges({ range: "198.51.100.192/27" });
    const status = await k.pass(v4, [SUBNET]);
    expect(status.missing).toEqual([]);
    expect(status.created.map((b) => b.cidr)).toEqual(["198.51.100.192/27"]);
    expect(sim.state().reservations.map((r) => r.cidr)).toEqual(["198.51.100.192/27"]);
    expect(
      sim
        .calls()
        .filter((c) => c.action === "CreateSubnetCidrReservation")
        .map((c) => c.outcome),
    ).toEqual(["ok", "InvalidParameterValue"]);
    expect(lines.map((l) => l.msg)).toContain("the reservation was already there");
  });

  it("reports a create refused as an overlap as missing when the re-read does not find it (failNext)", async () => {
    sim = await startKubeSim(kubeWorld());
    sim.setFaults({
      failNext: [
        {
          action: "CreateSubnetCidrReservation",
          code: "InvalidParameterValue",
          status: 400,
          count: 1,
          message: "The CIDR 198.51.100.192/27 overlaps an existing subnet CIDR reservation.",
        },
      ],
    });
    const k = await keeper(sim, "bridge-a", "create");
    const status = await k.pass(ranges({ range: "198.51.100.192/27" }), [SUBNET]);
    expect(status.missing.map((b) => b.cidr)).toEqual(["198.51.100.192/27"]);
    expect(status.created).toEqual([]);
    expect(sim.state().reservations).toEqual([]);
    expect(
      sim
        .calls()
        .filter((c) => c.action === "GetSubnetCidrReservations")
        .map((c) => c.outcome),
    ).toEqual(["ok", "ok"]);
    // The next pass creates it.
    expect((await k.pass(ranges({ range: "198.51.100.192/27" }), [SUBNET])).missing).toEqual([]);
    expect(sim.state().reservations.map((r) => r.cidr)).toEqual(["198.51.100.192/27"]);
  });

  it("takes the Lease over once it has expired, and only then", async () => {
    sim = await startKubeSim(kubeWorld());
    const v4 = ranges({ range: "198.51.100.192/27" });
    const a = await keeper(sim, "bridge-a", "report", { leaseDurationMs: 10_000 });
    // Bridge B's clock runs 5 s, then 11 s, ahead: the Lease A renewed is still held, then expired.
    let ahead = 5_000;
    const clock: Clock = { now: () => Date.now() + ahead, sleep: systemClock.sleep };
    const b = await keeper(sim, "bridge-b", "report", { leaseDurationMs: 10_000, clock });
    expect((await a.pass(v4, [SUBNET])).leader).toBe(true);
    expect((await b.pass(v4, [SUBNET])).leader).toBe(false);
    const lease = () => sim?.state().kubernetes?.leases[0] as { spec: Record<string, unknown> } | undefined;
    expect(lease()?.spec).toMatchObject({ holderIdentity: "bridge-a", leaseTransitions: 0 });
    ahead = 11_000;
    expect((await b.pass(v4, [SUBNET])).leader).toBe(true);
    expect(lease()?.spec).toMatchObject({ holderIdentity: "bridge-b", leaseTransitions: 1 });
    // A, back, finds B's fresh renewal: not the leader, and nothing is compared.
    sim.clearCalls();
    expect((await a.pass(v4, [SUBNET])).leader).toBe(false);
    expect(sim.calls()).toEqual([]);
    expect(sim.state().kubernetes?.leases).toHaveLength(1);
  });
});

describe("the reservations Lease, renewed on its own timer", () => {
  const dual = ranges({ ipRanges: [{ range: "198.51.100.192/27" }, { range: "2001:db8:100:2::100/120" }] });
  const LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/multus-ipmgr-reservations";

  /** A keeper whose EC2 calls are counted apart, with its Lease's timer running until the test ends. */
  async function timed(s: SimulatorHandle, identity: string, leaseDurationMs: number, logger?: Logger) {
    const writes: string[] = [];
    const ec2 = ec2ApiFor(s, {
      observer: (r) => {
        if (r.operation.startsWith("Create") || r.operation.startsWith("Delete")) writes.push(r.operation);
      },
    });
    const k = await keeper(s, identity, "create", { ec2, leaseDurationMs, ...(logger ? { logger } : {}) });
    const stop = new AbortController();
    const renewing = k.lease.run(stop.signal);
    cleanups.unshift(async () => {
      stop.abort();
      await renewing;
    });
    return { k, writes };
  }

  it("keeps the Lease through a pass slower than the Lease itself: the other keeper never takes it or writes", async () => {
    sim = await startKubeSim(kubeWorld());
    // 700 ms for every EC2 call: a read and two creates take about 2.1 s, the Lease lasts 2 s.
    sim.setFaults({ ec2LatencyMs: 700 });
    const a = await timed(sim, "bridge-a", 2_000);
    const b = await timed(sim, "bridge-b", 2_000);
    expect(await a.k.acquire()).toBe(true);
    const slow = a.k.pass(dual, [SUBNET]);
    let done = false;
    void slow.finally(() => {
      done = true;
    });
    const bLeader: boolean[] = [];
    while (!done) {
      bLeader.push((await b.k.pass(dual, [SUBNET])).leader);
      await new Promise((r) => setTimeout(r, 200));
    }
    const status = await slow;
    expect(status.leader).toBe(true);
    expect(status.created.map((x) => x.cidr)).toEqual(["198.51.100.192/27", "2001:db8:100:2::100/120"]);
    expect(bLeader.length).toBeGreaterThan(3);
    expect(bLeader.filter(Boolean)).toEqual([]);
    expect(b.writes).toEqual([]);
    const lease = await kube(sim, "GET", LEASE);
    expect(lease.body.spec).toMatchObject({ holderIdentity: "bridge-a", leaseTransitions: 0 });
  });

  it("writes nothing more in a pass once a renewal finds that another holder took the Lease", async () => {
    sim = await startKubeSim(kubeWorld());
    sim.setFaults({ ec2LatencyMs: 700 });
    const { logger, lines } = captureLogger();
    const a = await timed(sim, "bridge-a", 3_000, logger);
    expect(await a.k.acquire()).toBe(true);
    const slow = a.k.pass(dual, [SUBNET]);
    // While the pass reads the reservations, another process takes the Lease (its renewal is fresh).
    await new Promise((r) => setTimeout(r, 200));
    const current = await kube(sim, "GET", LEASE);
    const stolen = await kube(sim, "PUT", LEASE, {
      ...current.body,
      spec: { ...current.body.spec, holderIdentity: "bridge-z", renewTime: new Date().toISOString() },
    });
    expect(stolen.status).toBe(200);
    const status = await slow;
    expect(status.leader).toBe(false);
    // At most the create already under way when the renewal came back; never both.
    expect(a.writes.length).toBeLessThanOrEqual(1);
    expect(lines.map((l) => l.msg)).toContain(
      "lost the reservations Lease: no reservation is written until it is taken again",
    );
  });

  it("takes its holder identity from POD_NAME and POD_UID, and without them makes one unique per process, with a warning", async () => {
    const { leaseIdentity } = await import("../src/ipam-whereabouts-bridge/reservations/lease-renewer.js");
    const { logger, lines } = captureLogger();
    expect(leaseIdentity({ podName: "multus-ipmgr-bridge-x7k2p", podUid: "4d7e-01" }, NODE_A, logger)).toBe(
      "multus-ipmgr-bridge-x7k2p_4d7e-01",
    );
    expect(lines).toEqual([]);
    const one = leaseIdentity({ podName: undefined, podUid: undefined }, NODE_A, logger);
    const two = leaseIdentity({ podName: "p", podUid: "" }, NODE_A, logger);
    expect(one).not.toBe(two);
    expect(one).toContain(`_${NODE_A}_`);
    expect(lines.map((l) => l.level)).toEqual([40, 40]);
    expect(lines[0]?.msg).toContain("POD_NAME and POD_UID are not set");
  });
});

/**
 * Two zones: the Lease holder's node (zone a) has its Multus ENI in subnet-0multusa; a NAD's range lies in
 * subnet-0multusb of zone b, where the holder has no ENI.
 */
function twoZoneWorld() {
  return parseWorld({
    region: "us-east-1",
    vpc: { id: "vpc-0zones", cidr: "198.51.100.0/24" },
    subnets: [
      { id: "subnet-0nodes", cidr: "198.51.100.0/26", availabilityZone: "us-east-1a" },
      { id: "subnet-0multusa", cidr: "198.51.100.128/26", availabilityZone: "us-east-1a" },
      { id: "subnet-0multusb", cidr: "198.51.100.192/26", availabilityZone: "us-east-1b" },
    ],
    instances: [
      {
        id: "i-0a",
        enis: [
          {
            id: "eni-0a0",
            mac: "02:00:00:00:01:00",
            deviceIndex: 0,
            subnet: "subnet-0nodes",
            primaryIpv4: "198.51.100.10",
          },
          {
            id: "eni-0a1",
            mac: MAC_A,
            deviceIndex: 1,
            subnet: "subnet-0multusa",
            primaryIpv4: "198.51.100.140",
          },
        ],
      },
    ],
    kubernetes: { namespaces: ["cnf"], nodes: [{ instance: "i-0a" }] },
  });
}

describe("reservations in several Availability Zones", () => {
  const own = [{ subnetId: "subnet-0multusa", cidrs: ["198.51.100.128/26"] }];
  const zoneA = ranges({ range: "198.51.100.160/28" });
  const zoneB = ranges({ range: "198.51.100.224/28" });

  it("covers a range in a subnet of another zone, where the Lease holder has no ENI, and prunes it once no range wants it", async () => {
    sim = await startSimulator(twoZoneWorld());
    const k = await keeper(sim, "bridge-a", "create", { vpcId: "vpc-0zones" });
    const status = await k.pass([...zoneA, ...zoneB], own);
    expect(status.problems).toEqual([]);
    expect(
      sim
        .state()
        .reservations.map((r) => `${r.subnetId} ${r.cidr}`)
        .sort(),
    ).toEqual(["subnet-0multusa 198.51.100.160/28", "subnet-0multusb 198.51.100.224/28"]);
    const describe = sim.calls().filter((c) => c.action === "DescribeSubnets");
    expect(describe.map((c) => c.params["Filter.1.Name"])).toEqual(["vpc-id"]);
    // The zone-b NAD is removed: the next pass and prune delete our reservation there, and only it.
    await k.pass(zoneA, own);
    expect(await k.prune(zoneA, own)).toHaveLength(1);
    expect(sim.state().reservations.map((r) => `${r.subnetId} ${r.cidr}`)).toEqual([
      "subnet-0multusa 198.51.100.160/28",
    ]);
  });

  it("keeps to its own subnets and says why in /readyz when ec2:DescribeSubnets is denied", async () => {
    sim = await startSimulator(twoZoneWorld());
    sim.setFaults({ deny: ["DescribeSubnets"] });
    const { logger, lines } = captureLogger();
    const k = await keeper(sim, "bridge-a", "create", { vpcId: "vpc-0zones", logger });
    const status = await k.pass([...zoneA, ...zoneB], own);
    expect(sim.state().reservations.map((r) => `${r.subnetId} ${r.cidr}`)).toEqual([
      "subnet-0multusa 198.51.100.160/28",
    ]);
    expect(status.problems).toEqual([
      expect.stringMatching(
        /^ec2:DescribeSubnets is denied \(UnauthorizedOperation\), so only the subnets of this node's Multus ENIs \(subnet-0multusa\) are compared, not those of other zones of vpc-0zones: add ec2:DescribeSubnets to the bridge's role/,
      ),
    ]);
    expect(k.lines()).toEqual(status.problems);
    // Logged once, not at every pass.
    await k.pass([...zoneA, ...zoneB], own);
    expect(lines.filter((l) => String(l.msg).startsWith("ec2:DescribeSubnets is denied"))).toHaveLength(1);
  });
});
