import { ExitCode } from "../eni/errors/exit-codes.js";
import { nearestName } from "../eni/process/nearest-name.js";

/**
 * The CLI's dispatch, given its table of commands: --version, usage, an unknown command, then the command.
 * dispatch.ts holds the table of every command; start-bridge.ts one of the bridge alone (dist/bridge.cjs).
 */

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
  links     beside the bridge, with NET_ADMIN (attach mode): name, bring up and keep the Multus ENIs' links
  doctor    check IMDS, the ENIs, IAM, the subnets and the pod's interfaces from inside the pod (--json)
  sim       run the local EC2 Query API and IMDSv2 simulator (--world FILE)

Every flag has an environment variable; see docs/configuration.md or <command> --help.`;

export type CommandMain = (argv: readonly string[]) => Promise<number>;

/** Loads a command's main on demand. `simBundle`: the URL of the simulator's bundle (see dispatch.ts). */
export type CommandTable = Readonly<Record<string, (simBundle: string) => Promise<CommandMain>>>;

export async function runCommand(
  commands: CommandTable,
  argv: readonly string[],
  simBundle: string,
): Promise<number> {
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
    const near = nearestName(name, Object.keys(commands));
    const hint = near === undefined ? "" : `; did you mean ${near}?`;
    process.stderr.write(`multus-ipmgr: unknown command ${JSON.stringify(name)}${hint}\n${USAGE}\n`);
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
