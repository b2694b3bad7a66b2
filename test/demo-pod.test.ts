/**
 * The README demo's pod part (scripts/demo.sh up to the refused init, `_IPMGR_DEMO_POD_ONLY=1`) against the
 * built binary, as root: each section lists the EC2 calls of its own command only. The refused init's section
 * lists none: doctor's reads before it are cleared from the call log, not shown as the refused init's.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { labUnavailableReason } from "./helpers/netns.js";

const run = promisify(execFile);
const unavailable = !existsSync("dist/multus-ipmgr.mjs")
  ? "dist/ is not built (IPMGR_TEST_SKIP_BUILD=1 without a build)"
  : labUnavailableReason();
if (unavailable !== undefined) console.warn(`demo pod test skipped: ${unavailable}`);

/** The lines of the section whose heading starts with `heading`, up to the next blank line or heading. */
function section(stdout: string, heading: string): string[] {
  const lines = stdout.split("\n");
  const start = lines.findIndex((l) => l.startsWith(`== ${heading}`));
  expect(start, `a section "== ${heading}"`).toBeGreaterThanOrEqual(0);
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((l) => l === "" || l.startsWith("=="));
  return end < 0 ? rest : rest.slice(0, end);
}

describe.skipIf(unavailable !== undefined)("the demo's pod part", () => {
  it("lists no EC2 call under the refused init: doctor's calls are cleared before it", async () => {
    const { stdout } = await run("bash", ["scripts/demo.sh"], {
      timeout: 90_000,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        _IPMGR_DEMO_BUILT: "1",
        _IPMGR_DEMO_NODE: process.execPath,
        _IPMGR_DEMO_POD_ONLY: "1",
      },
    });
    expect(section(stdout, "an address outside IPMGR_ALLOWED_CIDRS is refused")).toEqual([
      "   exit code: 6",
      "   (no EC2 call)",
    ]);
    const assigned = section(stdout, "EC2 calls the simulator received");
    const changes = assigned.map((l) => l.trim().split(" ")[0]).filter((a) => !a?.startsWith("Describe"));
    expect(changes).toEqual(["AssignPrivateIpAddresses", "AssignIpv6Addresses"]);
    expect(section(stdout, "multus-ipmgr init again").at(-1)).toBe("   (no EC2 call)");
    const doctor = section(stdout, "multus-ipmgr doctor");
    expect(doctor.at(-2)).toBe("   exit code: 0");
    expect(doctor.at(-1)).toMatch(
      /^ {3}\(doctor made [1-9]\d* EC2 calls, reads and DryRun checks; the call log is cleared\)$/,
    );
    expect(stdout).toContain("demo done (pod part only)");
    const pid = /ipmdemo-(\d+)-sim/.exec(stdout)?.[1];
    expect(pid).toBeDefined();
    const { stdout: left } = await run("ip", ["netns", "list"]);
    expect(left).not.toContain(`ipmdemo-${pid}-`);
  }, 120_000);
});
