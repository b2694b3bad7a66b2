/**
 * A throwaway lab of network namespaces for end-to-end tests: the simulator runs in a namespace of its own
 * with a bridge on 192.0.2.1/24; every pod gets a namespace whose eth0 joins that bridge and whose Multus
 * interfaces (veth, their MAC set to the simulated ENI's, as ipvlan would) carry the pod addresses.
 * A process in a pod namespace cannot reach the host's loopback, hence the simulator's own namespace.
 * Everything is removed by close(), also when a test fails; names carry a per-lab id so labs never collide.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import type { SimCall, SimEni, SimState } from "../../src/sim/index.js";
import { makeTempDir, removeTempDir } from "./temp-dirs.js";

const run = promisify(execFile);
/** The built CLI as the image runs it: the CommonJS bundle with its code cache (src/cli/fast-start.ts). */
export const BINARY = resolve("dist/multus-ipmgr.cjs");
export const NS_PREFIX = "ipmt-";
const SIM_HOST = "192.0.2.1";

/** Whether this machine can run the lab (root and iproute2); the reason when it cannot. */
export function labUnavailableReason(): string | undefined {
  if (process.getuid?.() !== 0) return "network namespace tests need root";
  try {
    accessSync("/usr/sbin/ip", constants.X_OK);
  } catch {
    return "network namespace tests need iproute2 (/usr/sbin/ip)";
  }
  return undefined;
}

export interface LabInterfaceSpec {
  readonly name: string;
  readonly mac: string;
  /** With prefix length, e.g. 198.51.100.70/25 or 2001:db8:100:1::70/64. */
  readonly addresses: readonly string[];
}

export interface LabPodSpec {
  readonly name: string;
  readonly instanceId: string;
  readonly interfaces: readonly LabInterfaceSpec[];
}

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface SimEndpoints {
  readonly ec2: string;
  readonly control: string;
  readonly imds: Record<string, string>;
  /** The Kubernetes API, when the world has a `kubernetes` section. */
  readonly kubernetes?: string;
}

export interface LabPod {
  readonly ns: string;
  readonly instanceId: string;
}

export async function ip(...args: string[]): Promise<string> {
  const { stdout } = await run("ip", args);
  return stdout;
}

export class Lab {
  readonly id: string;
  readonly simNs: string;
  readonly pods = new Map<string, LabPod>();
  readonly #tmp: string;
  readonly #children = new Set<ChildProcess>();
  #simProcess: ChildProcess | undefined;
  #sim: SimEndpoints | undefined;

  private constructor() {
    this.id = randomBytes(3).toString("hex");
    this.simNs = `${NS_PREFIX}${process.pid}-${this.id}-sim`;
    this.#tmp = makeTempDir("ipmgr-lab-");
    openLabs.add(this);
  }

  /**
   * Builds the lab; on any failure it removes what it made and rethrows. `world` may be a function of the
   * pods' namespaces, for a world that names one (an instance's `netns`, the hot-plug stand-in).
   */
  static async start(
    world: unknown | ((pods: ReadonlyMap<string, LabPod>) => unknown),
    pods: readonly LabPodSpec[],
  ): Promise<Lab> {
    const lab = new Lab();
    try {
      await lab.#build(world, pods);
      return lab;
    } catch (error) {
      await lab.close();
      throw error;
    }
  }

  get sim(): SimEndpoints {
    if (this.#sim === undefined) throw new Error("simulator not started");
    return this.#sim;
  }

  async #build(world: unknown, pods: readonly LabPodSpec[]): Promise<void> {
    await ip("netns", "add", this.simNs);
    await ip("-n", this.simNs, "link", "set", "lo", "up");
    await ip("-n", this.simNs, "link", "add", "br0", "type", "bridge");
    await ip("-n", this.simNs, "addr", "add", `${SIM_HOST}/24`, "dev", "br0");
    await ip("-n", this.simNs, "link", "set", "br0", "up");
    let index = 0;
    for (const spec of pods) {
      index++;
      await this.addPod(spec, index);
    }
    const worldFile = join(this.#tmp, "world.json");
    writeFileSync(worldFile, JSON.stringify(typeof world === "function" ? world(this.pods) : world));
    this.#sim = await this.#startSimulator(worldFile);
  }

  /** Adds a pod namespace: eth0 on the simulator's bridge, plus the given Multus interfaces. */
  async addPod(spec: LabPodSpec, index: number): Promise<void> {
    const ns = `${NS_PREFIX}${process.pid}-${this.id}-p${index}`;
    await ip("netns", "add", ns);
    this.pods.set(spec.name, { ns, instanceId: spec.instanceId });
    await ip("-n", ns, "link", "set", "lo", "up");
    const bridgePort = `ipm${this.id}b${index}`;
    await ip(
      "link",
      "add",
      "eth0",
      "netns",
      ns,
      "type",
      "veth",
      "peer",
      "name",
      bridgePort,
      "netns",
      this.simNs,
    );
    await ip("-n", this.simNs, "link", "set", bridgePort, "master", "br0", "up");
    await ip("-n", ns, "addr", "add", `192.0.2.${10 + index}/24`, "dev", "eth0");
    await ip("-n", ns, "link", "set", "eth0", "up");
    let wire = 0;
    for (const iface of spec.interfaces) {
      wire++;
      const peer = `ipm${this.id}w${index}${wire}`;
      await ip(
        "link",
        "add",
        iface.name,
        "netns",
        ns,
        "type",
        "veth",
        "peer",
        "name",
        peer,
        "netns",
        this.simNs,
      );
      await ip("-n", ns, "link", "set", "dev", iface.name, "address", iface.mac);
      await ip("-n", this.simNs, "link", "set", peer, "up");
      await ip("-n", ns, "link", "set", iface.name, "up");
      for (const address of iface.addresses) await this.addAddress(spec.name, iface.name, address);
    }
  }

  #pod(name: string): LabPod {
    const pod = this.pods.get(name);
    if (pod === undefined) throw new Error(`no pod ${name} in this lab`);
    return pod;
  }

  /** `ip addr add` in the pod (IPv6 without duplicate address detection, so it is usable at once). */
  async addAddress(pod: string, iface: string, cidr: string): Promise<void> {
    const args = ["-n", this.#pod(pod).ns, "addr", "add", cidr, "dev", iface];
    await ip(...args, ...(cidr.includes(":") ? ["nodad"] : []));
  }

  async removeAddress(pod: string, iface: string, cidr: string): Promise<void> {
    await ip("-n", this.#pod(pod).ns, "addr", "del", cidr, "dev", iface);
  }

  async #startSimulator(worldFile: string): Promise<SimEndpoints> {
    const child = spawn(
      "ip",
      [
        "netns",
        "exec",
        this.simNs,
        process.execPath,
        BINARY,
        "sim",
        "--world",
        worldFile,
        "--host",
        SIM_HOST,
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.#simProcess = child;
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const ready = await new Promise<string>((resolveLine, reject) => {
      const timer = setTimeout(() => reject(new Error(`simulator not ready in 10 s: ${stderr}`)), 10_000);
      lines.once("line", (line) => {
        clearTimeout(timer);
        resolveLine(line);
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`simulator exited with ${code}: ${stderr}`));
      });
    });
    const parsed = JSON.parse(ready) as { ready: boolean } & SimEndpoints;
    return {
      ec2: parsed.ec2,
      control: parsed.control,
      imds: parsed.imds,
      ...(parsed.kubernetes === undefined ? {} : { kubernetes: parsed.kubernetes }),
    };
  }

  /** The environment a pod's container gets: the simulator's endpoints and dummy credentials. */
  env(pod: string, extra: Record<string, string> = {}): Record<string, string> {
    const { instanceId } = this.#pod(pod);
    const imds = this.sim.imds[instanceId];
    if (imds === undefined) throw new Error(`no IMDS endpoint for ${instanceId}`);
    return {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "AKIDSIMULATOR",
      AWS_SECRET_ACCESS_KEY: "simulator",
      AWS_ENDPOINT_URL_EC2: this.sim.ec2,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds,
      IPMGR_TERMINATION_LOG: "",
      IPMGR_EC2_RETRY_BASE_MS: "20",
      IPMGR_EC2_RETRY_MAX_MS: "200",
      ...extra,
    };
  }

  /** Starts the built binary inside the pod's namespace. */
  spawn(pod: string, args: readonly string[], env: Record<string, string>): ChildProcess {
    return this.track(
      spawn("ip", ["netns", "exec", this.#pod(pod).ns, process.execPath, BINARY, ...args], {
        env,
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
  }

  /** A process started in one of the lab's namespaces, to be killed when the lab closes. */
  track(child: ChildProcess): ChildProcess {
    this.#children.add(child);
    child.once("exit", () => this.#children.delete(child));
    return child;
  }

  /** Runs the built binary inside the pod's namespace to completion (killed after timeoutMs). */
  async run(
    pod: string,
    args: readonly string[],
    env: Record<string, string>,
    timeoutMs = 20_000,
  ): Promise<RunResult> {
    const child = this.spawn(pod, args, env);
    return collect(child, timeoutMs);
  }

  /**
   * A GET made from inside the pod's namespace (its loopback is not the test's), e.g. the sidecar's
   * /readyz. Status 0 when nothing answered.
   */
  async podGet(pod: string, url: string): Promise<{ status: number; body: string }> {
    const script = `fetch(process.argv[1]).then(
      async (r) => process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() })),
      () => process.stdout.write(JSON.stringify({ status: 0, body: "" })))`;
    const { stdout } = await run("ip", [
      "netns",
      "exec",
      this.#pod(pod).ns,
      process.execPath,
      "-e",
      script,
      url,
    ]);
    return JSON.parse(stdout) as { status: number; body: string };
  }

  /**
   * A request with a JSON body made from inside the pod's namespace, e.g. to the simulator's Kubernetes API
   * from the node's. Status 0 when nothing answered.
   */
  async podRequest(
    pod: string,
    method: string,
    url: string,
    body?: unknown,
  ): Promise<{ status: number; body: string }> {
    const script = `fetch(process.argv[1], { method: process.argv[2], headers: { "content-type": "application/json",
        authorization: "Bearer any-token" }, body: process.argv[3] === "" ? undefined : process.argv[3] }).then(
      async (r) => process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() })),
      () => process.stdout.write(JSON.stringify({ status: 0, body: "" })))`;
    const { stdout } = await run("ip", [
      "netns",
      "exec",
      this.#pod(pod).ns,
      process.execPath,
      "-e",
      script,
      url,
      method,
      body === undefined ? "" : JSON.stringify(body),
    ]);
    return JSON.parse(stdout) as { status: number; body: string };
  }

  /** A request to the simulator's control endpoint, made from inside the simulator's namespace. */
  async control<T>(method: string, path: string, body?: unknown): Promise<T> {
    const script = `
      const r = await fetch(process.argv[1], { method: process.argv[2], headers: { "content-type": "application/json" },
        body: process.argv[3] === "" ? undefined : process.argv[3] });
      const t = await r.text();
      if (!r.ok) { process.stderr.write(r.status + " " + t); process.exit(1); }
      process.stdout.write(t);`;
    const { stdout } = await run("ip", [
      "netns",
      "exec",
      this.simNs,
      process.execPath,
      "--input-type=module",
      "-e",
      script,
      `${this.sim.control}${path}`,
      method,
      body === undefined ? "" : JSON.stringify(body),
    ]);
    return (stdout === "" ? undefined : JSON.parse(stdout)) as T;
  }

  async state(): Promise<SimState> {
    return this.control<SimState>("GET", "/state");
  }

  async calls(): Promise<SimCall[]> {
    return this.control<SimCall[]>("GET", "/calls");
  }

  async clearCalls(): Promise<void> {
    await this.control("DELETE", "/calls");
  }

  async setFaults(faults: Record<string, unknown>): Promise<void> {
    await this.control("PUT", "/faults", faults);
  }

  /** The ENI's addresses in the simulator, for assertions. */
  async eni(eniId: string): Promise<SimEni> {
    const eni = (await this.state()).enis.find((e) => e.eniId === eniId);
    if (eni === undefined) throw new Error(`no ENI ${eniId} in the simulator`);
    return eni;
  }

  async close(): Promise<void> {
    for (const child of this.#children) child.kill("SIGKILL");
    this.#simProcess?.kill("SIGTERM");
    for (const pod of this.pods.values()) await ip("netns", "del", pod.ns).catch(() => undefined);
    await ip("netns", "del", this.simNs).catch(() => undefined);
    removeTempDir(this.#tmp);
    openLabs.delete(this);
  }
}

/** Labs started and not yet closed in this process. */
const openLabs = new Set<Lab>();

/**
 * Closes every lab this process left open: for a process stopped by a signal (the benches on Ctrl-C), whose
 * own `finally` never runs.
 */
export async function closeOpenLabs(): Promise<number> {
  const labs = [...openLabs];
  await Promise.all(labs.map((lab) => lab.close()));
  return labs.length;
}

/** The simulator's own types for GET /state and GET /calls (the lab reads them over its control API). */
export type {
  SimCall as SimCallView,
  SimEni as SimEniView,
  SimState as SimStateView,
} from "../../src/sim/index.js";

/** Waits for a child to exit and returns its output; kills it after timeoutMs. */
export function collect(child: ChildProcess, timeoutMs = 20_000): Promise<RunResult> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolveRun) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolveRun({ code, signal, stdout, stderr });
    });
  });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Deletes namespaces a crashed earlier run left behind: only ours (the ipmt- prefix) and only those whose
 * creating process is gone, so that two test runs on one machine never remove each other's labs.
 */
export async function removeStaleLabs(): Promise<void> {
  const list = await ip("netns", "list").catch(() => "");
  for (const line of list.split("\n")) {
    const name = line.split(" ")[0] ?? "";
    const pid = Number(name.slice(NS_PREFIX.length).split("-")[0]);
    if (name.startsWith(NS_PREFIX) && Number.isInteger(pid) && !processAlive(pid)) {
      await ip("netns", "del", name).catch(() => undefined);
    }
  }
}
