import { createRequire } from "node:module";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { constants, Script } from "node:vm";

/**
 * V8's code cache for the CommonJS bundles of the CLI (dist/cli.cjs, dist/bridge.cjs): the bytecode V8 made for it, so that a
 * start skips parsing and compiling what it runs. Node 20 offers it for CommonJS only (vm.Script
 * `cachedData`; the ESM loader has no such hook before Node 22's module.enableCompileCache).
 *
 * V8 checks its own version and flags when it reads a cache, but of the source only its length: so the cache
 * file starts with one line saying what it was made for (the bundle's SHA-256, Node's version and the CPU
 * architecture), and a start uses it only when all three are its own. See docs/decisions.md.
 */

/** What a cache was made for: the first line of the cache file, as JSON. */
export interface CodeCacheStamp {
  /** SHA-256 of the bundle (dist/cli.cjs or dist/bridge.cjs), hex. */
  readonly bundle: string;
  /** process.version of the node that made the cache. */
  readonly node: string;
  /** process.arch of the node that made the cache. */
  readonly arch: string;
  /**
   * What ran before the cache was written, for a reader of the file (the image test): the training run's
   * EC2 calls for the CLI's (scripts/code-cache/code-cache-training.ts), absent when the modules were only
   * loaded. Not checked at start.
   */
  readonly training?: string;
}

/**
 * The CommonJS bundles in dist/, each with its cache beside it (`<bundle>.cache`): the bridge's apart, so
 * that the 2.3 MB of its Kubernetes client are neither read nor hashed when any other command starts.
 */
export const BUNDLES = ["cli.cjs", "bridge.cjs"] as const;
export type BundleFile = (typeof BUNDLES)[number];

/** The bundle a command starts from; undefined for `sim`, whose bundle is ESM (dist/sim.mjs). */
export function bundleFor(command: string | undefined): BundleFile | undefined {
  if (command === "sim") return undefined;
  return command === "bridge" ? "bridge.cjs" : "cli.cjs";
}

export const cacheFileOf = (bundle: BundleFile): string => `${bundle}.cache`;

export function encodeCodeCache(stamp: CodeCacheStamp, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${JSON.stringify(stamp)}\n`), data]);
}

/** The stamp and V8's data of a cache file; undefined when it is not one (no first line, not JSON). */
export function decodeCodeCache(file: Buffer): { stamp: CodeCacheStamp; data: Buffer } | undefined {
  const newline = file.indexOf(0x0a);
  if (newline < 0) return undefined;
  let stamp: unknown;
  try {
    stamp = JSON.parse(file.subarray(0, newline).toString("utf8"));
  } catch {
    // Not our format: the caller starts without the cache and says why.
    return undefined;
  }
  if (
    typeof stamp !== "object" ||
    stamp === null ||
    typeof (stamp as CodeCacheStamp).bundle !== "string" ||
    typeof (stamp as CodeCacheStamp).node !== "string" ||
    typeof (stamp as CodeCacheStamp).arch !== "string"
  ) {
    return undefined;
  }
  return { stamp: stamp as CodeCacheStamp, data: file.subarray(newline + 1) };
}

/** Why a cache made for `stamp` does not fit the running node and bundle; undefined when it fits. */
export function stampMismatch(
  stamp: CodeCacheStamp,
  own: CodeCacheStamp,
  bundle: BundleFile = "cli.cjs",
): string | undefined {
  if (stamp.node !== own.node) return `it was made by node ${stamp.node}, this is ${own.node}`;
  if (stamp.arch !== own.arch) return `it was made for ${stamp.arch}, this is ${own.arch}`;
  if (stamp.bundle !== own.bundle) return `it was made for another ${bundle} (sha256 ${stamp.bundle})`;
  return undefined;
}

type ModuleFunction = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  filename: string,
  dirname: string,
  fileUrl: string,
) => void;

/**
 * Runs the compiled bundle as Node runs a CommonJS module, with its file URL besides (the chunks'
 * import.meta.url; see scripts/build.mjs); returns its exports.
 */
export function runBundle(script: Script, filename: string): unknown {
  const module = { exports: {} as unknown };
  (script.runInThisContext() as ModuleFunction)(
    module.exports,
    createRequire(filename),
    module,
    filename,
    dirname(filename),
    pathToFileURL(filename).href,
  );
  return module.exports;
}

/**
 * Compiles the bundle, with V8's data when given; `rejected` says whether V8 refused it. The bundle's file
 * is already inside the wrapper Node puts around a CommonJS module (scripts/build.mjs), so that the source
 * is compiled as read, without a wrapped copy of it: its value is the module function.
 */
export function compileBundle(
  source: string,
  filename: string,
  cachedData?: Buffer,
): { script: Script; rejected: boolean } {
  const script = new Script(source, {
    filename,
    // The bundle's import() (the simulator's and the Kubernetes client's ESM bundles) goes to Node's own
    // loader, as from any CommonJS module.
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    ...(cachedData === undefined ? {} : { cachedData }),
  });
  return { script, rejected: cachedData !== undefined && script.cachedDataRejected === true };
}
