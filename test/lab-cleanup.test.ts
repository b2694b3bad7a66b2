/**
 * The network-namespace lab (test/helpers/netns.ts) as the benches use it on a signal: closeOpenLabs removes
 * every namespace of the labs left open, and the labs already closed are not counted again.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { closeOpenLabs, Lab, labUnavailableReason } from "./helpers/netns.js";
import { MAC, NODE1, twoNodeWorld } from "./helpers/worlds.js";

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`lab clean-up tests skipped: ${unavailable}`);

const namespaces = (): string[] =>
  execFileSync("ip", ["netns", "list"], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.split(" ")[0] ?? "")
    .filter((name) => name !== "");

describe.skipIf(unavailable !== undefined)("closeOpenLabs", () => {
  it("removes the namespaces of the labs left open, and only those", async () => {
    const pod = {
      name: "pod",
      instanceId: NODE1,
      interfaces: [{ name: "net1", mac: MAC.node1A1, addresses: [] }],
    };
    const closed = await Lab.start(twoNodeWorld(), [pod]);
    await closed.close();
    const open = await Lab.start(twoNodeWorld(), [pod]);
    const ours = [open.simNs, ...[...open.pods.values()].map((p) => p.ns)];
    expect(namespaces()).toEqual(expect.arrayContaining(ours));
    expect(await closeOpenLabs()).toBe(1);
    expect(namespaces().filter((ns) => ours.includes(ns))).toEqual([]);
    expect(await closeOpenLabs()).toBe(0);
  });
});
