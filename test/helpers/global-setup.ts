import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { giveBack } from "../../scripts/give-back.mjs";
import { labUnavailableReason, removeStaleLabs } from "./netns.js";
import { leftTempDirs, RUN_TAG_VARIABLE } from "./temp-dirs.js";
import { installTestPackages } from "./test-packages.js";

/**
 * Installs the Debian packages some tests need when it runs as root (test-packages.ts), builds dist/ once,
 * so that end-to-end tests run the same bundle users get, and removes lab namespaces left by a crashed
 * earlier run. IPMGR_TEST_SKIP_BUILD=1 skips the build for quick runs of unit tests.
 *
 * The test workers inherit the environment set here:
 * - IPMGR_TERMINATION_LOG is empty, so that no test that runs a command, as root, ever writes the
 *   machine's real /dev/termination-log (tests of the termination log point it at a file of their own);
 * - the run tag names this run's temporary directories (see temp-dirs.ts). At the end, any of them still
 *   there fails the run, listed, and is removed.
 * Run as root in a checkout another user owns (`sudo npm test`), what the run writes in the tree (dist/,
 * vite's caches) is given back to that user, so that their own `npm test` still works afterwards.
 */
/** What a test run writes inside the checkout: the build, and vite's caches. */
const WRITTEN_IN_TREE = ["dist", "node_modules/.vite", "node_modules/.vite-temp", "node_modules/.vitest"];

export default async function setup(): Promise<() => Promise<void>> {
  process.env.IPMGR_TERMINATION_LOG = "";
  const tag = String(process.pid);
  process.env[RUN_TAG_VARIABLE] = tag;
  // A second's slack for file systems with coarse timestamps.
  const startedMs = Date.now() - 1000;
  const packagesNote = installTestPackages();
  if (packagesNote !== undefined) process.stderr.write(`note: ${packagesNote}\n`);
  if (process.env.IPMGR_TEST_SKIP_BUILD !== "1") {
    execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: "inherit" });
  }
  giveBack(WRITTEN_IN_TREE);
  const reason = labUnavailableReason();
  if (reason === undefined) await removeStaleLabs();
  else process.stderr.write(`note: ${reason}; the end-to-end tests in network namespaces will be skipped\n`);
  return async () => {
    giveBack(WRITTEN_IN_TREE);
    if (labUnavailableReason() === undefined) await removeStaleLabs();
    const left = leftTempDirs(tag, startedMs);
    for (const dir of left) rmSync(dir, { recursive: true, force: true });
    if (left.length > 0) {
      throw new Error(
        `the tests left ${left.length} temporary director${left.length === 1 ? "y" : "ies"} behind (now removed): ` +
          `${left.join(", ")}; remove each one in the afterEach or afterAll of the test that makes it`,
      );
    }
  };
}
