/**
 * Attach mode on a new node: the built `multus-ipmgr bridge` (IPMGR_BRIDGE_ATTACH=on, 2 networks) and
 * `multus-ipmgr links` in a namespace standing for the node, against the simulator in its own namespace with
 * its default latencies (none), the node registered tainted with no Multus ENI (as test/bridge-attach-e2e.ts).
 * Measured: from the bridge's spawn to its log line "startup taint taken off the node" (its own clock), and
 * the EC2 calls the simulator logged until then; beside them, the first-boot script's calls for the same node
 * (docs/attach-mode.md, "Calls, beside the first-boot script": 3 mutating calls per ENI and a DescribeSubnets
 * per ENI, the script run once per ENI). Needs root (network namespaces).
 */
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { attachEnv, attachWorldFile, INSTANCE } from "../test/helpers/attach-bridge.js";
import { tempKubeconfig } from "../test/helpers/kube-proxy.js";
import { Lab, type LabPod, labUnavailableReason } from "../test/helpers/netns.js";
import { makeTempDir, removeTempDir } from "../test/helpers/temp-dirs.js";
import type { BenchResult } from "./result.js";

const NETWORKS = 2;
const MUTATING = new Set([
  "CreateNetworkInterface",
  "AttachNetworkInterface",
  "ModifyNetworkInterfaceAttribute",
  "DeleteNetworkInterface",
  "AssignPrivateIpAddresses",
  "AssignIpv6Addresses",
]);
/** multus-eni.sh, once per ENI: Create, Attach, Modify DeleteOnTermination, and one DescribeSubnets. */
const SCRIPT_MUTATING_PER_ENI = 3;
const SCRIPT_READS_PER_ENI = 1;

export async function benchBridgeAttach(): Promise<BenchResult[]> {
  const reason = labUnavailableReason();
  if (reason !== undefined) {
    process.stdout.write(`bridge attach mode: skipped: ${reason}\n`);
    return [];
  }
  const dir = makeTempDir("ipmgr-node-");
  let lab: Lab | undefined;
  let kubeconfig: { remove(): void } | undefined;
  try {
    const l = await Lab.start(
      (pods: ReadonlyMap<string, LabPod>) => attachWorldFile({ netns: pods.get("node")?.ns ?? "" }),
      [{ name: "node", instanceId: INSTANCE, interfaces: [] }],
    );
    lab = l;
    const k = await tempKubeconfig(l.sim.kubernetes ?? "");
    kubeconfig = k;
    const statusFile = join(dir, "links.json");
    const env = attachEnv(NETWORKS, { IPMGR_KUBECONFIG: k.path, IPMGR_BRIDGE_LINK_STATUS_FILE: statusFile });
    l.spawn(
      "node",
      ["links"],
      l.env("node", {
        IPMGR_BRIDGE_ATTACH_NETWORKS: env.IPMGR_BRIDGE_ATTACH_NETWORKS ?? "",
        IPMGR_BRIDGE_LINK_STATUS_FILE: statusFile,
        IPMGR_LINKS_NETWORKD_DIR: join(dir, "networkd"),
      }),
    );
    const started = Date.now();
    const bridge = l.spawn("node", ["bridge"], l.env("node", env));
    const removedAt = await taintRemoved(bridge, 60_000);
    const calls = (await l.calls()).filter(
      (c) => Date.parse(c.time) <= (removedAt ?? Number.POSITIVE_INFINITY),
    );
    const mutating = calls.filter((c) => MUTATING.has(c.action)).length;
    const perEni = mutating / NETWORKS;
    const ms = removedAt === undefined ? Number.NaN : removedAt - started;
    const script = `multus-eni.sh for the same node: ${SCRIPT_MUTATING_PER_ENI * NETWORKS} mutating + ${SCRIPT_READS_PER_ENI * NETWORKS} reads`;
    return [
      {
        name: `bridge attach mode: a new node with ${NETWORKS} networks, bridge start to startup taint removed (${calls.length} EC2 calls for the node)`,
        value: ms,
        unit: "ms",
        target: "<= 10000 ms",
        ok: Number.isFinite(ms) && ms <= 10_000,
      },
      {
        name: `bridge attach mode: mutating EC2 calls per ENI until the taint was removed (${mutating} for ${NETWORKS} ENIs, ${calls.length - mutating} reads; ${script})`,
        value: perEni,
        unit: "calls",
        target: "<= 5 calls",
        ok: removedAt !== undefined && perEni <= 5,
      },
    ];
  } finally {
    await lab?.close();
    kubeconfig?.remove();
    removeTempDir(dir);
  }
}

/** The time (ms since the epoch, the bridge's clock) of its log line saying the taint came off; undefined after timeoutMs. */
function taintRemoved(bridge: ChildProcess, timeoutMs: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), timeoutMs);
    createInterface({ input: bridge.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      let entry: { msg?: string; time?: number | string };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        return;
      }
      if (entry.msg === "startup taint taken off the node") {
        clearTimeout(timer);
        resolve(typeof entry.time === "number" ? entry.time : Date.parse(String(entry.time)));
      }
    });
  });
}
