import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUNDLE_FILE, CODE_CACHE_FILE, compileBundle, encodeCodeCache, runBundle } from "./code-cache.js";

/**
 * dist/write-code-cache.cjs: makes dist/cli.cjs.cache for the node that runs it (scripts/build.mjs with the
 * local node; the Dockerfile with the runtime image's own node). It loads the bundle and the modules of the
 * commands that start often (start.ts `prime`), runs no command, and writes what V8 compiled meanwhile.
 */
async function writeCodeCache(dir: string): Promise<string> {
  const bundlePath = join(dir, BUNDLE_FILE);
  const source = readFileSync(bundlePath);
  const { script } = compileBundle(source.toString("utf8"), bundlePath);
  await (runBundle(script, bundlePath) as { prime(): Promise<void> }).prime();
  const stamp = {
    bundle: createHash("sha256").update(source).digest("hex"),
    node: process.version,
    arch: process.arch,
  };
  const path = join(dir, CODE_CACHE_FILE);
  writeFileSync(path, encodeCodeCache(stamp, script.createCachedData()));
  return path;
}

writeCodeCache(__dirname).then(
  (path) => process.stdout.write(`wrote ${path} for node ${process.version} (${process.arch})\n`),
  (error: unknown) => {
    process.stderr.write(`write-code-cache: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
