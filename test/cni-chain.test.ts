/**
 * The real reference CNI plugins (Debian's containernetworking-plugins), run as a runtime runs a conflist
 * (test/helpers/cni-chain.ts), in network namespaces this test makes. ipvlan links are not available on
 * these machines, so macvlan stands in for ipvlan: on a master of its own in the node's namespace (a veth
 * end; a macvlan child cannot take its own master's MAC), `static` IPAM, then `tuning` giving the pod
 * interface the ENI's MAC, as ipvlan's interface carries its master ENI's. Then the same chain with
 * multus-ipmgr's host binary last, against a stand-in for the bridge's socket.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  CniChain,
  type Conflist,
  REFERENCE_PLUGINS_DIR,
  referencePluginsUnavailableReason,
} from "./helpers/cni-chain.js";
import { CNI_PLUGIN, cniPluginUnavailableReason, FakeCniBridge } from "./helpers/cni-plugin.js";
import { ip, labUnavailableReason, NS_PREFIX } from "./helpers/netns.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const unavailable =
  labUnavailableReason() ?? referencePluginsUnavailableReason() ?? cniPluginUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/cni-chain.test.ts is skipped\n`);

const ENI_MAC = "02:00:00:00:0a:01";
const POD_ADDRESS = "198.51.100.70/25";
const GATEWAY = "198.51.100.1";

/** The reference chain that stands in for `ipvlan` with an IPAM: macvlan, static, tuning. */
const referencePlugins = [
  {
    type: "macvlan",
    master: "eni-stand-in",
    mode: "bridge",
    ipam: { type: "static", addresses: [{ address: POD_ADDRESS, gateway: GATEWAY }] },
  },
  { type: "tuning", mac: ENI_MAC },
] as const;

const id = randomBytes(3).toString("hex");
const nodeNs = `${NS_PREFIX}${process.pid}-${id}-node`;
let podIndex = 0;
const podNamespaces: string[] = [];
let dir = "";
const bridges: FakeCniBridge[] = [];

beforeAll(async () => {
  if (unavailable !== undefined) return;
  dir = makeTempDir("ipmgr-cni-");
  await ip("netns", "add", nodeNs);
  // The macvlan's master: a veth end of its own in the node's namespace, up.
  await ip("-n", nodeNs, "link", "add", "eni-stand-in", "type", "veth", "peer", "name", "eni-peer");
  await ip("-n", nodeNs, "link", "set", "eni-stand-in", "up");
  await ip("-n", nodeNs, "link", "set", "eni-peer", "up");
});

afterEach(async () => {
  await Promise.all(bridges.splice(0).map((b) => b.close()));
  for (const ns of podNamespaces.splice(0)) {
    await ip("netns", "del", ns);
    // tuning keeps the link's former settings here until DEL: a test that failed before DEL leaves it.
    rmSync(`/run/cni/tuning/c-${ns}_net1.json`, { force: true });
  }
});

afterAll(async () => {
  if (unavailable !== undefined) return;
  await ip("netns", "del", nodeNs);
  removeTempDir(dir);
});

async function newPod(): Promise<string> {
  const ns = `${NS_PREFIX}${process.pid}-${id}-pod${podIndex++}`;
  await ip("netns", "add", ns);
  podNamespaces.push(ns);
  return ns;
}

function chain(conflist: Conflist, podNs: string): CniChain {
  return new CniChain(conflist, {
    nodeNetns: nodeNs,
    podNetns: podNs,
    containerId: `c-${podNs}`,
    ifname: "net1",
    pod: { namespace: "default", name: "pod-a", uid: "8d3a7a4e-0000-4000-8000-000000000001" },
    cniPath: [REFERENCE_PLUGINS_DIR, join(CNI_PLUGIN, "..")],
  });
}

/** The pod interface's MAC and IPv4 addresses, as the pod's namespace shows them; undefined when gone. */
async function podInterface(podNs: string): Promise<{ mac: string; addresses: string[] } | undefined> {
  const links = JSON.parse(await ip("-n", podNs, "-j", "address", "show")) as {
    ifname: string;
    address: string;
    addr_info: { family: string; local: string; prefixlen: number }[];
  }[];
  const link = links.find((l) => l.ifname === "net1");
  if (link === undefined) return undefined;
  return {
    mac: link.address,
    addresses: link.addr_info.filter((a) => a.family === "inet").map((a) => `${a.local}/${a.prefixlen}`),
  };
}

describe.skipIf(unavailable !== undefined)(
  "a conflist run as a runtime runs it, with the real reference plugins",
  () => {
    it("macvlan + static + tuning: ADD gives the pod interface the ENI's MAC and the address, CHECK passes, DEL removes it", async () => {
      const pod = await newPod();
      const c = chain({ cniVersion: "1.0.0", name: "multus-net", plugins: referencePlugins }, pod);

      const added = await c.add();
      expect(added.error).toBeUndefined();
      expect(added.steps.map((s) => s.type)).toEqual(["macvlan", "tuning"]);
      // tuning got macvlan's result as prevResult, and passed it on with the MAC it set.
      expect(JSON.parse(added.steps[1]?.stdin ?? "{}").prevResult).toEqual(
        JSON.parse(added.steps[0]?.run.stdout ?? ""),
      );
      expect(added.result).toMatchObject({
        cniVersion: "1.0.0",
        interfaces: [{ name: "net1", mac: ENI_MAC, sandbox: `/var/run/netns/${pod}` }],
        ips: [{ address: POD_ADDRESS, gateway: GATEWAY, interface: 0 }],
      });
      expect(await podInterface(pod)).toEqual({ mac: ENI_MAC, addresses: [POD_ADDRESS] });

      expect((await c.check()).error).toBeUndefined();

      const deleted = await c.del();
      expect(deleted.error).toBeUndefined();
      expect(deleted.steps.map((s) => s.type)).toEqual(["tuning", "macvlan"]);
      for (const step of deleted.steps) expect(JSON.parse(step.stdin).prevResult).toEqual(added.result);
      expect(await podInterface(pod)).toBeUndefined();
    });

    it("CHECK gets the cached ADD result: it fails once the pod interface's MAC is no longer the ENI's", async () => {
      const pod = await newPod();
      const c = chain({ cniVersion: "1.0.0", name: "multus-net", plugins: referencePlugins }, pod);
      expect((await c.add()).error).toBeUndefined();
      await ip("-n", pod, "link", "set", "net1", "address", "02:00:00:00:0a:99");
      const checked = await c.check();
      expect(checked.ok).toBe(false);
      // macvlan compares the pod interface with the cached result, tuning's, which carries the ENI's MAC.
      expect(checked.error).toEqual({
        type: "macvlan",
        code: 999,
        msg: `Interface net1 Mac ${ENI_MAC} doesn't match container Mac: 02:00:00:00:0a:99`,
      });
      expect((await c.del()).error).toBeUndefined();
    });

    it("with multus-ipmgr last: it gets prevResult with the ENI's MAC and the sandbox, and the chain's result is that prevResult unchanged", async () => {
      const pod = await newPod();
      const bridge = await FakeCniBridge.listen(join(dir, "bridge.sock"), (request) => {
        if (request.env.CNI_COMMAND !== "ADD") return { code: 0, body: "" };
        const conf = JSON.parse(request.stdin.toString("utf8")) as { prevResult: unknown };
        return { code: 0, body: JSON.stringify(conf.prevResult) };
      });
      bridges.push(bridge);
      const ipam = { type: "whereabouts", range: "198.51.100.64/26", exclude: ["198.51.100.64/30"] };
      const c = chain(
        {
          cniVersion: "1.0.0",
          name: "multus-net",
          plugins: [
            ...referencePlugins,
            { type: "multus-ipmgr", socket: bridge.path, deadlineSeconds: 20, ipam },
          ],
        },
        pod,
      );

      const added = await c.add();
      expect(added.error).toBeUndefined();
      const tuningResult = JSON.parse(added.steps[1]?.run.stdout ?? "") as Record<string, unknown>;
      expect(added.result).toEqual(tuningResult);
      const [addRequest] = bridge.requests;
      expect(addRequest?.env).toEqual({
        CNI_COMMAND: "ADD",
        CNI_CONTAINERID: `c-${pod}`,
        CNI_NETNS: `/var/run/netns/${pod}`,
        CNI_IFNAME: "net1",
        CNI_ARGS:
          "IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-a;K8S_POD_UID=8d3a7a4e-0000-4000-8000-000000000001",
        CNI_PATH: `${REFERENCE_PLUGINS_DIR}:${join(CNI_PLUGIN, "..")}`,
      });
      // The netconf the bridge reads: the runtime's bytes, the IPAM section untouched, prevResult as tuning made it.
      expect(addRequest?.stdin.toString("utf8")).toBe(added.steps[2]?.stdin);
      const conf = JSON.parse(addRequest?.stdin.toString("utf8") ?? "");
      expect(conf.ipam).toEqual(ipam);
      expect(conf.prevResult).toEqual(tuningResult);
      expect(conf.prevResult).toMatchObject({
        interfaces: [{ name: "net1", mac: ENI_MAC, sandbox: `/var/run/netns/${pod}` }],
        ips: [{ address: POD_ADDRESS, interface: 0 }],
      });

      expect((await c.check()).error).toBeUndefined();
      const deleted = await c.del();
      expect(deleted.error).toBeUndefined();
      expect(deleted.steps.map((s) => s.type)).toEqual(["multus-ipmgr", "tuning", "macvlan"]);
      expect(bridge.requests.map((r) => r.env.CNI_COMMAND)).toEqual(["ADD", "CHECK", "DEL"]);
      for (const r of bridge.requests.slice(1))
        expect(JSON.parse(r.stdin.toString("utf8")).prevResult).toEqual(added.result);
      expect(await podInterface(pod)).toBeUndefined();
    });

    it("with multus-ipmgr last and no bridge: ADD fails with code 11 (the runtime then deletes); with failOpen the pod's chain passes", async () => {
      const closedSocket = join(dir, "nobody.sock");
      const plugins = (failOpen: boolean) => [
        ...referencePlugins,
        { type: "multus-ipmgr", socket: closedSocket, failOpen },
      ];

      const refused = chain(
        { cniVersion: "1.0.0", name: "multus-net", plugins: plugins(false) },
        await newPod(),
      );
      const added = await refused.add();
      expect(added.ok).toBe(false);
      expect(added.error).toMatchObject({ type: "multus-ipmgr", code: 11, msg: "Try again later" });
      expect(added.error?.details).toContain(`the bridge at ${closedSocket} is unreachable`);
      // The runtime deletes a failed ADD: with no cached result, and the bridge still down, DEL passes.
      const undone = await refused.del();
      expect(undone.error).toBeUndefined();
      expect(undone.steps[0]?.run).toMatchObject({ code: 0, stdout: "" });

      const pod = await newPod();
      const open = chain({ cniVersion: "1.0.0", name: "multus-net", plugins: plugins(true) }, pod);
      const opened = await open.add();
      expect(opened.error).toBeUndefined();
      expect(opened.result).toEqual(JSON.parse(opened.steps[1]?.run.stdout ?? ""));
      expect(opened.steps[2]?.run.stderr).toContain("failOpen: the pod starts before EC2 routes its address");
      expect((await open.check()).error).toBeUndefined();
      expect((await open.del()).error).toBeUndefined();
      expect(await podInterface(pod)).toBeUndefined();
    });
  },
);
