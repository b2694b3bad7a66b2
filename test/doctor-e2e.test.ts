/**
 * `multus-ipmgr doctor`, the built binary, run in a pod namespace of the lab against the simulator: the real
 * sysfs of the pod's namespace, the real `ip` command, the real IMDS and EC2 clients. `--profile node` in a
 * namespace that stands for the node's: its links carry the ENIs' MACs, its own /proc/sys/net holds rp_filter.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { writeKubeconfig } from "../src/sim/kube/kubeconfig.js";
import { eventually, kubeWorld, MAC_A, NODE_A } from "./helpers/kube-worlds.js";
import { ip, Lab, labUnavailableReason } from "./helpers/netns.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";
import { ENI, MAC, NODE1, twoNodeWorld } from "./helpers/worlds.js";

const exec = promisify(execFile);

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`doctor end-to-end tests skipped: ${unavailable}`);

let lab: Lab | undefined;
let dir: string | undefined;
afterEach(async () => {
  await lab?.close();
  lab = undefined;
  removeTempDir(dir);
  dir = undefined;
});

const SUBNET_A = "subnet-00000000000000e00";
const RANGES = "198.51.100.32/28,2001:db8:100:1::100/120";

function world(): Record<string, unknown> {
  return {
    ...twoNodeWorld(),
    reservations: [
      { subnet: SUBNET_A, cidr: "198.51.100.32/28", type: "explicit" },
      { subnet: SUBNET_A, cidr: "2001:db8:100:1::100/120", type: "explicit" },
    ],
  };
}

interface Report {
  ok: boolean;
  exitCode: number;
  summary: Record<string, number>;
  checks: { name: string; subject?: string; status: string; detail: string; fix?: string }[];
}

describe.skipIf(unavailable !== undefined)("multus-ipmgr doctor in a pod namespace", () => {
  async function start(): Promise<Lab> {
    lab = await Lab.start(world(), [
      {
        name: "pod",
        instanceId: NODE1,
        interfaces: [
          { name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26", "2001:db8:100:1::140/64"] },
        ],
      },
    ]);
    return lab;
  }

  const env = (l: Lab) => l.env("pod", { IPMGR_ALLOWED_CIDRS: RANGES, IPMGR_IMDS_TIMEOUT_MS: "300" });

  it("finds nothing wrong once init has run, prints JSON for tools, exits 0 and changes nothing", async () => {
    const l = await start();
    expect((await l.run("pod", ["init"], env(l))).code).toBe(0);
    await l.clearCalls();
    const result = await l.run("pod", ["doctor", "--json"], env(l));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as Report;
    expect(report).toMatchObject({ ok: true, exitCode: 0, summary: { problem: 0, warn: 0 } });
    expect(report.checks.find((c) => c.name === "link")?.detail).toBe("net1 is up (operstate up, MTU 1500).");
    expect(report.checks.find((c) => c.name === "eni-tag")?.detail).toBe(
      `${ENI.node1A1} (net1) carries node.k8s.amazonaws.com/no_manage=true.`,
    );
    expect(report.checks.find((c) => c.name === "ip-command")?.status).toBe("ok");
    expect(report.checks.find((c) => c.name === "prefix-support")?.status).toBe("ok");
    expect(report.checks.find((c) => c.name === "node-slice")).toMatchObject({
      status: "skipped",
      detail:
        "not checked: no Kubernetes API (KUBERNETES_SERVICE_HOST is not set: doctor does not run in a pod; outside one, IPMGR_KUBECONFIG or --kubeconfig names a kubeconfig, NODE_NAME or --node-name the node).",
    });
    const actions = new Set((await l.calls()).map((c) => c.action));
    expect([...actions].sort()).toEqual([
      "DescribeInstanceTypes",
      "DescribeNetworkInterfaces",
      "DescribeSecurityGroups",
      "GetSubnetCidrReservations",
    ]);
  });

  it("reports the hop limit and a link that is down, and exits 10", async () => {
    const l = await start();
    await l.setFaults({ imdsTokenHang: true });
    const ns = l.pods.get("pod")?.ns ?? "";
    await ip("-n", ns, "link", "set", "net1", "down");
    const result = await l.run("pod", ["doctor"], env(l));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(10);
    const lines = result.stdout.split("\n");
    expect(lines.find((line) => line.startsWith("PROBLEM  link"))).toContain(
      "net1 is administratively down (operstate down, MTU 1500); the pod's interface read leaves out such links",
    );
    const imds = lines.findIndex((line) => line.startsWith("PROBLEM  imds"));
    expect(lines[imds]).toContain("HTTP 401: tokens are required");
    expect(lines[imds + 1]?.trim()).toMatch(
      /^fix: aws ec2 modify-instance-metadata-options --instance-id <instance-id> --http-put-response-hop-limit 2 /,
    );
    expect(lines.at(-2)).toMatch(
      /^multus-ipmgr doctor: 3 problems, 0 warnings, \d+ ok, \d+ skipped \(exit 10\)\.$/,
    );
  });

  it("reads this node's slices from the simulator's Kubernetes API through --kubeconfig and --node-name", async () => {
    const nads = (kubeWorld().kubernetes as unknown as { networkAttachmentDefinitions: unknown[] })
      .networkAttachmentDefinitions;
    const sliced = {
      namespace: "kube-system",
      name: "slices",
      config: {
        cniVersion: "0.3.1",
        name: "slices",
        type: "ipvlan",
        master: "eth1",
        ipam: {
          type: "whereabouts",
          network_name: "slices",
          range: "198.51.100.224/27",
          node_slice_size: "/28",
        },
      },
    };
    const l = await Lab.start(kubeWorld({ networkAttachmentDefinitions: [...nads, sliced] }), [
      {
        name: "pod",
        instanceId: "i-0a",
        interfaces: [{ name: "net1", mac: MAC_A, addresses: ["198.51.100.193/25"] }],
      },
    ]);
    lab = l;
    expect(l.sim.kubernetes).toBeDefined();
    dir = makeTempDir("ipmgr-kube-");
    const kubeconfig = join(dir, "kubeconfig");
    await writeKubeconfig(kubeconfig, l.sim.kubernetes ?? "");
    const doctorEnv = l.env("pod", {
      IPMGR_ALLOWED_CIDRS: "198.51.100.192/27",
      IPMGR_IMDS_TIMEOUT_MS: "300",
    });
    let check: Report["checks"][number] | undefined;
    // whereabouts' node slice controller (simulated) gives the node its slice shortly after start.
    await eventually(
      async () => {
        const result = await l.run(
          "pod",
          ["doctor", "--json", "--kubeconfig", kubeconfig, "--node-name", NODE_A],
          doctorEnv,
        );
        expect(result.stderr).toBe("");
        check = (JSON.parse(result.stdout) as Report).checks.find((c) => c.name === "node-slice");
        return check?.detail.includes("NodeSlicePool kube-system/slices") === true;
      },
      "doctor reads node A's slice through the kubeconfig",
      30_000,
    );
    expect(check?.status).not.toBe("skipped");
    expect(check?.detail).toMatch(
      /^slice 198\.51\.100\.2(24|40)\/28 of NodeSlicePool kube-system\/slices \(range 198\.51\.100\.224\/27\)/,
    );
  });
});

describe.skipIf(unavailable !== undefined)("multus-ipmgr doctor --profile node in a node namespace", () => {
  /** Node 1's namespace as the bridge's host-network pod sees it: ens5 the primary ENI, ens6..ens8 its Multus ENIs. */
  async function start(): Promise<Lab> {
    lab = await Lab.start(world(), [
      {
        name: "node",
        instanceId: NODE1,
        interfaces: [
          { name: "ens5", mac: MAC.node1Eth0, addresses: ["198.51.100.140/25"] },
          { name: "ens6", mac: MAC.node1A1, addresses: [] },
          { name: "ens7", mac: MAC.node1A2, addresses: [] },
          { name: "ens8", mac: MAC.node1B1, addresses: [] },
        ],
      },
    ]);
    return lab;
  }

  /** Sets the namespace's IPv4 rp_filter values, `all` and per link, as a node's user data would. */
  async function rpFilter(l: Lab, values: Record<string, number>): Promise<void> {
    const ns = l.pods.get("node")?.ns ?? "";
    const pairs = Object.entries(values).map(([link, v]) => `net.ipv4.conf.${link}.rp_filter=${v}`);
    await exec("ip", ["netns", "exec", ns, "sysctl", "-qw", ...pairs]);
  }

  const env = (l: Lab) => l.env("node", { IPMGR_ALLOWED_CIDRS: RANGES, IPMGR_IMDS_TIMEOUT_MS: "300" });

  it("passes a healthy node, reading its links, addresses and rp_filter, and exits 0", async () => {
    const l = await start();
    await rpFilter(l, { all: 0, ens6: 0, ens7: 0, ens8: 2 });
    const result = await l.run("node", ["doctor", "--profile", "node", "--json"], env(l));
    expect(result.stderr).toBe("");
    const report = JSON.parse(result.stdout) as Report;
    expect(report.checks.filter((c) => c.status === "problem")).toEqual([]);
    expect(result.code).toBe(0);
    expect(report.checks.filter((c) => c.name === "node-link").map((c) => c.detail)).toEqual([
      `${ENI.node1A1} (ens6, device 1) is up (operstate up, MTU 1500).`,
      `${ENI.node1A2} (ens7, device 2) is up (operstate up, MTU 1500).`,
      `${ENI.node1B1} (ens8, device 3) is up (operstate up, MTU 1500).`,
    ]);
    expect(report.checks.filter((c) => c.name === "rp-filter").map((c) => c.status)).toEqual([
      "ok",
      "ok",
      "ok",
    ]);
    expect(report.checks.find((c) => c.name === "host-address")?.status).toBe("ok");
    expect(report.checks.map((c) => c.name)).not.toContain("interfaces");
  });

  it("reports strict rp_filter and a pod address the node carries, with their fixes, and exits 10", async () => {
    const l = await start();
    await rpFilter(l, { all: 0, ens6: 1, ens7: 0, ens8: 0 });
    await l.addAddress("node", "ens6", "198.51.100.40/26");
    const result = await l.run("node", ["doctor", "--profile", "node", "--json"], env(l));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(10);
    const report = JSON.parse(result.stdout) as Report;
    expect(report.checks.filter((c) => c.status === "problem").map((c) => [c.name, c.subject])).toEqual([
      ["rp-filter", ENI.node1A1],
      ["host-address", "198.51.100.40"],
    ]);
    const problems = report.checks.filter((c) => c.status === "problem");
    expect(problems[0]?.fix).toMatch(/^sysctl -w net\.ipv4\.conf\.ens6\.rp_filter=0, /);
    expect(problems[1]?.fix).toMatch(/^ip address del \$\(ip -o address show dev ens6 to 198\.51\.100\.40 /);
  });
});
