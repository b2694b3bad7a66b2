/**
 * `multus-ipmgr init`, the built binary, run inside pod network namespaces against the simulator in a
 * namespace of its own. Every test checks the simulator's state (and its call log), not only the exit code.
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ip, Lab, type LabPodSpec, labUnavailableReason, type SimCallView } from "./helpers/netns.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";
import {
  ALLOWED_CIDRS,
  ENI,
  MAC,
  NODE1,
  NODE2,
  twoNodeWorld,
  type WorldOverrides,
} from "./helpers/worlds.js";

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`init end-to-end tests skipped: ${unavailable}`);

let lab: Lab | undefined;
/** A downward API directory of the test, if it made one. */
let podinfo: string | undefined;
afterEach(async () => {
  await lab?.close();
  lab = undefined;
  removeTempDir(podinfo);
  podinfo = undefined;
});

function pod(interfaces: LabPodSpec["interfaces"], instanceId = NODE1): LabPodSpec {
  return { name: "pod", instanceId, interfaces };
}

async function start(
  spec: LabPodSpec,
  overrides: WorldOverrides = {},
  faults: Record<string, unknown> | undefined = undefined,
): Promise<Lab> {
  const world = { ...twoNodeWorld(overrides), ...(faults === undefined ? {} : { faults }) };
  lab = await Lab.start(world, [spec]);
  return lab;
}

/**
 * One EC2 Query call made from the simulator's namespace, as another node's tooling would make it; throws
 * unless EC2 answered 200.
 */
async function ec2Call(l: Lab, params: Record<string, string>): Promise<void> {
  const script = `
    const r = await fetch(process.argv[1], { method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" }, body: process.argv[2] });
    if (!r.ok) { process.stderr.write(r.status + " " + (await r.text())); process.exit(1); }`;
  const body = new URLSearchParams({ Version: "2016-11-15", ...params }).toString();
  await ip("netns", "exec", l.simNs, process.execPath, "--input-type=module", "-e", script, l.sim.ec2, body);
}

async function init(extraEnv: Record<string, string> = {}) {
  if (lab === undefined) throw new Error("no lab");
  return lab.run("pod", ["init"], lab.env("pod", { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS, ...extraEnv }));
}

const MUTATING = new Set([
  "AssignPrivateIpAddresses",
  "UnassignPrivateIpAddresses",
  "AssignIpv6Addresses",
  "UnassignIpv6Addresses",
]);
const mutating = (calls: SimCallView[]) => calls.filter((c) => MUTATING.has(c.action));

describe.skipIf(unavailable !== undefined)("multus-ipmgr init in a pod namespace", () => {
  it("assigns an IPv4 pod address to the ENI with the interface's MAC in exactly one EC2 call", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]));
    const result = await init();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect((await l.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11", "198.51.100.40"]);
    const calls = await l.calls();
    expect(calls.map((c) => c.action)).toEqual(["AssignPrivateIpAddresses"]);
    expect(calls[0]?.params).toMatchObject({
      NetworkInterfaceId: ENI.node1A1,
      "PrivateIpAddress.1": "198.51.100.40",
      AllowReassignment: "true",
    });
  });

  it("assigns an IPv6 pod address", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["2001:db8:100:1::170/64"] }]));
    const result = await init();
    expect(result.code).toBe(0);
    expect((await l.eni(ENI.node1A1)).ipv6s).toEqual(["2001:db8:100:1::170"]);
    expect(mutating(await l.calls()).map((c) => c.action)).toEqual(["AssignIpv6Addresses"]);
  });

  it("assigns a dual-stack pod's two addresses", async () => {
    const l = await start(
      pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26", "2001:db8:100:1::170/64"] }]),
    );
    expect((await init()).code).toBe(0);
    const eni = await l.eni(ENI.node1A1);
    expect(eni.ipv4s).toContain("198.51.100.40");
    expect(eni.ipv6s).toEqual(["2001:db8:100:1::170"]);
  });

  it("assigns two Multus interfaces to their two ENIs, several addresses each", async () => {
    const l = await start(
      pod([
        { name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26", "198.51.100.41/26"] },
        { name: "net2", mac: MAC.node1B1, addresses: ["198.51.100.100/26", "198.51.100.101/26"] },
      ]),
    );
    expect((await init()).code).toBe(0);
    expect((await l.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11", "198.51.100.40", "198.51.100.41"]);
    expect((await l.eni(ENI.node1B1)).ipv4s).toEqual(["198.51.100.70", "198.51.100.100", "198.51.100.101"]);
    expect(mutating(await l.calls())).toHaveLength(2);
  });

  it("lets the MAC decide between two ENIs in one subnet", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A2, addresses: ["198.51.100.42/26"] }]));
    expect((await init()).code).toBe(0);
    expect((await l.eni(ENI.node1A2)).ipv4s).toEqual(["198.51.100.12", "198.51.100.42"]);
    expect((await l.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11"]);
  });

  it("makes no mutating EC2 call when rerun on a pod whose addresses are in place", async () => {
    const l = await start(
      pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26", "2001:db8:100:1::170/64"] }]),
    );
    expect((await init()).code).toBe(0);
    await l.clearCalls();
    const rerun = await init();
    expect(rerun.code).toBe(0);
    expect(await l.calls()).toEqual([]);
  });

  it("exits 0 with no EC2 call at all, not even a read, when the pod's addresses lie in prefixes its ENI holds (prefix mode)", async () => {
    // The node's whereabouts slices, held by its Multus ENI as a /28 and a /80: IMDS alone shows them. (The
    // subnet's first /80 holds addresses AWS reserves, so the IPv6 slice is the second.)
    const v6 = "2001:db8:100:1:1::150";
    const l = await start(
      pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26", `${v6}/64`] }]),
      {
        node1A1: { ipv4Prefixes: ["198.51.100.32/28"], ipv6Prefixes: ["2001:db8:100:1:1::/80"] },
      },
    );
    const before = await l.state();
    const result = await init({ IPMGR_ALLOWED_CIDRS: `${ALLOWED_CIDRS},2001:db8:100:1:1::/96` });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(await l.calls()).toEqual([]);
    expect(await l.state()).toEqual(before);
    const held = result.stdout
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.msg === "pod addresses held by their ENIs");
    expect(held).toMatchObject({ mutatingCalls: 0, alreadyHeld: ["198.51.100.40", v6], enis: [ENI.node1A1] });
  });

  it("exits 6 with no EC2 call when the pod's address lies in a prefix another ENI of the node holds", async () => {
    // node1A2 sits in node1A1's subnet behind another MAC: its prefix covers the address.
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]), {
      node1A2: { ipv4Prefixes: ["198.51.100.32/28"] },
    });
    const result = await init();
    expect(result.code).toBe(6);
    expect(result.stderr).toContain(
      `lies inside the prefix 198.51.100.32/28 that ENI ${ENI.node1A2} (MAC ${MAC.node1A2}) holds`,
    );
    expect(await l.calls()).toEqual([]);
  });

  it("moves an IPv4 address another node's ENI holds", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.45/26"] }]), {
      node2A1: { secondaryIpv4s: ["198.51.100.45"] },
    });
    expect((await init()).code).toBe(0);
    expect((await l.eni(ENI.node1A1)).ipv4s).toContain("198.51.100.45");
    expect((await l.eni(ENI.node2A1)).ipv4s).not.toContain("198.51.100.45");
  });

  it("moves an IPv6 address another node's ENI holds by unassigning it there first", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["2001:db8:100:1::175/64"] }]), {
      node2A1: { ipv6s: ["2001:db8:100:1::175"] },
    });
    expect((await init()).code).toBe(0);
    expect((await l.eni(ENI.node1A1)).ipv6s).toEqual(["2001:db8:100:1::175"]);
    expect((await l.eni(ENI.node2A1)).ipv6s).toEqual([]);
    const order = mutating(await l.calls()).map((c) => `${c.action} ${c.params.NetworkInterfaceId}`);
    expect(order).toEqual([`UnassignIpv6Addresses ${ENI.node2A1}`, `AssignIpv6Addresses ${ENI.node1A1}`]);
  });

  it("assigns an IPv6 address another node's ENI let go while EC2's reads still show it there", async () => {
    const address = "2001:db8:100:1::176";
    // Reads (EC2 and IMDS) show the state of 5 s ago from the start; writes act on the current state.
    const l = await start(
      pod([{ name: "net1", mac: MAC.node1A1, addresses: [`${address}/64`] }]),
      { node2A1: { ipv6s: [address] } },
      { staleReadsMs: 5000 },
    );
    await ec2Call(l, {
      Action: "UnassignIpv6Addresses",
      NetworkInterfaceId: ENI.node2A1,
      "Ipv6Addresses.1": address,
    });
    await l.clearCalls();
    const result = await init();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect((await l.eni(ENI.node1A1)).ipv6s).toEqual([address]);
    expect((await l.eni(ENI.node2A1)).ipv6s).toEqual([]);
    // Describe still showed node 2 holding it, so init tried the move; EC2 refused it, and the assign settled it.
    const order = mutating(await l.calls()).map(
      (c) => `${c.action} ${c.params.NetworkInterfaceId} ${c.outcome}`,
    );
    expect(order).toEqual([
      `UnassignIpv6Addresses ${ENI.node2A1} InvalidParameterValue`,
      `AssignIpv6Addresses ${ENI.node1A1} ok`,
    ]);
    const moveLine = result.stdout
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find(
        (line) =>
          line.msg ===
          "EC2 refused to take the addresses from their previous holder, which may have let them go already (EC2's reads lag); assigning them anyway",
      );
    expect(moveLine).toMatchObject({ level: 30, eniId: ENI.node2A1, addresses: [address] });
  });

  it("refuses an address outside the allowed CIDRs and assigns nothing", async () => {
    const l = await start(
      pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26", "198.51.100.30/26"] }]),
    );
    const result = await init();
    expect(result.code).toBe(6);
    expect(result.stderr).toContain("198.51.100.30");
    expect(result.stderr).toContain("IPMGR_ALLOWED_CIDRS");
    expect(await l.calls()).toEqual([]);
    expect((await l.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11"]);
  });

  it("exits 6 naming the ENI and instance when the address is another instance's ENI primary", async () => {
    // 198.51.100.21 is node 2's ENI's primary; the allowed CIDRs are too wide and let it through the planner.
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.21/26"] }]));
    const before = await l.state();
    const result = await init({ IPMGR_ALLOWED_CIDRS: "198.51.100.0/26" });
    expect(result.code).toBe(6);
    expect(result.stderr).toBe(
      `multus-ipmgr init: address 198.51.100.21 on net1 is the primary private IPv4 address of ENI ${ENI.node2A1} ` +
        `of instance ${NODE2}, which EC2 never reassigns (it refused AssignPrivateIpAddresses on ${ENI.node1A1}); ` +
        "exclude it from the IPAM range and from IPMGR_ALLOWED_CIDRS.\n",
    );
    expect(await l.state()).toEqual(before);
    expect(mutating(await l.calls()).map((c) => `${c.action} ${c.outcome}`)).toEqual([
      "AssignPrivateIpAddresses InvalidParameterValue",
    ]);
  });

  it("fails with exit 7 when the interface's MAC matches no ENI of the instance", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.stranger, addresses: ["198.51.100.40/26"] }]));
    const result = await init();
    expect(result.code).toBe(7);
    expect(result.stderr).toContain(
      `interface net1 has MAC ${MAC.stranger}, which matches no ENI of this instance`,
    );
    expect(await l.calls()).toEqual([]);
  });

  it("succeeds after backoff when EC2 throttles", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]));
    await l.setFaults({
      failNext: [{ action: "AssignPrivateIpAddresses", code: "RequestLimitExceeded", status: 503, count: 2 }],
    });
    const result = await init();
    expect(result.code).toBe(0);
    expect((await l.calls()).map((c) => c.outcome)).toEqual([
      "RequestLimitExceeded",
      "RequestLimitExceeded",
      "ok",
    ]);
    expect((await l.eni(ENI.node1A1)).ipv4s).toContain("198.51.100.40");
  });

  it("exits 4 naming the IAM action when EC2 refuses for a missing permission", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]));
    await l.setFaults({ deny: ["AssignPrivateIpAddresses"] });
    const result = await init();
    expect(result.code).toBe(4);
    expect(result.stderr).toContain("ec2:AssignPrivateIpAddresses");
    expect((await l.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11"]);
  });

  it("reports the hop-limit problem and its fix when the IMDS token request hangs", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]));
    await l.setFaults({ imdsTokenHang: true });
    const result = await init({ IPMGR_IMDS_TIMEOUT_MS: "300" });
    expect(result.signal).toBeNull();
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("HttpPutResponseHopLimit to 2");
    expect(await l.calls()).toEqual([]);
  });

  /** Writes a downward API annotations file holding `status` as Multus's network-status annotation. */
  function annotationsFile(status: unknown): string {
    const dir = makeTempDir("ipmgr-podinfo-");
    podinfo = dir;
    const path = join(dir, "annotations");
    const json = JSON.stringify(status);
    writeFileSync(path, `k8s.v1.cni.cncf.io/network-status=${JSON.stringify(json)}\n`);
    return path;
  }

  it("reads addresses from the Multus network-status annotation file when told to", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]));
    const path = annotationsFile([
      { name: "cnf/ipvlan", interface: "net1", ips: ["198.51.100.40"], mac: MAC.node1A1 },
    ]);
    const result = await init({ IPMGR_ADDRESS_SOURCE: "network-status", IPMGR_NETWORK_STATUS_FILE: path });
    expect(result.code).toBe(0);
    expect((await l.eni(ENI.node1A1)).ipv4s).toContain("198.51.100.40");
  });

  it("exits 2 at once, assigning nothing, when network-status names an interface the pod does not have", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]));
    const path = annotationsFile([
      { name: "cnf/ipvlan", interface: "net1", ips: ["198.51.100.40"], mac: MAC.node1A1 },
      { name: "cnf/other", interface: "net2", ips: ["198.51.100.41"], mac: MAC.node1A1 },
    ]);
    const result = await init({ IPMGR_ADDRESS_SOURCE: "network-status", IPMGR_NETWORK_STATUS_FILE: path });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `multus-ipmgr init: ${path}: network-status entry 1 ("cnf/other", interface net2): this pod has no ` +
        "interface net2 with an address (it has: eth0, lo, net1), so nothing here carries the entry's " +
        "addresses; the file describes another pod or is out of date: check IPMGR_NETWORK_STATUS_FILE and " +
        "the downward API volume (fieldPath: metadata.annotations)\n",
    );
    expect(await l.calls()).toEqual([]);
    expect((await l.eni(ENI.node1A1)).ipv4s).not.toContain("198.51.100.41");
  });

  it("exits 2 at once when the network-status file does not exist, naming it and the volume to add", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]));
    podinfo = makeTempDir("ipmgr-podinfo-");
    const path = join(podinfo, "annotations");
    // A wait longer than the test's own timeout: only an immediate refusal passes.
    const result = await init({
      IPMGR_ADDRESS_SOURCE: "network-status",
      IPMGR_NETWORK_STATUS_FILE: path,
      IPMGR_WAIT_FOR_ADDRESSES_MS: "600000",
      IPMGR_TIMEOUT_MS: "900000",
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `multus-ipmgr init: ${path}: the file does not exist, and the downward API writes it before any ` +
        "container starts; add a downwardAPI volume with the item {path: annotations, fieldRef: {fieldPath: " +
        `metadata.annotations}} and mount it at ${podinfo} (as deploy/overlays/init/deployment-init-network-status.yaml ` +
        "does), or point IPMGR_NETWORK_STATUS_FILE at the file where it is mounted, or set " +
        "IPMGR_ADDRESS_SOURCE=interfaces\n",
    );
    expect(await l.calls()).toEqual([]);
  });

  it("skips a Multus network without addresses (no IPAM) or with a link-local one only, and assigns the rest", async () => {
    const l = await start(
      pod([
        { name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] },
        { name: "net2", mac: MAC.node1A1, addresses: ["fe80::2/64"] },
      ]),
    );
    // net3 is an L2 attachment without an address: this pod's interface list does not even show it.
    const path = annotationsFile([
      { name: "cnf/ipvlan", interface: "net1", ips: ["198.51.100.40"], mac: MAC.node1A1 },
      { name: "cnf/l2-link-local", interface: "net2", ips: ["fe80::2"], mac: MAC.node1A1 },
      { name: "cnf/l2", interface: "net3", mac: "02:aa:00:00:0a:33" },
    ]);
    const result = await init({
      IPMGR_ADDRESS_SOURCE: "network-status",
      IPMGR_NETWORK_STATUS_FILE: path,
      IPMGR_WAIT_FOR_ADDRESSES_MS: "600000",
      IPMGR_TIMEOUT_MS: "900000",
      IPMGR_LOG_LEVEL: "debug",
    });
    expect(result.code).toBe(0);
    expect((await l.eni(ENI.node1A1)).ipv4s).toContain("198.51.100.40");
    const skipped = result.stdout
      .split("\n")
      .filter((line) => line.includes("has no unicast address"))
      .map((line) => JSON.parse(line) as { level: number; interface: string });
    expect(skipped.map((line) => [line.level, line.interface])).toEqual([
      [20, "net2"],
      [20, "net3"],
    ]);
  });

  it("exits 2 with the variable's name when the configuration is bad", async () => {
    const l = await start(pod([{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }]));
    const result = await l.run("pod", ["init"], l.env("pod", { IPMGR_ALLOWED_CIDRS: "pods" }));
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'multus-ipmgr init: IPMGR_ALLOWED_CIDRS="pods": "pods" is not a CIDR; write it like 198.51.100.64/27\n',
    );
    expect(await l.calls()).toEqual([]);
  });
});
