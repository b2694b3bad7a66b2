/**
 * The sidecar's Elastic IPs in-process: real IMDS client and EC2 adapter against the simulator on 127.0.0.1,
 * pod interfaces the test sets. Every test checks the simulator's state and call log; the built binary in
 * namespaces is covered by sidecar-elastic-ips-e2e.test.ts.
 */
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import { systemClock } from "../src/eni/process/clock.js";
import type { ElasticIpMapping } from "../src/eni/types.js";
import { SidecarMetrics } from "../src/sidecar/metrics.js";
import { Sidecar, type SidecarOptions } from "../src/sidecar/sidecar.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { ScriptedInterfaces } from "./helpers/scripted-interfaces.js";
import { ENI, floatingPairWorld, MAC, NODE1, NODE2 } from "./helpers/worlds.js";

const FLOAT = "198.51.100.80";
const WEB = "eipalloc-0123456789abcdef0";
const MAPPING: ElasticIpMapping = { address: FLOAT, allocationId: WEB };
const unassociated = [{ allocationId: WEB, publicIp: "203.0.113.10" }];

interface Pod {
  readonly sidecar: Sidecar;
  readonly interfaces: ScriptedInterfaces;
  readonly metrics: SidecarMetrics;
  readonly logs: Record<string, unknown>[];
}

let sim: SimulatorHandle | undefined;
const pods: Pod[] = [];

afterEach(async () => {
  for (const pod of pods.splice(0)) await pod.sidecar.shutdown({ graceMs: 5000, releaseOnExit: false });
  await sim?.close();
  sim = undefined;
});

async function simulator(options: Parameters<typeof floatingPairWorld>[0]): Promise<SimulatorHandle> {
  sim = await startSimulator(parseWorld(floatingPairWorld(options)));
  return sim;
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
  const interfaces = new ScriptedInterfaces([{ name: "net1", mac, addresses }]);
  const endpoint = s.imdsEndpoints[instanceId];
  if (endpoint === undefined) throw new Error(`no IMDS for ${instanceId}`);
  const sidecar = new Sidecar({
    deps: {
      imds: new ImdsClient({ endpoint, requestTimeoutMs: 2000, clock: systemClock }),
      ec2: createEc2Api({
        region: "us-east-1",
        endpoint: s.ec2Endpoint,
        credentials: { accessKeyId: "AKIDSIMULATOR", secretAccessKey: "simulator" },
        logger,
        retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 50 },
        observer: metrics.ec2Observer,
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
    releaseSettleMs: 50,
    pollIntervalMs: 10,
    resyncIntervalMs: 60_000,
    driftCheckIntervalMs: 100,
    episodeCheckIntervalMs: 50,
    http: { host: "127.0.0.1", port: 0 },
    repairBackoff: { baseMs: 300, maxMs: 1200 },
    failureBackoff: { baseMs: 50, maxMs: 200 },
    elasticIpBackoff: { baseMs: 100, maxMs: 400 },
    preloadEc2: false,
    elasticIps: [MAPPING],
    ...options,
  });
  await sidecar.start();
  const pod: Pod = { sidecar, interfaces, metrics, logs };
  sidecar.run().catch((error: unknown) => logs.push({ msg: `startup failed: ${String(error)}` }));
  pods.push(pod);
  if (options.wait ?? true) await eventually(async () => (await readyz(pod)).status === 200, "pod ready");
  return pod;
}

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function readyz(pod: Pod): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${pod.sidecar.http?.port}/readyz`);
  return { status: response.status, body: await response.text() };
}

async function metric(pod: Pod, line: string): Promise<number> {
  const found = (await pod.metrics.text()).split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? Number.NaN : Number(found.slice(line.length + 1));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const setInterfaces = (pod: Pod, addresses: string[]) => {
  pod.interfaces.current = [{ ...(pod.interfaces.current[0] ?? { name: "net1", mac: "" }), addresses }];
};
const where = (s: SimulatorHandle) => {
  const eip = s.state().addresses.find((a) => a.allocationId === WEB);
  return eip?.eniId === null ? undefined : { eniId: eip?.eniId, privateIp: eip?.privateIp };
};
const count = (s: SimulatorHandle, action: string) => s.calls().filter((c) => c.action === action).length;
const associations = (s: SimulatorHandle) =>
  s.calls().filter((c) => c.action === "AssociateAddress" && c.outcome === "ok");

describe("the sidecar keeps an Elastic IP on the floating address our ENI holds", () => {
  it("associates it at startup; /readyz waits for it and lists it; the metrics count it", async () => {
    const s = await simulator({ elasticIps: unassociated });
    const a = await startPod(s, NODE1, MAC.node1A1, [FLOAT]);
    expect(where(s)).toEqual({ eniId: ENI.node1A1, privateIp: FLOAT });
    const probe = await readyz(a);
    expect(probe.body).toContain(`${FLOAT} on ${ENI.node1A1}: Elastic IP ${WEB} (203.0.113.10) associated`);
    expect(associations(s).map((c) => c.params.AllowReassociation)).toEqual(["false"]);
    expect(await metric(a, "multus_ipmgr_elastic_ip_associations_total")).toBe(1);
    expect(await metric(a, "multus_ipmgr_elastic_ip_follow_seconds_count")).toBe(1);
    expect(await metric(a, "multus_ipmgr_elastic_ips_not_associated")).toBe(0);
  });

  it("failover with reassignment: the Elastic IP follows the address with no Elastic IP write", async () => {
    const s = await simulator({ elasticIps: unassociated });
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT]);
    const b = await startPod(s, NODE2, MAC.node2A1, ["198.51.100.90"]);
    s.clearCalls();
    // The standby takes the address while the active one still holds it: AllowReassignment moves it, and
    // the association with it. The old holder's release then finds its ENI without the address.
    setInterfaces(b, ["198.51.100.90", FLOAT]);
    await eventually(() => where(s)?.eniId === ENI.node2A1, "the Elastic IP on B's ENI");
    setInterfaces(a, ["198.51.100.70"]);
    await eventually(
      async () => (await readyz(b)).body.includes(`${FLOAT} on ${ENI.node2A1}: Elastic IP ${WEB}`),
      "B checked it",
    );
    await sleep(300);
    expect(count(s, "AssociateAddress")).toBe(0);
    expect(count(s, "DescribeAddresses")).toBe(1);
    expect(count(s, "UnassignPrivateIpAddresses")).toBe(0);
    expect((await readyz(a)).body).toContain(`${FLOAT}: not held by our ENI; Elastic IP ${WEB}`);
    expect(await metric(b, "multus_ipmgr_elastic_ip_follow_seconds_count")).toBe(1);
  });

  it("failover where the old holder released first: the new holder associates it again", async () => {
    const s = await simulator({ elasticIps: unassociated });
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70", FLOAT]);
    const b = await startPod(s, NODE2, MAC.node2A1, ["198.51.100.90"]);
    setInterfaces(a, ["198.51.100.70"]);
    await eventually(() => where(s) === undefined, "the release dropped the association");
    s.clearCalls();
    setInterfaces(b, ["198.51.100.90", FLOAT]);
    await eventually(() => where(s)?.eniId === ENI.node2A1, "associated with B's ENI");
    await eventually(async () => (await readyz(b)).status === 200, "B ready");
    // The assign, the check, what sits on the address, the association, its confirmation.
    expect(s.calls().map((c) => c.action)).toEqual([
      "AssignPrivateIpAddresses",
      "DescribeAddresses",
      "DescribeAddresses",
      "AssociateAddress",
      "DescribeAddresses",
    ]);
    expect(await metric(b, "multus_ipmgr_elastic_ip_associations_total")).toBe(1);
  });

  it("an allocation that does not exist: a clear sentence on /readyz, not ready, checks paced", async () => {
    const s = await simulator({});
    const a = await startPod(s, NODE1, MAC.node1A1, [FLOAT], { wait: false });
    await eventually(async () => (await readyz(a)).body.includes("does not exist"), "the problem on /readyz");
    const probe = await readyz(a);
    expect(probe.status).toBe(503);
    expect(probe.body).toContain(
      `${FLOAT} on ${ENI.node1A1}: Elastic IP ${WEB}, mapped to ${FLOAT} in IPMGR_ELASTIC_IPS, does not exist in this account and region; allocate one (aws ec2 allocate-address --domain vpc) and map its allocation id, or remove the mapping.`,
    );
    expect(await metric(a, "multus_ipmgr_elastic_ips_not_associated")).toBe(1);
    await sleep(1500);
    // 100 ms doubling to 400 ms: a handful of checks in 1.5 s, not one per loop turn; logged once.
    expect(count(s, "DescribeAddresses")).toBeLessThanOrEqual(8);
    expect(a.logs.filter((l) => String(l.msg).includes("does not exist"))).toHaveLength(1);
    expect(count(s, "AssociateAddress")).toBe(0);
  });

  it("a mapping for an address we do not carry: no Elastic IP call, ready", async () => {
    const s = await simulator({ elasticIps: unassociated });
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"]);
    await sleep(300);
    expect(count(s, "DescribeAddresses") + count(s, "AssociateAddress")).toBe(0);
    expect((await readyz(a)).body).toContain(
      `${FLOAT}: not held by our ENI; Elastic IP ${WEB} is left to the pod that holds it`,
    );
  });

  it("the standby never pulls the public address off the active pod's ENI", async () => {
    const s = await simulator({
      node2A1SecondaryIpv4s: [FLOAT],
      elasticIps: [{ ...unassociated[0], association: { eni: ENI.node2A1, privateIp: FLOAT } }],
    });
    // B's ENI holds the address and its Elastic IP; A, the standby, does not carry the address.
    const a = await startPod(s, NODE1, MAC.node1A1, ["198.51.100.70"]);
    // A wait to show that nothing happens: no association moves in 300 ms.
    await sleep(300);
    expect(where(s)).toEqual({ eniId: ENI.node2A1, privateIp: FLOAT });
    expect(count(s, "AssociateAddress")).toBe(0);
    // Ready again once a fresh observation is in: /readyz wants one at most driftCheckIntervalMs (100 ms)
    // old, which a loaded machine can miss at any one instant.
    await eventually(async () => (await readyz(a)).status === 200, "A ready");
  });

  it("an Elastic IP taken off behind our back comes back at the next check, then with backoff", async () => {
    const s = await simulator({ elasticIps: unassociated });
    await startPod(s, NODE1, MAC.node1A1, [FLOAT], { resyncIntervalMs: 200 });
    for (let i = 0; i < 3; i++) {
      const id = s.state().addresses[0]?.associationId ?? "";
      await fetch(s.ec2Endpoint, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          Action: "DisassociateAddress",
          Version: "2016-11-15",
          AssociationId: id,
        }),
      });
      await eventually(() => where(s)?.eniId === ENI.node1A1, `associated again (${i + 1})`, 5000);
    }
    const times = associations(s).map((c) => Date.parse(String(c.time)));
    expect(times).toHaveLength(4);
    // The 2nd association of this hold waits 100 ms or more after the first repair, the 3rd 200 ms.
    expect((times[3] ?? 0) - (times[2] ?? 0)).toBeGreaterThanOrEqual(200);
  });

  it("a missing ec2:AssociateAddress shows on /readyz and the sidecar stays up", async () => {
    const s = await simulator({ elasticIps: unassociated, faults: { deny: ["AssociateAddress"] } });
    const a = await startPod(s, NODE1, MAC.node1A1, [FLOAT], { wait: false });
    await eventually(
      async () => (await readyz(a)).body.includes("grant ec2:AssociateAddress"),
      "the denial on /readyz",
    );
    expect((await readyz(a)).status).toBe(503);
    s.setFaults({ deny: [] });
    await eventually(async () => (await readyz(a)).status === 200, "ready once allowed");
    expect(where(s)).toEqual({ eniId: ENI.node1A1, privateIp: FLOAT });
  });
});
