/**
 * StateChangeLog (src/ipam-whereabouts-bridge/kube/state-change-log.ts): each change of state told once, a
 * flapping one folded into a line a window, with counts that add up.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type StateChange, StateChangeLog } from "../src/ipam-whereabouts-bridge/kube/state-change-log.js";

const WINDOW = 60_000;

/** Notes `steps` ([bad, at ms]) and returns what was told, with the time. */
function run(steps: readonly (readonly [boolean, number])[]): (StateChange & { at: number })[] {
  const log = new StateChangeLog(WINDOW);
  const told: (StateChange & { at: number })[] = [];
  for (const [bad, at] of steps) {
    const change = log.note(bad, at);
    if (change !== undefined) told.push({ ...change, at });
  }
  return told;
}

describe("StateChangeLog", () => {
  it("tells an outage and its end, once each, however often the same state is noted", () => {
    expect(
      run([
        [false, 0],
        [true, 1_000],
        [true, 2_000],
        [true, 300_000],
        [false, 330_000],
        [false, 400_000],
      ]),
    ).toEqual([
      { kind: "bad", folded: undefined, at: 1_000 },
      { kind: "good", badMs: 329_000, folded: undefined, at: 330_000 },
    ]);
  });

  it("folds an API flapping every 2 s for a minute into four lines, with the flaps counted", () => {
    const steps: [boolean, number][] = [];
    for (let t = 0; t <= 62_000; t += 2_000) steps.push([t % 4_000 === 0, t]);
    steps.push([false, 130_000]);
    const told = run(steps);
    expect(told.map((t) => t.kind)).toEqual(["bad", "good", "bad", "good"]);
    // Told at 0 s and its end; 4..56 s folded (14 times, 2 s each), told with the change at 60 s.
    expect(told[2]).toEqual({
      kind: "bad",
      folded: { times: 14, badMs: 28_000, overMs: 56_000 },
      at: 60_000,
    });
  });

  it("tells a folded outage that outlasts the window, and then its end", () => {
    const told = run([
      [true, 0],
      [false, 1_000],
      [true, 2_000],
      [true, 61_000],
      [false, 90_000],
    ]);
    expect(told).toEqual([
      { kind: "bad", folded: undefined, at: 0 },
      { kind: "good", badMs: 1_000, folded: undefined, at: 1_000 },
      { kind: "bad", folded: undefined, at: 61_000 },
      { kind: "good", badMs: 88_000, folded: undefined, at: 90_000 },
    ]);
  });

  it("tells flaps that end in a good state at the first note a window later", () => {
    const told = run([
      [true, 0],
      [false, 1_000],
      [true, 2_000],
      [false, 5_000],
      [false, 30_000],
      [false, 61_000],
    ]);
    expect(told.at(-1)).toEqual({
      kind: "folded",
      folded: { times: 1, badMs: 3_000, overMs: 59_000 },
      at: 61_000,
    });
  });

  it("never tells more than three lines a window, and every change to bad is told or counted once (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 5_000 })), { maxLength: 300 }),
        (raw) => {
          let at = 0;
          const steps = raw.map(([bad, gap]) => {
            at += gap;
            return [bad, at] as const;
          });
          const told = run(steps);
          for (const t of told) {
            expect(told.filter((u) => u.at > t.at - WINDOW && u.at <= t.at).length).toBeLessThanOrEqual(3);
          }
          let changes = 0;
          let prev = false;
          for (const [bad] of steps) {
            if (bad && !prev) changes += 1;
            prev = bad;
          }
          const toldBad = told.filter((t) => t.kind === "bad").length;
          const folded = told.reduce((n, t) => n + (t.folded?.times ?? 0), 0);
          // Changes folded after the last line told are the only ones not yet accounted for.
          const last = told.at(-1)?.at ?? Number.NEGATIVE_INFINITY;
          let pending = 0;
          prev = false;
          for (const [bad, when] of steps) {
            if (bad && !prev && when > last) pending += 1;
            prev = bad;
          }
          expect(toldBad + folded).toBeLessThanOrEqual(changes);
          expect(toldBad + folded + pending).toBeGreaterThanOrEqual(changes);
        },
      ),
    );
  });
});
