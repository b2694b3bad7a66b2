// Bundles the CLI into dist/ so that it runs with `node` alone: no node_modules at run time.
// Commands are loaded with dynamic import(), so `init` never parses the sidecar's metrics library.
// The simulator is a bundle of its own (dist/sim.mjs): in the shared chunk graph, its world-file schemas
// (classic zod) would drag all of zod's core, 580 KB and about 45 ms, into every start of `init`.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { buildCniPlugin, CNI_PLUGIN_OUTPUT, hasGcc } from "./build-cni-plugin.mjs";

// `multus-ipmgr --version` prints the version of package.json, fixed in the bundle at build time.
const { version } = JSON.parse(readFileSync("package.json", "utf8"));

// Chunk names carry content hashes: start from an empty dist/ so that no stale chunk ships.
rmSync("dist", { recursive: true, force: true });

// client-node's fetch (node-fetch 2, whatwg-url, tr46) requires Node's `punycode` module, deprecated since
// Node 21: on the image's Node 24 every bridge start printed a DeprecationWarning on stderr. The npm
// package `punycode` is the same code, kept up; the bundle takes it instead of the built-in module.
const userlandPunycode = {
  name: "userland-punycode",
  setup(b) {
    const path = createRequire(import.meta.url).resolve("punycode/");
    b.onResolve({ filter: /^(node:)?punycode$/ }, () => ({ path }));
  },
};

// node-fetch 2 (client-node's fetch) parses every request's URL with url.parse(), which Node 24 deprecates
// at run time (DEP0169, a warning on stderr at the bridge's first API call): it gets `url` with a `parse` on
// the WHATWG URL API instead (scripts/shims/node-fetch-url.mjs).
const nodeFetchUrl = {
  name: "node-fetch-url",
  setup(b) {
    const path = fileURLToPath(new URL("./shims/node-fetch-url.mjs", import.meta.url));
    b.onResolve({ filter: /^(node:)?url$/ }, (args) =>
      /[\\/]node_modules[\\/]node-fetch[\\/]/.test(args.importer) ? { path } : undefined,
    );
  },
};

// What every start of the CLI loaded of Node's own modules and used for nothing (docs/decisions.md: start-up):
// pino's transport (thread-stream) and its own look at worker_threads, sonic-boom's assert (which loads
// Node's AssertionError machinery), and p-retry's global `performance` (whose first use loads perf_hooks and
// its timing classes). pino and sonic-boom get the shims beside this file; p-retry gets a `performance` of
// its own, as monotonic as the global one (it only subtracts two readings).
const leanNodeModules = {
  name: "lean-node-modules",
  setup(b) {
    const shim = (name) => fileURLToPath(new URL(`./shims/${name}`, import.meta.url));
    b.onResolve({ filter: /^\.\/(lib\/)?transport(\.js)?$/ }, (args) =>
      /[\\/]node_modules[\\/]pino[\\/]/.test(args.importer)
        ? { path: shim("pino-transport.cjs") }
        : undefined,
    );
    b.onResolve({ filter: /^(node:)?worker_threads$/ }, (args) =>
      /[\\/]node_modules[\\/]pino[\\/]/.test(args.importer)
        ? { path: shim("pino-worker-threads.cjs") }
        : undefined,
    );
    b.onResolve({ filter: /^(node:)?assert$/ }, (args) =>
      /[\\/]node_modules[\\/]sonic-boom[\\/]/.test(args.importer) ? { path: shim("assert.cjs") } : undefined,
    );
    b.onLoad({ filter: /[\\/]node_modules[\\/]p-retry[\\/]index\.js$/ }, (args) => ({
      contents: `const performance = { now: () => Number(process.hrtime.bigint()) / 1e6 };\n${readFileSync(args.path, "utf8")}`,
      loader: "js",
    }));
  },
};

const common = {
  outdir: "dist",
  outExtension: { ".js": ".mjs" },
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // The AWS SDK's ESM builds (field `module`) tree-shake; its CJS builds pull in every operation.
  mainFields: ["module", "main"],
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: "linked",
  legalComments: "none",
  logLevel: "warning",
  define: { __IPMGR_VERSION__: JSON.stringify(version) },
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __ipmgrCreateRequire } from 'node:module'; const require = __ipmgrCreateRequire(import.meta.url);",
  },
};

await build({
  ...common,
  // start: the CLI as a library, only the input of dist/cli.cjs below (removed once that is built).
  entryPoints: {
    "multus-ipmgr": "src/cli/main.ts",
    start: "src/cli/start.ts",
    "start-bridge": "src/cli/start-bridge.ts",
  },
  chunkNames: "chunks/[name]-[hash]",
  splitting: true,
  plugins: [userlandPunycode, nodeFetchUrl, leanNodeModules],
});
await build({ ...common, entryPoints: { sim: "src/sim/bundle.ts" } });

// dist/cli.cjs: the same CLI as one CommonJS file, for V8's code cache (src/cli/code-cache.ts; Node 20 has a
// code cache for CommonJS only). Built from the chunks above, which are already tree-shaken: bundled from
// src/ as CommonJS, the EC2 SDK behind init's dynamic import() would come whole (2.5 MB). Each chunk stays
// lazy (evaluated on first import), as in the ESM build. Every import() becomes a require(): in Node 20,
// import() fails (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING) in code that V8 read from a code cache, and the
// SDK imports node:http that way. So the ESM-only parts cannot run from it: `sim` (its own ESM bundle) and
// `bridge` (whose Kubernetes client, 2.3 MB, stays an ESM chunk, left out here) start through
// dist/multus-ipmgr.mjs (src/cli/fast-start.ts).
const cjs = {
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  logLevel: "warning",
};
// Each CommonJS bundle is written inside the wrapper Node puts around a module, so that
// src/cli/code-cache.ts compiles the file as read: wrapping it at each start made a second copy of the
// whole source in V8's heap (0.9 MB of peak RSS for the CLI's). The sixth parameter is the bundle's file
// URL, for the chunks' import.meta.url (see `define`). The file's first line stays its `#!`, which V8 allows
// at the start of a script, and esbuild's "use strict" opens the function's body: the code runs in strict
// mode, as the ESM chunks it is built from do.
const cjsModuleWrapper = {
  banner: { js: "(function (exports, require, module, __filename, __dirname, __ipmgrBundleUrl) {" },
  footer: { js: "});" },
};
await build({
  ...cjs,
  entryPoints: ["dist/start.mjs"],
  outfile: "dist/cli.cjs",
  sourcemap: "linked",
  supported: { "dynamic-import": false },
  // The chunks' banner makes `require` from import.meta.url, which CommonJS lacks.
  define: { "import.meta.url": "__ipmgrBundleUrl" },
  ...cjsModuleWrapper,
  plugins: [
    {
      name: "keep-kube-client-esm",
      setup(b) {
        b.onResolve({ filter: /kube-client-[A-Z0-9]+\.mjs$/ }, (args) => ({
          path: `./chunks/${basename(args.path)}`,
          external: true,
        }));
      },
    },
  ],
});
// dist/bridge.cjs: the bridge alone, its Kubernetes client included, with a code cache of its own.
await build({
  ...cjs,
  entryPoints: ["dist/start-bridge.mjs"],
  outfile: "dist/bridge.cjs",
  sourcemap: "linked",
  // webidl-conversions (client-node's fetch) compares with -0 on purpose; its own build, not ours to fix.
  logOverride: { "equals-negative-zero": "silent" },
  supported: { "dynamic-import": false },
  define: { "import.meta.url": "__ipmgrBundleUrl" },
  ...cjsModuleWrapper,
});
for (const file of ["start.mjs", "start.mjs.map", "start-bridge.mjs", "start-bridge.mjs.map"])
  rmSync(`dist/${file}`);
// dist/multus-ipmgr.cjs runs dist/cli.cjs with its code cache (the image's entrypoint); dist/write-code-cache.cjs
// makes the cache for the node that runs it: build-time code, kept out of src/ in scripts/code-cache/.
await build({
  ...cjs,
  entryPoints: {
    "multus-ipmgr": "src/cli/fast-start.ts",
    "write-code-cache": "scripts/code-cache/write-code-cache.ts",
  },
  outdir: "dist",
  outExtension: { ".js": ".cjs" },
  banner: { js: "#!/usr/bin/env node" },
});
execFileSync(process.execPath, ["dist/write-code-cache.cjs"], { stdio: ["ignore", "ignore", "inherit"] });

// The chained CNI plugin's host binary (C, static; docs/cni-plugin.md). The image compiles it in a stage of
// its own, for its target platform; its build stage has no gcc and skips it here.
if (hasGcc()) buildCniPlugin();
else
  console.warn(
    `build: no gcc on the PATH, so ${CNI_PLUGIN_OUTPUT} (the CNI plugin) is not built, and its tests skip; ` +
      "install gcc (Debian: apt-get install gcc libc6-dev) to build it",
  );
