/**
 * dist/sim.mjs: the `sim` command, and the simulator as a library for the code cache's training run
 * (scripts/code-cache/code-cache-training.ts), which starts one in the process that writes the cache.
 */

export { parseWorld, startSimulator } from "./index.js";
export { main } from "./main.js";
