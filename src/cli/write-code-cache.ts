import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  BUNDLES,
  type BundleFile,
  cacheFileOf,
  compileBundle,
  encodeCodeCache,
  runBundle,
} from "./code-cache.js";

/**
 * dist/write-code-cache.cjs: makes dist/cli.cjs.cache and dist/bridge.cjs.cache for the node that runs it (scripts/build.mjs with the
 * local node; the Dockerfile with the runtime image's own node). It loads the bundle and the modules of the
 * commands that start often (start.ts and start-bridge.ts `prime`), runs no command, and writes what V8
 * compiled meanwhile.
 */
async function writeCodeCache(dir: string, bundle: BundleFile): Promise<string> {
  const bundlePath = join(dir, bundle);
  const source = readFileSync(bundlePath);
  const { script } = compileBundle(source.toString("utf8"), bundlePath);
  await (runBundle(script, bundlePath) as { prime(): Promise<void> }).prime();
  const stamp = {
    bundle: createHash("sha256").update(source).digest("hex"),
    node: process.version,
    arch: process.arch,
  };
  const path = join(dir, cacheFileOf(bundle));
  writeFileSync(path, encodeCodeCache(stamp, script.createCachedData()));
  return path;
}

(async () => {
  for (const bundle of BUNDLES) {
    const path = await writeCodeCache(__dirname, bundle);
    process.stdout.write(`wrote ${path} for node ${process.version} (${process.arch})\n`);
  }
})().catch((error: unknown) => {
  process.stderr.write(`write-code-cache: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
