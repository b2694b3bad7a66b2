/**
 * The CLI as a library, for dist/cli.cjs (the CommonJS bundle that V8's code cache serves; see
 * code-cache.ts): fast-start.ts runs `run` and `exitWith`; scripts/code-cache/write-code-cache.ts calls
 * `train` before it writes the cache, so that the cache holds what a start of `init` runs.
 */
import type { PodInterface } from "../eni/types.js";

export { exitWith, run } from "./dispatch.js";

/**
 * The code cache's training run (scripts/code-cache/code-cache-training.ts): `init` as a pod start runs it,
 * with `argv`, except that the pod's interfaces are `pod` instead of the ones of the machine that builds the
 * cache. Returns its exit code. Everything V8 compiles meanwhile, the EC2 SDK and its first calls included,
 * goes into the cache.
 */
export async function train(argv: readonly string[], pod: readonly PodInterface[]): Promise<number> {
  const { main } = await import("../init/main.js");
  return main(argv, { interfaces: { read: async () => [...pod] } });
}
