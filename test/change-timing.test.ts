/**
 * change_to_assigned's bookkeeping (src/sidecar/change-timing.ts): each change timed once, from the moment it
 * was seen, whichever step made its EC2 calls.
 */
import { describe, expect, it } from "vitest";
import { ChangeTiming } from "../src/sidecar/change-timing.js";

describe("ChangeTiming", () => {
  it("times a step from the change that started it to EC2's acceptance", () => {
    const t = new ChangeTiming();
    t.seen(100);
    const from = t.stepStarts();
    expect(from).toBe(100);
    expect(t.stepDone(from, 105, 130)).toBe(30);
  });

  it("keeps the first of several changes seen before a step", () => {
    const t = new ChangeTiming();
    t.seen(100);
    t.seen(120);
    expect(t.stepStarts()).toBe(100);
    expect(t.stepStarts()).toBeUndefined();
  });

  it("does not time a step that made no EC2 call, nor one that nothing started and nothing reported", () => {
    const t = new ChangeTiming();
    t.seen(100);
    expect(t.stepDone(t.stepStarts(), 105, undefined)).toBeUndefined();
    expect(t.stepDone(t.stepStarts(), 200, 230)).toBeUndefined();
  });

  it("gives a failed step's moment to its retry", () => {
    const t = new ChangeTiming();
    t.seen(100);
    const first = t.stepStarts();
    t.stepFailed(first);
    const retry = t.stepStarts();
    expect(retry).toBe(100);
    expect(t.stepDone(retry, 300, 340)).toBe(240);
  });

  it("a change seen during a drift check's step, before its read: timed by that step, once", () => {
    const t = new ChangeTiming();
    const from = t.stepStarts(); // a drift check's reconcile: nothing seen yet
    t.seen(150); // its own read, through the watcher, reported the change
    expect(t.stepDone(from, 150, 180)).toBe(30);
    // The step the report triggers finds nothing to do, and does not time it again.
    expect(t.stepDone(t.stepStarts(), 200, undefined)).toBeUndefined();
  });

  it("a change seen during a step but after its read: not timed by that step's calls", () => {
    const t = new ChangeTiming();
    const from = t.stepStarts();
    t.seen(160);
    expect(t.stepDone(from, 150, 180)).toBeUndefined();
    // The next step is timed from that moment by its own calls, never by the earlier step's.
    const next = t.stepStarts();
    expect(next).toBe(160);
    expect(t.stepDone(next, 165, undefined)).toBeUndefined();
  });

  it("a change reported only after the step that made its calls: timed by the next step, from the report's moment", () => {
    const t = new ChangeTiming();
    expect(t.stepDone(t.stepStarts(), 150, 180)).toBeUndefined();
    t.seen(140); // seen before that step's read
    expect(t.stepDone(t.stepStarts(), 200, undefined)).toBe(40);
    expect(t.stepDone(t.stepStarts(), 300, undefined)).toBeUndefined();
  });
});
