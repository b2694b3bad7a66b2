import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Ec2Api, Ec2CallRecord } from "../src/eni/ec2-api.js";
import { createEc2Api, type Ec2ApiOptions } from "../src/eni/ec2-client.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import { LazyEc2Api } from "../src/eni/lazy-ec2-api.js";
import { type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { closedPortUrl } from "./helpers/closed-port.js";
import { captureLogger, type LogLine } from "./helpers/loggers.js";
import { credentials, ec2ApiFor, fastRetry, standardWorld } from "./helpers/sim-fixtures.js";

// i-1 (four addresses per ENI): eni-0a 198.51.100.10 and eni-0b 198.51.100.20 (MAC 02:00:00:00:0b:01) in
// subnet-a 198.51.100.0/25 + 2001:db8::/64; i-2: seven ENIs in subnet-b 198.51.100.128/25. See standardWorld.
const world = standardWorld({
  ipv4AddressesPerEni: 4,
  eni0b: {
    secondaryIpv4s: ["198.51.100.21"],
    ipv6s: ["2001:db8::21"],
    tags: { "node.k8s.amazonaws.com/no_manage": "true" },
  },
  eni0c: false,
  moreInstances: [
    {
      id: "i-2",
      instanceType: "m5.large",
      enis: [
        {
          id: "eni-1a",
          mac: "02:00:00:00:1a:01",
          deviceIndex: 0,
          subnet: "subnet-b",
          primaryIpv4: "198.51.100.140",
        },
        ...Array.from({ length: 6 }, (_, i) => ({
          id: `eni-1${i}b`,
          mac: `02:00:00:00:1b:0${i}`,
          deviceIndex: i + 1,
          subnet: "subnet-b",
          primaryIpv4: `198.51.100.${150 + i}`,
        })),
      ],
    },
  ],
  reservations: [{ subnet: "subnet-a", cidr: "198.51.100.96/28", type: "explicit", description: "pods" }],
});

describe("createEc2Api against the simulator", () => {
  let sim: SimulatorHandle;
  let records: Ec2CallRecord[];
  let lines: LogLine[];
  let ec2: Ec2Api;

  const build = (extra: Partial<Ec2ApiOptions> = {}): Ec2Api => {
    const captured = captureLogger();
    lines = captured.lines;
    return ec2ApiFor(sim, { logger: captured.logger, observer: (r) => records.push(r), ...extra });
  };

  const eni = (id: string) => {
    const found = sim.state().enis.find((e) => e.eniId === id);
    if (found === undefined) throw new Error(`no ${id} in the simulator`);
    return found;
  };

  /** The request id of the last call the simulator answered. */
  const lastRequestId = (): string => {
    const calls = sim.calls();
    const last = calls[calls.length - 1];
    if (last === undefined) throw new Error("no call");
    return last.requestId;
  };

  beforeAll(async () => {
    sim = await startSimulator(world);
  });

  afterAll(async () => {
    await sim.close();
  });

  beforeEach(() => {
    records = [];
    ec2 = build();
    sim.clearCalls();
  });

  afterEach(async () => {
    await sim.setFaults({ failNext: [], deny: [], throttleScale: 1, ec2LatencyMs: 0 });
  });

  describe("probePermission", () => {
    it("asks with DryRun and reads DryRunOperation as allowed, UnauthorizedOperation as denied", async () => {
      expect(await ec2.probePermission({ action: "DescribeNetworkInterfaces" })).toEqual({ allowed: true });
      await sim.setFaults({ deny: ["GetSubnetCidrReservations"] });
      const denied = await ec2.probePermission({ action: "GetSubnetCidrReservations", subnetId: "subnet-a" });
      expect(denied.allowed).toBe(false);
      if (denied.allowed) throw new Error("not denied");
      expect(denied.refusal).toMatchObject({ code: "UnauthorizedOperation", kind: "permission" });
      expect(denied.refusal.message).toContain("EC2 denied GetSubnetCidrReservations on subnet-a");
      expect(sim.calls().map((c) => [c.action, c.params.DryRun, c.outcome])).toEqual([
        ["DescribeNetworkInterfaces", "true", "DryRunOperation"],
        ["GetSubnetCidrReservations", "true", "UnauthorizedOperation"],
      ]);
    });

    it("rejects with the Ec2Error of any other failure", async () => {
      await sim.setFaults({ failNext: [{ action: "*", code: "InternalError", status: 500, count: 20 }] });
      const failed = build({ retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 } });
      await expect(failed.probePermission({ action: "DescribeNetworkInterfaces" })).rejects.toMatchObject({
        name: "Ec2Error",
        kind: "unavailable",
        code: "InternalError",
      });
    });
  });

  describe("describeNetworkInterfaces", () => {
    it("maps every field, primary first, by instance", async () => {
      const enis = await ec2.describeNetworkInterfaces({ instanceId: "i-1" });
      expect(enis.map((e) => e.eniId).sort()).toEqual(["eni-0a", "eni-0b"]);
      const b = enis.find((e) => e.eniId === "eni-0b");
      expect(b).toEqual({
        eniId: "eni-0b",
        mac: "02:00:00:00:0b:01",
        subnetId: "subnet-a",
        vpcId: "vpc-1",
        instanceId: "i-1",
        deviceIndex: 1,
        primaryIpv4: eni("eni-0b").primaryIpv4,
        ipv4s: eni("eni-0b").ipv4s,
        ipv6s: eni("eni-0b").ipv6s,
        ipv4Prefixes: [],
        ipv6Prefixes: [],
        tags: { "node.k8s.amazonaws.com/no_manage": "true" },
        securityGroupIds: ["sg-1"],
        status: "in-use",
        attachment: {
          attachmentId: "eni-attach-0b",
          instanceId: "i-1",
          deviceIndex: 1,
          networkCardIndex: 0,
          status: "attached",
          deleteOnTermination: false,
        },
        sourceDestCheck: true,
        availabilityZone: "us-east-1a",
      });
    });

    it("reads security groups with their inbound rules; an empty list makes no call", async () => {
      expect(await ec2.describeSecurityGroups([])).toEqual([]);
      expect(await ec2.describeSecurityGroups(["sg-1"])).toEqual([
        {
          groupId: "sg-1",
          groupName: "default",
          ingress: [
            {
              protocol: "-1",
              fromPort: undefined,
              toPort: undefined,
              ipv4Cidrs: [],
              ipv6Cidrs: [],
              groupIds: ["sg-1"],
              prefixListIds: [],
            },
          ],
        },
      ]);
    });

    it("filters by ENI id, MAC, address and subnet", async () => {
      const ids = async (filter: Parameters<Ec2Api["describeNetworkInterfaces"]>[0]) =>
        (await ec2.describeNetworkInterfaces(filter)).map((e) => e.eniId).sort();
      expect(await ids({ eniIds: ["eni-0a", "eni-1a"] })).toEqual(["eni-0a", "eni-1a"]);
      expect(await ids({ macs: ["02:00:00:00:0B:01"] })).toEqual(["eni-0b"]);
      expect(await ids({ ipv4Addresses: ["198.51.100.21"] })).toEqual(["eni-0b"]);
      expect(await ids({ ipv6Addresses: ["2001:DB8:0::21"] })).toEqual(["eni-0b"]);
      expect(await ids({ subnetIds: ["subnet-a"], instanceId: "i-1" })).toEqual(["eni-0a", "eni-0b"]);
    });

    it("follows NextToken to the last page, one record per page", async () => {
      ec2 = build({ pageSize: 5 });
      const enis = await ec2.describeNetworkInterfaces({ instanceId: "i-2" });
      expect(enis).toHaveLength(7);
      expect(new Set(enis.map((e) => e.eniId)).size).toBe(7);
      expect(records.map((r) => r.operation)).toEqual([
        "DescribeNetworkInterfaces",
        "DescribeNetworkInterfaces",
      ]);
      expect(sim.calls().map((c) => c.params.NextToken !== undefined)).toEqual([false, true]);
    });

    it("matches nothing for an empty list, without calling EC2", async () => {
      expect(await ec2.describeNetworkInterfaces({ eniIds: [] })).toEqual([]);
      expect(sim.calls()).toHaveLength(0);
    });
  });

  describe("IPv4 assign and unassign", () => {
    it("assigns secondary addresses, then unassigns them", async () => {
      await ec2.assignPrivateIpv4("eni-0b", ["198.51.100.30", "198.51.100.31"], true);
      expect(eni("eni-0b").ipv4s).toEqual([
        "198.51.100.20",
        "198.51.100.21",
        "198.51.100.30",
        "198.51.100.31",
      ]);
      await ec2.unassignPrivateIpv4("eni-0b", ["198.51.100.30", "198.51.100.31"]);
      expect(eni("eni-0b").ipv4s).toEqual(["198.51.100.20", "198.51.100.21"]);
    });

    it("sends AllowReassignment and moves an address held by another ENI", async () => {
      await ec2.assignPrivateIpv4("eni-0a", ["198.51.100.40"], true);
      await ec2.assignPrivateIpv4("eni-0b", ["198.51.100.40"], true);
      expect(sim.calls()[1]?.params.AllowReassignment).toBe("true");
      expect(eni("eni-0a").ipv4s).not.toContain("198.51.100.40");
      expect(eni("eni-0b").ipv4s).toContain("198.51.100.40");
      await ec2.unassignPrivateIpv4("eni-0b", ["198.51.100.40"]);
    });

    it("treats assigning an address the ENI already holds as success", async () => {
      await ec2.assignPrivateIpv4("eni-0b", ["198.51.100.21"], false);
      expect(eni("eni-0b").ipv4s).toEqual(["198.51.100.20", "198.51.100.21"]);
    });

    it("treats unassigning addresses the ENI no longer holds as success, and releases the rest", async () => {
      await ec2.assignPrivateIpv4("eni-0b", ["198.51.100.41"], true);
      await ec2.unassignPrivateIpv4("eni-0b", ["198.51.100.41", "198.51.100.42"]);
      expect(eni("eni-0b").ipv4s).toEqual(["198.51.100.20", "198.51.100.21"]);
      await ec2.unassignPrivateIpv4("eni-0b", ["198.51.100.41"]);
      expect(eni("eni-0b").ipv4s).toEqual(["198.51.100.20", "198.51.100.21"]);
    });

    it("logs a mutating call at info with its request id, and tells the observer", async () => {
      await ec2.assignPrivateIpv4("eni-0b", ["198.51.100.43"], true);
      const requestId = lastRequestId();
      const line = lines.find((l) => l.msg === "EC2 AssignPrivateIpAddresses");
      expect(line).toMatchObject({
        level: 30,
        operation: "AssignPrivateIpAddresses",
        eniId: "eni-0b",
        addresses: ["198.51.100.43"],
        requestId,
        attempts: 1,
        outcome: "ok",
      });
      expect(records).toEqual([
        {
          operation: "AssignPrivateIpAddresses",
          eniId: "eni-0b",
          addresses: ["198.51.100.43"],
          requestId,
          durationMs: expect.any(Number),
          attempts: 1,
          outcome: "ok",
          errorCode: undefined,
        },
      ]);
      await ec2.unassignPrivateIpv4("eni-0b", ["198.51.100.43"]);
    });
  });

  describe("IPv6 assign and unassign", () => {
    it("assigns and unassigns, addresses canonical", async () => {
      await ec2.assignIpv6("eni-0b", ["2001:DB8:0:0::50"]);
      expect(eni("eni-0b").ipv6s).toEqual(["2001:db8::21", "2001:db8::50"]);
      const [described] = await ec2.describeNetworkInterfaces({ eniIds: ["eni-0b"] });
      expect(described?.ipv6s).toEqual(["2001:db8::21", "2001:db8::50"]);
      await ec2.unassignIpv6("eni-0b", ["2001:db8::50"]);
      expect(eni("eni-0b").ipv6s).toEqual(["2001:db8::21"]);
    });

    it("treats assigning a held address and unassigning a missing one as success", async () => {
      await ec2.assignIpv6("eni-0b", ["2001:db8::21"]);
      await ec2.unassignIpv6("eni-0b", ["2001:db8::99"]);
      expect(eni("eni-0b").ipv6s).toEqual(["2001:db8::21"]);
    });
  });

  describe("subnets and reservations", () => {
    it("describes subnets", async () => {
      const subnets = await ec2.describeSubnets(["subnet-a", "subnet-b"]);
      expect(subnets.sort((x, y) => x.subnetId.localeCompare(y.subnetId))).toEqual([
        {
          subnetId: "subnet-a",
          vpcId: "vpc-1",
          availabilityZone: "us-east-1a",
          ipv4Cidr: "198.51.100.0/25",
          ipv6Cidrs: ["2001:db8::/64"],
        },
        {
          subnetId: "subnet-b",
          vpcId: "vpc-1",
          availabilityZone: "us-east-1a",
          ipv4Cidr: "198.51.100.128/25",
          ipv6Cidrs: [],
        },
      ]);
    });

    it("creates, lists and deletes reservations of both families; a second delete succeeds", async () => {
      const before = await ec2.getSubnetCidrReservations("subnet-a");
      expect(before).toEqual([
        {
          reservationId: expect.any(String),
          subnetId: "subnet-a",
          cidr: "198.51.100.96/28",
          type: "explicit",
          description: "pods",
          tags: {},
        },
      ]);
      const v6 = await ec2.createSubnetCidrReservation(
        "subnet-a",
        "2001:db8::100/120",
        "explicit",
        "v6 pods",
        {
          owner: "multus-ipmgr",
        },
      );
      expect(v6).toMatchObject({
        subnetId: "subnet-a",
        cidr: "2001:db8::100/120",
        type: "explicit",
        description: "v6 pods",
        tags: { owner: "multus-ipmgr" },
      });
      const listed = await ec2.getSubnetCidrReservations("subnet-a");
      expect(listed.map((r) => r.cidr).sort()).toEqual(["198.51.100.96/28", "2001:db8::100/120"]);
      expect(sim.state().reservations.map((r) => r.reservationId)).toContain(v6.reservationId);
      await ec2.deleteSubnetCidrReservation(v6.reservationId);
      expect(sim.state().reservations.map((r) => r.reservationId)).not.toContain(v6.reservationId);
      await ec2.deleteSubnetCidrReservation(v6.reservationId);
    });

    it("follows NextToken on GetSubnetCidrReservations", async () => {
      // CreateSubnetCidrReservation's bucket is 5 calls, refilled at 1 per second: widen it for this test.
      await sim.setFaults({ throttleScale: 10 });
      ec2 = build({ pageSize: 5 });
      const created = [];
      for (let i = 0; i < 6; i += 1) {
        created.push(
          await ec2.createSubnetCidrReservation(
            "subnet-b",
            `198.51.100.${192 + i * 4}/30`,
            "explicit",
            "",
            {},
          ),
        );
      }
      sim.clearCalls();
      const listed = await ec2.getSubnetCidrReservations("subnet-b");
      expect(listed).toHaveLength(6);
      expect(sim.calls()).toHaveLength(2);
      for (const r of created) await ec2.deleteSubnetCidrReservation(r.reservationId);
    });
  });

  describe("failures", () => {
    it("retries throttling with backoff and succeeds, counting the attempts", async () => {
      await sim.setFaults({
        failNext: [
          { action: "AssignPrivateIpAddresses", code: "RequestLimitExceeded", status: 503, count: 2 },
        ],
      });
      await ec2.assignPrivateIpv4("eni-0b", ["198.51.100.44"], true);
      expect(eni("eni-0b").ipv4s).toContain("198.51.100.44");
      expect(sim.calls().map((c) => c.outcome)).toEqual([
        "RequestLimitExceeded",
        "RequestLimitExceeded",
        "ok",
      ]);
      expect(records).toMatchObject([{ operation: "AssignPrivateIpAddresses", attempts: 3, outcome: "ok" }]);
      // One debug line per retry; the success line carries the attempts. Nothing at warn or above.
      const retries = lines.filter((l) => l.msg === "EC2 AssignPrivateIpAddresses failed, retrying");
      expect(retries).toMatchObject([
        {
          level: 20,
          attempt: 1,
          errorCode: "RequestLimitExceeded",
          eniId: "eni-0b",
          addresses: ["198.51.100.44"],
        },
        {
          level: 20,
          attempt: 2,
          errorCode: "RequestLimitExceeded",
          eniId: "eni-0b",
          addresses: ["198.51.100.44"],
        },
      ]);
      expect(retries[0]?.requestId).toEqual(expect.any(String));
      expect(retries[0]?.delayMs).toEqual(expect.any(Number));
      expect(retries[0]?.err).toEqual(expect.stringContaining("Injected failure"));
      expect(lines.find((l) => l.msg === "EC2 AssignPrivateIpAddresses")).toMatchObject({
        level: 30,
        attempts: 3,
      });
      expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
      await ec2.unassignPrivateIpv4("eni-0b", ["198.51.100.44"]);
    });

    it("fails at once with kind permission, exit code 4, naming the IAM action", async () => {
      await sim.setFaults({ deny: ["AssignPrivateIpAddresses"] });
      const err = await ec2.assignPrivateIpv4("eni-0b", ["198.51.100.45"], true).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Ec2Error);
      const e = err as Ec2Error;
      const requestId = lastRequestId();
      expect(sim.calls()).toHaveLength(1);
      expect(e).toMatchObject({
        kind: "permission",
        exitCode: 4,
        code: "UnauthorizedOperation",
        operation: "AssignPrivateIpAddresses",
        eniId: "eni-0b",
        requestId,
      });
      expect(e.message).toBe(
        `EC2 denied AssignPrivateIpAddresses on eni-0b for 198.51.100.45: UnauthorizedOperation ` +
          `${JSON.stringify((e.cause as Error).message)} (request id ${requestId}). The IAM action ` +
          "ec2:AssignPrivateIpAddresses is missing: grant ec2:AssignPrivateIpAddresses to the node role or the " +
          "pod's IRSA/Pod Identity role.",
      );
      expect(records).toMatchObject([{ outcome: "error", errorCode: "UnauthorizedOperation", attempts: 1 }]);
      // The caller reports the failure (init once, the sidecar once per error change): debug here.
      expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
      expect(lines.filter((l) => l.msg === "EC2 AssignPrivateIpAddresses failed")).toMatchObject([
        {
          level: 20,
          operation: "AssignPrivateIpAddresses",
          eniId: "eni-0b",
          addresses: ["198.51.100.45"],
          requestId,
          attempts: 1,
          outcome: "error",
          errorCode: "UnauthorizedOperation",
          kind: "permission",
        },
      ]);
    });

    it("reports an address limit as kind refused, exit code 5, without retrying", async () => {
      const err = await ec2
        .assignPrivateIpv4("eni-0b", ["198.51.100.46", "198.51.100.47", "198.51.100.48"], true)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Ec2Error);
      const e = err as Ec2Error;
      const assignCalls = sim.calls().filter((c) => c.action === "AssignPrivateIpAddresses");
      expect(assignCalls).toHaveLength(1);
      const requestId = assignCalls[0]?.requestId;
      expect(e).toMatchObject({
        kind: "refused",
        exitCode: 5,
        code: "PrivateIpAddressLimitExceeded",
        requestId,
      });
      expect(e.message).toBe(
        "EC2 refused AssignPrivateIpAddresses on eni-0b for 198.51.100.46, 198.51.100.47, 198.51.100.48: " +
          `PrivateIpAddressLimitExceeded ${JSON.stringify((e.cause as Error).message)} (request id ${requestId}).`,
      );
      expect(eni("eni-0b").ipv4s).toEqual(["198.51.100.20", "198.51.100.21"]);
      // Debug only: the adapter may still recover a refusal, and a fatal one is reported by its caller.
      const failed = lines.filter((l) => l.msg === "EC2 AssignPrivateIpAddresses failed");
      expect(failed).toMatchObject([
        { level: 20, kind: "refused", errorCode: "PrivateIpAddressLimitExceeded" },
      ]);
      expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
    });

    it("reports persistent 5xx as kind unavailable, exit code 9, after every attempt", async () => {
      ec2 = build({ retry: { ...fastRetry, maxAttempts: 3 } });
      await sim.setFaults({
        failNext: [
          { action: "DescribeSubnets", code: "InternalError", status: 500, count: 10, message: "boom" },
        ],
      });
      const err = await ec2.describeSubnets(["subnet-a"]).catch((e: unknown) => e);
      const requestId = lastRequestId();
      expect(err).toBeInstanceOf(Ec2Error);
      expect(err).toMatchObject({ kind: "unavailable", exitCode: 9, code: "InternalError", requestId });
      expect((err as Error).message).toBe(
        `EC2 DescribeSubnets on subnet-a still failed after 3 attempts: InternalError "boom" (request id ${requestId}). ` +
          "EC2 is throttling or unreachable; try again later.",
      );
      expect(sim.calls()).toHaveLength(3);
      expect(records).toMatchObject([{ operation: "DescribeSubnets", attempts: 3, outcome: "error" }]);
      // An outage leaves no warn or error line per attempt: the caller logs it (the sidecar once per change).
      expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
      expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
        "20 EC2 DescribeSubnets failed, retrying",
        "20 EC2 DescribeSubnets failed, retrying",
        "20 EC2 DescribeSubnets failed",
      ]);
    });

    it("reports an endpoint where nothing listens as NetworkError, kind unavailable", async () => {
      ec2 = build({ endpoint: await closedPortUrl(), retry: { ...fastRetry, maxAttempts: 2 } });
      const err = await ec2.describeSubnets(["subnet-a"]).catch((e: unknown) => e);
      expect(err).toMatchObject({
        kind: "unavailable",
        code: "NetworkError",
        exitCode: 9,
        requestId: undefined,
      });
      expect((err as Error).message).toMatch(
        /^EC2 DescribeSubnets on subnet-a still failed after 2 attempts: NetworkError ".*ECONNREFUSED.*" \(request id none\)\. EC2 is throttling or unreachable; try again later\.$/,
      );
    });

    it("is cancelled by its signal, with the signal's reason", async () => {
      const controller = new AbortController();
      const reason = new Error("shutting down");
      ec2 = build({ signal: controller.signal });
      await sim.setFaults({ ec2LatencyMs: 1000 });
      const pending = ec2.describeSubnets(["subnet-a"]);
      setTimeout(() => controller.abort(reason), 50);
      await expect(pending).rejects.toBe(reason);
    });
  });

  it("uses AWS_ENDPOINT_URL_EC2 when no endpoint is passed", async () => {
    const saved = process.env.AWS_ENDPOINT_URL_EC2;
    process.env.AWS_ENDPOINT_URL_EC2 = sim.ec2Endpoint;
    try {
      const { logger } = captureLogger();
      const api = createEc2Api({ region: "us-east-1", credentials, logger, retry: fastRetry });
      expect((await api.describeSubnets(["subnet-b"])).map((s) => s.subnetId)).toEqual(["subnet-b"]);
      expect(sim.calls()).toHaveLength(1);
    } finally {
      if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_EC2;
      else process.env.AWS_ENDPOINT_URL_EC2 = saved;
    }
  });

  describe("LazyEc2Api", () => {
    it("never loads when no call is made", () => {
      let loads = 0;
      const lazy = new LazyEc2Api(async () => {
        loads += 1;
        return ec2;
      });
      expect(lazy.loaded).toBe(false);
      expect(loads).toBe(0);
    });

    it("loads once, on the first call, shared by concurrent calls, through a dynamic import", async () => {
      let loads = 0;
      const { logger } = captureLogger();
      const lazy = new LazyEc2Api(async () => {
        loads += 1;
        const { createEc2Api: create } = await import("../src/eni/ec2-client.js");
        return create({ region: "us-east-1", endpoint: sim.ec2Endpoint, credentials, logger });
      });
      const [subnets, enis] = await Promise.all([
        lazy.describeSubnets(["subnet-a"]),
        lazy.describeNetworkInterfaces({ eniIds: ["eni-0a"] }),
      ]);
      expect(subnets).toHaveLength(1);
      expect(enis).toHaveLength(1);
      await lazy.getSubnetCidrReservations("subnet-a");
      expect(loads).toBe(1);
    });

    it("tries the load again after a failed load", async () => {
      let loads = 0;
      const lazy = new LazyEc2Api(async () => {
        loads += 1;
        if (loads === 1) throw new Error("cannot load");
        return ec2;
      });
      await expect(lazy.describeSubnets(["subnet-a"])).rejects.toThrow("cannot load");
      expect(await lazy.describeSubnets(["subnet-a"])).toHaveLength(1);
      expect(loads).toBe(2);
    });
  });
});
