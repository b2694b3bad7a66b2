/**
 * Plugin mode end to end, for test/cni-e2e.test.ts and bench/cni-plugin.ts: a node's network namespace
 * with a master link of its own, pods' namespaces, the reference chain that stands in for ipvlan (macvlan on
 * that master, `static` IPAM, `tuning` giving the pod interface the ENI's MAC; ipvlan links are not
 * available on these machines) with multus-ipmgr's host binary last, and the bridge in-process with its CNI
 * socket (IPMGR_BRIDGE_CNI_SOCKET) in a temp dir, against the simulator.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { systemClock } from "../../src/eni/process/clock.js";
import { createLogger } from "../../src/eni/process/logger.js";
import type { BridgeOptions } from "../../src/ipam-whereabouts-bridge/bridge.js";
import { CniClaims } from "../../src/ipam-whereabouts-bridge/cni/cni-claims.js";
import { answerCniRequest } from "../../src/ipam-whereabouts-bridge/cni/cni-handler.js";
import { CniServer } from "../../src/ipam-whereabouts-bridge/cni/cni-server.js";
import type { BridgeMetrics } from "../../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import type { SimulatorHandle, World } from "../../src/sim/index.js";
import { type BridgeHarness, type HarnessSetup, startBridgeOn, stopAll } from "./bridge-harness.js";
import { CniChain, type PluginConf, REFERENCE_PLUGINS_DIR } from "./cni-chain.js";
import { CNI_PLUGIN } from "./cni-plugin.js";
import { NODE_A } from "./kube-worlds.js";
import { ip, NS_PREFIX } from "./netns.js";
import { ec2ApiFor } from "./sim-fixtures.js";
import { makeTempDir, removeTempDir } from "./temp-dirs.js";

export const GATEWAY = "198.51.100.129";

/** macvlan on `master` + static (`address` in CIDR form) + tuning (`mac`): what ipvlan and its IPAM give a pod. */
export function referencePlugins(address: string, mac: string, master: string): PluginConf[] {
  return [
    {
      type: "macvlan",
      master,
      mode: "bridge",
      ipam: { type: "static", addresses: [{ address, gateway: GATEWAY }] },
    },
    { type: "tuning", mac },
  ];
}

/** A pod's namespace, and the master its macvlan hangs on in the node's namespace. */
export interface LabPod {
  readonly netns: string;
  readonly master: string;
}

/**
 * The pods' side: a node namespace, and per pod a namespace and a master link of its own in the node's (a
 * veth end): a macvlan child cannot take its own master's MAC, nor two children of one master one MAC, where
 * ipvlan's children all carry their master's.
 */
export class CniLab {
  readonly nodeNs: string;
  readonly #id = randomBytes(3).toString("hex");
  readonly #pods: LabPod[] = [];
  #index = 0;

  private constructor() {
    this.nodeNs = `${NS_PREFIX}${process.pid}-${this.#id}-node`;
  }

  static async open(): Promise<CniLab> {
    const lab = new CniLab();
    await ip("netns", "add", lab.nodeNs);
    return lab;
  }

  /** A new pod namespace and its master, removed by `removePods` or `close`. */
  async newPod(): Promise<LabPod> {
    const index = this.#index++;
    const pod = { netns: `${NS_PREFIX}${process.pid}-${this.#id}-p${index}`, master: `eni${index}` };
    await ip("netns", "add", pod.netns);
    this.#pods.push(pod);
    await ip("-n", this.nodeNs, "link", "add", pod.master, "type", "veth", "peer", "name", `peer${index}`);
    await ip("-n", this.nodeNs, "link", "set", pod.master, "up");
    await ip("-n", this.nodeNs, "link", "set", `peer${index}`, "up");
    return pod;
  }

  /** The chain for pod cnf/`name` (container `c-<netns>`, interface net1). */
  chain(pod: LabPod, name: string, plugins: readonly PluginConf[], cniVersion = "1.0.0"): CniChain {
    return new CniChain(
      { cniVersion, name: "multus-ipvlan", plugins },
      {
        nodeNetns: this.nodeNs,
        podNetns: pod.netns,
        containerId: `c-${pod.netns}`,
        ifname: "net1",
        pod: { namespace: "cnf", name, uid: `uid-${name}` },
        cniPath: [REFERENCE_PLUGINS_DIR, join(CNI_PLUGIN, "..")],
      },
    );
  }

  async removePods(): Promise<void> {
    for (const pod of this.#pods.splice(0)) {
      await ip("netns", "del", pod.netns);
      await ip("-n", this.nodeNs, "link", "del", pod.master);
      // tuning keeps the link's former settings until DEL: a pod that never got its DEL leaves them here.
      rmSync(`/run/cni/tuning/c-${pod.netns}_net1.json`, { force: true });
    }
  }

  async close(): Promise<void> {
    await this.removePods();
    await ip("netns", "del", this.nodeNs);
  }
}

export interface CniBridge extends BridgeHarness {
  readonly claims: CniClaims;
  /** IPMGR_BRIDGE_CNI_SOCKET: `<temp dir>/cni/cni.sock`. */
  readonly socket: string;
  /** Stops the socket, then the bridge (not a simulator given in `setup.sim`): the bridge is down. */
  stop(): Promise<void>;
  /** The successful EC2 calls of `action` on node A's Multus ENI eni-0a1. */
  okCalls(action: string): number;
}

const logger = createLogger("silent");
const stops: (() => Promise<void>)[] = [];
const dirs: string[] = [];

/** The bridge on node A with its CNI socket, as BridgeLifecycle wires it (claims given to the waves and the socket). */
export async function startCniBridge(
  world: World,
  options: Partial<BridgeOptions> = {},
  setup: HarnessSetup = {},
): Promise<CniBridge> {
  const claims = new CniClaims({ clock: systemClock, logger, nodeName: NODE_A });
  const h = await startBridgeOn(world, options, { ...setup, cni: claims });
  const server = await serve(claims, h.sim, h.metrics);
  let stopped = false;
  const bridge: CniBridge = {
    ...h,
    claims,
    socket: server.path,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await server.server.stop();
      await stopAll();
    },
    okCalls: (action) =>
      h.sim
        .calls()
        .filter((c) => c.action === action && c.outcome === "ok" && c.params.NetworkInterfaceId === "eni-0a1")
        .length,
  };
  stops.push(bridge.stop);
  return bridge;
}

/** Plugin mode's socket for `claims` in a fresh temp dir (its `cni/` subdirectory made by the server). */
export async function serve(claims: CniClaims, sim: SimulatorHandle, metrics: BridgeMetrics) {
  const dir = makeTempDir("ipmgr-cni-");
  dirs.push(dir);
  const path = join(dir, "cni", "cni.sock");
  const server = new CniServer({
    path,
    answer: (request) =>
      answerCniRequest(request, { claims, ec2: ec2ApiFor(sim), clock: systemClock, logger, metrics }),
    stopping: () => claims.stop(),
    logger,
  });
  await server.start();
  stops.push(() => server.stop());
  return { path, server, dir };
}

/** Stops every bridge and socket started, then removes their temp dirs (afterEach). */
export async function stopCniBridges(): Promise<void> {
  for (const stop of stops.splice(0).reverse()) await stop();
  await stopAll();
  for (const dir of dirs.splice(0)) removeTempDir(dir);
}

/**
 * A unix socket in front of the bridge's that holds each plugin's connection until `count` have arrived
 * (or `maxWaitMs` passed), then joins each to the bridge's socket: ADDs of pods that start together reach
 * the bridge together, whatever the reference plugins before them took on a loaded machine. Byte for byte,
 * half-close included (the plugin shuts its write side; the bridge answers, then closes).
 */
export class CniGate {
  readonly #held: Socket[] = [];
  #open = false;
  #timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly server: Server,
    readonly path: string,
    private readonly target: string,
  ) {}

  static async listen(path: string, target: string, count: number, maxWaitMs = 20_000): Promise<CniGate> {
    const server = createServer({ allowHalfOpen: true });
    const gate = new CniGate(server, path, target);
    server.on("connection", (socket) => {
      if (gate.#open) return gate.#join(socket);
      socket.pause();
      gate.#held.push(socket);
      if (gate.#held.length === 1) gate.#timer = setTimeout(() => gate.#release(), maxWaitMs);
      if (gate.#held.length >= count) gate.#release();
    });
    await new Promise<void>((done, fail) => {
      server.once("error", fail);
      server.listen(path, done);
    });
    return gate;
  }

  /** How many connections went through together (0 until released). */
  released = 0;

  #release(): void {
    clearTimeout(this.#timer);
    if (this.#open) return;
    this.#open = true;
    this.released = this.#held.length;
    for (const socket of this.#held.splice(0)) this.#join(socket);
  }

  #join(socket: Socket): void {
    const up = createConnection({ path: this.target, allowHalfOpen: true });
    up.on("error", () => socket.destroy());
    socket.on("error", () => up.destroy());
    socket.pipe(up);
    up.pipe(socket);
    socket.resume();
  }

  async close(): Promise<void> {
    clearTimeout(this.#timer);
    for (const socket of this.#held.splice(0)) socket.destroy();
    await new Promise<void>((done) => this.server.close(() => done()));
  }
}
