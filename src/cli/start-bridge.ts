/**
 * The bridge as a library, for dist/bridge.cjs (its CommonJS bundle with V8's code cache; see code-cache.ts):
 * the bridge alone, so that no other command's code, and none of the bridge's in theirs (its Kubernetes
 * client is 2.3 MB), is read at a start. fast-start.ts runs `run` and `exitWith`;
 * scripts/code-cache/write-code-cache.ts calls `prime`.
 */
import { loadBridge } from "./bridge-command.js";
import { runCommand } from "./run-command.js";

export { exitWith } from "./run-command.js";

export function run(argv: readonly string[], simBundle: string): Promise<number> {
  return runCommand({ bridge: loadBridge }, argv, simBundle);
}

/** Loads (evaluates) the bridge's modules and its Kubernetes client, and runs nothing: for the cache. */
export async function prime(): Promise<void> {
  await Promise.all([
    import("../ipam-whereabouts-bridge/main.js"),
    import("../ipam-whereabouts-bridge/kube/kube-client.js"),
  ]);
}
