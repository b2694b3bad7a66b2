/**
 * The demo's prefix-mode part (scripts/demo-prefix.mjs) against the built binary, in network namespaces of
 * its own: the node's slices become one prefix per family in one call each, then three pods start with no
 * EC2 call, and the script leaves no namespace behind.
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
if (unavailable !== undefined) console.warn(`demo prefix test skipped: ${unavailable}`);

describe.skipIf(unavailable !== undefined)("the demo's prefix-mode part", () => {
  it("holds the node's slices as two prefixes in two calls, then starts three pods with no call", async () => {
    const { stdout } = await run(process.execPath, ["scripts/demo-prefix.mjs"], { timeout: 90_000 });
    const calls = stdout.split("\n").filter((l) => / -> \w+$/.test(l));
    expect(calls.map((l) => l.trim())).toEqual([
      "AssignPrivateIpAddresses Ipv4Prefix.1=192.0.2.192/28 NetworkInterfaceId=eni-0p1multus -> ok",
      "AssignIpv6Addresses Ipv6Prefix.1=2001:db8:200:2:10::/80 NetworkInterfaceId=eni-0p1multus -> ok",
    ]);
    const pods = stdout.split("\n").filter((l) => l.includes("cnf/upf-"));
    expect(pods).toHaveLength(3);
    const afterPods = stdout.slice(stdout.indexOf("three pods start"));
    expect(afterPods).toContain("(no EC2 change: not one call)");
    expect(afterPods).toContain("secondary addresses: none");
    // The world's explicit reservations cover the sliced ranges, as the bridge keeps them: nothing to fix.
    const readyz = stdout.slice(stdout.indexOf("/readyz:"), stdout.indexOf("SIGTERM"));
    expect(readyz).toContain("ready");
    expect(readyz).toContain("prefix mode: 2 of 2 prefixes held");
    expect(readyz).not.toMatch(/reservation|refused|failed|cannot read/);
    expect(stdout).toContain("the bridge exits 0");
    const { stdout: left } = await run("ip", ["netns", "list"]);
    const pid = /ipmdemo-(\d+)-psim/.exec(stdout)?.[1];
    expect(pid).toBeDefined();
    expect(left).not.toContain(`ipmdemo-${pid}-`);
  }, 120_000);
});
