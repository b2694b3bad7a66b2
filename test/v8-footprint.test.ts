/**
 * useSmallFootprint(): each V8 setting it makes at run time takes effect. Checked in child node processes
 * (V8's %GetOptimizationStatus needs --allow-natives-syntax, and flags are per process), each beside a
 * control run that shows the same code behaving otherwise when the flags are left alone.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

/** Runs `body` in a fresh node, after useSmallFootprint() if `small`; returns what it writes to stdout. */
async function runInNode(body: string, small: boolean, nodeFlags: readonly string[] = []): Promise<string> {
  const script = `
    import { fullCollector, useSmallFootprint } from "./src/eni/process/v8-footprint.ts";
    import { getHeapSpaceStatistics } from "node:v8";
    if (${small}) useSmallFootprint();
    ${body}
  `;
  const bundled = await build({
    stdin: { contents: script, resolveDir: process.cwd(), loader: "js" },
    bundle: true,
    format: "esm",
    platform: "node",
    write: false,
    logLevel: "silent",
  });
  // esbuild does not parse V8's %-syntax: it goes in after bundling.
  const code = (bundled.outputFiles[0]?.text ?? "").replace(
    "natives.status(add)",
    "%GetOptimizationStatus(add)",
  );
  const { stdout } = await run(process.execPath, [...nodeFlags, "--input-type=module", "-e", code]);
  return stdout;
}

/** Bits of %GetOptimizationStatus (v8/src/runtime/runtime.h, OptimizationStatus). */
const OPTIMIZED = 1 << 4;
const INTERPRETED = 1 << 7;

const HOT_FUNCTION = `
  function add(a, b) { return a + b; }
  let sum = 0;
  for (let round = 0; round < 4; round++) for (let i = 0; i < 1e6; i++) sum = add(sum, i);
  process.stdout.write(String(natives.status(add)));
`;

/** Allocates young garbage for a while, in bursts with the event loop turning, then prints new space's size. */
const ALLOCATION_BURST = `
  let kept = [];
  for (let round = 0; round < 40; round++) {
    for (let i = 0; i < 100000; i++) {
      kept.push({ i, text: "x" + i });
      if (kept.length > 20000) kept = [];
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const newSpace = getHeapSpaceStatistics().find((space) => space.space_name === "new_space");
  process.stdout.write(String(newSpace.space_size));
`;

const MB = 1024 * 1024;

describe("useSmallFootprint", () => {
  it("keeps a hot function in the interpreter, where it would otherwise be optimized", async () => {
    const control = Number(await runInNode(HOT_FUNCTION, false, ["--allow-natives-syntax"]));
    expect(control & OPTIMIZED, `control status ${control.toString(2)}`).toBe(OPTIMIZED);

    const status = Number(await runInNode(HOT_FUNCTION, true, ["--allow-natives-syntax"]));
    expect(status & OPTIMIZED, `status ${status.toString(2)}`).toBe(0);
    expect(status & INTERPRETED, `status ${status.toString(2)}`).toBe(INTERPRETED);
  });

  it("keeps the young generation at its initial size under a burst of allocation, where it would grow", async () => {
    const control = Number(await runInNode(ALLOCATION_BURST, false));
    expect(control).toBeGreaterThan(4 * MB);

    const small = Number(await runInNode(ALLOCATION_BURST, true));
    expect(small).toBeLessThanOrEqual(2 * MB);
  });
});

describe("fullCollector", () => {
  it("gives a working full garbage collection, set up at run time", async () => {
    const body = `
      const collect = fullCollector();
      let garbage = [];
      for (let i = 0; i < 300000; i++) garbage.push({ i, text: "x" + i });
      garbage = undefined;
      const before = process.memoryUsage().heapUsed;
      collect();
      const after = process.memoryUsage().heapUsed;
      process.stdout.write(JSON.stringify({ kind: typeof collect, before, after }));
    `;
    const result = JSON.parse(await runInNode(body, true)) as { kind: string; before: number; after: number };
    expect(result.kind).toBe("function");
    expect(result.before - result.after).toBeGreaterThan(10 * MB);
  });
});
