/**
 * The loop schedule both long-running loops share (src/eni/loop-schedule.ts): failures in a row, the retry's
 * time on a capped exponential backoff, the failure that stays open until what failed is done, and the
 * sleep a change cuts short. No I/O: a fake clock and a fixed jitter.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BackoffPolicy } from "../src/eni/backoff.js";
import { describeError, LoopSchedule } from "../src/eni/loop-schedule.js";
import type { Clock } from "../src/eni/process/clock.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { flush, ManualClock } from "./helpers/manual-clock.js";

const X = "198.51.100.80";
const Y = "198.51.100.81";
const BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 5_000 };

function schedule(random = (): number => 0, clock: Clock = new FakeClock()): LoopSchedule {
  return new LoopSchedule({ clock, backoff: BACKOFF, random });
}

describe("LoopSchedule: failures in a row and the retry's time", () => {
  it.each([
    { failures: 1, retryInMs: 1_000 },
    { failures: 2, retryInMs: 2_000 },
    { failures: 3, retryInMs: 4_000 },
    { failures: 4, retryInMs: 5_000 },
    { failures: 9, retryInMs: 5_000 },
  ])(
    "after $failures failures in a row the next try is $retryInMs ms away (no jitter)",
    ({ failures, retryInMs }) => {
      const clock = new FakeClock();
      const s = schedule(() => 0, clock);
      let last = s.failed("k", "d");
      for (let i = 1; i < failures; i++) last = s.failed("k", "d");
      expect(last).toMatchObject({ failures, retryInMs });
      expect(s.failures).toBe(failures);
      expect(s.retryAt).toBe(clock.now() + retryInMs);
    },
  );

  it("adds up to a quarter of jitter, never less than the nominal delay", () => {
    expect(schedule(() => 0.999_999).failed("k", "d").retryInMs).toBe(1_250);
  });

  it("a step that works resets the count and the retry, whatever the open failure", () => {
    const s = schedule();
    s.failed("k", "d", [X]);
    s.failed("k", "d", [X]);
    s.succeeded(() => true);
    expect(s.failures).toBe(0);
    expect(s.retryAt).toBeUndefined();
    expect(s.open).toEqual({ description: "d", count: 2 });
    expect(s.failed("k", "d").failures).toBe(1);
  });

  it.each([
    { before: 0, retryInMs: 1_000 },
    { before: 1, retryInMs: 1_000 },
    { before: 3, retryInMs: 4_000 },
  ])(
    "retryLater after $before failures waits $retryInMs ms and counts nothing (a bug in the loop)",
    ({ before, retryInMs }) => {
      const clock = new FakeClock();
      const s = schedule(() => 0, clock);
      for (let i = 0; i < before; i++) s.failed("k", "d");
      s.retryLater();
      expect(s.failures).toBe(before);
      expect(s.retryAt).toBe(clock.now() + retryInMs);
      expect(s.open === undefined).toBe(before === 0);
    },
  );

  it("keeps every retry within the backoff's bounds, and counts the failures since the last step that worked", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            ok: fc.boolean(),
            key: fc.constantFrom("a", "b"),
            jitter: fc.double({ min: 0, max: 0.999, noNaN: true }),
          }),
        ),
        (steps) => {
          const clock = new FakeClock();
          let jitter = 0;
          const s = new LoopSchedule({ clock, backoff: BACKOFF, random: () => jitter });
          let inARow = 0;
          for (const step of steps) {
            jitter = step.jitter;
            if (step.ok) {
              s.succeeded();
              inARow = 0;
              expect(s.retryAt).toBeUndefined();
              expect(s.open).toBeUndefined();
              continue;
            }
            inARow += 1;
            const { failures, retryInMs } = s.failed(step.key, step.key);
            expect(failures).toBe(inARow);
            expect(retryInMs).toBeGreaterThanOrEqual(BACKOFF.baseMs);
            expect(retryInMs).toBeLessThanOrEqual(1.25 * BACKOFF.maxMs);
            expect(s.retryAt).toBe(clock.now() + retryInMs);
            expect(s.open?.description).toBe(step.key);
          }
        },
      ),
    );
  });
});

describe("LoopSchedule: the open failure, said once per distinct error", () => {
  it("says the first failure of an error, not its repeats, and counts them", () => {
    const s = schedule();
    expect(s.failed("Unassign:UnauthorizedOperation", "denied", [X])).toMatchObject({ log: true, count: 1 });
    expect(s.failed("Unassign:UnauthorizedOperation", "denied", [X])).toMatchObject({ log: false, count: 2 });
    expect(s.open).toEqual({ description: "denied", count: 2 });
  });

  it("says a different error, carrying the previous one's count", () => {
    const s = schedule();
    s.failed("a", "first", [X]);
    s.failed("a", "first", [X]);
    expect(s.failed("b", "second", [X])).toEqual({
      log: true,
      count: 1,
      failures: 3,
      retryInMs: 4_000,
      previous: { description: "first", count: 2 },
    });
  });

  it("stays open through steps that work while what failed is still outstanding (a release on its backoff)", () => {
    const s = schedule();
    s.failed("a", "denied", [X]);
    expect(s.succeeded(() => true)).toBeUndefined();
    expect(s.failed("a", "denied", [X])).toMatchObject({ log: false, count: 2 });
    expect(s.succeeded(() => true)).toBeUndefined();
    expect(s.succeeded(() => false)).toEqual({ description: "denied", count: 2 });
    expect(s.open).toBeUndefined();
    expect(s.succeeded(() => false)).toBeUndefined();
  });

  it("is over only when every failed address is done", () => {
    const s = schedule();
    s.failed("a", "denied", [X, Y]);
    expect(s.succeeded((address) => address === Y)).toBeUndefined();
    expect(s.succeeded(() => false)).toEqual({ description: "denied", count: 1 });
  });

  it.each([
    { case: "the step ended before any action", addresses: [] as string[] },
    { case: "the loop retries whole (the bridge's waves)", addresses: undefined },
  ])("is over at the next step that works when the failure named no address: $case", ({ addresses }) => {
    const s = schedule();
    s.failed("imds", "IMDS down", addresses);
    expect(s.succeeded(() => true)).toEqual({ description: "IMDS down", count: 1 });
  });

  it.each([
    { error: new RangeError("out of range"), description: "RangeError: out of range" },
    { error: "a string", description: "a string" },
  ])("describes $description by its first sentence", ({ error, description }) => {
    expect(describeError(error)).toBe(description);
  });
});

describe("LoopSchedule: sleeping until a due time", () => {
  it("a change cuts short a wakeable sleep", async () => {
    const clock = new ManualClock();
    const s = schedule(() => 0, clock);
    let woke = false;
    const sleeping = s.sleepUntil(clock.now() + 60_000, new AbortController().signal).then(() => {
      woke = true;
    });
    await flush();
    expect(woke).toBe(false);
    s.wake();
    await sleeping;
    expect(woke).toBe(true);
  });

  it("a change does not cut short a sleep that is not wakeable (a backoff); the due time ends it", async () => {
    const clock = new ManualClock();
    const s = schedule(() => 0, clock);
    let woke = false;
    const sleeping = s.sleepUntil(clock.now() + 5_000, new AbortController().signal, false).then(() => {
      woke = true;
    });
    s.wake();
    await flush();
    expect(woke).toBe(false);
    await clock.advance(5_000);
    await sleeping;
    expect(woke).toBe(true);
  });

  it("a wake with no sleep in progress is not kept for the next sleep", async () => {
    const clock = new ManualClock();
    const s = schedule(() => 0, clock);
    s.wake();
    let woke = false;
    const sleeping = s.sleepUntil(clock.now() + 1_000, new AbortController().signal).then(() => {
      woke = true;
    });
    await flush();
    expect(woke).toBe(false);
    await clock.advance(1_000);
    await sleeping;
    expect(woke).toBe(true);
  });

  it("rejects with the signal's reason when the loop is stopped", async () => {
    const clock = new ManualClock();
    const s = schedule(() => 0, clock);
    const stop = new AbortController();
    const sleeping = s.sleepUntil(clock.now() + 60_000, stop.signal);
    await flush();
    stop.abort(new Error("stopping"));
    await expect(sleeping).rejects.toThrow("stopping");
  });

  it("a due time already passed sleeps 0 ms", async () => {
    const clock = new FakeClock();
    const s = schedule(() => 0, clock);
    await s.sleepUntil(clock.now() - 500, new AbortController().signal);
    expect(clock.sleeps).toEqual([0]);
  });
});
