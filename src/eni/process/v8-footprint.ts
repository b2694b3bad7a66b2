import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * V8 settings for the long-running commands, which trade JavaScript speed they cannot use for memory:
 * - interpreter only: no baseline (Sparkplug) or optimizing (Maglev, TurboFan) compiler. A sidecar spends its
 *   life waiting on the kernel and on EC2; the compilers buy it nothing measurable and cost about 4 MB of idle
 *   memory (their own pages of the node executable, and the code they make);
 * - a young generation that stays at its initial size (1 MB semi-spaces) instead of doubling up to 8 MB
 *   under a burst of work: a run of 60 failovers otherwise leaves the sidecar at 67 MB for about 20 s.
 *
 * Figures from `npm run bench -- sidecar` (docs/measurements.md). Set at run time, before the command's modules
 * load: V8 reads these flags each time it decides to tier a function up or grow the young generation, so they
 * take effect for all that follows. (Node calls setFlagsFromString after start "use with care"; these four
 * are read where they are used, never cached. test/v8-footprint.test.ts checks that each takes effect.)
 */
export const SMALL_FOOTPRINT_FLAGS = [
  "--no-sparkplug",
  "--no-maglev",
  "--no-turbofan",
  "--semi-space-growth-factor=1",
] as const;

export function useSmallFootprint(): void {
  for (const flag of SMALL_FOOTPRINT_FLAGS) setFlagsFromString(flag);
}

/**
 * V8's full garbage collection, for the sidecar to run once it is quiet after a burst of work (see
 * IdleCollector). `--expose-gc` set at run time gives new contexts a `gc` function; undefined if it does not.
 */
export function fullCollector(): (() => void) | undefined {
  setFlagsFromString("--expose-gc");
  const gc: unknown = runInNewContext("gc");
  return typeof gc === "function" ? () => (gc as () => void)() : undefined;
}
