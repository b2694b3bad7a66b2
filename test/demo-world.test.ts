/**
 * The demo's own world ends green: with the pod, the addresses and the IPMGR_ALLOWED_CIDRS that
 * scripts/demo.sh uses (read from the script, so the two stay in step), `init` assigns and then `doctor`
 * finds no problem and no warning in examples/world-demo.yaml. The demo itself stops when doctor does not
 * exit 0.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Lab, labUnavailableReason } from "./helpers/netns.js";

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`demo world end-to-end test skipped: ${unavailable}`);

const script = readFileSync("scripts/demo.sh", "utf8");
function shellValue(name: string): string {
  const match = new RegExp(`^${name}=(.*)$`, "m").exec(script);
  if (match?.[1] === undefined) throw new Error(`scripts/demo.sh no longer sets ${name}`);
  return match[1];
}
const MAC = shellValue("ENI_MAC").replace(/^"([^"]*)".*$/, "$1");
const ADDRESSES = [...shellValue("POD_ADDRESSES").matchAll(/"([^"]+)"/g)].map((m) => m[1] ?? "");
const ALLOWED = shellValue("ALLOWED").replace(/^"([^"]*)"$/, "$1");

let lab: Lab | undefined;
afterEach(async () => {
  await lab?.close();
  lab = undefined;
});

describe.skipIf(unavailable !== undefined)("the demo's world (examples/world-demo.yaml)", () => {
  it("reads the demo's settings from scripts/demo.sh", () => {
    expect({ MAC, ADDRESSES, ALLOWED }).toEqual({
      MAC: "02:00:00:00:0b:01",
      ADDRESSES: ["198.51.100.200/25", "2001:db8:100:2::200/64"],
      ALLOWED: "198.51.100.192/27,2001:db8:100:2::200/120",
    });
  });

  it("after init, doctor finds no problem and no warning, and exits 0", async () => {
    const world: unknown = parse(readFileSync("examples/world-demo.yaml", "utf8"));
    lab = await Lab.start(world, [
      { name: "pod", instanceId: "i-0demo1", interfaces: [{ name: "net1", mac: MAC, addresses: ADDRESSES }] },
    ]);
    const env = lab.env("pod", { IPMGR_ALLOWED_CIDRS: ALLOWED });
    expect((await lab.run("pod", ["init"], env)).code).toBe(0);
    const result = await lab.run("pod", ["doctor", "--json"], env);
    const report = JSON.parse(result.stdout) as {
      exitCode: number;
      checks: { name: string; status: string; detail: string }[];
    };
    const notOk = report.checks
      .filter((c) => c.status === "problem" || c.status === "warn")
      .map((c) => `${c.name}: ${c.detail}`);
    expect({ notOk, exitCode: result.code }).toEqual({ notOk: [], exitCode: 0 });
  });
});
