/**
 * IPMGR_STATE_FILE end to end: the built sidecar killed with SIGKILL inside the release settle window, then
 * started again in the same pod namespace (a container restart, the state file on a volume that survives it).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Lab, labUnavailableReason, removeStaleLabs } from "./helpers/netns.js";
import {
  eventually,
  holds,
  pairPod,
  ready,
  type SidecarProcess,
  startSidecar,
} from "./helpers/sidecar-lab.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";
import { ENI, floatingPairWorld } from "./helpers/worlds.js";

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`sidecar restart end-to-end tests skipped: ${unavailable}`);

const ALLOWED_CIDRS = "198.51.100.64/26,2001:db8:100:1::100/120";
const FLOAT4 = "198.51.100.80";

let lab: Lab | undefined;
let stateDir: string | undefined;
const running: SidecarProcess[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) p.child.kill("SIGKILL");
  await lab?.close();
  lab = undefined;
  removeTempDir(stateDir);
  stateDir = undefined;
});

/** The pending releases the state file lists; undefined while there is no file. */
function pendingIn(file: string): string[] | undefined {
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as { pendingReleases: string[] }).pendingReleases;
  } catch {
    return undefined;
  }
}

/** Pod A (node 1) carrying FLOAT4 (and 198.51.100.70 unless `floatingOnly`); its sidecar started with a state file; ready. */
async function podWithStateFile(
  floatingOnly = false,
): Promise<{ l: Lab; file: string; first: SidecarProcess }> {
  await removeStaleLabs();
  const addresses = floatingOnly ? [`${FLOAT4}/25`] : ["198.51.100.70/25", `${FLOAT4}/25`];
  const l = await Lab.start(floatingPairWorld({}), [pairPod("a", addresses)]);
  lab = l;
  stateDir = makeTempDir("ipmgr-state-");
  const file = join(stateDir, "pending-releases.json");
  // A settle window of a minute: the kill lands inside it, whatever the machine's load.
  const first = sidecar(l, file, "60000");
  await eventually(() => ready(l, "a"), "ready");
  return { l, file, first };
}

function sidecar(l: Lab, file: string, settleMs: string): SidecarProcess {
  const p = startSidecar(l, "a", {
    IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS,
    IPMGR_STATE_FILE: file,
    IPMGR_RELEASE_SETTLE_MS: settleMs,
  });
  running.push(p);
  return p;
}

/** The application removes FLOAT4; the sidecar records it as pending, then dies by SIGKILL before releasing. */
async function removeThenKill(l: Lab, file: string, first: SidecarProcess): Promise<void> {
  await l.removeAddress("a", "net1", `${FLOAT4}/25`);
  await eventually(
    () => pendingIn(file)?.includes(FLOAT4) === true,
    "the removal recorded in the state file",
  );
  first.child.kill("SIGKILL");
  expect((await first.exited).signal).toBe("SIGKILL");
  expect(await holds(l, ENI.node1A1, FLOAT4)).toBe(true);
}

describe.skipIf(unavailable !== undefined)("the sidecar's state file across a restart", () => {
  it("a sidecar killed inside the settle window makes the release when it starts again", async () => {
    const { l, file, first } = await podWithStateFile();
    await removeThenKill(l, file, first);
    const second = sidecar(l, file, "250");
    await eventually(async () => !(await holds(l, ENI.node1A1, FLOAT4)), "released after the restart");
    await eventually(() => pendingIn(file)?.length === 0, "the state file emptied");
    expect(second.logged(/^releases left pending by the previous run/)).toMatchObject([
      { releasing: [FLOAT4], onThePodAgain: [] },
    ]);
    expect((await l.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11", "198.51.100.70"]);
  });

  it("makes the release when the address was the interface's only one, the pod carrying none at the restart", async () => {
    const { l, file, first } = await podWithStateFile(true);
    await removeThenKill(l, file, first);
    const second = sidecar(l, file, "250");
    await eventually(async () => !(await holds(l, ENI.node1A1, FLOAT4)), "released after the restart");
    await eventually(() => pendingIn(file)?.length === 0, "the state file emptied");
    await eventually(() => ready(l, "a"), "ready after the restart");
    expect(second.logged(/^releases left pending by the previous run/)).toMatchObject([
      { releasing: [FLOAT4], onThePodAgain: [] },
    ]);
    expect((await l.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11"]);
    expect(second.child.exitCode).toBeNull();
  });

  it("never releases an address the pod carries again by the time it restarts", async () => {
    const { l, file, first } = await podWithStateFile();
    await removeThenKill(l, file, first);
    await l.addAddress("a", "net1", `${FLOAT4}/25`);
    await l.clearCalls();
    const second = sidecar(l, file, "250");
    await eventually(() => ready(l, "a"), "ready after the restart");
    await eventually(() => pendingIn(file)?.length === 0, "the state file emptied");
    expect(second.logged(/^releases left pending by the previous run/)).toMatchObject([
      { releasing: [], onThePodAgain: [FLOAT4] },
    ]);
    // Well past the settle time, and a few drift checks: still ours, never unassigned.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await holds(l, ENI.node1A1, FLOAT4)).toBe(true);
    expect((await l.calls()).filter((c) => c.action === "UnassignPrivateIpAddresses")).toEqual([]);
  });
});
