// Builds the chained CNI plugin's host binary, dist/cni/multus-ipmgr, from native/cni-plugin/multus-ipmgr-cni.c
// (docs/cni-plugin.md): static, so that it runs on any node with no library of ours, and without Node.js.
// Run alone (`node scripts/build-cni-plugin.mjs`) or by scripts/build.mjs, which skips it with a message
// when there is no gcc (the tests that run the binary then skip and say why).
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const CNI_PLUGIN_SOURCE = "native/cni-plugin/multus-ipmgr-cni.c";
export const CNI_PLUGIN_OUTPUT = "dist/cni/multus-ipmgr";

/** True when `gcc` runs. */
export function hasGcc() {
  try {
    execFileSync("gcc", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Compiles the plugin; gcc's own errors go to stderr, and a failure throws. */
export function buildCniPlugin() {
  mkdirSync("dist/cni", { recursive: true });
  execFileSync(
    "gcc",
    ["-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", CNI_PLUGIN_OUTPUT, CNI_PLUGIN_SOURCE],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildCniPlugin();
