/**
 * MultusEnis against the simulator (our EC2 adapter on the real SDK): which ENIs are Multus ENIs, and how
 * often the no_manage tags cost a DescribeNetworkInterfaces.
 */
import { afterEach, describe, expect, it } from "vitest";
import { readEnis } from "../src/eni/eni-discovery.js";
import {
  MultusEnis,
  NO_MANAGE_TAG,
  TAG_RESYNC_INTERVAL_MS,
} from "../src/ipam-whereabouts-bridge/node/multus-enis.js";
import { type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { ec2ApiFor, imdsFor, standardWorld } from "./helpers/sim-fixtures.js";

let sim: SimulatorHandle | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function setUp(random: number) {
  sim = await startSimulator(standardWorld({ eni0b: { tags: { [NO_MANAGE_TAG]: "true" } } }));
  const handle = sim;
  const enis = await readEnis(imdsFor(handle, "i-1"));
  const multus = new MultusEnis(ec2ApiFor(handle), [], () => random);
  const describes = () => handle.calls().filter((c) => c.action === "DescribeNetworkInterfaces").length;
  return { enis, multus, describes };
}

describe("MultusEnis", () => {
  it("finds the ENIs tagged no_manage=true, with one describe, and reads no tag again before the interval", async () => {
    const { enis, multus, describes } = await setUp(0.5);
    expect([...(await multus.ids(enis, 0))]).toEqual(["eni-0b"]);
    expect(describes()).toBe(1);
    // The bridge's waves and resyncs (every 60 s by default) in the next ten minutes cost nothing.
    for (let at = 1_000; at < TAG_RESYNC_INTERVAL_MS; at += 60_000) await multus.ids(enis, at);
    expect(describes()).toBe(1);
    await multus.ids(enis, TAG_RESYNC_INTERVAL_MS);
    expect(describes()).toBe(2);
  });

  it.each([
    [0, 0.75],
    [0.999_999, 1.25],
  ])("spreads the next read (random %d): at %d of the interval", async (random, share) => {
    const { enis, multus, describes } = await setUp(random);
    await multus.ids(enis, 0);
    await multus.ids(enis, share * TAG_RESYNC_INTERVAL_MS - 1_000);
    expect(describes()).toBe(1);
    await multus.ids(enis, share * TAG_RESYNC_INTERVAL_MS + 1);
    expect(describes()).toBe(2);
  });

  it("reads the tags at once for an ENI it has not seen", async () => {
    const { enis, multus, describes } = await setUp(0.5);
    await multus.ids(
      enis.filter((e) => e.eniId !== "eni-0c"),
      0,
    );
    expect(describes()).toBe(1);
    expect([...(await multus.ids(enis, 1_000))]).toEqual(["eni-0b"]);
    expect(describes()).toBe(2);
  });

  it("takes device indexes as given, with no describe at all", async () => {
    sim = await startSimulator(standardWorld());
    const handle = sim;
    const enis = await readEnis(imdsFor(handle, "i-1"));
    const multus = new MultusEnis(ec2ApiFor(handle), [1, 2]);
    expect([...(await multus.ids(enis, 0))].sort()).toEqual(["eni-0b", "eni-0c"]);
    expect(handle.calls().filter((c) => c.action === "DescribeNetworkInterfaces")).toEqual([]);
  });
});
