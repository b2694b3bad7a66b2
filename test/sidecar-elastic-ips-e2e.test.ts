/**
 * Elastic IPs that follow a floating address: the built sidecar (and init) in pod namespaces against the
 * simulator, one case per failover kind. Each test checks the simulator's state and call log. The figures
 * (time to the association, calls per failover) are in `npm run bench -- elastic-ips`.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  Lab,
  type LabPodSpec,
  labUnavailableReason,
  removeStaleLabs,
  type SimCallView,
} from "./helpers/netns.js";
import {
  eventually,
  holds,
  httpGet,
  metric,
  pairPod,
  ready,
  type SidecarProcess,
  startSidecar,
} from "./helpers/sidecar-lab.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";
import { ENI, floatingPairWorld } from "./helpers/worlds.js";

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`Elastic IP end-to-end tests skipped: ${unavailable}`);

const ALLOWED_CIDRS = "198.51.100.64/26";
const FLOAT = "198.51.100.80";
const WEB = "eipalloc-0123456789abcdef0";
const MAPPING = `${FLOAT}=${WEB}`;

const podA = (addresses: string[]): LabPodSpec => pairPod("a", addresses);
const podB = (addresses: string[]): LabPodSpec => pairPod("b", addresses);

let lab: Lab | undefined;
let tempDir: string | undefined;
afterEach(async () => {
  await lab?.close();
  lab = undefined;
  removeTempDir(tempDir);
  tempDir = undefined;
});

/** The pair; the Elastic IP WEB (203.0.113.10) exists unless `exists` is false, on A's FLOAT when `onA`. */
async function startLab(pods: LabPodSpec[], options: { exists?: boolean; onA?: boolean } = {}): Promise<Lab> {
  await removeStaleLabs();
  const eip = {
    allocationId: WEB,
    publicIp: "203.0.113.10",
    ...(options.onA === true ? { association: { eni: ENI.node1A1, privateIp: FLOAT } } : {}),
  };
  lab = await Lab.start(
    floatingPairWorld({
      ...(options.onA === true ? { node1A1SecondaryIpv4s: [FLOAT] } : {}),
      elasticIps: options.exists === false ? [] : [eip],
    }),
    pods,
  );
  return lab;
}

function sidecar(l: Lab, pod: string, env: Record<string, string> = {}): SidecarProcess {
  return startSidecar(l, pod, { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS, IPMGR_ELASTIC_IPS: MAPPING, ...env });
}

/** Where the Elastic IP points, or undefined when it is not associated. */
async function eipOn(l: Lab): Promise<{ eniId: string; privateIp: string } | undefined> {
  const eip = (await l.state()).addresses.find((a) => a.allocationId === WEB);
  return eip?.eniId == null || eip.privateIp == null
    ? undefined
    : { eniId: eip.eniId, privateIp: eip.privateIp };
}

const ELASTIC_IP_WRITES = new Set(["AssociateAddress", "DisassociateAddress", "AllocateAddress"]);
const eipWrites = (calls: SimCallView[]) => calls.filter((c) => ELASTIC_IP_WRITES.has(c.action));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(unavailable !== undefined)("Elastic IPs follow a floating address", () => {
  it("failover with reassignment: the Elastic IP moves with the address, with no Elastic IP write", async () => {
    const l = await startLab([podA(["198.51.100.70/25", `${FLOAT}/25`]), podB(["198.51.100.90/25"])], {
      onA: true,
    });
    // A's release waits 5 s once the address has left its interface, so that its ENI still holds it when B
    // takes it over. (Left on A's interface instead, A would take it back after its 1 s repair delay, the
    // Elastic IP with it, whenever the machine is too slow to remove it from A within that second; A's
    // release then drops the association and B rightly associates it again.)
    sidecar(l, "a", { IPMGR_RELEASE_SETTLE_MS: "5000" });
    sidecar(l, "b");
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    await l.clearCalls();
    // The standby takes over while the active pod's ENI still holds the address (AllowReassignment); the
    // active pod's release then finds its ENI without the address.
    await l.removeAddress("a", "net1", `${FLOAT}/25`);
    await l.addAddress("b", "net1", `${FLOAT}/25`);
    await eventually(async () => (await eipOn(l))?.eniId === ENI.node2A1, "the Elastic IP on B's ENI");
    await eventually(
      async () =>
        (await httpGet(l, "b", "/readyz")).body.includes(`${FLOAT} on ${ENI.node2A1}: Elastic IP ${WEB}`),
      "B confirmed it",
    );
    // A wait to show that nothing happens: no Elastic IP write, no second check.
    await sleep(1_000);
    const calls = await l.calls();
    expect(eipWrites(calls)).toEqual([]);
    expect(calls.filter((c) => c.action === "DescribeAddresses")).toHaveLength(1);
    expect(await eipOn(l)).toEqual({ eniId: ENI.node2A1, privateIp: FLOAT });
    // (/readyz wants an observation at most 200 ms old here: on a loaded machine one can be a little late.)
    await eventually(() => ready(l, "b"), "B ready", 3_000);
    expect(await metric(l, "b", "multus_ipmgr_elastic_ip_associations_total")).toBe(0);
  });

  it("failover where the old holder released first: the new holder's sidecar associates it again", async () => {
    const l = await startLab([podA(["198.51.100.70/25", `${FLOAT}/25`]), podB(["198.51.100.90/25"])], {
      onA: true,
    });
    sidecar(l, "a");
    const b = sidecar(l, "b");
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    await l.removeAddress("a", "net1", `${FLOAT}/25`);
    await eventually(async () => !(await holds(l, ENI.node1A1, FLOAT)), "A released the address");
    // EC2 dropped the association with the address: the public address points nowhere now.
    expect(await eipOn(l)).toBeUndefined();
    await l.clearCalls();
    await l.addAddress("b", "net1", `${FLOAT}/25`);
    await eventually(async () => (await eipOn(l))?.eniId === ENI.node2A1, "associated with B's ENI");
    await eventually(() => ready(l, "b"), "B ready");
    const writes = eipWrites(await l.calls());
    expect(
      writes.map((c) => [c.action, c.params.NetworkInterfaceId, c.params.AllowReassociation, c.outcome]),
    ).toEqual([["AssociateAddress", ENI.node2A1, "false", "ok"]]);
    expect(await metric(l, "b", "multus_ipmgr_elastic_ip_associations_total")).toBe(1);
    expect(b.logged(/^Elastic IP associated/)).toHaveLength(1);
  });

  it("split brain: the public address never moves more often than the private one, and ends on its holder", async () => {
    const l = await startLab([podA(["198.51.100.70/25", `${FLOAT}/25`]), podB(["198.51.100.90/25"])], {
      onA: true,
    });
    sidecar(l, "a");
    sidecar(l, "b");
    await eventually(async () => (await ready(l, "a")) && (await ready(l, "b")), "both ready");
    await l.clearCalls();
    // Both pods claim the address for 10 s: the sidecars trade it with backoff (1 s, 4 s, ...).
    await l.addAddress("b", "net1", `${FLOAT}/25`);
    const privateMoves: string[] = [];
    const publicMoves: string[] = [];
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const state = await l.state();
      const holder = state.enis.find((e) => e.ipv4s.includes(FLOAT))?.eniId ?? "none";
      const eip = state.addresses.find((a) => a.allocationId === WEB)?.eniId ?? "none";
      if (privateMoves.at(-1) !== holder) privateMoves.push(holder);
      if (publicMoves.at(-1) !== eip) publicMoves.push(eip);
      await sleep(25);
    }
    expect(privateMoves.length).toBeGreaterThanOrEqual(2);
    expect(publicMoves.length).toBeLessThanOrEqual(privateMoves.length);
    const calls = await l.calls();
    const assigns = calls.filter((c) => c.action === "AssignPrivateIpAddresses" && c.outcome === "ok");
    expect(eipWrites(calls).length).toBeLessThanOrEqual(assigns.length);
    // Wherever the private address is, its public address is there too (one read of the state).
    const state = await l.state();
    const holder = state.enis.find((e) => e.ipv4s.includes(FLOAT))?.eniId;
    const eip = state.addresses.find((a) => a.allocationId === WEB);
    expect({ eniId: eip?.eniId, privateIp: eip?.privateIp }).toEqual({ eniId: holder, privateIp: FLOAT });
  }, 40_000);

  it("an allocation that does not exist: a clear error, not ready, and the sidecar keeps running", async () => {
    const l = await startLab([podA(["198.51.100.70/25", `${FLOAT}/25`])], { exists: false });
    const a = sidecar(l, "a");
    await eventually(
      async () => (await httpGet(l, "a", "/readyz")).body.includes("does not exist"),
      "the error on /readyz",
    );
    const probe = await httpGet(l, "a", "/readyz");
    expect(probe.status).toBe(503);
    expect(probe.body).toContain(
      `${FLOAT} on ${ENI.node1A1}: Elastic IP ${WEB}, mapped to ${FLOAT} in IPMGR_ELASTIC_IPS, does not exist in this account and region; allocate one (aws ec2 allocate-address --domain vpc) and map its allocation id, or remove the mapping.`,
    );
    expect(await holds(l, ENI.node1A1, FLOAT)).toBe(true);
    expect(a.logged(/does not exist in this account/)).toHaveLength(1);
    expect(await metric(l, "a", "multus_ipmgr_elastic_ips_not_associated")).toBe(1);
    expect(a.child.exitCode).toBeNull();
  });

  it("a mapping for an address we do not carry: nothing done, ready", async () => {
    const l = await startLab([podA(["198.51.100.70/25"])]);
    sidecar(l, "a");
    await eventually(() => ready(l, "a"), "ready");
    await sleep(1_000);
    const calls = await l.calls();
    expect(calls.filter((c) => c.action.endsWith("Address") || c.action === "DescribeAddresses")).toEqual([]);
    expect(await eipOn(l)).toBeUndefined();
    expect((await httpGet(l, "a", "/readyz")).body).toContain(`${FLOAT}: not held by our ENI`);
  });

  it("init associates the Elastic IP before the pod starts, and exits 11 for an allocation that does not exist", async () => {
    const l = await startLab([podA([`${FLOAT}/25`])]);
    const env = l.env("a", { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS, IPMGR_ELASTIC_IPS: MAPPING });
    const ok = await l.run("a", ["init"], env);
    expect(ok.code).toBe(0);
    expect(await eipOn(l)).toEqual({ eniId: ENI.node1A1, privateIp: FLOAT });

    tempDir = makeTempDir("ipmgr-lab-");
    const terminationLog = join(tempDir, "termination-log");
    const missing = "eipalloc-0a1b2c3d";
    const failed = await l.run("a", ["init"], {
      ...env,
      IPMGR_ELASTIC_IPS: `${FLOAT}=${missing}`,
      IPMGR_TERMINATION_LOG: terminationLog,
    });
    const sentence = `Elastic IP ${missing}, mapped to ${FLOAT} in IPMGR_ELASTIC_IPS, does not exist in this account and region; allocate one (aws ec2 allocate-address --domain vpc) and map its allocation id, or remove the mapping.`;
    expect(failed.code).toBe(11);
    expect(failed.stderr).toBe(`multus-ipmgr init: ${sentence}\n`);
    expect(readFileSync(terminationLog, "utf8")).toBe(`${sentence}\n`);
  });

  it("refuses an IPv6 mapping at start with exit 2 and one sentence", async () => {
    const l = await startLab([podA(["198.51.100.70/25"])]);
    const result = await l.run(
      "a",
      ["sidecar"],
      l.env("a", { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS, IPMGR_ELASTIC_IPS: `2001:db8:100:1::180=${WEB}` }),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `multus-ipmgr sidecar: IPMGR_ELASTIC_IPS="2001:db8:100:1::180=${WEB}": 2001:db8:100:1::180 is an IPv6 address, and IPv6 addresses have no Elastic IP; map only IPv4 addresses\n`,
    );
  });
});
