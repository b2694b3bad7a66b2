/**
 * Every shell script under deploy/, scripts/ and native/ (and .ci/run) passes shellcheck, every check on, warnings
 * and notes included. shellcheck is Debian's `shellcheck` package: .ci/run installs it when it runs as root
 * and sets IPMGR_TEST_REQUIRE_SHELLCHECK=1, so that in CI a missing shellcheck fails here instead of skipping.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");

/** A file is a shell script when its name ends in .sh or its first line runs sh or bash. */
function isShellScript(path: string): boolean {
  if (path.endsWith(".sh")) return true;
  const first = readFileSync(path, "utf8").split("\n", 1)[0] ?? "";
  return /^#!.*\b(ba)?sh\b/.test(first);
}

const scripts = ["deploy", "scripts", ".ci", "native"]
  .flatMap((dir) =>
    (readdirSync(join(ROOT, dir), { recursive: true }) as string[]).map((f) => join(ROOT, dir, f)),
  )
  .filter((path) => statSync(path).isFile() && isShellScript(path))
  .map((path) => relative(ROOT, path))
  .sort();

const probe = spawnSync("shellcheck", ["--version"], { encoding: "utf8" });
const available = probe.status === 0;
const required = process.env.IPMGR_TEST_REQUIRE_SHELLCHECK === "1";
if (!available && !required) {
  process.stderr.write(
    "note: shellcheck is not on the PATH (Debian: apt-get install shellcheck; .ci/run installs it); test/shellcheck.test.ts is skipped\n",
  );
}

describe("the shell scripts", () => {
  it("are found: the node's first-boot script, the user data, the demo, the image test, CI and the CNI plugin's installer", () => {
    for (const path of [
      "deploy/node/multus-eni.sh",
      "native/cni-plugin/install.sh",
      "deploy/node/user-data.sh",
      "scripts/test-image.sh",
      ".ci/run",
    ]) {
      expect(scripts).toContain(path);
    }
  });

  it.runIf(available || required).each(scripts)("%s passes shellcheck", (path) => {
    expect(available, "shellcheck is not on the PATH, and IPMGR_TEST_REQUIRE_SHELLCHECK=1 asks for it").toBe(
      true,
    );
    // -x follows the files a script sources (scripts/as-owner.sh), from the repository's root.
    const result = spawnSync("shellcheck", ["-x", "--format=gcc", path], { cwd: ROOT, encoding: "utf8" });
    expect(result.stdout + result.stderr).toBe("");
    expect(result.status).toBe(0);
  });
});
