// Bundles the CLI into dist/ so that it runs with `node` alone: no node_modules at run time.
// Commands are loaded with dynamic import(), so `init` never parses the sidecar's metrics library.
// The simulator is a bundle of its own (dist/sim.mjs): in the shared chunk graph, its world-file schemas
// (classic zod) would drag all of zod's core, 580 KB and about 45 ms, into every start of `init`.
import { readFileSync, rmSync } from "node:fs";
import { build } from "esbuild";

// `multus-ipmgr --version` prints the version of package.json, fixed in the bundle at build time.
const { version } = JSON.parse(readFileSync("package.json", "utf8"));

// Chunk names carry content hashes: start from an empty dist/ so that no stale chunk ships.
rmSync("dist", { recursive: true, force: true });

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
  entryPoints: { "multus-ipmgr": "src/cli/main.ts" },
  chunkNames: "chunks/[name]-[hash]",
  splitting: true,
});
await build({ ...common, entryPoints: { sim: "src/sim/main.ts" } });
