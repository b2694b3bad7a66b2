/** IdleCollector: one collection per quiet period after work, none while work goes on, none after stop. */
import { describe, expect, it } from "vitest";
import { IdleCollector } from "../src/sidecar/idle-collector.js";
import { ManualClock } from "./helpers/manual-clock.js";

describe("IdleCollector", () => {
  it("collects once the quiet time has passed after the last work, once more half of it later, then no more", async () => {
    const clock = new ManualClock();
    let collections = 0;
    const collector = new IdleCollector(() => collections++, 10_000, clock);
    collector.noteActivity();
    await clock.advance(6_000);
    collector.noteActivity();
    await clock.advance(6_000);
    expect(collections).toBe(0);
    await clock.advance(4_000);
    expect(collections).toBe(1);
    await clock.advance(5_000);
    expect(collections).toBe(2);
    await clock.advance(60_000);
    expect(collections).toBe(2);
  });

  it("collects nothing before any work, and nothing after stop", async () => {
    const clock = new ManualClock();
    let collections = 0;
    const collector = new IdleCollector(() => collections++, 1_000, clock);
    await clock.advance(5_000);
    collector.noteActivity();
    collector.stop();
    await clock.advance(5_000);
    collector.noteActivity();
    await clock.advance(5_000);
    expect(collections).toBe(0);
  });
});
