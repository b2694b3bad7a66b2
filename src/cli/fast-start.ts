import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { constants } from "node:vm";
import {
  type BundleFile,
  bundleFor,
  type CodeCacheStamp,
  cacheFileOf,
  compileBundle,
  decodeCodeCache,
  runBundle,
  stampMismatch,
} from "./code-cache.js";

/**
 * dist/multus-ipmgr.cjs, the image's entrypoint: runs the CommonJS bundle dist/cli.cjs (the bridge:
 * dist/bridge.cjs) with V8's code cache beside it, `<bundle>.cache` (made in the image for its own node; see
 * code-cache.ts). `sim` starts from its ESM bundle. When the cache is missing or
 * does not fit this node and bundle, it starts the normal way, through dist/multus-ipmgr.mjs, and says why
 * in one debug line. CommonJS, not ESM: the start skips Node's ESM loader too.
 */

interface StartModule {
  run(argv: readonly string[], simBundle: string): Promise<number>;
  exitWith(code: number): void;
}

/** IPMGR_LOG_LEVEL or --log-level, as the commands read them, to decide on the one debug line. */
function debugWanted(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  let level = env.IPMGR_LOG_LEVEL;
  argv.forEach((arg, i) => {
    if (arg === "--log-level") level = argv[i + 1];
    else if (arg.startsWith("--log-level=")) level = arg.slice("--log-level=".length);
  });
  return level === "debug" || level === "trace";
}

/** A line as the commands' logger (pino) writes it, to stdout. */
function debugLine(msg: string, fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ level: 20, time: new Date().toISOString(), ...fields, msg })}\n`);
}

/** The loaded bundle, or why it could not be used with its cache. */
function loadWithCache(dir: string, bundle: BundleFile): StartModule | string {
  if (constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER === undefined) {
    return `node ${process.version} lacks vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER (Node 20.12 or later)`;
  }
  const bundlePath = join(dir, bundle);
  const cachePath = join(dir, cacheFileOf(bundle));
  let source: Buffer;
  let file: Buffer;
  try {
    source = readFileSync(bundlePath);
    file = readFileSync(cachePath);
  } catch (error) {
    return `${(error as NodeJS.ErrnoException).path ?? cachePath} cannot be read (${(error as NodeJS.ErrnoException).code})`;
  }
  const cache = decodeCodeCache(file);
  if (cache === undefined) return `${cachePath} is not a code cache of multus-ipmgr`;
  const own: CodeCacheStamp = {
    bundle: createHash("sha256").update(source).digest("hex"),
    node: process.version,
    arch: process.arch,
  };
  const mismatch = stampMismatch(cache.stamp, own, bundle);
  if (mismatch !== undefined) return `${cachePath} does not fit: ${mismatch}`;
  const { script, rejected } = compileBundle(source.toString("utf8"), bundlePath, cache.data);
  if (rejected) return `V8 rejected ${cachePath} (other V8 flags?)`;
  return runBundle(script, bundlePath) as StartModule;
}

/**
 * Commands that need ESM at run time (see scripts/build.mjs) and start the normal way by design: the
 * simulator, and the bridge with its Kubernetes client. Both are long-running.
 */
const argv = process.argv.slice(2);
const bundle = bundleFor(argv[0]);
const loaded = bundle === undefined ? undefined : loadWithCache(__dirname, bundle);
if (loaded === undefined || typeof loaded === "string") {
  if (loaded !== undefined && debugWanted(argv, process.env)) {
    debugLine("starting without the code cache", { reason: loaded });
  }
  // The normal start: the ESM entry runs the command itself.
  import(pathToFileURL(join(__dirname, "multus-ipmgr.mjs")).href).catch((error: unknown) => {
    throw error;
  });
} else {
  loaded.run(argv, pathToFileURL(join(__dirname, "sim.mjs")).href).then(loaded.exitWith, (error: unknown) => {
    throw error;
  });
}
