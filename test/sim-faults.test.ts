import {
  AssignPrivateIpAddressesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  type EC2Client,
} from "@aws-sdk/client-ec2";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Clock } from "../src/eni/process/clock.js";
import { loadWorldFile, type SimulatorHandle, type World } from "../src/sim/index.js";
import { ec2Failure, startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

let sim: SimulatorHandle;
let ec2: EC2Client;
let world: World;

async function start(clock?: Clock): Promise<void> {
  world = await loadWorldFile("examples/world-two-nodes.yaml");
  ({ sim, ec2 } = await startWithEc2(world, clock === undefined ? {} : { clock }));
}

const assignOne = (address: string) =>
  ec2.send(
    new AssignPrivateIpAddressesCommand({
      NetworkInterfaceId: "eni-0n1multus",
      PrivateIpAddresses: [address],
    }),
  );

afterEach(() => stopWithEc2(sim, ec2));

describe("EC2 faults", () => {
  beforeEach(async () => {
    await start();
  });

  it("throttleScale shrinks the per-action token bucket: RequestLimitExceeded (503) after the burst", async () => {
    sim.setFaults({ throttleScale: 0.05 });
    for (let i = 0; i < 5; i++) await ec2.send(new DescribeSubnetsCommand({}));
    const error = await ec2Failure(ec2.send(new DescribeSubnetsCommand({})));
    expect(error).toEqual({ code: "RequestLimitExceeded", message: "Request limit exceeded.", status: 503 });
    // Buckets are per action: another action still has its tokens.
    await assignOne("203.0.113.100");
    expect(sim.calls().map((c) => c.outcome)).toEqual([...Array(5).fill("ok"), "RequestLimitExceeded", "ok"]);
  });

  it("gives unfiltered, unpaged DescribeNetworkInterfaces its smaller bucket (50/10)", async () => {
    sim.setFaults({ throttleScale: 0.1 });
    for (let i = 0; i < 5; i++) await ec2.send(new DescribeNetworkInterfacesCommand({}));
    expect((await ec2Failure(ec2.send(new DescribeNetworkInterfacesCommand({})))).code).toBe(
      "RequestLimitExceeded",
    );
    await ec2.send(new DescribeNetworkInterfacesCommand({ MaxResults: 5 }));
  });

  it("failNext fails exactly the next `count` calls of the action, then disappears", async () => {
    sim.setFaults({
      failNext: [{ action: "AssignPrivateIpAddresses", code: "InternalError", status: 500, count: 2 }],
    });
    await ec2.send(new DescribeSubnetsCommand({}));
    expect(await ec2Failure(assignOne("203.0.113.100"))).toEqual({
      code: "InternalError",
      message: "Injected failure (simulator).",
      status: 500,
    });
    expect((await ec2Failure(assignOne("203.0.113.100"))).status).toBe(500);
    await assignOne("203.0.113.100");
    const faults = (await (await fetch(`${sim.controlEndpoint}/faults`)).json()) as { failNext: unknown[] };
    expect(faults.failNext).toEqual([]);
  });

  it('failNext with action "*" fails any action, with the given message', async () => {
    sim.setFaults({
      failNext: [{ action: "*", code: "Unavailable", status: 503, count: 1, message: "Service unavailable" }],
    });
    expect(await ec2Failure(ec2.send(new DescribeSubnetsCommand({})))).toEqual({
      code: "Unavailable",
      message: "Service unavailable",
      status: 503,
    });
    await ec2.send(new DescribeSubnetsCommand({}));
  });

  it("deny answers UnauthorizedOperation (403) naming the action, also for DryRun probes", async () => {
    sim.setFaults({ deny: ["AssignPrivateIpAddresses", "DescribeNetworkInterfaces"] });
    const error = await ec2Failure(assignOne("203.0.113.100"));
    expect(error.code).toBe("UnauthorizedOperation");
    expect(error.status).toBe(403);
    expect(error.message).toContain("is not authorized to perform: ec2:AssignPrivateIpAddresses");
    expect(error.message).toContain("Encoded authorization failure message:");
    expect((await ec2Failure(ec2.send(new DescribeNetworkInterfacesCommand({ DryRun: true })))).code).toBe(
      "UnauthorizedOperation",
    );
    expect(sim.state().enis.find((e) => e.eniId === "eni-0n1multus")?.ipv4s).toEqual(["203.0.113.70"]);
  });

  it("refuses DryRun on the assign calls, which have no DryRun parameter (UnknownParameter)", async () => {
    const response = await fetch(sim.ec2Endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "Action=AssignPrivateIpAddresses&Version=2016-11-15&NetworkInterfaceId=eni-0n1multus&SecondaryPrivateIpAddressCount=1&DryRun=true",
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("<Code>UnknownParameter</Code>");
  });

  it("ec2LatencyMs delays every answer", async () => {
    sim.setFaults({ ec2LatencyMs: 150 });
    const started = performance.now();
    await ec2.send(new DescribeSubnetsCommand({}));
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });
});

describe("stale reads", () => {
  it("Describe calls show the state as of staleReadsMs ago; writes see the newest state", async () => {
    let now = 1_000_000;
    await start({ now: () => now, sleep: () => Promise.resolve() });
    sim.setFaults({ staleReadsMs: 5_000 });
    now += 10_000;
    await assignOne("203.0.113.100");
    const ipv4s = async (): Promise<string[]> =>
      (
        await ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ["eni-0n1multus"] }))
      ).NetworkInterfaces?.[0]?.PrivateIpAddresses?.map((a) => a.PrivateIpAddress ?? "") ?? [];
    expect(await ipv4s()).toEqual(["203.0.113.70"]);
    // The write path is not stale: assigning again is "already held", not a move.
    expect(
      (
        await ec2Failure(
          ec2.send(
            new AssignPrivateIpAddressesCommand({
              NetworkInterfaceId: "eni-0n2multus",
              PrivateIpAddresses: ["203.0.113.100"],
            }),
          ),
        )
      ).message,
    ).toBe("Address 203.0.113.100 is in use.");
    now += 5_000;
    expect(await ipv4s()).toEqual(["203.0.113.70", "203.0.113.100"]);
    expect(sim.state().enis.find((e) => e.eniId === "eni-0n1multus")?.ipv4s).toContain("203.0.113.100");
  });
});

describe("control API", () => {
  beforeEach(async () => {
    await start();
  });

  it("serves /healthz, /state and /calls as the handle does, and DELETE /calls clears the log", async () => {
    const get = async (path: string): Promise<unknown> =>
      (await fetch(`${sim.controlEndpoint}${path}`)).json();
    expect(await get("/healthz")).toEqual({ ok: true });
    await assignOne("203.0.113.100");
    await ec2Failure(assignOne("203.0.113.1"));
    expect(await get("/state")).toEqual(sim.state());
    const calls = (await get("/calls")) as ReturnType<SimulatorHandle["calls"]>;
    expect(calls).toEqual(sim.calls());
    expect(calls.map((c) => [c.seq, c.action, c.status, c.outcome])).toEqual([
      [1, "AssignPrivateIpAddresses", 200, "ok"],
      [2, "AssignPrivateIpAddresses", 400, "InvalidParameterValue"],
    ]);
    expect(calls[0]?.params).toMatchObject({
      Action: "AssignPrivateIpAddresses",
      NetworkInterfaceId: "eni-0n1multus",
      "PrivateIpAddress.1": "203.0.113.100",
    });
    expect(calls[0]?.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Date(calls[0]?.time ?? "").getTime()).not.toBeNaN();
    expect((await fetch(`${sim.controlEndpoint}/calls`, { method: "DELETE" })).status).toBe(204);
    expect(sim.calls()).toEqual([]);
    await ec2.send(new DescribeSubnetsCommand({}));
    expect(sim.calls().map((c) => c.seq)).toEqual([3]);
  });

  it("PUT /faults merges into the current faults and GET /faults returns them", async () => {
    const put = (body: unknown) =>
      fetch(`${sim.controlEndpoint}/faults`, { method: "PUT", body: JSON.stringify(body) });
    const first = await put({ deny: ["DescribeSubnets"] });
    expect(first.status).toBe(200);
    await put({ ec2LatencyMs: 5 });
    expect(await (await fetch(`${sim.controlEndpoint}/faults`)).json()).toEqual({
      throttleScale: 1,
      failNext: [],
      deny: ["DescribeSubnets"],
      ec2LatencyMs: 5,
      imdsLatencyMs: 0,
      imdsTokenHang: false,
      imdsDisabled: false,
      staleReadsMs: 0,
      kubeRefuseConnections: false,
      kubeFreeze: false,
      kubeExpireWatchResume: 0,
      kubeErrorStatus: null,
      kubeLatencyMs: 0,
      kubeHangVerbs: [],
    });
    expect((await ec2Failure(ec2.send(new DescribeSubnetsCommand({})))).code).toBe("UnauthorizedOperation");
  });

  it("PUT /faults refuses an unknown or mistyped field with 400 naming it", async () => {
    const response = await fetch(`${sim.controlEndpoint}/faults`, {
      method: "PUT",
      body: JSON.stringify({ throttleScale: "lots" }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toContain("throttleScale");
    const typo = await fetch(`${sim.controlEndpoint}/faults`, {
      method: "PUT",
      body: '{"imdsDisabld":true}',
    });
    expect(typo.status).toBe(400);
    expect((await fetch(`${sim.controlEndpoint}/nope`)).status).toBe(404);
  });

  it("takes initial faults from the world file", async () => {
    await stopWithEc2(sim, ec2);
    ({ sim, ec2 } = await startWithEc2({ ...world, faults: { deny: ["DescribeSubnets"] } }));
    expect((await ec2Failure(ec2.send(new DescribeSubnetsCommand({})))).code).toBe("UnauthorizedOperation");
  });
});
