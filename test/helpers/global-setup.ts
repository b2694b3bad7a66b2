import { execFileSync } from "node:child_process";

/** Builds dist/ once, so that end-to-end tests run the same bundle users get. */
export default function setup(): void {
  execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: "inherit" });
}
