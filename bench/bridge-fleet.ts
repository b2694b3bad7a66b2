/**
 * 50 simulated nodes × 100 pods each appearing at once against one simulator (one account's token
 * buckets). 50 bridge processes do not fit on the bench's 2 cores, so the Bridge class runs in-process 50
 * times, each with the adapters `multus-ipmgr bridge` builds (its own IMDS endpoint, its own Kubernetes
 * client through the real @kubernetes/client-node, the shared EC2 endpoint) and the binary's default
 * settings (loadBridgeConfig on an empty environment: wave window, backoff, EC2 retries). The simulator
 * is the built `multus-ipmgr sim`, a process of its own, as EC2 and the API server are other machines: in
 * this process it would take the event loop of the 50 bridges for its 5,000 pod creations and 50 watches.
 *
 * The pods are created with one control request (an array: all at once, as the API server would hold them
 * after a scale-up); the clock starts when they all exist, and ends at the arrival of the last accepted
 * AssignIpv6Addresses in the simulator's call log (both on this machine's clock). The time the simulator
 * took to create them is printed beside.
 *
 * IPv6 pod addresses: 5,000 IPv4 addresses do not fit in the documentation ranges (one /24 per VPC), so the
 * pods carry addresses of 2001:db8:1::/64; AssignIpv6Addresses has the same bucket as
 * AssignPrivateIpAddresses (100 burst, 5 per second: src/sim/ec2 and docs/sim.md "Faults"). Each node is an
 * m5.4xlarge (30 addresses per ENI) with 4 Multus ENIs of 25 pods each, so the fewest calls the pods can
 * take is 4 per node, 200 in all, and the floor is (200 − 100) ÷ 5 = 20 s.
 */

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../src/eni/process/logger.js";
import type { SimCall } from "../src/sim/call-log.js";
import type { SimState } from "../src/sim/sim-state.js";
import { tempKubeconfig } from "../test/helpers/kube-proxy.js";
import { type SimReady, startSimProcess } from "../test/helpers/sim-process.js";
import { type FleetCall, startFleetBridge } from "./fleet-bridge.js";
import type { BenchResult } from "./result.js";

const NODES = 50;
const PODS_PER_NODE = 100;
const MULTUS_ENIS = 4;
const PER_ENI = 30;
const BURST = 100;
const REFILL_PER_SECOND = 5;
const RANGE6 = "2001:db8:1::/64";

const hex = (n: number) => n.toString(16).padStart(2, "0");
const nodeName = (n: number) => `node-${n}.ec2.internal`;
const instanceOf = (n: number) => `i-0fleet${hex(n)}`;
const macOf = (n: number, device: number) => `02:00:00:01:${hex(n)}:${hex(device)}`;
/** ENI primaries: 5 per node from 198.51.100.4 (250 of the /24's 251 usable addresses). */
const primaryOf = (n: number, device: number) => `198.51.100.${4 + n * (MULTUS_ENIS + 1) + device}`;
/** Past the subnet's first addresses, which AWS reserves. */
const addressOf = (n: number, i: number) => `2001:db8:1::1:${hex(n)}${hex(i)}`;
const deviceOf = (i: number) => 1 + (i % MULTUS_ENIS);

function fleetWorld() {
  return {
    region: "us-east-1",
    vpc: { id: "vpc-0fleet", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:1::/56" },
    subnets: [
      {
        id: "subnet-0fleet",
        cidr: "198.51.100.0/24",
        ipv6Cidr: RANGE6,
        availabilityZone: "us-east-1a",
      },
    ],
    instances: Array.from({ length: NODES }, (_, n) => ({
      id: instanceOf(n),
      instanceType: "m5.4xlarge",
      enis: Array.from({ length: MULTUS_ENIS + 1 }, (_, d) => ({
        id: `eni-0fleet${hex(n)}${hex(d)}`,
        mac: macOf(n, d),
        deviceIndex: d,
        subnet: "subnet-0fleet",
        primaryIpv4: primaryOf(n, d),
        ...(d === 0 ? {} : { tags: { "node.k8s.amazonaws.com/no_manage": "true" } }),
      })),
    })),
    kubernetes: {
      namespaces: ["cnf"],
      nodes: Array.from({ length: NODES }, (_, n) => ({ instance: instanceOf(n), name: nodeName(n) })),
      networkAttachmentDefinitions: Array.from({ length: MULTUS_ENIS }, (_, k) => ({
        namespace: "cnf",
        name: `multus-${k + 1}`,
        config: {
          cniVersion: "0.3.1",
          type: "ipvlan",
          master: `eth${k + 1}`,
          ipam: { type: "whereabouts", range: RANGE6 },
        },
      })),
      pods: [],
    },
  };
}

/** `multus-ipmgr sim` on a world (the fleet's by default), from dist/ (npm run bench builds it first). */
export async function startFleetSim(
  world: unknown = fleetWorld(),
): Promise<{ ready: SimReady; pid: number; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "ipmgr-bench-fleet-"));
  const worldFile = join(dir, "world.json");
  writeFileSync(worldFile, JSON.stringify(world));
  try {
    const sim = await startSimProcess(["--world", worldFile], "dist/multus-ipmgr.cjs");
    return {
      ready: sim.ready,
      pid: sim.child.pid ?? -1,
      async close() {
        await sim.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

export async function control<T>(sim: SimReady, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${sim.control}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`sim control ${method} ${path}: ${res.status} ${text}`);
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

function pod(n: number, i: number): Record<string, unknown> {
  const device = deviceOf(i);
  return {
    namespace: "cnf",
    name: `pod-${n}-${i}`,
    nodeName: nodeName(n),
    networkStatus: [
      { name: "aws-cni", interface: "eth0", ips: ["198.51.100.255"], default: true },
      { name: `cnf/multus-${device}`, interface: "net1", ips: [addressOf(n, i)], mac: macOf(n, device) },
    ],
  };
}

export async function benchBridgeFleet(): Promise<BenchResult[]> {
  const fleetSim = await startFleetSim();
  const sim = fleetSim.ready;
  const kubeconfig = await tempKubeconfig(sim.kubernetes ?? "");
  const logger = createLogger("silent");
  // One signal per bridge: each wave adds listeners to its signal.
  const stop: AbortController[] = [];
  const calls: FleetCall[] = [];
  const stops: (() => Promise<void>)[] = [];
  const loops: Promise<void>[] = [];
  try {
    for (let n = 0; n < NODES; n++) {
      const { bridge, close } = await startFleetBridge({
        sim,
        kubeconfig: kubeconfig.path,
        logger,
        nodeName: nodeName(n),
        instance: instanceOf(n),
        env: { IPMGR_ALLOWED_CIDRS: RANGE6, IPMGR_BRIDGE_RESERVATIONS: "off" },
        addressesPerEni: PER_ENI,
        calls,
      });
      const controller = new AbortController();
      stop.push(controller);
      loops.push(bridge.run(controller.signal));
      stops.push(close);
    }
    // The first waves (nothing to do) are over before the pods come.
    await new Promise((r) => setTimeout(r, 2_000));
    await control(sim, "DELETE", "/calls");
    calls.length = 0;
    const total = NODES * PODS_PER_NODE;
    const held = async () =>
      (await control<SimState>(sim, "GET", "/state")).enis
        .filter((e) => (e.deviceIndex ?? 0) > 0)
        .reduce((sum, e) => sum + e.ipv6s.length, 0);
    const pods = Array.from({ length: NODES * PODS_PER_NODE }, (_, k) =>
      pod(Math.floor(k / PODS_PER_NODE), k % PODS_PER_NODE),
    );
    const posted = Date.now();
    await control(sim, "POST", "/kubernetes/pods", pods);
    const started = Date.now();
    const deadline = started + 180_000;
    let count = await held();
    while (count < total && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      count = await held();
    }
    const all = count === total;
    const assigns = (await control<SimCall[]>(sim, "GET", "/calls")).filter(
      (c) => c.action === "AssignIpv6Addresses",
    );
    const accepted = assigns.filter((c) => c.outcome === "ok");
    const ok = accepted.length;
    const throttled = assigns.length - ok;
    const floor = Math.max(0, ok - BURST) / REFILL_PER_SECOND;
    const firstAt = ((assigns[0] === undefined ? started : Date.parse(assigns[0].time)) - started) / 1000;
    const lastAt = accepted.at(-1);
    const seconds = ((lastAt === undefined ? Date.now() : Date.parse(lastAt.time)) - started) / 1000;
    const gaveUp = calls.filter((c) => c.outcome === "error").length;
    return [
      {
        name: `bridge: ${NODES} nodes x ${PODS_PER_NODE} pods at once, one simulator (in-process Bridge x ${NODES}, IPv6, ${MULTUS_ENIS} Multus ENIs per node): addresses EC2 holds`,
        value: count,
        unit: "addresses",
        target: `all ${total}`,
        ok: all,
      },
      {
        name: `bridge: that fleet's AssignIpv6Addresses: ${ok} ok, ${throttled} throttled; ${gaveUp} calls failed after the SDK's retries and ran again in their bridge's next wave (none abandoned)`,
        value: ok,
        unit: "calls",
        target: `>= ${NODES * MULTUS_ENIS} (one per Multus ENI)`,
        ok: ok >= NODES * MULTUS_ENIS,
      },
      {
        name: `bridge: that fleet's time from all pods existing (the simulator took ${((started - posted) / 1000).toFixed(2)} s to create them) until EC2 holds all, first call at ${firstAt.toFixed(2)} s; floor (${ok} calls - ${BURST} burst) / ${REFILL_PER_SECOND} per s = ${floor.toFixed(1)} s`,
        value: all ? seconds : Number.NaN,
        unit: "s",
        target: `<= ${(floor * 1.2).toFixed(1)} s (floor + 20 %)`,
        ok: all && seconds <= floor * 1.2,
      },
    ];
  } finally {
    for (const controller of stop) controller.abort();
    await Promise.allSettled(loops);
    await Promise.allSettled(stops.map((s) => s()));
    await fleetSim.close();
    kubeconfig.remove();
  }
}
