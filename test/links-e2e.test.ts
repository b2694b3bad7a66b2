/**
 * `multus-ipmgr links`, the built binary, in a namespace standing for the node, against the simulator's IMDS
 * in a namespace of its own. The node namespace has a veth with the ENI's MAC named as the kernel names a
 * hot-plugged ENA device (ens6); the agent must make it the network's link, then report it gone.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type LinkStatus, parseLinkStatus } from "../src/ipam-whereabouts-bridge/node/link-status.js";
import { collect, ip, Lab, labUnavailableReason } from "./helpers/netns.js";
import { eventually } from "./helpers/sidecar-lab.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";
import { MAC, NODE1, twoNodeWorld } from "./helpers/worlds.js";

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`links end-to-end tests skipped: ${unavailable}`);

let lab: Lab | undefined;
let dir: string | undefined;
afterEach(async () => {
  await lab?.close();
  lab = undefined;
  removeTempDir(dir);
  dir = undefined;
});

const NETWORKS = JSON.stringify([
  {
    name: "multus1",
    deviceIndex: 1,
    subnet: { byZone: { "us-east-1a": "subnet-00000000000000e00" } },
    securityGroups: { ids: ["sg-0123"] },
    mtu: 8900,
  },
]);

function status(file: string): LinkStatus | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const parsed = parseLinkStatus(text);
  return typeof parsed === "string" ? undefined : parsed;
}

async function nodeExec(l: Lab, ...args: string[]): Promise<string> {
  return ip("netns", "exec", l.pods.get("node")?.ns ?? "", ...args);
}

describe.skipIf(unavailable !== undefined)("multus-ipmgr links in a node namespace", () => {
  it("renames ens6 to the network's name, sets MTU, up, no address, rp_filter 0, writes ready; then waiting once the link goes", async () => {
    dir = makeTempDir("ipmgr-node-");
    const statusFile = join(dir, "run", "links.json");
    const networkdDir = join(dir, "networkd");
    const l = await Lab.start(twoNodeWorld(), [
      {
        name: "node",
        instanceId: NODE1,
        interfaces: [{ name: "ens6", mac: MAC.node1A1, addresses: ["203.0.113.5/32"] }],
      },
    ]);
    lab = l;
    await nodeExec(l, "sh", "-c", "echo 2 > /proc/sys/net/ipv4/conf/ens6/rp_filter");
    const agent: ChildProcess = l.spawn(
      "node",
      ["links"],
      l.env("node", {
        IPMGR_BRIDGE_ATTACH_NETWORKS: NETWORKS,
        IPMGR_BRIDGE_LINK_STATUS_FILE: statusFile,
        IPMGR_LINKS_NETWORKD_DIR: networkdDir,
        IPMGR_LINKS_INTERVAL_MS: "200",
      }),
    );
    const output = collect(agent, 120_000);
    await eventually(() => status(statusFile)?.links[0]?.state === "ready", "the link reported ready");
    expect(status(statusFile)?.links).toEqual([
      {
        network: "multus1",
        deviceIndex: 1,
        networkCardIndex: 0,
        mac: MAC.node1A1,
        state: "ready",
        detail: "multus1: MTU 8900, up, no address, rp_filter 0",
      },
    ]);
    const [link] = JSON.parse(await nodeExec(l, "ip", "-j", "addr", "show", "dev", "multus1")) as {
      mtu: number;
      flags: string[];
      address: string;
      addr_info: { family: string; local: string }[];
    }[];
    expect(link?.address).toBe(MAC.node1A1);
    expect(link?.mtu).toBe(8900);
    expect(link?.flags).toContain("UP");
    expect(link?.addr_info.filter((a) => !a.local.startsWith("fe80:"))).toEqual([]);
    expect((await nodeExec(l, "cat", "/proc/sys/net/ipv4/conf/multus1/rp_filter")).trim()).toBe("0");
    expect(await nodeExec(l, "ip", "-o", "link", "show", "dev", "ens6").catch(() => "gone")).toBe("gone");
    expect(readFileSync(join(networkdDir, "10-multus-ipmgr-multus1.network"), "utf8")).toContain(
      `[Match]\nMACAddress=${MAC.node1A1}\n\n[Link]\nUnmanaged=yes\n`,
    );

    // An address put on the link later (amazon-ec2-net-utils' /32 alias of a new secondary IPv4) goes too.
    await l.addAddress("node", "multus1", "203.0.113.6/32");
    await l.addAddress("node", "multus1", "2001:db8::6/128");
    const addresses = async () =>
      (
        JSON.parse(await nodeExec(l, "ip", "-j", "addr", "show", "dev", "multus1")) as {
          addr_info: { local: string }[];
        }[]
      )[0]?.addr_info.map((a) => a.local) ?? [];
    await eventually(
      async () => (await addresses()).every((a) => a.startsWith("fe80:")),
      "the addresses added later removed",
    );

    await ip("-n", l.pods.get("node")?.ns ?? "", "link", "del", "multus1");
    await eventually(() => status(statusFile)?.links[0]?.state === "waiting", "the link reported waiting");
    expect(status(statusFile)?.links[0]?.detail).toBe(
      `no link in /sys/class/net has the MAC ${MAC.node1A1} of the ENI at network card 0, device 1 yet (the kernel adds it once the attachment completes)`,
    );

    agent.kill("SIGTERM");
    const result = await output;
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const logs = result.stdout
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as { msg: string; address?: string });
    expect(logs.filter((x) => x.msg.startsWith("removed an address")).map((x) => x.address)).toEqual([
      "203.0.113.5/32",
      "203.0.113.6/32",
      "2001:db8::6/128",
    ]);
  });
});
