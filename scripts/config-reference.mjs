// Rewrites the configuration tables of docs/configuration.md from the settings tables in src/ (npm run docs:config).
// `--check` changes nothing and exits 1 when the page is stale. The renderer is TypeScript
// (scripts/config-reference.ts, also imported by test/readme-config.test.ts): bundled here with esbuild into
// a temporary file, as scripts/build.mjs bundles the CLI, so that no TypeScript runner is needed.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const check = process.argv.includes("--check");
const dir = mkdtempSync(join(tmpdir(), "multus-ipmgr-config-reference-"));
try {
  const outfile = join(dir, "config-reference.mjs");
  await build({
    entryPoints: ["scripts/config-reference.ts"],
    outfile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    mainFields: ["module", "main"],
    logLevel: "warning",
    banner: {
      js: "import { createRequire as __ipmgrCreateRequire } from 'node:module'; const require = __ipmgrCreateRequire(import.meta.url);",
    },
  });
  const { staleBlocks, updateReadme, REGENERATE_COMMAND, CONFIG_PAGE } = await import(
    pathToFileURL(outfile).href
  );
  const readme = readFileSync(CONFIG_PAGE, "utf8");
  const stale = staleBlocks(readme);
  if (check) {
    if (stale.length > 0) {
      console.error(
        `${CONFIG_PAGE}'s configuration tables are stale (${stale.join(", ")}); run ${REGENERATE_COMMAND}`,
      );
      process.exitCode = 1;
    }
  } else if (stale.length > 0) {
    writeFileSync(CONFIG_PAGE, updateReadme(readme));
    console.log(`${CONFIG_PAGE}: rewrote the configuration tables ${stale.join(", ")}`);
  } else {
    console.log(`${CONFIG_PAGE}: the configuration tables are up to date`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
