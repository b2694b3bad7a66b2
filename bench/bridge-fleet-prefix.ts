/**
 * The fleet in prefix mode: 50 nodes × 100 pods whose Multus ENI holds its whereabouts node slice as a
 * delegated IPv6 /80 prefix, each node's bridge in-process (as in bridge-fleet.ts: the adapters
 * `multus-ipmgr bridge` builds, its default settings, IPMGR_BRIDGE_PREFIX_MODE=defer) against one
 * `multus-ipmgr sim` process, whose stand-in for whereabouts' node-slice controller gives each node a slice.
 * The pods (addresses from their node's slice, in their network-status) are created first; the clock starts
 * when they all exist and the bridges' wave loops start (the nodes join), and stops at the last accepted
 * prefix assign, when every pod address lies in a prefix its node's Multus ENI holds.
 *
 * IPv6, because 5,000 IPv4 addresses in /28 slices do not fit the IPv4 documentation ranges, the only ones
 * the bench may use. whereabouts' own controller cuts IPv4 ranges only; the simulator's cuts IPv6 too
 * (docs/simulator-node-slices.md), and the bridge holds an IPv6 slice as it holds an IPv4 one.
 */
import type { Ec2CallRecord } from "../src/eni/ec2-api.js";
import { createLogger } from "../src/eni/process/logger.js";
import type { Bridge } from "../src/ipam-whereabouts-bridge/bridge.js";
import type { SimCall } from "../src/sim/call-log.js";
import type { SimState } from "../src/sim/sim-state.js";
import { tempKubeconfig } from "../test/helpers/kube-proxy.js";
import type { SimReady } from "../test/helpers/sim-process.js";
import { control, startFleetSim } from "./bridge-fleet.js";
import { startFleetBridge } from "./fleet-bridge.js";
import type { BenchResult } from "./result.js";

const NODES = 50;
const PODS_PER_NODE = 100;
const PER_ENI = 30;
const SUBNET_V6 = "2001:db8:300:1::/64";
/** 64 slices of /80: 2001:db8:300:1:100::/80 to 2001:db8:300:1:13f::/80. */
const RANGE = "2001:db8:300:1:100::/74";
const CALLS_PER_NODE_TARGET = 2;
/** Pods of each node replaced after the fleet is routed: 1,000 in all. */
const REPLACED_PER_NODE = 20;
const SECONDS_TARGET = 3;

const hex = (n: number) => n.toString(16).padStart(2, "0");
const nodeName = (n: number) => `node-${hex(n)}.ec2.internal`;
const instanceOf = (n: number) => `i-0slice${hex(n)}`;
const eniOf = (n: number, device: number) => `eni-0slice${hex(n)}${hex(device)}`;
const macOf = (n: number, device: number) => `02:00:00:02:${hex(n)}:${hex(device)}`;
/** Primaries from 198.51.100.4, past the four addresses AWS keeps: two a node. */
const primaryOf = (n: number, device: number) => `198.51.100.${4 + 2 * n + device}`;
/** The slice whereabouts' node-slice controller gives node n: the first free one, nodes in name order. */
const sliceOf = (n: number) => `2001:db8:300:1:${(0x100 + n).toString(16)}::/80`;
const addressOf = (n: number, i: number) =>
  `2001:db8:300:1:${(0x100 + n).toString(16)}::${(i + 1).toString(16)}`;

function prefixWorld() {
  return {
    region: "us-east-1",
    vpc: { id: "vpc-0slice", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:300::/56" },
    subnets: [
      { id: "subnet-0slice", cidr: "198.51.100.0/24", ipv6Cidr: SUBNET_V6, availabilityZone: "us-east-1a" },
    ],
    instances: Array.from({ length: NODES }, (_, n) => ({
      id: instanceOf(n),
      instanceType: "m5.4xlarge",
      enis: [0, 1].map((d) => ({
        id: eniOf(n, d),
        mac: macOf(n, d),
        deviceIndex: d,
        subnet: "subnet-0slice",
        primaryIpv4: primaryOf(n, d),
        ...(d === 0 ? {} : { tags: { "node.k8s.amazonaws.com/no_manage": "true" } }),
      })),
    })),
    kubernetes: {
      namespaces: ["cnf"],
      nodes: Array.from({ length: NODES }, (_, n) => ({ instance: instanceOf(n), name: nodeName(n) })),
      networkAttachmentDefinitions: [
        {
          namespace: "kube-system",
          name: "slices",
          config: {
            cniVersion: "0.3.1",
            name: "slices",
            type: "ipvlan",
            master: "eth1",
            ipam: { type: "whereabouts", network_name: "slices", range: RANGE, node_slice_size: "/80" },
          },
        },
      ],
      pods: [],
    },
  };
}

function pod(n: number, i: number): Record<string, unknown> {
  return {
    namespace: "cnf",
    name: `pod-${n}-${i}`,
    nodeName: nodeName(n),
    networkStatus: [
      { name: "aws-cni", interface: "eth0", ips: [primaryOf(n, 0)], default: true },
      { name: "kube-system/slices", interface: "net1", ips: [addressOf(n, i)], mac: macOf(n, 1) },
    ],
  };
}

export async function benchBridgeFleetPrefix(): Promise<BenchResult[]> {
  const fleetSim = await startFleetSim(prefixWorld());
  const sim = fleetSim.ready;
  const kubeconfig = await tempKubeconfig(sim.kubernetes ?? "");
  const logger = createLogger("silent");
  const stop: AbortController[] = [];
  const calls: Ec2CallRecord[] = [];
  const stops: (() => Promise<void>)[] = [];
  const loops: Promise<void>[] = [];
  try {
    const bridges: Bridge[] = [];
    for (let n = 0; n < NODES; n++) {
      const { bridge, close } = await startFleetBridge({
        sim,
        kubeconfig: kubeconfig.path,
        logger,
        nodeName: nodeName(n),
        instance: instanceOf(n),
        env: {
          IPMGR_ALLOWED_CIDRS: RANGE,
          IPMGR_BRIDGE_RESERVATIONS: "off",
          IPMGR_BRIDGE_PREFIX_MODE: "defer",
        },
        addressesPerEni: PER_ENI,
        calls,
        eth1Mac: macOf(n, 1),
      });
      bridges.push(bridge);
      stops.push(close);
    }
    // The pods' addresses below assume node n holds slice n: check it against the simulator's pool.
    const pools = (await control<SimState>(sim, "GET", "/state")).kubernetes?.nodeSlicePools ?? [];
    const allocations = (pools[0]?.status as { allocations?: { nodeName: string; sliceRange: string }[] })
      ?.allocations;
    for (let n = 0; n < NODES; n++) {
      const held = allocations?.find((a) => a.nodeName === nodeName(n))?.sliceRange;
      if (held !== sliceOf(n)) throw new Error(`bench: ${nodeName(n)} has slice ${held}, not ${sliceOf(n)}`);
    }
    // The pods first, as in bridge-fleet.ts the clock starts once they all exist: the simulator is one
    // process for the API server and every node's IMDS, and while it creates 5,000 pods (about 1 s) the
    // nodes' IMDS would wait behind it, which on EC2 they never do.
    const posted = Date.now();
    await control(
      sim,
      "POST",
      "/kubernetes/pods",
      Array.from({ length: NODES * PODS_PER_NODE }, (_, k) =>
        pod(Math.floor(k / PODS_PER_NODE), k % PODS_PER_NODE),
      ),
    );
    const createSeconds = (Date.now() - posted) / 1000;
    await control(sim, "DELETE", "/calls");
    calls.length = 0;
    const started = Date.now();
    for (const bridge of bridges) {
      const controller = new AbortController();
      stop.push(controller);
      loops.push(bridge.run(controller.signal));
    }
    const total = NODES * PODS_PER_NODE;
    const routed = async () => {
      const enis = (await control<SimState>(sim, "GET", "/state")).enis;
      let count = 0;
      for (let n = 0; n < NODES; n++) {
        const prefixes = enis.find((e) => e.eniId === eniOf(n, 1))?.ipv6Prefixes ?? [];
        if (prefixes.includes(sliceOf(n))) count += PODS_PER_NODE;
      }
      return count;
    };
    // Waits on the call log (small), not on GET /state, whose 5,000 pods would keep the simulator busy;
    // the count that decides is read from the ENIs once, at the end.
    const assigned = async () =>
      (await control<SimCall[]>(sim, "GET", "/calls")).filter(
        (c) => c.action === "AssignIpv6Addresses" && c.outcome === "ok",
      ).length;
    const deadline = started + 60_000;
    while ((await assigned()) < NODES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    const count = await routed();
    const all = count === total;
    const mutating = (await control<SimCall[]>(sim, "GET", "/calls")).filter(
      (c) => c.action.startsWith("Assign") || c.action.startsWith("Unassign"),
    );
    const accepted = mutating.filter((c) => c.outcome === "ok");
    const firstAt = accepted[0] === undefined ? Number.NaN : (Date.parse(accepted[0].time) - started) / 1000;
    const lastAt = accepted.at(-1);
    const seconds = ((lastAt === undefined ? Date.now() : Date.parse(lastAt.time)) - started) / 1000;
    const perNode = accepted.length / NODES;
    const churn = all ? await replacePods(sim, bridges) : undefined;
    return [
      {
        name: `bridge, prefix mode: ${NODES} nodes x ${PODS_PER_NODE} pods (node slices /80 of ${RANGE}): pod addresses inside a prefix their ENI holds`,
        value: count,
        unit: "addresses",
        target: `all ${total}`,
        ok: all,
      },
      {
        name: `bridge, prefix mode: that fleet's mutating EC2 calls per node (${accepted.length} accepted, ${mutating.length - accepted.length} refused or throttled: ${[...new Set(accepted.map((c) => c.action))].join(", ") || "none"})`,
        value: perNode,
        unit: "calls a node",
        target: `<= ${CALLS_PER_NODE_TARGET} per node`,
        ok: all && perNode <= CALLS_PER_NODE_TARGET,
      },
      {
        name: `bridge, prefix mode: that fleet's time from the bridges' start, its pods existing (the simulator took ${createSeconds.toFixed(2)} s to create them), until every pod address is routed (last accepted call; the first at ${firstAt.toFixed(2)} s)`,
        value: all ? seconds : Number.NaN,
        unit: "s",
        target: `<= ${SECONDS_TARGET} s`,
        ok: all && seconds <= SECONDS_TARGET,
      },
      {
        name: `bridge, prefix mode: that fleet's mutating EC2 calls while ${REPLACED_PER_NODE * NODES} of its pods are replaced (${REPLACED_PER_NODE} a node deleted, then as many created with new addresses of the node's slice; every bridge's wave counted them held)${churn === undefined ? ": not run, the fleet was not routed" : ` in ${churn.seconds.toFixed(1)} s`}`,
        value: churn?.calls ?? Number.NaN,
        unit: "calls",
        target: "0",
        ok: churn?.calls === 0,
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

/**
 * Replaces REPLACED_PER_NODE pods of every node (deleted, then created anew with addresses of the node's
 * slice not used yet), waiting each time until every bridge has run a wave that counts them; returns the
 * mutating EC2 calls the simulator received meanwhile (prefix mode: none) and how long it took.
 */
async function replacePods(
  sim: SimReady,
  bridges: readonly Bridge[],
): Promise<{ calls: number; seconds: number }> {
  await control(sim, "DELETE", "/calls");
  const begun = Date.now();
  const everyWave = async (wanted: number, since: number) => {
    const deadline = Date.now() + 60_000;
    const done = () =>
      bridges.every(
        (b) =>
          b.report !== undefined &&
          b.report.at >= since &&
          b.report.wanted === wanted &&
          b.report.held === wanted,
      );
    while (!done()) {
      if (Date.now() > deadline)
        throw new Error(`bench: the bridges never counted ${wanted} pod addresses held`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  let since = Date.now();
  for (let n = 0; n < NODES; n++)
    for (let i = 0; i < REPLACED_PER_NODE; i++)
      await control(sim, "DELETE", `/kubernetes/pods/cnf/pod-${n}-${i}`);
  await everyWave(PODS_PER_NODE - REPLACED_PER_NODE, since);
  since = Date.now();
  await control(
    sim,
    "POST",
    "/kubernetes/pods",
    Array.from({ length: NODES * REPLACED_PER_NODE }, (_, k) =>
      pod(Math.floor(k / REPLACED_PER_NODE), PODS_PER_NODE + (k % REPLACED_PER_NODE)),
    ),
  );
  await everyWave(PODS_PER_NODE, since);
  const calls = (await control<SimCall[]>(sim, "GET", "/calls")).filter(
    (c) => c.action.startsWith("Assign") || c.action.startsWith("Unassign"),
  ).length;
  return { calls, seconds: (Date.now() - begun) / 1000 };
}
