import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  BUNDLES,
  type BundleFile,
  type CodeCacheStamp,
  cacheFileOf,
  compileBundle,
  encodeCodeCache,
  runBundle,
} from "../../src/cli/code-cache.js";
import { type SimulatorLibrary, type TrainableBundle, trainInit } from "./code-cache-training.js";

/**
 * dist/write-code-cache.cjs: makes dist/cli.cjs.cache and dist/bridge.cjs.cache for the node that runs it
 * (scripts/build.mjs with the local node; the Dockerfile with the runtime image's own node). It loads each
 * bundle, prepares it, and writes what V8 compiled meanwhile:
 * - the CLI's after one `init` run against a simulator in this process (code-cache-training.ts), so that the
 *   cache holds what a start of `init` runs. The sidecar starts from the same cache: measured, a cache of
 *   the sidecar's own modules left its idle memory where it was (51.8–52.1 against 51.0–52.2 MB).
 * - the bridge's after loading its modules (start-bridge.ts `prime`): it starts seldom.
 */
async function writeCodeCache(dir: string, bundle: BundleFile): Promise<string> {
  const bundlePath = join(dir, bundle);
  const source = readFileSync(bundlePath);
  const { script } = compileBundle(source.toString("utf8"), bundlePath);
  const exports = runBundle(script, bundlePath);
  let training: string | undefined;
  if (bundle === "cli.cjs") {
    const simulator = (await import(pathToFileURL(join(dir, "sim.mjs")).href)) as SimulatorLibrary;
    training = await trainInit(exports as TrainableBundle, simulator);
  } else {
    await (exports as { prime(): Promise<void> }).prime();
  }
  const stamp: CodeCacheStamp = {
    bundle: createHash("sha256").update(source).digest("hex"),
    node: process.version,
    arch: process.arch,
    ...(training === undefined ? {} : { training }),
  };
  const how = training === undefined ? "its modules loaded" : `trained on ${training}`;
  const path = join(dir, cacheFileOf(bundle));
  writeFileSync(path, encodeCodeCache(stamp, script.createCachedData()));
  return `wrote ${path}, ${how}, for node ${process.version} (${process.arch})\n`;
}

(async () => {
  for (const bundle of BUNDLES) process.stdout.write(await writeCodeCache(__dirname, bundle));
  // The training run's keep-alive sockets are not waited for.
  process.exit(0);
})().catch((error: unknown) => {
  process.stderr.write(`write-code-cache: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
