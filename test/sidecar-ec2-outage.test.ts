/**
 * The sidecar riding out an EC2 outage, with ONE logger for the EC2 adapter and the loop, as in the binary:
 * "A failed reconcile is logged again only if the error changes" must hold for the whole log, the EC2
 * wrapper's lines included. Real IMDS client and EC2 adapter against the simulator on 127.0.0.1.
 */
import { pino } from "pino";
import { afterEach, expect, it } from "vitest";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import type { InterfaceSource } from "../src/eni/interface-source.js";
import { systemClock } from "../src/eni/process/clock.js";
import type { PodInterface } from "../src/eni/types.js";
import { SidecarMetrics } from "../src/sidecar/metrics.js";
import { Sidecar } from "../src/sidecar/sidecar.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { credentials } from "./helpers/sim-fixtures.js";
import { ENI, floatingPairWorld, MAC, NODE1 } from "./helpers/worlds.js";

const FLOAT4 = "198.51.100.80";

class TestInterfaces implements InterfaceSource {
  #addresses: string[];
  constructor(addresses: string[]) {
    this.#addresses = addresses;
  }
  async read(): Promise<PodInterface[]> {
    return [{ name: "net1", mac: MAC.node1A1, addresses: [...this.#addresses] }];
  }
  add(address: string): void {
    this.#addresses = [...this.#addresses, address];
  }
}

let sim: SimulatorHandle | undefined;
let sidecar: Sidecar | undefined;
let running: Promise<void> | undefined;
afterEach(async () => {
  await sidecar?.shutdown({ graceMs: 5000, releaseOnExit: false });
  await running;
  sidecar = undefined;
  running = undefined;
  await sim?.close();
  sim = undefined;
});

async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function metric(metrics: SidecarMetrics, line: string): Promise<number> {
  const found = (await metrics.text()).split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? Number.NaN : Number(found.slice(line.length + 1));
}

it("logs a reconcile that keeps failing through an EC2 outage once, with no warn or error line per EC2 attempt", async () => {
  const s = await startSimulator(parseWorld(floatingPairWorld()));
  sim = s;
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const metrics = new SidecarMetrics();
  const interfaces = new TestInterfaces(["198.51.100.70"]);
  const endpoint = s.imdsEndpoints[NODE1];
  if (endpoint === undefined) throw new Error(`no IMDS for ${NODE1}`);
  const pod = new Sidecar({
    deps: {
      imds: new ImdsClient({ endpoint, requestTimeoutMs: 2000, clock: systemClock }),
      ec2: createEc2Api({
        region: "us-east-1",
        endpoint: s.ec2Endpoint,
        credentials,
        logger,
        observer: metrics.ec2Observer,
        retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
      }),
      interfaces,
      clock: systemClock,
      logger,
    },
    metrics,
    policy: { allowedCidrs: ["198.51.100.64/26"] },
    waitForAddressesMs: 5000,
    confirm: { timeoutMs: 5000, intervalMs: 10 },
    releaseOnRemove: true,
    pollIntervalMs: 10,
    resyncIntervalMs: 60_000,
    driftCheckIntervalMs: 100,
    http: { host: "127.0.0.1", port: 0 },
    failureBackoff: { baseMs: 20, maxMs: 50 },
    preloadEc2: false,
  });
  sidecar = pod;
  await pod.start();
  running = pod.run();
  await eventually(async () => {
    const response = await fetch(`http://127.0.0.1:${pod.http?.port}/readyz`);
    return response.status === 200;
  }, "ready");

  const before = lines.length;
  s.setFaults({
    failNext: [{ action: "AssignPrivateIpAddresses", code: "ServiceUnavailable", status: 503, count: 1_000 }],
  });
  interfaces.add(FLOAT4);
  await eventually(
    async () => (await metric(metrics, 'multus_ipmgr_reconciles_total{outcome="error"}')) >= 3,
    "three failed reconciles",
  );
  s.setFaults({ failNext: [] });
  await eventually(
    () => s.state().enis.some((e) => e.eniId === ENI.node1A1 && e.ipv4s.includes(FLOAT4)),
    "assigned",
  );
  await eventually(() => lines.some((l) => l.msg === "reconcile works again"), "recovery logged");

  const during = lines.slice(before);
  const failedAttempts = s.calls().filter((c) => c.outcome === "ServiceUnavailable").length;
  expect(failedAttempts).toBeGreaterThanOrEqual(9);
  expect(during.filter((l) => (l.level as number) >= 40).map((l) => l.msg)).toEqual([
    "reconcile failed; retrying with backoff (logged again only if the error changes)",
  ]);
  // Every attempt is still in the debug log, with its fields.
  expect(
    during.filter((l) => l.msg === "EC2 AssignPrivateIpAddresses failed, retrying").length,
  ).toBeGreaterThan(0);
  expect(during.filter((l) => l.msg === "EC2 AssignPrivateIpAddresses failed")[0]).toMatchObject({
    level: 20,
    operation: "AssignPrivateIpAddresses",
    eniId: ENI.node1A1,
    addresses: [FLOAT4],
    errorCode: "ServiceUnavailable",
    kind: "unavailable",
    attempts: 3,
  });
});
