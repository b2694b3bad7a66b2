/**
 * `doctor --profile node` in-process (the chart's helm test runs it in a pod like the bridge's): runNodeDoctor
 * with the real IMDS client, IMDS probe and EC2 adapter against the simulator on 127.0.0.1; the node's links,
 * addresses and rp_filter values scripted, as a host-network pod would read them from sysfs, getifaddrs and
 * /proc/sys. A healthy node passes; each fault is reported with its fix.
 */

import { afterEach, describe, expect, it } from "vitest";
import type { CheckResult, CheckStatus } from "../src/doctor/check.js";
import { HttpImdsProbe } from "../src/doctor/imds-probe.js";
import type { LinkInfo, LinkSource } from "../src/doctor/links.js";
import type { NodeSlice } from "../src/doctor/node-slices.js";
import type { NodeSlicesWanted } from "../src/doctor/prefix-results.js";
import { renderText } from "../src/doctor/render.js";
import { type NodeDoctorDeps, runNodeDoctor } from "../src/doctor/run-node-doctor.js";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import { systemClock } from "../src/eni/process/clock.js";
import type { PodInterface } from "../src/eni/types.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { silentLogger } from "./helpers/loggers.js";
import { ScriptedInterfaces } from "./helpers/scripted-interfaces.js";
import { credentials } from "./helpers/sim-fixtures.js";
import { ENI, MAC, NODE1, twoNodeWorld } from "./helpers/worlds.js";

let sim: SimulatorHandle | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const SUBNET_A = "subnet-00000000000000e00";
/** The bridge's IPMGR_ALLOWED_CIDRS: pod ranges in subnet A (198.51.100.0/26), one per family. */
const ALLOWED = ["198.51.100.32/28", "2001:db8:100:1::100/120"];
const MUTATING = [
  "AssignPrivateIpAddresses",
  "UnassignPrivateIpAddresses",
  "AssignIpv6Addresses",
  "UnassignIpv6Addresses",
];

type World = ReturnType<typeof twoNodeWorld>;

/** Node 1 with its three Multus ENIs tagged, the pod ranges reserved, a pod address on ENI A1 (not on the host). */
function healthyWorld(change: (world: World) => void = () => undefined): World {
  const world = twoNodeWorld({ node1A1: { secondaryIpv4s: ["198.51.100.40"] } });
  world.reservations = ALLOWED.map((cidr) => ({
    subnet: SUBNET_A,
    cidr,
    type: "explicit",
    description: "pods",
  }));
  change(world);
  return world;
}

function untag(world: World, id: string): void {
  const enis = (world.instances as { enis: { id: string; tags?: Record<string, string> }[] }[]).flatMap(
    (i) => i.enis,
  );
  const eni = enis.find((e) => e.id === id);
  if (eni === undefined) throw new Error(`no ENI ${id}`);
  eni.tags = {};
}

const link = (name: string, mac: string): LinkInfo => ({
  name,
  adminUp: true,
  operState: "up",
  mtu: 9001,
  mac,
});

/** Node 1's links in the host's namespace: ens5 the primary ENI, ens6..ens8 its Multus ENIs, all up. */
class HostLinks implements LinkSource {
  readonly links = [
    link("ens5", MAC.node1Eth0),
    link("ens6", MAC.node1A1),
    link("ens7", MAC.node1A2),
    link("ens8", MAC.node1B1),
    link("lo", "00:00:00:00:00:00"),
  ];
  async names(): Promise<string[]> {
    return this.links.map((l) => l.name).sort();
  }
  async read(name: string): Promise<LinkInfo | undefined> {
    return this.links.find((l) => l.name === name);
  }
}

/** The node's addresses: its primary on ens5, the Multus ENIs' links carry none. */
const HOST: PodInterface[] = [
  { name: "ens5", mac: MAC.node1Eth0, addresses: ["198.51.100.140"] },
  { name: "lo", mac: "00:00:00:00:00:00", addresses: ["127.0.0.1"] },
];

const rp = (values: Record<string, number>) => ({ read: async (name: string) => values[name] });

/** node-1's slices: none by default (a cluster without prefix mode). */
const noSlices = (slices: NodeSlice[] = []): NodeSlicesWanted => ({
  source: { slicesOf: async () => ({ kind: "ok" as const, slices }) },
  nodeName: "node-1",
});

interface SetUp {
  host?: PodInterface[];
  rpFilter?: Record<string, number>;
  allowed?: string[] | undefined;
}

async function nodeDoctor(world: World, setUp: SetUp = {}): Promise<CheckResult[]> {
  sim = await startSimulator(parseWorld(world));
  const logger = silentLogger();
  const imdsEndpoint = sim.imdsEndpoints[NODE1] ?? "";
  const deps: NodeDoctorDeps = {
    imds: new ImdsClient({ endpoint: imdsEndpoint, requestTimeoutMs: 300 }),
    ec2: createEc2Api({
      region: "us-east-1",
      endpoint: sim.ec2Endpoint,
      credentials,
      retry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 20 },
      requestTimeoutMs: 1000,
      logger,
    }),
    logger,
    imdsProbe: new HttpImdsProbe({ endpoint: imdsEndpoint, timeoutMs: 300, clock: systemClock }),
    links: new HostLinks(),
    hostInterfaces: new ScriptedInterfaces(setUp.host ?? HOST),
    rpFilter: rp(setUp.rpFilter ?? { all: 0, ens5: 1, ens6: 0, ens7: 0, ens8: 0 }),
    nodeSlices: noSlices(),
  };
  return runNodeDoctor(deps, {
    allowedCidrs: "allowed" in setUp ? setUp.allowed : ALLOWED,
    region: undefined,
  });
}

function statuses(results: readonly CheckResult[]): Record<string, CheckStatus[]> {
  const out: Record<string, CheckStatus[]> = {};
  for (const r of results) out[r.name] = [...(out[r.name] ?? []), r.status];
  return out;
}

const problems = (results: readonly CheckResult[]) => results.filter((r) => r.status === "problem");

describe("doctor --profile node against the simulator", () => {
  it("passes a healthy node with the node's checks only, and changes nothing in EC2", async () => {
    const results = await nodeDoctor(healthyWorld());
    expect(statuses(results)).toEqual({
      pod: ["skipped"],
      imds: ["ok"],
      instance: ["ok"],
      permission: ["ok", "ok", "skipped"],
      "multus-eni": ["ok"],
      "eni-tag": ["ok", "ok", "ok"],
      "node-link": ["ok", "ok", "ok"],
      "rp-filter": ["ok", "ok", "ok"],
      "host-address": ["ok"],
      "allowed-cidr": ["ok", "ok"],
      "address-overlap": ["ok", "ok"],
      reservation: ["ok", "ok"],
      "prefix-support": ["ok"],
      "prefix-blocks": ["ok"],
      "node-slice": ["ok"],
    });
    expect(results.find((r) => r.name === "pod")?.detail).toBe(
      "not checked in the node profile: interfaces, link, eni-match, addresses, security-group, capacity and ip-command are about a pod's own interfaces (doctor --profile pod in the pod's container).",
    );
    expect(results.find((r) => r.name === "multus-eni")?.detail).toBe(
      `${ENI.node1A1} (device 1, ${SUBNET_A}), ${ENI.node1A2} (device 2, ${SUBNET_A}) and ${ENI.node1B1} (device 3, subnet-00000000000000b00).`,
    );
    expect(results.find((r) => r.name === "host-address")?.detail).toBe(
      "no interface of the node carries an address of 198.51.100.32/28 and 2001:db8:100:1::100/120 (2 interfaces with addresses read).",
    );
    for (const call of sim?.calls() ?? []) expect(MUTATING).not.toContain(call.action);
    expect(renderText(results, 0)).not.toContain("fix:");
  });

  it("probes the bridge's permissions with DryRun: a denied DescribeNetworkInterfaces is a problem, and what needs it is not checked", async () => {
    const results = await nodeDoctor(
      healthyWorld((w) => {
        w.faults = { deny: ["DescribeNetworkInterfaces"] };
      }),
    );
    const permissions = results.filter((r) => r.name === "permission");
    expect(permissions.map((r) => [r.subject, r.status])).toEqual([
      ["ec2:DescribeNetworkInterfaces", "problem"],
      ["ec2:GetSubnetCidrReservations", "ok"],
      ["assign/unassign", "skipped"],
    ]);
    expect(results.find((r) => r.name === "eni-tag")?.detail).toBe(
      "not checked: ec2:DescribeNetworkInterfaces is denied (see permission).",
    );
    for (const call of sim?.calls() ?? []) expect(MUTATING).not.toContain(call.action);
  });

  it("does not blame the hop limit for a lost token from the node's namespace, and skips what needs IMDS", async () => {
    const results = await nodeDoctor(
      healthyWorld((w) => {
        w.faults = { imdsTokenHang: true };
      }),
    );
    const imds = results.find((r) => r.name === "imds");
    expect(imds?.status).toBe("problem");
    expect(imds?.detail).toContain("the hop limit is not the cause (1 is enough here)");
    expect(imds?.fix).toBe(
      "look for a firewall rule on the node (iptables-save or nft list ruleset) that matches 169.254.169.254 or PUT requests; if IMDS is only slow, raise IPMGR_IMDS_TIMEOUT_MS",
    );
    expect(results.find((r) => r.name === "multus-eni")?.detail).toBe(
      "not checked: IMDS issued no token (see imds).",
    );
    expect(problems(results).map((r) => r.name)).toEqual(["imds"]);
  });

  it("reports a Multus ENI without the no_manage tag, with the create-tags fix", async () => {
    const results = await nodeDoctor(healthyWorld((w) => untag(w, ENI.node1A1)));
    expect(problems(results).map((r) => [r.name, r.subject])).toEqual([["eni-tag", ENI.node1A1]]);
    const tag = problems(results)[0];
    expect(tag?.detail).toBe(
      `${ENI.node1A1} lacks the tag node.k8s.amazonaws.com/no_manage=true: the VPC CNI treats it as its own and may put its pods' addresses on it, next to your Multus range.`,
    );
    expect(tag?.fix).toMatch(
      new RegExp(
        `^aws ec2 create-tags --resources ${ENI.node1A1} --tags Key=node.k8s.amazonaws.com/no_manage,Value=true `,
      ),
    );
    // Still a Multus ENI by its subnet: its link and rp_filter are checked.
    expect(results.filter((r) => r.name === "node-link").map((r) => r.subject)).toContain(ENI.node1A1);
  });

  it("leaves an untagged secondary ENI outside the pod ranges' subnets alone: the VPC CNI's", async () => {
    const results = await nodeDoctor(healthyWorld((w) => untag(w, ENI.node1B1)));
    expect(problems(results)).toEqual([]);
    expect(results.filter((r) => r.name === "eni-tag").map((r) => r.subject)).toEqual([
      ENI.node1A1,
      ENI.node1A2,
    ]);
    expect(results.filter((r) => r.name === "node-link").map((r) => r.subject)).toEqual([
      ENI.node1A1,
      ENI.node1A2,
    ]);
  });

  it("reports a pod-range address the host itself carries (amazon-ec2-net-utils' alias), with the fix", async () => {
    const results = await nodeDoctor(healthyWorld(), {
      host: [...HOST, { name: "ens6", mac: MAC.node1A1, addresses: ["198.51.100.11", "198.51.100.40"] }],
    });
    expect(problems(results).map((r) => [r.name, r.subject])).toEqual([["host-address", "198.51.100.40"]]);
    const found = problems(results)[0];
    expect(found?.detail).toBe(
      "the node carries 198.51.100.40 (in 198.51.100.32/28, IPMGR_ALLOWED_CIDRS) on ens6: it answers for a pod's address, and that pod's traffic ends on the host.",
    );
    expect(found?.fix).toBe(
      "ip address del $(ip -o address show dev ens6 to 198.51.100.40 | awk '{print $4}') dev ens6, and keep " +
        "amazon-ec2-net-utils off the Multus ENI for every boot: a systemd-networkd file sorting before its " +
        "70-*.network, matching the ENI's MAC, with DHCP=no and no Address (/etc/systemd/network/10-multus.network, " +
        "as deploy/node/multus-eni.sh writes it)",
    );
  });

  it("reports strict rp_filter on the Multus links, with the sysctl that turns it off", async () => {
    const results = await nodeDoctor(healthyWorld(), { rpFilter: { all: 1, ens6: 0, ens7: 0, ens8: 0 } });
    expect(problems(results).map((r) => [r.name, r.subject])).toEqual([
      ["rp-filter", ENI.node1A1],
      ["rp-filter", ENI.node1A2],
      ["rp-filter", ENI.node1B1],
    ]);
    expect(problems(results)[0]?.fix).toBe(
      "sysctl -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.ens6.rp_filter=0, and the same in the node's user data (a file in /etc/sysctl.d/) for every boot",
    );
  });

  it("says the bridge's variable is missing, and still checks the tagged ENIs", async () => {
    const results = await nodeDoctor(healthyWorld(), { allowed: undefined });
    expect(problems(results).map((r) => r.name)).toEqual(["config"]);
    expect(problems(results)[0]?.detail).toBe(
      "IPMGR_ALLOWED_CIDRS is not set: the bridge refuses to start without it (exit 2), and doctor cannot tell the node's Multus ENIs and pod ranges.",
    );
    expect(results.filter((r) => r.name === "eni-tag").map((r) => r.status)).toEqual(["ok", "ok", "ok"]);
    expect(results.find((r) => r.name === "host-address")?.status).toBe("skipped");
  });

  it("reports a node without a Multus ENI, naming its secondary ENIs and the fix", async () => {
    const results = await nodeDoctor(
      healthyWorld((w) => {
        for (const id of [ENI.node1A1, ENI.node1A2, ENI.node1B1]) untag(w, id);
      }),
      { allowed: ["203.0.113.0/28"] },
    );
    const none = results.find((r) => r.name === "multus-eni");
    expect(none?.status).toBe("problem");
    expect(none?.detail).toBe(
      `this node has no Multus ENI: its secondary ENIs (${ENI.node1A1}, ${ENI.node1A2} and ${ENI.node1B1}) are neither tagged node.k8s.amazonaws.com/no_manage=true nor in a subnet of IPMGR_ALLOWED_CIDRS, so the bridge has nowhere to put its pods' addresses.`,
    );
    expect(results.find((r) => r.name === "node-link")?.detail).toBe(
      "not checked: this node has no Multus ENI (see multus-eni).",
    );
  });
});
