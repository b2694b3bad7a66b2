/** The drift episode rules, pure: time comes in as arguments, jitter is fixed. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DriftEpisodes, type Holder } from "../src/eni/drift-episodes.js";

const X = "198.51.100.80";
const RIVAL = "eni-0000000000002a001";

function episodes(random = () => 0): DriftEpisodes {
  return new DriftEpisodes({ backoff: { baseMs: 1_000, maxMs: 60_000 }, quietMs: 120_000, random });
}

/** One observation of X at `now`: held by us, or lost with `holder`. Returns the repair time, if any. */
function see(d: DriftEpisodes, now: number, holder: Holder | "ours"): number | undefined {
  if (holder === "ours") {
    d.held(X, now);
    return undefined;
  }
  d.lost(X, now, true);
  d.holder(X, holder, now);
  return d.get(X)?.repairAt;
}

describe("DriftEpisodes", () => {
  it("an address never held is no drift: no episode opens", () => {
    const d = episodes();
    expect(d.lost(X, 0, false)).toBe(false);
    expect(d.size).toBe(0);
  });

  it("an address no ENI holds is repaired at once, first loss or tenth", () => {
    const d = episodes();
    for (let i = 0; i < 10; i++) {
      const now = i * 10_000;
      expect(see(d, now, null)).toBe(now);
      expect(d.heldBack(now).size).toBe(0);
      d.repaired(X, now);
      see(d, now + 100, "ours");
    }
  });

  it("reports the drift once and the conflict once per episode", () => {
    const d = episodes();
    d.lost(X, 0, true);
    expect(d.holder(X, null, 0)?.kind).toBe("drift");
    d.repaired(X, 0);
    d.lost(X, 1_000, true);
    expect(d.holder(X, null, 1_000)).toBeUndefined();
    d.repaired(X, 1_000);
    d.lost(X, 2_000, true);
    expect(d.holder(X, RIVAL, 2_000)).toMatchObject({ kind: "conflict", episode: { rival: RIVAL } });
    d.repaired(X, 3_000);
    d.lost(X, 9_000, true);
    expect(d.holder(X, RIVAL, 9_000)).toBeUndefined();
    expect(d.conflicts()).toBe(1);
  });

  it("against a rival still active, waits from the loss by the backoff of every move seen: 1 s, 4 s, 16 s, 60 s", () => {
    const d = episodes();
    const waits: number[] = [];
    let now = 0;
    for (let round = 0; round < 5; round++) {
      const repairAt = see(d, now, RIVAL) ?? Number.NaN;
      expect(d.heldBack(now).has(X)).toBe(true);
      expect(d.repairDue(X, repairAt - 1)).toBe(false);
      expect(d.repairDue(X, repairAt)).toBe(true);
      waits.push(repairAt - now);
      d.repaired(X, repairAt);
      see(d, repairAt + 50, "ours");
      now = repairAt + 40_000; // the rival takes it back, slowly enough not to look quiet since
    }
    expect(waits).toEqual([1_000, 4_000, 16_000, 60_000, 60_000]);
    expect(d.get(X)).toMatchObject({ repairs: 5, moves: 10 });
  });

  it("a rival that lets go is followed at once, whatever the backoff", () => {
    const d = episodes();
    see(d, 0, RIVAL);
    d.repaired(X, 1_000);
    see(d, 1_100, "ours");
    expect(see(d, 2_000, RIVAL)).toBe(2_000 + 2_000);
    // The next look finds no ENI holding it: due now.
    expect(see(d, 2_500, null)).toBe(2_500);
    expect(d.repairDue(X, 2_500)).toBe(true);
  });

  it("a rival taking an address nobody held is paced from then", () => {
    const d = episodes();
    see(d, 0, RIVAL);
    expect(see(d, 600, null)).toBe(600);
    expect(see(d, 700, RIVAL)).toBe(700 + 1_000);
  });

  it("an unknown holder is paced like a rival but counts no move", () => {
    const d = episodes();
    expect(see(d, 0, undefined)).toBe(1_000);
    expect(d.get(X)).toMatchObject({ moves: 0, rival: undefined });
    expect(d.conflicts()).toBe(0);
  });

  it("ends an episode after the quiet time held, or when the address is no longer configured", () => {
    const d = episodes();
    see(d, 0, RIVAL);
    d.repaired(X, 1_000);
    expect(d.held(X, 1_000)).toBeUndefined();
    expect(d.held(X, 120_999)).toBeUndefined();
    expect(d.held(X, 121_000)).toMatchObject({ kind: "over", reason: "quiet" });
    expect(d.size).toBe(0);
    see(d, 200_000, RIVAL);
    expect(d.keepOnly(new Set())).toMatchObject([{ kind: "over", reason: "not-configured" }]);
    expect(d.size).toBe(0);
  });

  it("a rival gone quiet is corrected within one of its intervals once quiet longer than it: within 5 s for steals every 1 to 4 s", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000, max: 20_000 }),
        fc.integer({ min: 10_000, max: 120_000 }),
        fc.integer({ min: 0, max: 499 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (every, activeMs, phase, jitter) => {
          // A script assigns the address to its ENI every `every` ms up to `activeMs`, then stops. We look every
          // 500 ms (the episode check), repairing when due; a repair lands at once.
          const d = episodes(() => jitter);
          const lastSteal = Math.floor(activeMs / every) * every;
          let ours = true;
          let back: number | undefined;
          for (let now = phase, before = -1; now < activeMs + 120_000; before = now, now += 500) {
            // A steal since the last look (steals at 0, every, 2 every, ... up to lastSteal).
            const stealsUntil = (t: number) => (t < 0 ? -1 : Math.floor(Math.min(t, lastSteal) / every));
            if (stealsUntil(now) > stealsUntil(before)) ours = false;
            if (ours) {
              d.held(X, now);
              continue;
            }
            d.lost(X, now, true);
            d.holder(X, RIVAL, now);
            if (!d.repairDue(X, now)) continue;
            d.repaired(X, now);
            ours = true;
            if (now >= lastSteal) back = now;
          }
          // Quiet for longer than its interval from lastSteal + every: back within 5 s of that, plus one look.
          expect(back).toBeDefined();
          const late = (back ?? 0) - (lastSteal + every);
          // Our looks come every 500 ms: the interval we measure is up to one look longer than the rival's.
          expect(late).toBeLessThanOrEqual(every + 1_500);
          if (every <= 4_000) expect(late).toBeLessThanOrEqual(5_500);
        },
      ),
    );
  });

  it("two sidecars trading an address converge: at most 6 moves in 30 s, whatever the jitter and delays", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { minLength: 64, maxLength: 64 }),
        fc.integer({ min: 0, max: 500 }),
        (jitter, observeDelay) => {
          let j = 0;
          const random = () => jitter[j++ % jitter.length] ?? 0;
          const sides = [episodes(random), episodes(random)];
          // Side 1 has just taken the address from side 0 (move 1); each side sees a loss observeDelay later.
          let holder = 1;
          let moves = 1;
          let now = 0;
          while (now < 30_000) {
            const loser = sides[1 - holder] as DriftEpisodes;
            const seenAt = now + observeDelay;
            loser.lost(X, seenAt, true);
            loser.holder(X, `eni-${holder}`, seenAt);
            const repairAt = loser.get(X)?.repairAt ?? Number.POSITIVE_INFINITY;
            if (repairAt >= 30_000) break;
            loser.repaired(X, repairAt);
            loser.held(X, repairAt);
            holder = 1 - holder;
            moves += 1;
            now = repairAt;
          }
          expect(moves).toBeLessThanOrEqual(6);
        },
      ),
    );
  });
});
