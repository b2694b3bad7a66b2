// Bundles the CLI into dist/ so that it runs with `node` alone: no node_modules at run time.
// Commands are loaded with dynamic import(), so `init` never parses the simulator or prom-client.
import { build } from "esbuild";

await build({
  entryPoints: { "multus-ipmgr": "src/cli/main.ts" },
  outdir: "dist",
  outExtension: { ".js": ".mjs" },
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
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
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __ipmgrCreateRequire } from 'node:module'; const require = __ipmgrCreateRequire(import.meta.url);",
  },
});
