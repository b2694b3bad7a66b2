/**
 * Elastic IPs that follow a floating address, in figures: the built sidecar in two pod namespaces on two
 * simulated nodes, with IPMGR_ELASTIC_IPS mapping the floating address and the sidecars' default timings.
 * - failover with the old holder releasing first (`ip addr del`, then EC2 unassigns the address and drops
 *   its association): from `ip addr add` on the new holder to the simulator recording the accepted
 *   AssociateAddress for the new holder's ENI, p50 and p99 of IPMGR_BENCH_EIP_MOVES (default 30) moves,
 *   alternating direction;
 * - failover with reassignment (the new holder takes the address while the old one still holds it, so the
 *   association moves with it): Elastic IP writes (AssociateAddress, DisassociateAddress) per failover, the
 *   most over IPMGR_BENCH_EIP_REASSIGN_MOVES (default 10) moves, and DescribeAddresses reads per failover.
 */
import { Lab, type SimCallView } from "../test/helpers/netns.js";
import { ENI, floatingPairWorld, MAC, NODE1, NODE2 } from "../test/helpers/worlds.js";
import { type BenchResult, percentile } from "./result.js";

const FLOAT = "198.51.100.80";
const WEB = "eipalloc-0123456789abcdef0";
const ENI_OF = { a: ENI.node1A1, b: ENI.node2A1 } as const;
type Pod = keyof typeof ENI_OF;
const MOVES = Number(process.env.IPMGR_BENCH_EIP_MOVES ?? 30);
const REASSIGN_MOVES = Number(process.env.IPMGR_BENCH_EIP_REASSIGN_MOVES ?? 10);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: never happened: ${what}`);
    await sleep(5);
  }
}

async function readyz(lab: Lab, pod: Pod): Promise<{ status: number; body: string }> {
  return lab.podGet(pod, "http://127.0.0.1:9180/readyz");
}

/** Who holds the address, and where its Elastic IP points, in one read. */
async function where(lab: Lab): Promise<{ holder: string | undefined; eip: string | undefined }> {
  const state = await lab.state();
  return {
    holder: state.enis.find((e) => e.ipv4s.includes(FLOAT))?.eniId,
    eip: state.addresses.find((a) => a.allocationId === WEB)?.eniId ?? undefined,
  };
}

/** The pair, A carrying the address with its Elastic IP; both sidecars ready. */
async function pairLab(): Promise<Lab> {
  const lab = await Lab.start(
    floatingPairWorld({
      node1A1SecondaryIpv4s: [FLOAT],
      elasticIps: [
        { allocationId: WEB, publicIp: "203.0.113.10", association: { eni: ENI.node1A1, privateIp: FLOAT } },
      ],
    }),
    [
      {
        name: "a",
        instanceId: NODE1,
        interfaces: [{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.70/25", `${FLOAT}/25`] }],
      },
      {
        name: "b",
        instanceId: NODE2,
        interfaces: [{ name: "net1", mac: MAC.node2A1, addresses: ["198.51.100.90/25"] }],
      },
    ],
  );
  for (const pod of ["a", "b"] as const) {
    lab.spawn(
      pod,
      ["sidecar"],
      lab.env(pod, {
        IPMGR_ALLOWED_CIDRS: "198.51.100.64/26",
        IPMGR_ELASTIC_IPS: `${FLOAT}=${WEB}`,
        IPMGR_LOG_LEVEL: "warn",
      }),
    );
  }
  try {
    await until(
      async () => (await readyz(lab, "a")).status === 200 && (await readyz(lab, "b")).status === 200,
      "both ready",
      60_000,
    );
  } catch (error) {
    await lab.close();
    throw error;
  }
  return lab;
}

/** The new holder's sidecar has confirmed the Elastic IP on its ENI. */
async function confirmedBy(lab: Lab, pod: Pod): Promise<boolean> {
  const probe = await readyz(lab, pod);
  return probe.status === 200 && probe.body.includes(`${FLOAT} on ${ENI_OF[pod]}: Elastic IP ${WEB}`);
}

async function releasedFirst(): Promise<number[]> {
  const lab = await pairLab();
  const latencies: number[] = [];
  try {
    let holder: Pod = "a";
    for (let i = 0; i < MOVES; i++) {
      const standby: Pod = holder === "a" ? "b" : "a";
      await lab.removeAddress(holder, "net1", `${FLOAT}/25`);
      await until(
        async () => {
          const now = await where(lab);
          return now.holder === undefined && now.eip === undefined;
        },
        `the old holder released the address (move ${i + 1})`,
      );
      const seq = (await lab.calls()).at(-1)?.seq ?? 0;
      const started = Date.now();
      await lab.addAddress(standby, "net1", `${FLOAT}/25`);
      let associate: SimCallView | undefined;
      await until(
        async () => {
          associate = (await lab.calls()).find(
            (c) =>
              c.seq > seq &&
              c.action === "AssociateAddress" &&
              c.outcome === "ok" &&
              c.params.NetworkInterfaceId === ENI_OF[standby],
          );
          return associate !== undefined;
        },
        `the Elastic IP associated with the new holder (move ${i + 1})`,
      );
      latencies.push(Date.parse(String(associate?.time)) - started);
      await until(() => confirmedBy(lab, standby), `${standby} ready after move ${i + 1}`);
      holder = standby;
    }
    return latencies;
  } finally {
    await lab.close();
  }
}

async function reassigned(): Promise<{ writes: number[]; reads: number[] }> {
  const lab = await pairLab();
  const writes: number[] = [];
  const reads: number[] = [];
  try {
    let holder: Pod = "a";
    for (let i = 0; i < REASSIGN_MOVES; i++) {
      const standby: Pod = holder === "a" ? "b" : "a";
      const seq = (await lab.calls()).at(-1)?.seq ?? 0;
      await lab.addAddress(standby, "net1", `${FLOAT}/25`);
      await until(
        async () => (await where(lab)).eip === ENI_OF[standby],
        `the Elastic IP moved (move ${i + 1})`,
      );
      await lab.removeAddress(holder, "net1", `${FLOAT}/25`);
      await until(() => confirmedBy(lab, standby), `${standby} confirmed it (move ${i + 1})`);
      // The old holder's release settles (250 ms) and finds its ENI without the address.
      await sleep(600);
      const calls = (await lab.calls()).filter((c) => c.seq > seq);
      writes.push(
        calls.filter((c) => c.action === "AssociateAddress" || c.action === "DisassociateAddress").length,
      );
      reads.push(calls.filter((c) => c.action === "DescribeAddresses").length);
      holder = standby;
    }
    return { writes, reads };
  } finally {
    await lab.close();
  }
}

export async function benchElasticIps(): Promise<BenchResult[]> {
  const latencies = await releasedFirst();
  const p99 = percentile(latencies, 99);
  const { writes, reads } = await reassigned();
  const mostWrites = Math.max(...writes);
  return [
    {
      name: `sidecar Elastic IP, old holder released first: ip addr add to AssociateAddress accepted, p50 (${MOVES} moves)`,
      value: percentile(latencies, 50),
      unit: "ms",
      target: "informational",
      ok: true,
    },
    {
      name: `sidecar Elastic IP, old holder released first: ip addr add to AssociateAddress accepted, p99 (${MOVES} moves)`,
      value: p99,
      unit: "ms",
      target: "<= 200 ms",
      ok: p99 <= 200,
    },
    {
      name: `sidecar Elastic IP writes per failover when the association moved with the address, most of ${REASSIGN_MOVES}`,
      value: mostWrites,
      unit: "calls",
      target: "0 extra calls for the Elastic IP",
      ok: mostWrites === 0,
    },
    {
      name: `sidecar DescribeAddresses reads per failover when the association moved with the address, most of ${REASSIGN_MOVES}`,
      value: Math.max(...reads),
      unit: "calls",
      target: "informational (the new holder's check)",
      ok: true,
    },
  ];
}
