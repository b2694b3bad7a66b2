/**
 * `multus-ipmgr init`'s deadline (IPMGR_TIMEOUT_MS) bounds the whole run, a hanging EC2 call included: the
 * call is aborted, no attempt starts after the deadline, and the process exits 8.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Lab, labUnavailableReason } from "./helpers/netns.js";
import { ALLOWED_CIDRS, MAC, NODE1, twoNodeWorld } from "./helpers/worlds.js";

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`init deadline end-to-end tests skipped: ${unavailable}`);

let lab: Lab | undefined;
afterEach(async () => {
  await lab?.close();
  lab = undefined;
});

describe.skipIf(unavailable !== undefined)("multus-ipmgr init's deadline", () => {
  it("aborts a hanging EC2 call at IPMGR_TIMEOUT_MS and exits 8, starting no attempt after it", async () => {
    const l = await Lab.start({ ...twoNodeWorld(), faults: { ec2LatencyMs: 4_000 } }, [
      {
        name: "pod",
        instanceId: NODE1,
        interfaces: [{ name: "net1", mac: MAC.node1A1, addresses: ["198.51.100.40/26"] }],
      },
    ]);
    lab = l;
    const startedAt = Date.now();
    // Each attempt times out after 1.5 s and is retried: without the abort, 8 attempts would take ~15 s.
    const result = await l.run(
      "pod",
      ["init"],
      l.env("pod", {
        IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS,
        IPMGR_TIMEOUT_MS: "2000",
        IPMGR_EC2_TIMEOUT_MS: "1500",
        IPMGR_EC2_RETRY_BASE_MS: "50",
      }),
      10_000,
    );
    expect(result.code).toBe(8);
    expect(result.stderr).toContain("init to finish");
    // The simulator records each request once it has answered it, after its latency.
    await new Promise((r) => setTimeout(r, 4_500));
    const late = (await l.calls()).filter((c) => Date.parse(String(c.time)) > startedAt + 2_000 + 500);
    expect(late).toEqual([]);
  }, 30_000);
});
