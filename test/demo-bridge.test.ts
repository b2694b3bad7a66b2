/** The README demo's bridge part (scripts/demo-bridge.mjs) against the built binary: it keeps working. */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const unbuilt = !existsSync("dist/multus-ipmgr.mjs");
if (unbuilt)
  console.warn("demo bridge test skipped: dist/ is not built (IPMGR_TEST_SKIP_BUILD=1 without a build)");

describe.skipIf(unbuilt)("the demo's bridge part", () => {
  it("shows three pods assigned in one EC2 call and a deleted pod's address released after the grace", async () => {
    const { stdout } = await run(process.execPath, ["scripts/demo-bridge.mjs"], { timeout: 60_000 });
    const assigns = stdout.split("\n").filter((l) => l.includes("AssignPrivateIpAddresses"));
    expect(assigns).toHaveLength(2); // upf-0 at start, then the three new pods together
    expect(assigns[1]).toContain("PrivateIpAddress.3=198.51.100.202");
    expect(stdout).toContain(
      "UnassignPrivateIpAddresses NetworkInterfaceId=eni-0b1multus PrivateIpAddress.1=198.51.100.201 -> ok",
    );
    expect(stdout).toContain("the bridge exits 0");
  }, 90_000);
});
