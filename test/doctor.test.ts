/**
 * `doctor` in-process: runDoctor with the real IMDS client, IMDS probe and EC2 adapter against the simulator
 * on 127.0.0.1, the pod's interfaces and links scripted. One test per problem doctor reports, each made by
 * the simulator's world or its faults. The built binary in a namespace lab: doctor-e2e.test.ts.
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { CheckResult, CheckStatus } from "../src/doctor/check.js";
import { HttpImdsProbe } from "../src/doctor/imds-probe.js";
import { IpMonitorProbe } from "../src/doctor/ip-command-probe.js";
import type { LinkInfo, LinkSource } from "../src/doctor/links.js";
import { renderText } from "../src/doctor/render.js";
import { type DoctorDeps, type DoctorOptions, runDoctor } from "../src/doctor/run-doctor.js";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import type { InterfaceSource } from "../src/eni/interface-source.js";
import { NetworkStatusSource } from "../src/eni/network-status-source.js";
import { systemClock } from "../src/eni/process/clock.js";
import type { PodInterface } from "../src/eni/types.js";
import { parseWorld, type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { closedPortUrl } from "./helpers/closed-port.js";
import { silentLogger } from "./helpers/loggers.js";
import { ScriptedInterfaces } from "./helpers/scripted-interfaces.js";
import { credentials } from "./helpers/sim-fixtures.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";
import { ENI, MAC, NODE1, NODE2, twoNodeWorld } from "./helpers/worlds.js";

let sim: SimulatorHandle | undefined;
let podinfo: string | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
  removeTempDir(podinfo);
  podinfo = undefined;
});

const NO_MANAGE = "node.k8s.amazonaws.com/no_manage";
const SUBNET_A = "subnet-00000000000000e00";
/** The pod's ranges in subnet A (198.51.100.0/26), one per family; 198.51.100.63 is AWS's, so not a /27. */
const RANGES = ["198.51.100.32/28", "2001:db8:100:1::100/120"];
const POD: PodInterface = {
  name: "net1",
  mac: MAC.node1A1,
  addresses: ["198.51.100.40", "2001:db8:100:1::140"],
};

type World = ReturnType<typeof twoNodeWorld>;
interface WorldEni {
  id: string;
  tags?: Record<string, string>;
  secondaryIpv4s?: string[];
}

/**
 * The healthy case: node 1's net1 on ENI node1A1 holds both pod addresses, every Multus ENI is tagged, and
 * each allowed range has its explicit reservation. `change` edits the world before the simulator starts.
 */
function healthyWorld(change: (world: World) => void = () => undefined): World {
  const world = twoNodeWorld({
    node1A1: { secondaryIpv4s: ["198.51.100.40"], ipv6s: ["2001:db8:100:1::140"] },
  });
  world.reservations = [
    { subnet: SUBNET_A, cidr: "198.51.100.32/28", type: "explicit", description: "pods" },
    { subnet: SUBNET_A, cidr: "2001:db8:100:1::100/120", type: "explicit", description: "pods" },
  ];
  change(world);
  return world;
}

/** The healthy world with faults set from the start. */
function faultyWorld(faults: Record<string, unknown>): World {
  return healthyWorld((w) => {
    w.faults = faults;
  });
}

function enisOf(world: World): WorldEni[] {
  return (world.instances as { enis: WorldEni[] }[]).flatMap((i) => i.enis);
}

function eniOf(world: World, id: string): WorldEni {
  const eni = enisOf(world).find((e) => e.id === id);
  if (eni === undefined) throw new Error(`no ENI ${id}`);
  return eni;
}

/** Links that are all up, MTU 9001, with the pod interfaces' MACs; `override` replaces one. */
class ScriptedLinks implements LinkSource {
  constructor(
    private readonly interfaces: readonly PodInterface[],
    private readonly override: Partial<Record<string, Partial<LinkInfo> | null>> = {},
  ) {}

  async names(): Promise<string[]> {
    return ["eth0", "lo", ...this.interfaces.map((i) => i.name)].sort();
  }

  async read(name: string): Promise<LinkInfo | undefined> {
    const change = this.override[name];
    if (change === null) return undefined;
    const iface = this.interfaces.find((i) => i.name === name);
    return { name, adminUp: true, operState: "up", mtu: 9001, mac: iface?.mac, ...change };
  }
}

const IP_OK = { probe: async () => ({ ok: true as const, command: "ip -o monitor address" }) };

interface SetUp {
  interfaces?: PodInterface[];
  /** Replaces the scripted interfaces, e.g. with a network-status file. */
  source?: InterfaceSource;
  links?: LinkSource;
  ipCommand?: DoctorDeps["ipCommand"];
  rpFilter?: DoctorDeps["rpFilter"];
  imdsEndpoint?: string;
  ec2Endpoint?: string;
  options?: Partial<DoctorOptions>;
  nodeSlices?: DoctorDeps["nodeSlices"];
}

async function doctor(world: World, setUp: SetUp = {}): Promise<CheckResult[]> {
  sim = await startSimulator(parseWorld(world));
  const logger = silentLogger();
  const imdsEndpoint = setUp.imdsEndpoint ?? sim.imdsEndpoints[NODE1] ?? "";
  const interfaces = setUp.interfaces ?? [POD];
  const deps: DoctorDeps = {
    imds: new ImdsClient({ endpoint: imdsEndpoint, requestTimeoutMs: 300 }),
    ec2: createEc2Api({
      region: "us-east-1",
      endpoint: setUp.ec2Endpoint ?? sim.ec2Endpoint,
      credentials,
      retry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 20 },
      requestTimeoutMs: 1000,
      logger,
    }),
    interfaces: setUp.source ?? new ScriptedInterfaces(interfaces),
    clock: systemClock,
    logger,
    imdsProbe: new HttpImdsProbe({ endpoint: imdsEndpoint, timeoutMs: 300, clock: systemClock }),
    links: setUp.links ?? new ScriptedLinks(interfaces),
    ipCommand: setUp.ipCommand ?? IP_OK,
    ...(setUp.rpFilter === undefined ? {} : { rpFilter: setUp.rpFilter }),
    ...(setUp.nodeSlices === undefined ? {} : { nodeSlices: setUp.nodeSlices }),
  };
  return runDoctor(deps, {
    allowedCidrs: RANGES,
    region: undefined,
    addressSource: "interfaces",
    networkStatusFile: "/etc/podinfo/annotations",
    selection: { include: [], exclude: ["lo", "eth0"] },
    addressEvents: "auto",
    ...setUp.options,
  });
}

function only(results: readonly CheckResult[], name: string, subject?: string): CheckResult {
  const found = results.filter((r) => r.name === name && (subject === undefined || r.subject === subject));
  if (found.length !== 1)
    throw new Error(`expected one ${name} ${subject ?? ""}, got ${JSON.stringify(found)}`);
  return found[0] as CheckResult;
}

function statuses(results: readonly CheckResult[]): Record<string, CheckStatus[]> {
  const out: Record<string, CheckStatus[]> = {};
  for (const r of results) out[r.name] = [...(out[r.name] ?? []), r.status];
  return out;
}

const MUTATING = [
  "AssignPrivateIpAddresses",
  "UnassignPrivateIpAddresses",
  "AssignIpv6Addresses",
  "UnassignIpv6Addresses",
];

describe("doctor against the simulator", () => {
  it("finds nothing wrong with a healthy pod, and changes nothing in EC2", async () => {
    const results = await doctor(healthyWorld());
    expect(statuses(results)).toEqual({
      interfaces: ["ok"],
      link: ["ok"],
      imds: ["ok"],
      instance: ["ok"],
      "eni-match": ["ok"],
      permission: ["ok", "ok", "skipped"],
      addresses: ["ok"],
      "eni-tag": ["ok"],
      "security-group": ["ok"],
      capacity: ["ok"],
      "allowed-cidr": ["ok", "ok"],
      "address-overlap": ["ok", "ok"],
      reservation: ["ok", "ok"],
      "prefix-support": ["ok"],
      "prefix-blocks": ["ok"],
      "node-slice": ["skipped"],
      "ip-command": ["ok"],
    });
    expect(only(results, "capacity").detail).toBe(
      `${ENI.node1A1} (net1) on m5.xlarge (15 addresses per ENI per family): IPv4 2 of 15 (primary included); ` +
        "IPv6 1 of 15; room for 13 more IPv4 and 14 more IPv6.",
    );
    const actions = new Set(sim?.calls().map((c) => c.action));
    expect([...actions].sort()).toEqual([
      "DescribeInstanceTypes",
      "DescribeNetworkInterfaces",
      "DescribeSecurityGroups",
      "GetSubnetCidrReservations",
    ]);
    for (const call of sim?.calls() ?? []) expect(MUTATING).not.toContain(call.action);
    // docs/doctor.md: "makes 7 EC2 calls for a pod with one Multus subnet" (its only subnet here).
    expect(sim?.calls().length).toBe(7);
    // Nothing is wrong: no fix line, not even under the assign/unassign permissions no DryRun can probe.
    expect(renderText(results, 0)).not.toContain("fix:");
  });

  describe("IMDS", () => {
    it("reports a token PUT that hangs while a GET is answered 401 as the hop limit, with the fix for this instance", async () => {
      const results = await doctor(
        healthyWorld((w) => {
          w.faults = { imdsTokenHang: true };
        }),
        // With AWS_REGION set (as IRSA sets it), EC2 names the instance by the pod interface's MAC.
        { options: { region: "us-east-1" } },
      );
      const imds = only(results, "imds");
      expect(imds.status).toBe("problem");
      expect(imds.detail).toContain("got no answer within 300 ms");
      expect(imds.detail).toContain("HTTP 401: tokens are required");
      expect(imds.detail).toContain("hop limit (HttpPutResponseHopLimit) is 1");
      expect(imds.fix).toBe(
        `aws ec2 modify-instance-metadata-options --instance-id ${NODE1} --http-put-response-hop-limit 2 ` +
          "--http-tokens required; for nodes to come, set MetadataOptions.HttpPutResponseHopLimit to 2 in the " +
          "node group's launch template",
      );
      expect(only(results, "instance").status).toBe("skipped");
      expect(only(results, "eni-tag").detail).toBe("not checked: IMDS issued no token (see imds).");
    });

    it("takes the instance id from IMDSv1 when the instance still allows it, and says how to find it otherwise", async () => {
      const results = await doctor(
        healthyWorld((w) => {
          w.faults = { imdsTokenHang: true };
          w.imds = { httpTokens: "optional" };
        }),
      );
      const imds = only(results, "imds");
      expect(imds.detail).toContain("HTTP 200: IMDSv1 is still allowed");
      expect(imds.fix).toContain(`--instance-id ${NODE1} `);
      await sim?.close();
      const unknown = only(
        await doctor(
          healthyWorld((w) => {
            w.faults = { imdsTokenHang: true };
          }),
        ),
        "imds",
      );
      expect(unknown.fix).toContain(
        "--instance-id <instance-id> --http-put-response-hop-limit 2 --http-tokens required (the node's instance id " +
          "ends its providerID: kubectl get node <node> -o jsonpath='{.spec.providerID}')",
      );
    });

    it("reports a disabled metadata endpoint", async () => {
      const imds = only(await doctor(faultyWorld({ imdsDisabled: true })), "imds");
      expect(imds.status).toBe("problem");
      expect(imds.detail).toContain(
        "answered 403 to the token request: the instance metadata endpoint is disabled",
      );
      expect(imds.fix).toContain("--http-endpoint enabled");
    });

    it("reports IMDS that answers nothing at all as a blocked path, not as the hop limit", async () => {
      const imds = only(await doctor(faultyWorld({ imdsLatencyMs: 1000 })), "imds");
      expect(imds.status).toBe("problem");
      expect(imds.detail).toContain("answered neither the token request nor a GET within 300 ms");
      expect(imds.fix).toContain("NetworkPolicy");
    });

    it("reports IMDS that cannot be reached", async () => {
      const imds = only(await doctor(healthyWorld(), { imdsEndpoint: await closedPortUrl() }), "imds");
      expect(imds.status).toBe("problem");
      expect(imds.detail).toMatch(/^cannot reach IMDS at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)\.$/);
    });

    it("reports an AWS_REGION that is not the instance's region, and asks EC2 nothing", async () => {
      const results = await doctor(healthyWorld(), { options: { region: "eu-west-1" } });
      const instance = only(results, "instance");
      expect(instance.status).toBe("problem");
      expect(instance.detail).toContain("but AWS_REGION is eu-west-1");
      expect(instance.fix).toBe(
        "set AWS_REGION to us-east-1, or unset it (the region is then read from IMDS)",
      );
      expect(sim?.calls()).toEqual([]);
    });
  });

  it("lists each IPMGR_* variable no command reads as a config problem, with the name it likely meant", async () => {
    const results = await doctor(healthyWorld(), {
      options: {
        unknownVariables: [
          { name: "IPMGR_COLOUR", suggestion: undefined },
          { name: "IPMGR_TIMOUT_MS", suggestion: "IPMGR_TIMEOUT_MS" },
        ],
      },
    });
    expect(results.filter((r) => r.name === "config")).toEqual([
      {
        name: "config",
        subject: "IPMGR_COLOUR",
        status: "problem",
        detail:
          "IPMGR_COLOUR is not a variable of multus-ipmgr and changes nothing; check its spelling against docs/configuration.md, or remove it",
        fix: "remove IPMGR_COLOUR from the container's env, or rename it to the variable you meant (docs/configuration.md)",
      },
      {
        name: "config",
        subject: "IPMGR_TIMOUT_MS",
        status: "problem",
        detail:
          "IPMGR_TIMOUT_MS is not a variable of multus-ipmgr and changes nothing; did you mean IPMGR_TIMEOUT_MS?",
        fix: "rename IPMGR_TIMOUT_MS to IPMGR_TIMEOUT_MS in the container's env",
      },
    ]);
  });

  describe("the node, from the bridge's host-network pod", () => {
    /** The node's links: ens5 the primary ENI, ens6..ens8 its Multus ENIs, `change` editing them. */
    class HostLinks implements LinkSource {
      constructor(private readonly links: LinkInfo[]) {}
      async names(): Promise<string[]> {
        return this.links.map((l) => l.name).sort();
      }
      async read(name: string): Promise<LinkInfo | undefined> {
        return this.links.find((l) => l.name === name);
      }
    }
    const link = (name: string, mac: string, change: Partial<LinkInfo> = {}): LinkInfo => ({
      name,
      adminUp: true,
      operState: "up",
      mtu: 9001,
      mac,
      ...change,
    });
    const rp = (values: Record<string, number>) => ({ read: async (name: string) => values[name] });

    it("finds each Multus ENI's link by MAC: up is ok, down or missing is a problem with the fix", async () => {
      const results = await doctor(healthyWorld(), {
        interfaces: [],
        links: new HostLinks([
          link("ens5", MAC.node1Eth0),
          link("ens6", MAC.node1A1),
          link("ens7", MAC.node1A2, { adminUp: false, operState: "down" }),
          link("lo", "00:00:00:00:00:00"),
        ]),
        rpFilter: rp({ all: 0, ens5: 1, ens6: 0, ens7: 2 }),
      });
      const links = results.filter((r) => r.name === "node-link");
      expect(links.map((r) => [r.subject, r.status])).toEqual([
        [ENI.node1A1, "ok"],
        [ENI.node1A2, "problem"],
        [ENI.node1B1, "problem"],
      ]);
      expect(links[0]?.detail).toBe(`${ENI.node1A1} (ens6, device 1) is up (operstate up, MTU 9001).`);
      expect(links[1]?.detail).toBe(
        `${ENI.node1A2} (ens7, device 2) is administratively down: its pods' ipvlan interfaces have no carrier and carry nothing.`,
      );
      expect(links[1]?.fix).toMatch(/^ip link set dev ens7 up /);
      expect(links[2]?.detail).toBe(
        `no link of this node carries the MAC ${MAC.node1B1} of ${ENI.node1B1} (device 3): the ENI is attached, but the node has not brought it in.`,
      );
      const filters = results.filter((r) => r.name === "rp-filter");
      expect(filters.map((r) => [r.subject, r.status, r.detail])).toEqual([
        [
          ENI.node1A1,
          "ok",
          `ens6 (${ENI.node1A1}): reverse-path filtering is off (net.ipv4.conf.ens6.rp_filter=0, net.ipv4.conf.all.rp_filter=0).`,
        ],
        [
          ENI.node1A2,
          "ok",
          `ens7 (${ENI.node1A2}): reverse-path filtering is loose (net.ipv4.conf.ens7.rp_filter=2, net.ipv4.conf.all.rp_filter=0).`,
        ],
      ]);
    });

    it("reports strict reverse-path filtering, the link's own or all's, with the sysctl that turns it off", async () => {
      const results = await doctor(healthyWorld(), {
        interfaces: [],
        links: new HostLinks([
          link("ens5", MAC.node1Eth0),
          link("ens6", MAC.node1A1),
          link("ens7", MAC.node1A2),
        ]),
        rpFilter: rp({ all: 1, ens6: 0, ens7: 0 }),
      });
      const strict = results.filter((r) => r.name === "rp-filter");
      expect(strict.map((r) => r.status)).toEqual(["problem", "problem"]);
      expect(strict[0]?.detail).toBe(
        `ens6 (${ENI.node1A1}) filters strictly (net.ipv4.conf.ens6.rp_filter=0, net.ipv4.conf.all.rp_filter=1; the kernel takes the larger): a packet arriving on it from an address the node routes another way is dropped.`,
      );
      expect(strict[0]?.fix).toBe(
        "sysctl -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.ens6.rp_filter=0, and the same in the node's user data (a file in /etc/sysctl.d/) for every boot",
      );
      const own = await doctor(healthyWorld(), {
        interfaces: [],
        links: new HostLinks([link("ens5", MAC.node1Eth0), link("ens6", MAC.node1A1)]),
        rpFilter: rp({ all: 0, ens6: 1 }),
      });
      expect(own.find((r) => r.name === "rp-filter" && r.subject === ENI.node1A1)?.fix).toMatch(
        /^sysctl -w net\.ipv4\.conf\.ens6\.rp_filter=0, /,
      );
    });

    it("checks only ENIs tagged no_manage, and nothing of the node from a pod's namespace", async () => {
      const untagged = await doctor(
        healthyWorld((w) => {
          eniOf(w, ENI.node1A2).tags = {};
        }),
        {
          interfaces: [],
          links: new HostLinks([link("ens5", MAC.node1Eth0), link("ens6", MAC.node1A1)]),
          rpFilter: rp({ all: 0 }),
        },
      );
      expect(untagged.filter((r) => r.name === "node-link").map((r) => r.subject)).toEqual([
        ENI.node1A1,
        ENI.node1B1,
      ]);
      await sim?.close();
      const inPod = await doctor(healthyWorld(), { rpFilter: rp({ all: 1 }) });
      expect(inPod.filter((r) => r.name === "node-link" || r.name === "rp-filter")).toEqual([]);
    });
  });

  describe("security groups", () => {
    const SG = "sg-00000000000000a11";
    /** Node 1's Multus ENI in its own group, with `ingress` as its inbound rules. */
    const withGroup = (ingress: unknown[]) =>
      healthyWorld((w) => {
        (w as Record<string, unknown>).securityGroups = [{ id: SG, name: "multus", ingress }];
        (eniOf(w, ENI.node1A1) as WorldEni & { securityGroups?: string[] }).securityGroups = [SG];
      });

    it("passes the VPC's default group: AWS's rule admits all traffic from the group itself", async () => {
      const result = only(await doctor(healthyWorld()), "security-group");
      expect(result.status).toBe("ok");
      expect(result.detail).toMatch(/admits all traffic from the group sg-/);
    });

    it("passes a group whose rule admits all traffic from the Multus subnet", async () => {
      const result = only(
        await doctor(withGroup([{ protocol: "-1", cidrs: ["198.51.100.0/24"] }])),
        "security-group",
      );
      expect(result).toMatchObject({ status: "ok", subject: ENI.node1A1 });
      expect(result.detail).toBe(
        `${ENI.node1A1} (net1): ${SG} admits all traffic from 198.51.100.0/24 (the Multus subnet 198.51.100.0/26), so pods on other nodes reach this node's pods.`,
      );
    });

    it("reports a group that admits nothing from the Multus side, with the authorize-security-group-ingress line", async () => {
      const result = only(
        await doctor(withGroup([{ protocol: "tcp", fromPort: 22, toPort: 22, cidrs: ["192.0.2.0/24"] }])),
        "security-group",
      );
      expect(result.status).toBe("problem");
      expect(result.detail).toBe(
        `${ENI.node1A1} (net1): no inbound rule of ${SG} admits traffic from the Multus subnet (198.51.100.0/26 and 2001:db8:100:1::/64) or from the group itself: EC2 drops what pods on other nodes send to this node's pods.`,
      );
      expect(result.fix).toBe(
        `aws ec2 authorize-security-group-ingress --group-id ${SG} --ip-permissions 'IpProtocol=-1,UserIdGroupPairs=[{GroupId=${SG},Description=multus-ipmgr pods}]' (every Multus ENI in ${SG}), or admit the Multus subnets with --cidr`,
      );
    });

    it("warns when the Multus side is admitted for some protocols only", async () => {
      const result = only(
        await doctor(withGroup([{ protocol: "tcp", fromPort: 443, toPort: 443, groups: [SG] }])),
        "security-group",
      );
      expect(result.status).toBe("warn");
      expect(result.detail).toBe(
        `${ENI.node1A1} (net1): its groups (${SG}) admit only tcp 443 from the group ${SG}: other pod traffic (a ping is ICMP) is dropped.`,
      );
    });

    it("warns, and checks the rest, when ec2:DescribeSecurityGroups is denied", async () => {
      const results = await doctor(faultyWorld({ deny: ["DescribeSecurityGroups"] }));
      const result = only(results, "security-group");
      expect(result.status).toBe("warn");
      expect(result.detail).toMatch(
        /^ec2:DescribeSecurityGroups is denied, so the groups of the Multus ENIs \(sg-/,
      );
      expect(result.fix).toContain("deploy/iam/iam-policy-pod.json");
      expect(only(results, "capacity").status).toBe("ok");
    });
  });

  describe("the pod's interfaces", () => {
    it("reports a pod without a managed interface, naming the links it has", async () => {
      const results = await doctor(healthyWorld(), { interfaces: [] });
      const interfaces = only(results, "interfaces");
      expect(interfaces.status).toBe("problem");
      expect(interfaces.detail).toContain("this pod's links: eth0, lo");
      expect(only(results, "eni-match").status).toBe("skipped");
    });

    it("reports a network-status file that cannot be used, with init's sentence", async () => {
      podinfo = makeTempDir("ipmgr-podinfo-");
      const file = join(podinfo, "annotations");
      writeFileSync(file, 'k8s.v1.cni.cncf.io/network-status="[{\\"name\\": "\n');
      const source = new NetworkStatusSource(
        file,
        { include: [], exclude: ["lo", "eth0"] },
        () => new Set(["net1"]),
      );
      const results = await doctor(healthyWorld(), { source, options: { addressSource: "network-status" } });
      const interfaces = only(results, "interfaces");
      expect(interfaces.status).toBe("problem");
      expect(interfaces.detail).toContain(file);
      expect(only(results, "eni-match").status).toBe("skipped");
    });

    it("reports a link that is down and one whose parent ENI is down", async () => {
      const pods: PodInterface[] = [POD, { name: "net2", mac: MAC.node1B1, addresses: ["198.51.100.100"] }];
      const results = await doctor(healthyWorld(), {
        interfaces: pods,
        links: new ScriptedLinks(pods, {
          net1: { adminUp: false, operState: "down" },
          net2: { operState: "lowerlayerdown" },
        }),
        options: { allowedCidrs: [...RANGES, "198.51.100.96/27"] },
      });
      expect(only(results, "link", "net1").detail).toBe(
        "net1 is administratively down (operstate down, MTU 9001).",
      );
      const net2 = only(results, "link", "net2");
      expect(net2.status).toBe("problem");
      expect(net2.detail).toContain("no carrier (operstate lowerlayerdown, MTU 9001)");
      expect(net2.fix).toContain("ip link set dev <parent> up");
    });

    it("reports an interface whose MAC matches no ENI", async () => {
      const stranger = { name: "net1", mac: MAC.stranger, addresses: ["198.51.100.41"] };
      const results = await doctor(healthyWorld(), { interfaces: [stranger] });
      const match = only(results, "eni-match");
      expect(match.status).toBe("problem");
      expect(match.detail).toBe(
        `net1 has MAC ${MAC.stranger}, which matches no ENI of this instance (ENI MACs: ${MAC.node1Eth0}, ` +
          `${MAC.node1A1}, ${MAC.node1A2} and ${MAC.node1B1}); init and the sidecar refuse its addresses and exit 7.`,
      );
      expect(only(results, "eni-tag").status).toBe("skipped");
    });

    it("reports a pod address the planner refuses", async () => {
      const outside = { ...POD, addresses: ["198.51.100.40", "198.51.100.50", "2001:db8:100:1::140"] };
      const results = await doctor(healthyWorld(), {
        interfaces: [outside],
        options: { allowedCidrs: ["198.51.100.32/29", "2001:db8:100:1::100/120"] },
      });
      const refused = only(results, "addresses", "198.51.100.50");
      expect(refused.status).toBe("problem");
      expect(refused.detail).toContain("is outside the allowed CIDRs");
      expect(refused.fix).toContain("add its range to IPMGR_ALLOWED_CIDRS");
    });

    it("reports a pod address its ENI does not hold, naming the ENI that does", async () => {
      const results = await doctor(
        healthyWorld((w) => {
          eniOf(w, ENI.node1A1).secondaryIpv4s = [];
          eniOf(w, ENI.node2A1).secondaryIpv4s = ["198.51.100.40"];
        }),
      );
      const missing = only(results, "addresses", "198.51.100.40");
      expect(missing.status).toBe("problem");
      expect(missing.detail).toBe(
        `198.51.100.40 on net1 is not held by ${ENI.node1A1}, but ${ENI.node2A1} of ${NODE2} does: another pod ` +
          "claims it, or it was never released there; traffic for it does not reach this pod.",
      );
    });
  });

  describe("EC2", () => {
    it("reports ec2:DescribeNetworkInterfaces denied, and skips what needs it", async () => {
      const results = await doctor(faultyWorld({ deny: ["DescribeNetworkInterfaces"] }));
      const permission = only(results, "permission", "ec2:DescribeNetworkInterfaces");
      expect(permission.status).toBe("problem");
      expect(permission.detail).toContain("denied (probed with DryRun)");
      expect(permission.detail).toContain("UnauthorizedOperation");
      expect(only(results, "eni-tag").detail).toBe(
        "not checked: ec2:DescribeNetworkInterfaces is denied (see permission).",
      );
      expect(only(results, "reservation", RANGES[0]).status).toBe("ok");
    });

    it("warns that ec2:GetSubnetCidrReservations is denied, which only doctor needs", async () => {
      const results = await doctor(faultyWorld({ deny: ["GetSubnetCidrReservations"] }));
      const permission = only(results, "permission", "ec2:GetSubnetCidrReservations");
      expect(permission.status).toBe("warn");
      expect(permission.detail).toContain("init and the sidecar do not need it");
      expect(only(results, "reservation").detail).toBe(
        "not checked: ec2:GetSubnetCidrReservations is denied (see permission).",
      );
      expect(results.some((r) => r.status === "problem")).toBe(false);
    });

    it("reports an EC2 endpoint that does not answer", async () => {
      const results = await doctor(healthyWorld(), { ec2Endpoint: await closedPortUrl() });
      const ec2 = only(results, "ec2");
      expect(ec2.status).toBe("problem");
      expect(ec2.detail).toContain("EC2 DescribeNetworkInterfaces still failed after 2 attempts");
      expect(ec2.fix).toContain("check that the pod reaches the EC2 endpoint");
      expect(only(results, "eni-tag").detail).toBe(
        "not checked: EC2 could not be asked (see ec2, permission or instance).",
      );
    });

    it("reports a Multus ENI without the no_manage tag, with the command that tags it", async () => {
      const results = await doctor(
        healthyWorld((w) => {
          delete eniOf(w, ENI.node1A1).tags;
        }),
      );
      const tag = only(results, "eni-tag");
      expect(tag.status).toBe("problem");
      expect(tag.detail).toContain(`${ENI.node1A1} (net1) lacks the tag ${NO_MANAGE}=true`);
      expect(tag.fix).toContain(
        `aws ec2 create-tags --resources ${ENI.node1A1} --tags Key=${NO_MANAGE},Value=true`,
      );
      // The pod's own addresses on its own ENI are not "someone else's" addresses in the range.
      expect(only(results, "address-overlap", RANGES[0]).status).toBe("ok");
    });

    it("reports pod addresses that do not fit the ENI's limit, and warns when they fill it", async () => {
      // m5.xlarge: 15 per ENI. The primary and 13 others leave room for one of the pod's two addresses.
      const others = Array.from({ length: 13 }, (_, i) => `198.51.100.${50 + i}`);
      const results = await doctor(
        healthyWorld((w) => {
          eniOf(w, ENI.node1A1).secondaryIpv4s = others;
        }),
        { interfaces: [{ ...POD, addresses: ["198.51.100.40", "198.51.100.41"] }] },
      );
      const capacity = only(results, "capacity");
      expect(capacity.status).toBe("problem");
      expect(capacity.detail).toContain("IPv4 14 of 15 (primary included), 2 more for this pod");
      expect(capacity.detail).toContain("PrivateIpAddressLimitExceeded");
      await sim?.close();
      const full = only(
        await doctor(
          healthyWorld((w) => {
            eniOf(w, ENI.node1A1).secondaryIpv4s = others;
          }),
          { interfaces: [{ ...POD, addresses: ["198.51.100.40"] }] },
        ),
        "capacity",
      );
      expect(full.status).toBe("warn");
      expect(full.detail).toContain("Then it is full");
    });
  });

  describe("allowed CIDRs, subnets and reservations", () => {
    it("reports allowed CIDRs of which none lies in a subnet of the node's secondary ENIs", async () => {
      const results = await doctor(healthyWorld(), {
        options: { allowedCidrs: ["203.0.113.0/27"] },
        interfaces: [{ ...POD, addresses: [] }],
      });
      const cidr = only(results, "allowed-cidr");
      expect(cidr.status).toBe("problem");
      expect(cidr.detail).toContain("203.0.113.0/27 lies in no subnet of this node's secondary ENIs");
      expect(only(results, "reservation").status).toBe("skipped");
    });

    it("warns about node or VPC CNI addresses inside an allowed CIDR", async () => {
      const results = await doctor(
        healthyWorld((w) => {
          const node2 = eniOf(w, ENI.node2A1);
          delete node2.tags;
          node2.secondaryIpv4s = ["198.51.100.45"];
        }),
      );
      const overlap = only(results, "address-overlap", RANGES[0]);
      expect(overlap.status).toBe("warn");
      expect(overlap.detail).toContain(
        `198.51.100.45, held by ${ENI.node2A1} of ${NODE2}, which is not tagged ${NO_MANAGE}=true (a node's or the VPC CNI's ENI)`,
      );
    });

    it("reports an allowed CIDR without an explicit reservation, with the command that creates it", async () => {
      const results = await doctor(
        healthyWorld((w) => {
          w.reservations = [];
        }),
      );
      const reservation = only(results, "reservation", RANGES[0]);
      expect(reservation.status).toBe("problem");
      expect(reservation.detail).toContain(
        `no explicit subnet CIDR reservation in ${SUBNET_A} covers 198.51.100.32/28`,
      );
      expect(reservation.fix).toBe(
        `aws ec2 create-subnet-cidr-reservation --subnet-id ${SUBNET_A} --cidr 198.51.100.32/28 ` +
          '--reservation-type explicit --description "multus-ipmgr pod range"',
      );
    });

    it("reports the uncovered part of a partly reserved range, and a prefix reservation over a range", async () => {
      const results = await doctor(
        healthyWorld((w) => {
          w.reservations = [
            { subnet: SUBNET_A, cidr: "198.51.100.32/29", type: "explicit" },
            { subnet: SUBNET_A, cidr: "2001:db8:100:1::100/124", type: "prefix" },
          ];
        }),
      );
      const partial = only(results, "reservation", RANGES[0]);
      expect(partial.detail).toContain("leave 198.51.100.40/29 of 198.51.100.32/28 uncovered");
      expect(partial.fix).toContain("--cidr 198.51.100.40/29 ");
      const prefix = only(results, "reservation", RANGES[1]);
      expect(prefix.status).toBe("problem");
      expect(prefix.detail).toContain("overlaps the prefix reservation scr-");
      expect(prefix.fix).toMatch(
        /^aws ec2 delete-subnet-cidr-reservation --subnet-cidr-reservation-id scr-\w+; then aws ec2 create-subnet-cidr-reservation/,
      );
    });

    it("reports IPMGR_ALLOWED_CIDRS unset and skips what needs it", async () => {
      const results = await doctor(healthyWorld(), { options: { allowedCidrs: undefined } });
      expect(only(results, "config").status).toBe("problem");
      expect(only(results, "addresses").detail).toBe(
        "not checked: IPMGR_ALLOWED_CIDRS is not set (see config).",
      );
      expect(only(results, "reservation").status).toBe("skipped");
    });
  });

  describe("the ip command", () => {
    it("reports a missing ip command when the sidecar requires events, and warns when it would poll", async () => {
      const missing = new IpMonitorProbe({
        clock: systemClock,
        logger: silentLogger(),
        command: ["/nonexistent/ip", "-o", "monitor", "address"],
      });
      const required = only(
        await doctor(healthyWorld(), { ipCommand: missing, options: { addressEvents: "ip-monitor" } }),
        "ip-command",
      );
      expect(required.status).toBe("problem");
      expect(required.detail).toBe(
        'cannot run "/nonexistent/ip -o monitor address" (spawn /nonexistent/ip ENOENT), and IPMGR_ADDRESS_EVENTS is ' +
          "ip-monitor: the sidecar exits 2 at start.",
      );
      await sim?.close();
      const auto = only(await doctor(healthyWorld(), { ipCommand: missing }), "ip-command");
      expect(auto.status).toBe("warn");
    });

    it("starts and stops the monitor it probes", async () => {
      const probe = new IpMonitorProbe({
        clock: systemClock,
        logger: silentLogger(),
        command: ["sleep", "30"],
      });
      expect(await probe.probe()).toEqual({ ok: true, command: "sleep 30" });
    });
  });
});

describe("doctor in prefix mode, against the simulator", () => {
  /** Node 1's net1 ENI holds 198.51.100.32/28 (its slice) and a /80; the pod's addresses lie in them. */
  function prefixWorld(reservations: unknown[]): World {
    const world = twoNodeWorld({
      node1A1: { ipv4Prefixes: ["198.51.100.32/28"], ipv6Prefixes: ["2001:db8:100:1:1::/80"] },
    });
    world.reservations = reservations;
    return world;
  }
  const POD_IN_SLICE: PodInterface = {
    name: "net1",
    mac: MAC.node1A1,
    addresses: ["198.51.100.40", "2001:db8:100:1:1::140"],
  };
  const options = { allowedCidrs: ["198.51.100.32/28", "2001:db8:100:1:1::/96"] };

  // Node slices are covered by explicit reservations, as the bridge's keeper makes them (docs/prefix-mode.md).
  const EXPLICIT = [
    // .48/28 holds the subnet's last address, which AWS keeps: no block of subnet A's IPv4 reservations is free.
    { subnet: SUBNET_A, cidr: "198.51.100.32/28", type: "explicit", description: "slices" },
    { subnet: SUBNET_A, cidr: "198.51.100.48/28", type: "explicit", description: "slices" },
    { subnet: SUBNET_A, cidr: "2001:db8:100:1:1::/80", type: "explicit", description: "slices" },
    { subnet: SUBNET_A, cidr: "2001:db8:100:1:2::/79", type: "explicit", description: "slices" },
  ];
  /** Node 1's slices, from NodeSlicePools over 198.51.100.32/27 and 2001:db8:100:1::/76. */
  const SLICES: DoctorDeps["nodeSlices"] = {
    nodeName: NODE1,
    source: {
      slicesOf: async () => ({
        kind: "ok",
        slices: [
          { pool: "default/slices", poolRange: "198.51.100.32/27", sliceRange: "198.51.100.32/28" },
          { pool: "default/slices6", poolRange: "2001:db8:100:1::/76", sliceRange: "2001:db8:100:1:1::/80" },
        ],
      }),
    },
  };

  it("finds the type Nitro, the explicit reservations over the node-sliced range and their free blocks", async () => {
    const results = await doctor(prefixWorld(EXPLICIT), {
      interfaces: [POD_IN_SLICE],
      options,
      nodeSlices: SLICES,
    });
    expect(only(results, "prefix-support")).toMatchObject({ status: "ok", subject: "m5.xlarge" });
    const v4 = only(results, "prefix-blocks", `${SUBNET_A} IPv4`);
    expect(v4.status).toBe("problem");
    expect(v4.detail).toContain(`${ENI.node1A1} holds 198.51.100.32/28; the explicit reservations `);
    expect(v4.detail).toContain("over the node-sliced range have no free aligned /28 block left (2 in all)");
    const v6 = only(results, "prefix-blocks", `${SUBNET_A} IPv6`);
    expect(v6.status).toBe("ok");
    expect(v6.detail).toContain("2 of 3 aligned /80 blocks free.");
    expect(results.filter((r) => r.name === "node-slice").map((r) => r.status)).toEqual(["ok", "ok"]);
    expect(only(results, "reservation", "198.51.100.32/28").status).toBe("ok");
    expect(results.filter((r) => r.status === "problem" && r.name !== "prefix-blocks")).toEqual([]);
  });

  it("reports a prefix-type reservation over the node-sliced range in prefix-blocks and in reservation", async () => {
    const results = await doctor(
      prefixWorld([
        { subnet: SUBNET_A, cidr: "198.51.100.32/28", type: "prefix", description: "slices" },
        ...EXPLICIT.filter((r) => r.cidr !== "198.51.100.32/28"),
      ]),
      { interfaces: [POD_IN_SLICE], options, nodeSlices: SLICES },
    );
    const v4 = only(results, "prefix-blocks", `${SUBNET_A} IPv4`);
    expect(v4.status).toBe("problem");
    expect(v4.detail).toMatch(
      /; the prefix reservation scr-\S+ \(198\.51\.100\.32\/28\) overlaps the node-sliced range: /,
    );
    expect(v4.fix).toMatch(
      new RegExp(
        `^aws ec2 delete-subnet-cidr-reservation --subnet-cidr-reservation-id scr-\\S+; aws ec2 create-subnet-cidr-reservation --subnet-id ${SUBNET_A} --cidr 198\\.51\\.100\\.32/28 --reservation-type explicit `,
      ),
    );
    expect(only(results, "prefix-blocks", `${SUBNET_A} IPv6`).status).toBe("ok");
    // EC2 picks Ipv4PrefixCount's blocks from a prefix reservation first: no cover for a whereabouts range.
    const range = only(results, "reservation", "198.51.100.32/28");
    expect(range.status).toBe("problem");
    expect(range.detail).toContain("overlaps the prefix reservation scr-");
  });

  it("warns when a subnet that holds prefixes has no explicit reservation, and on a type that is not Nitro", async () => {
    const world = prefixWorld([]);
    const results = await doctor(world, { interfaces: [POD_IN_SLICE], options });
    const v4 = only(results, "prefix-blocks", `${SUBNET_A} IPv4`);
    expect(v4.status).toBe("warn");
    expect(v4.fix).toBe(
      `aws ec2 create-subnet-cidr-reservation --subnet-id ${SUBNET_A} --cidr <the node-sliced range of the NetworkAttachmentDefinition> --reservation-type explicit --description "multus-ipmgr node slices"`,
    );
    expect(only(results, "node-slice")).toEqual({
      name: "node-slice",
      status: "skipped",
      detail: "not checked: no Kubernetes API.",
    });
    await sim?.close();
    // A type that is not Nitro, with no prefix held (EC2 refuses them there).
    const xen = twoNodeWorld();
    (xen.instances as Record<string, unknown>[])[0] = {
      ...(xen.instances as Record<string, unknown>[])[0],
      instanceType: "c4.xlarge",
    };
    const onXen = await doctor(xen, { options: { allowedCidrs: RANGES } });
    expect(only(onXen, "prefix-support").detail).toContain(
      "c4.xlarge is not built on the Nitro System (DescribeInstanceTypes: hypervisor xen)",
    );
    expect(only(onXen, "prefix-blocks").detail).toBe(
      "no secondary ENI of this node holds a delegated prefix (per-address mode).",
    );
  });
});
