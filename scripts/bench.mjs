// Runs bench/run.ts: bundled on the fly with esbuild (Node 20 cannot run TypeScript itself).
import { spawnSync } from "node:child_process";
import { build } from "esbuild";

await build({
  entryPoints: ["bench/run.ts"],
  outfile: ".bench/run.mjs",
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  logLevel: "warning",
});
const result = spawnSync(process.execPath, [".bench/run.mjs", ...process.argv.slice(2)], {
  stdio: "inherit",
});
process.exit(result.status ?? 1);
