/**
 * Plugin mode with every part built, as on a node: the real reference CNI plugins and dist/cni/multus-ipmgr
 * run as a runtime runs a conflist, in network namespaces this test makes, against `multus-ipmgr bridge` (the
 * built CLI, IPMGR_BRIDGE_CNI_SOCKET in a temp dir) and `multus-ipmgr sim` as processes, with
 * examples/world-bridge.yaml: node ip-198-51-100-10.ec2.internal, its Multus ENI eni-0b1multus. The cases
 * one by one are test/cni-e2e.test.ts's, against the bridge in-process. Root only; `npm run build` first.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closedPortUrl } from "./helpers/closed-port.js";
import { referencePluginsUnavailableReason } from "./helpers/cni-chain.js";
import { CniLab, referencePlugins } from "./helpers/cni-lab.js";
import { cniPluginUnavailableReason } from "./helpers/cni-plugin.js";
import { eventually } from "./helpers/kube-worlds.js";
import { labUnavailableReason } from "./helpers/netns.js";
import { type SimProcess, startSimProcess } from "./helpers/sim-process.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const BINARY = resolve("dist/multus-ipmgr.cjs");
const unavailable =
  labUnavailableReason() ??
  referencePluginsUnavailableReason() ??
  cniPluginUnavailableReason() ??
  (existsSync(BINARY) ? undefined : `${BINARY} is not built (npm run build)`);
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/cni-e2e-binary.test.ts is skipped\n`);

const NODE = "ip-198-51-100-10.ec2.internal";
const MAC = "02:00:00:00:01:01";
const ENI = "eni-0b1multus";
const ADDRESS = "198.51.100.210";

let lab: CniLab;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  if (unavailable !== undefined) return;
  lab = await CniLab.open();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  if (unavailable === undefined) await lab.removePods();
});

afterAll(async () => {
  if (unavailable === undefined) await lab.close();
});

async function controlJson<T>(sim: SimProcess, method: string, path: string): Promise<T> {
  const response = await fetch(`${sim.ready.control}${path}`, { method });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

async function held(sim: SimProcess): Promise<string[]> {
  const state = await controlJson<{ enis: { eniId: string; ipv4s: string[] }[] }>(sim, "GET", "/state");
  return state.enis.find((e) => e.eniId === ENI)?.ipv4s ?? [];
}

async function okCalls(sim: SimProcess, action: string): Promise<number> {
  const calls = await controlJson<{ action: string; outcome: string }[]>(sim, "GET", "/calls");
  return calls.filter((c) => c.action === action && c.outcome === "ok").length;
}

/** The simulator and the built bridge on node 1, its CNI socket in a temp dir. */
async function startNode(): Promise<{ sim: SimProcess; socket: string; bridge: ChildProcess }> {
  const dir = makeTempDir("ipmgr-cni-");
  cleanups.push(async () => removeTempDir(dir));
  const kubeconfig = join(dir, "kubeconfig");
  const sim = await startSimProcess(
    ["--world", "examples/world-bridge.yaml", "--kubeconfig", kubeconfig],
    BINARY,
  );
  cleanups.push(async () => {
    await sim.stop("SIGKILL");
  });
  const socket = join(dir, "cni", "cni.sock");
  const bridge = spawn(process.execPath, [BINARY, "bridge"], {
    stdio: ["ignore", "ignore", "pipe"],
    // Nothing inherited but PATH: no AWS profile or kubeconfig of the machine leaks in.
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      AWS_EC2_METADATA_SERVICE_ENDPOINT: sim.ready.imds["i-0bridge1"] ?? "",
      AWS_ENDPOINT_URL_EC2: sim.ready.ec2,
      AWS_ACCESS_KEY_ID: "sim",
      AWS_SECRET_ACCESS_KEY: "sim",
      NODE_NAME: NODE,
      IPMGR_KUBECONFIG: kubeconfig,
      IPMGR_TERMINATION_LOG: "",
      IPMGR_ALLOWED_CIDRS: "198.51.100.192/27",
      IPMGR_HTTP_HOST: "127.0.0.1",
      IPMGR_HTTP_PORT: new URL(await closedPortUrl()).port,
      IPMGR_BRIDGE_WAVE_WINDOW_MS: "100",
      // A grace no test waits for: the release is DEL's, not the view's.
      IPMGR_BRIDGE_RELEASE_GRACE_MS: "600000",
      IPMGR_BRIDGE_CNI_SOCKET: socket,
    },
  });
  let stderr = "";
  bridge.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<void>((done) => bridge.once("exit", () => done()));
  cleanups.push(async () => {
    if (bridge.exitCode === null && bridge.signalCode === null) bridge.kill("SIGKILL");
    await exited;
  });
  await eventually(() => existsSync(socket) || bridge.exitCode !== null, "the bridge's CNI socket", 20_000);
  expect(bridge.exitCode, stderr).toBeNull();
  return { sim, socket, bridge };
}

describe.skipIf(unavailable !== undefined)(
  "plugin mode, every part built: the CNI chain, the bridge, the simulator",
  () => {
    it("ADD returns with EC2 holding the address on the Multus ENI, DEL releases it, with no grace", async () => {
      const { sim, socket } = await startNode();
      const pod = await lab.newPod();
      const chain = lab.chain(pod, "upf-9", [
        ...referencePlugins(`${ADDRESS}/25`, MAC, pod.master),
        { type: "multus-ipmgr", socket },
      ]);
      const added = await chain.add();
      expect(added.error).toBeUndefined();
      expect(added.steps.map((s) => s.type)).toEqual(["macvlan", "tuning", "multus-ipmgr"]);
      expect(await held(sim)).toContain(ADDRESS);

      expect((await chain.check()).error).toBeUndefined();
      const deleted = await chain.del();
      expect(deleted.error).toBeUndefined();
      await eventually(async () => !(await held(sim)).includes(ADDRESS), "the address released after DEL");
      expect(await okCalls(sim, "UnassignPrivateIpAddresses")).toBe(1);
    });
  },
);
