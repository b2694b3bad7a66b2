/**
 * The built sidecar in the namespace lab: a running process with its JSON log, and the probes and
 * simulator reads the end-to-end tests share.
 */
import type { ChildProcess } from "node:child_process";
import { execFile } from "node:child_process";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import type { Lab, LabPodSpec } from "./netns.js";
import { MAC, NODE1, NODE2 } from "./worlds.js";

const run = promisify(execFile);

/** A running sidecar: its JSON log lines as they come, and its exit. */
export class SidecarProcess {
  readonly logs: Record<string, unknown>[] = [];
  stderr = "";
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly child: ChildProcess) {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      try {
        this.logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        this.logs.push({ msg: line });
      }
    });
    child.stderr?.on("data", (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  }

  logged(pattern: RegExp): Record<string, unknown>[] {
    return this.logs.filter((l) => pattern.test(String(l.msg)));
  }
}

/** Polls `check` every 50 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** GET on the sidecar's HTTP server, from inside the pod's namespace. */
export function httpGet(l: Lab, pod: string, path: string): Promise<{ status: number; body: string }> {
  return l.podGet(pod, `http://127.0.0.1:9180${path}`);
}

export async function ready(l: Lab, pod: string): Promise<boolean> {
  return (await httpGet(l, pod, "/readyz")).status === 200;
}

/** One sample of a metric without labels (or with its labels written out), NaN when absent. */
export async function metric(l: Lab, pod: string, name: string): Promise<number> {
  const { body } = await httpGet(l, pod, "/metrics");
  const line = body.split("\n").find((x) => x.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}

export async function holds(l: Lab, eniId: string, address: string): Promise<boolean> {
  const eni = await l.eni(eniId);
  return eni.ipv4s.includes(address) || eni.ipv6s.includes(address);
}

/** An EC2 Query call straight to the simulator, as some other actor would make it. */
export async function ec2Call(l: Lab, params: Record<string, string>): Promise<void> {
  const body = new URLSearchParams({ Version: "2016-11-15", ...params }).toString();
  const script = `const r = await fetch(process.argv[1], { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: process.argv[2] });
    if (!r.ok) { process.stderr.write(await r.text()); process.exit(1); }`;
  await run("ip", [
    "netns",
    "exec",
    l.simNs,
    process.execPath,
    "--input-type=module",
    "-e",
    script,
    l.sim.ec2,
    body,
  ]);
}

/**
 * Pod `a` (node 1, behind ENI.node1A1) or pod `b` (node 2, behind ENI.node2A1) of floatingPairWorld, its
 * net1 carrying `addresses` (with prefix lengths).
 */
export function pairPod(name: "a" | "b", addresses: string[]): LabPodSpec {
  return {
    name,
    instanceId: name === "a" ? NODE1 : NODE2,
    interfaces: [{ name: "net1", mac: name === "a" ? MAC.node1A1 : MAC.node2A1, addresses }],
  };
}

/** Starts the built sidecar in `pod`, with the end-to-end tests' quick timings (200 ms drift checks). */
export function startSidecar(l: Lab, pod: string, env: Record<string, string>): SidecarProcess {
  return new SidecarProcess(
    l.spawn(
      pod,
      ["sidecar"],
      l.env(pod, { IPMGR_DRIFT_CHECK_INTERVAL_MS: "200", IPMGR_CONFIRM_INTERVAL_MS: "20", ...env }),
    ),
  );
}
