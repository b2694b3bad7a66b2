import { ExitCode } from "../eni/exit-codes.js";

/**
 * The version in package.json, written into the bundle by scripts/build.mjs (esbuild `define`); "unknown"
 * when this file runs from source.
 */
declare const __IPMGR_VERSION__: string | undefined;
const VERSION = typeof __IPMGR_VERSION__ === "string" ? __IPMGR_VERSION__ : "unknown";
const VERSION_FLAGS: readonly string[] = ["--version", "-V"];

const USAGE = `usage: multus-ipmgr <command> [flags]
       multus-ipmgr --version

commands:
  init      assign this pod's Multus addresses to the worker ENIs that carry them, then exit
  sidecar   keep assigning them as they change (floating IPs), serve /healthz /readyz /metrics
  bridge    on every node (DaemonSet): keep the node's Multus ENIs holding its pods' whereabouts addresses
  doctor    check IMDS, the ENIs, IAM, the subnets and the pod's interfaces from inside the pod (--json)
  sim       run the local EC2 Query API and IMDSv2 simulator (--world FILE)

Every flag has an environment variable; see README.md ("Configuration") or <command> --help.`;

type CommandMain = (argv: readonly string[]) => Promise<number>;

/**
 * Each command is loaded on demand, so `init` never pays for the simulator or the metrics library.
 * `simBundle`: the URL of the simulator's bundle, built apart from the others (see scripts/build.mjs), beside
 * the entry that runs; a computed specifier, so that esbuild leaves this import alone instead of pulling the
 * simulator into the shared chunks.
 */
const commands: Record<string, (simBundle: string) => Promise<CommandMain>> = {
  init: async () => (await import("../init/main.js")).main,
  sidecar: async () => {
    // Before the sidecar's modules load; node:v8 itself is loaded here only, not on init's path.
    (await import("../eni/process/v8-footprint.js")).useSmallFootprint();
    return (await import("../sidecar/main.js")).main;
  },
  doctor: async () => (await import("../doctor/main.js")).main,
  bridge: async () => {
    // The bridge is long-running too, and as idle between waves: the same trade as the sidecar's.
    (await import("../eni/process/v8-footprint.js")).useSmallFootprint();
    return (await import("../ipam-whereabouts-bridge/main.js")).main;
  },
  sim: async (simBundle) => ((await import(simBundle)) as { main: CommandMain }).main,
};

export async function run(argv: readonly string[], simBundle: string): Promise<number> {
  const [name, ...rest] = argv;
  if (name !== undefined && VERSION_FLAGS.includes(name)) {
    process.stdout.write(`multus-ipmgr ${VERSION}\n`);
    return ExitCode.ok;
  }
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(`${USAGE}\n`);
    return name === undefined ? ExitCode.config : ExitCode.ok;
  }
  const load = commands[name];
  if (load === undefined) {
    process.stderr.write(`multus-ipmgr: unknown command ${JSON.stringify(name)}\n${USAGE}\n`);
    return ExitCode.config;
  }
  // `multus-ipmgr init --version` answers too, without loading the command.
  if (rest.some((arg) => VERSION_FLAGS.includes(arg))) {
    process.stdout.write(`multus-ipmgr ${VERSION}\n`);
    return ExitCode.ok;
  }
  const main = await load(simBundle);
  return main(rest);
}

/**
 * Once a command has returned, nothing it started may keep the process alive (an SDK keep-alive socket, a
 * timer): if the event loop has not emptied by then, exit anyway. Unref'd, so a normal exit is not delayed.
 */
const EXIT_DRAIN_MS = 300;

/** Sets the exit code and bounds how long the process may linger after the command returned. */
export function exitWith(exitCode: number): void {
  process.exitCode = exitCode;
  setTimeout(() => process.exit(exitCode), EXIT_DRAIN_MS).unref();
}
