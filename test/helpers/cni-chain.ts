/**
 * Runs a conflist's plugins as a CNI runtime does (CNI spec 1.0, "Execution of network configurations"):
 * - each plugin is found by its `type` in the CNI_PATH directories, and runs with CNI_COMMAND,
 *   CNI_CONTAINERID, CNI_NETNS (/var/run/netns/NAME), CNI_IFNAME, CNI_ARGS (as Multus passes them:
 *   `IgnoreUnknown=true;K8S_POD_NAMESPACE=..;K8S_POD_NAME=..;K8S_POD_UID=..`) and CNI_PATH;
 * - its stdin is its own config with the list's `name` and `cniVersion` put in, and `prevResult`;
 * - ADD runs the plugins in order, each with the previous plugin's result as prevResult (none for the
 *   first), and the last one's result is the attachment's, cached;
 * - CHECK runs them in order and DEL in reverse order, each with the cached ADD result as prevResult;
 * - the first plugin that fails stops the command, as libcni does.
 * The plugins run inside the node's network namespace (the test's, never the machine's own): there they
 * find the master links the test made, as a runtime's plugins find the node's.
 */

import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { type PluginRun, runPlugin } from "./cni-plugin.js";

/** Debian's containernetworking-plugins: the reference plugins (macvlan, static, tuning, host-local, ...). */
export const REFERENCE_PLUGINS_DIR = "/usr/lib/cni";

/** Why the reference plugins cannot run here, or undefined. */
function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function referencePluginsUnavailableReason(): string | undefined {
  for (const type of ["macvlan", "static", "tuning"]) {
    if (!isExecutable(join(REFERENCE_PLUGINS_DIR, type))) {
      return `the reference CNI plugins are not installed (${REFERENCE_PLUGINS_DIR}/${type}; Debian: apt-get install containernetworking-plugins, which the tests' global setup does as root)`;
    }
  }
  return undefined;
}

export interface PluginConf {
  readonly type: string;
  readonly [key: string]: unknown;
}

export interface Conflist {
  readonly cniVersion: string;
  readonly name: string;
  readonly plugins: readonly PluginConf[];
}

export interface ChainAttachment {
  /** The node's network namespace, where the plugins run. */
  readonly nodeNetns: string;
  /** The pod's network namespace: CNI_NETNS is /var/run/netns/<podNetns>. */
  readonly podNetns: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly pod: { readonly namespace: string; readonly name: string; readonly uid: string };
  /** Where plugins are looked up by type, in order. */
  readonly cniPath: readonly string[];
}

/** One plugin's run: what it was given and what it answered. */
export interface PluginStep {
  readonly type: string;
  readonly command: "ADD" | "CHECK" | "DEL";
  readonly stdin: string;
  readonly run: PluginRun;
}

export interface ChainOutcome {
  readonly ok: boolean;
  readonly steps: readonly PluginStep[];
  /** ADD: the last plugin's result, parsed; CHECK and DEL: undefined. */
  readonly result?: Record<string, unknown>;
  /** The failed plugin's error result, parsed, when one failed. */
  readonly error?: {
    readonly type: string;
    readonly code: number;
    readonly msg: string;
    readonly details?: string;
  };
}

export class CniChain {
  #cached: Record<string, unknown> | undefined;

  constructor(
    readonly conflist: Conflist,
    readonly attachment: ChainAttachment,
  ) {}

  /** The ADD result the runtime cached, passed to CHECK and DEL. */
  get cachedResult(): Record<string, unknown> | undefined {
    return this.#cached;
  }

  async add(): Promise<ChainOutcome> {
    const steps: PluginStep[] = [];
    let prev: Record<string, unknown> | undefined;
    for (const plugin of this.conflist.plugins) {
      const step = await this.#exec("ADD", plugin, prev);
      steps.push(step);
      if (step.run.code !== 0) return failed(steps, step);
      prev = JSON.parse(step.run.stdout) as Record<string, unknown>;
    }
    this.#cached = prev;
    return prev === undefined ? { ok: true, steps } : { ok: true, steps, result: prev };
  }

  async check(): Promise<ChainOutcome> {
    return this.#each("CHECK", this.conflist.plugins);
  }

  async del(): Promise<ChainOutcome> {
    const outcome = await this.#each("DEL", [...this.conflist.plugins].reverse());
    if (outcome.ok) this.#cached = undefined;
    return outcome;
  }

  async #each(command: "CHECK" | "DEL", plugins: readonly PluginConf[]): Promise<ChainOutcome> {
    const steps: PluginStep[] = [];
    for (const plugin of plugins) {
      const step = await this.#exec(command, plugin, this.#cached);
      steps.push(step);
      if (step.run.code !== 0) return failed(steps, step);
    }
    return { ok: true, steps };
  }

  async #exec(
    command: "ADD" | "CHECK" | "DEL",
    plugin: PluginConf,
    prevResult: Record<string, unknown> | undefined,
  ): Promise<PluginStep> {
    const a = this.attachment;
    const conf: Record<string, unknown> = {
      ...plugin,
      name: this.conflist.name,
      cniVersion: this.conflist.cniVersion,
    };
    if (prevResult !== undefined) conf.prevResult = prevResult;
    const stdin = JSON.stringify(conf);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
      CNI_COMMAND: command,
      CNI_CONTAINERID: a.containerId,
      CNI_NETNS: `/var/run/netns/${a.podNetns}`,
      CNI_IFNAME: a.ifname,
      CNI_ARGS: `IgnoreUnknown=true;K8S_POD_NAMESPACE=${a.pod.namespace};K8S_POD_NAME=${a.pod.name};K8S_POD_UID=${a.pod.uid}`,
      CNI_PATH: a.cniPath.join(":"),
    };
    const binary = this.#find(plugin.type);
    const run = await runPlugin(["ip", "netns", "exec", a.nodeNetns, binary], env, stdin);
    return { type: plugin.type, command, stdin, run };
  }

  #find(type: string): string {
    for (const dir of this.attachment.cniPath) {
      const path = join(dir, type);
      if (isExecutable(path)) return path;
    }
    throw new Error(`no CNI plugin "${type}" in CNI_PATH ${this.attachment.cniPath.join(":")}`);
  }
}

function failed(steps: readonly PluginStep[], step: PluginStep): ChainOutcome {
  let error: ChainOutcome["error"];
  try {
    const e = JSON.parse(step.run.stdout) as { code: number; msg: string; details?: string };
    error = { type: step.type, ...e };
  } catch {
    error = {
      type: step.type,
      code: -1,
      msg: `exit ${step.run.code}, stdout ${JSON.stringify(step.run.stdout)}, stderr ${JSON.stringify(step.run.stderr)}`,
    };
  }
  return { ok: false, steps, error };
}
