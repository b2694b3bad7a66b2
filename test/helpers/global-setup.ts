import { execFileSync } from "node:child_process";

/**
 * Builds dist/ once, so that end-to-end tests run the same bundle users get.
 * IPMGR_TEST_SKIP_BUILD=1 skips it for quick runs of pure unit tests.
 */
export default function setup(): void {
  if (process.env.IPMGR_TEST_SKIP_BUILD === "1") return;
  execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: "inherit" });
}
