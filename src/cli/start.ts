/**
 * The CLI as a library, for dist/cli.cjs (the CommonJS bundle that V8's code cache serves; see
 * code-cache.ts): fast-start.ts runs `run` and `exitWith`; write-code-cache.ts calls `prime` so that the
 * cache covers the modules of the commands that start often.
 */
export { exitWith, run } from "./dispatch.js";

/**
 * Loads (evaluates) the modules of `init`, the EC2 adapter and the sidecar, and runs nothing: the functions
 * their loading compiles go into the code cache. `doctor` and `bridge` are left out: they start seldom.
 */
export async function prime(): Promise<void> {
  await Promise.all([import("../init/main.js"), import("../eni/ec2-client.js")]);
}
