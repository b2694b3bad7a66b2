import { loadBridge } from "./bridge-command.js";
import { type CommandMain, type CommandTable, runCommand } from "./run-command.js";

export { exitWith } from "./run-command.js";

/**
 * Each command is loaded on demand, so `init` never pays for the simulator or the metrics library.
 * `simBundle`: the URL of the simulator's bundle, built apart from the others (see scripts/build.mjs), beside
 * the entry that runs; a computed specifier, so that esbuild leaves this import alone instead of pulling the
 * simulator into the shared chunks.
 */
const commands: CommandTable = {
  init: async () => (await import("../init/main.js")).main,
  sidecar: async () => {
    // Before the sidecar's modules load; node:v8 itself is loaded here only, not on init's path.
    (await import("../eni/process/v8-footprint.js")).useSmallFootprint();
    return (await import("../sidecar/main.js")).main;
  },
  doctor: async () => (await import("../doctor/main.js")).main,
  bridge: loadBridge,
  links: async () => {
    // Long-running and idle between passes: the same trade as the sidecar's.
    (await import("../eni/process/v8-footprint.js")).useSmallFootprint();
    return (await import("../ipam-whereabouts-bridge/links/links-main.js")).main;
  },
  sim: async (simBundle) => ((await import(simBundle)) as { main: CommandMain }).main,
};

export function run(argv: readonly string[], simBundle: string): Promise<number> {
  return runCommand(commands, argv, simBundle);
}
