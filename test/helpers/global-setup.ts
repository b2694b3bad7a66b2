import { execFileSync } from "node:child_process";
import { labUnavailableReason, removeStaleLabs } from "./netns.js";

/**
 * Builds dist/ once, so that end-to-end tests run the same bundle users get, and removes lab namespaces
 * left by a crashed earlier run. IPMGR_TEST_SKIP_BUILD=1 skips the build for quick runs of unit tests.
 */
export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.IPMGR_TEST_SKIP_BUILD !== "1") {
    execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: "inherit" });
  }
  const reason = labUnavailableReason();
  if (reason === undefined) await removeStaleLabs();
  else process.stderr.write(`note: ${reason}; the end-to-end tests in network namespaces will be skipped\n`);
  return async () => {
    if (labUnavailableReason() === undefined) await removeStaleLabs();
  };
}
