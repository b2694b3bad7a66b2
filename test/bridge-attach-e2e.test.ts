/**
 * Attach mode end to end: the built binary's `multus-ipmgr bridge` (IPMGR_BRIDGE_ATTACH=on) and `multus-ipmgr
 * links` in a namespace standing for the node, against `multus-ipmgr sim` in a namespace of its own whose
 * world names the node's namespace as the instance's `netns` (the hot-plug stand-in). The node registers
 * tainted with no Multus ENI; a Multus pod is created before anything runs. Then: the bridge makes and
 * attaches the ENI, the link appears as ens6, the agent renames it to the network's name (eth1, the NAD's
 * master) and brings it up, the taint goes, and the pod, Pending until then, is scheduled, runs, and its
 * address is assigned on the new ENI.
 */
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { attachEnv, attachWorldFile, INSTANCE, multusPodSpec, TAINT } from "./helpers/attach-bridge.js";
import { tempKubeconfig } from "./helpers/kube-proxy.js";
import { eventually, type Json, NODE_A } from "./helpers/kube-worlds.js";
import { collect, ip, Lab, type LabPod, labUnavailableReason } from "./helpers/netns.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`attach mode end-to-end tests skipped: ${unavailable}`);

let lab: Lab | undefined;
let dir: string | undefined;
let kubeconfig: { remove(): void } | undefined;
afterEach(async () => {
  await lab?.close();
  lab = undefined;
  kubeconfig?.remove();
  kubeconfig = undefined;
  removeTempDir(dir);
  dir = undefined;
});

interface IpLink {
  ifname: string;
  address: string;
  mtu: number;
  flags: string[];
}

describe.skipIf(unavailable !== undefined)("attach mode end to end, the built binaries in namespaces", () => {
  it("a node registered tainted with no Multus ENI: ENI made and attached, ens6 renamed eth1 and up, the taint off, a pod Pending before runs routed on the new ENI", async () => {
    dir = makeTempDir("ipmgr-node-");
    const statusFile = join(dir, "run", "links.json");
    const l = await Lab.start(
      (pods: ReadonlyMap<string, LabPod>) => attachWorldFile({ netns: pods.get("node")?.ns ?? "" }),
      [{ name: "node", instanceId: INSTANCE, interfaces: [] }],
    );
    lab = l;
    const api = l.sim.kubernetes ?? "";
    const k = await tempKubeconfig(api);
    kubeconfig = k;
    const get = async (path: string): Promise<Json> =>
      JSON.parse((await l.podRequest("node", "GET", `${api}${path}`)).body);
    const pod = () => get("/api/v1/namespaces/cnf/pods/upf-0");
    const taints = async (): Promise<string[]> =>
      ((await get(`/api/v1/nodes/${NODE_A}`)).spec.taints ?? []).map((t: Json) => t.key);
    const links = async (): Promise<IpLink[]> =>
      JSON.parse(await ip("-n", l.pods.get("node")?.ns ?? "", "-j", "link", "show")) as IpLink[];

    expect(await taints()).toEqual([TAINT]);
    expect(
      (await l.podRequest("node", "POST", `${api}/api/v1/namespaces/cnf/pods`, multusPodSpec("upf-0")))
        .status,
    ).toBe(201);
    await eventually(
      async () => ((await pod()).status.conditions ?? []).some((c: Json) => c.reason === "Unschedulable"),
      "upf-0 unschedulable while the node is tainted",
    );
    expect((await pod()).spec.nodeName).toBeUndefined();

    const { IPMGR_BRIDGE_ATTACH_NETWORKS } = attachEnv();
    const agent: ChildProcess = l.spawn(
      "node",
      ["links"],
      l.env("node", {
        IPMGR_BRIDGE_ATTACH_NETWORKS: IPMGR_BRIDGE_ATTACH_NETWORKS ?? "",
        IPMGR_BRIDGE_LINK_STATUS_FILE: statusFile,
        IPMGR_LINKS_NETWORKD_DIR: join(dir, "networkd"),
        IPMGR_LINKS_INTERVAL_MS: "500",
      }),
    );
    const agentOutput = collect(agent, 120_000);
    const bridge: ChildProcess = l.spawn(
      "node",
      ["bridge"],
      l.env("node", {
        ...attachEnv(1, {
          IPMGR_KUBECONFIG: k.path,
          IPMGR_BRIDGE_LINK_STATUS_FILE: statusFile,
          IPMGR_HTTP_HOST: "127.0.0.1",
          IPMGR_HTTP_PORT: "9180",
        }),
      }),
    );
    const bridgeOutput = collect(bridge, 120_000);

    await eventually(async () => !(await taints()).includes(TAINT), "the startup taint removed", 30_000);
    const made = (await l.state()).enis.filter((e) => e.createdAt !== null);
    expect(made).toHaveLength(1);
    const [eni] = made;
    expect(eni).toMatchObject({
      instanceId: INSTANCE,
      deviceIndex: 1,
      subnetId: "subnet-0b0b",
      deleteOnTermination: true,
    });
    // The hot-plugged ens6 is now eth1: the ENI's MAC, MTU 9001, up; no ens6 left.
    const nodeLinks = await links();
    expect(nodeLinks.map((x) => x.ifname)).not.toContain("ens6");
    expect(nodeLinks.find((x) => x.ifname === "eth1")).toMatchObject({ address: eni?.mac, mtu: 9001 });
    expect(nodeLinks.find((x) => x.ifname === "eth1")?.flags).toContain("UP");

    await eventually(async () => (await pod()).status.phase === "Running", "upf-0 running", 30_000);
    expect((await pod()).spec.nodeName).toBe(NODE_A);
    const networks = JSON.parse(
      (await pod()).metadata.annotations["k8s.v1.cni.cncf.io/network-status"],
    ) as Json[];
    const multus = networks.find((n) => n.name === "cnf/multus-ipvlan");
    expect(multus.mac).toBe(eni?.mac);
    const [address] = multus.ips as string[];
    await eventually(
      async () =>
        ((await l.state()).enis.find((e) => e.eniId === eni?.eniId)?.ipv4s ?? []).includes(address ?? ""),
      `${address} assigned on the new ENI`,
      30_000,
    );
    const ready = await l.podGet("node", "http://127.0.0.1:9180/readyz");
    expect(ready.body).toContain(`attach mode: network eth1: ENI ${eni?.eniId} attached at card 0 device 1`);

    bridge.kill("SIGTERM");
    agent.kill("SIGTERM");
    const [b, a] = await Promise.all([bridgeOutput, agentOutput]);
    expect({ code: b.code, stderr: b.stderr }).toEqual({ code: 0, stderr: "" });
    expect({ code: a.code, stderr: a.stderr }).toEqual({ code: 0, stderr: "" });
    // The link appeared under the kernel's name and the agent renamed it.
    const steps = a.stdout
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(steps).toContain("rename ens6 to eth1");
  });
});
