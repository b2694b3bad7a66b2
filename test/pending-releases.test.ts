import { describe, expect, it } from "vitest";
import { PendingReleases } from "../src/sidecar/pending-releases.js";

const X = "198.51.100.80";
const Y = "2001:db8:100:1::180";

/** Settle 250 ms; retries 1 s doubling to 4 s, no jitter. */
function releases(): PendingReleases {
  return new PendingReleases({
    settleMs: 250,
    retryBackoff: { baseMs: 1_000, maxMs: 4_000 },
    random: () => 0,
  });
}

const token = (...addresses: string[]) => new Map(addresses.map((a, i) => [a, i + 1]));
const none = new Set<string>();

describe("PendingReleases", () => {
  it("makes an address due once it stayed off for the settle time, and says when", () => {
    const r = releases();
    expect(r.due(token(X), none, 1_000)).toEqual([]);
    expect(r.nextDueAt).toBe(1_250);
    expect(r.due(token(X), none, 1_249)).toEqual([]);
    expect(r.due(token(X), none, 1_250)).toEqual([X]);
    expect(r.nextDueAt).toBeUndefined();
  });

  it("lets the watcher forget a release done, keeps one not yet due", () => {
    const r = releases();
    r.due(token(X), none, 0);
    const both = token(X, Y);
    const due = r.due(both, none, 250);
    expect(due).toEqual([X]);
    expect([...r.acted(both, due, [], 250).keys()]).toEqual([X]);
    expect(r.due(token(Y), none, 499)).toEqual([]);
    expect(r.due(token(Y), none, 500)).toEqual([Y]);
  });

  it("forgets an address that came back to our interfaces, and starts its settle time again if it goes again", () => {
    const r = releases();
    r.due(token(X), none, 0);
    expect(r.due(token(X), new Set([X]), 100)).toEqual([]);
    expect([...r.acted(token(X), [], [], 100).keys()]).toEqual([X]);
    expect(r.due(token(X), none, 300)).toEqual([]);
    expect(r.nextDueAt).toBe(550);
  });

  it("keeps a release EC2 refused and makes it due again after a backoff that doubles, counting the refusals", () => {
    const r = releases();
    r.due(token(X), none, 0);
    expect(r.due(token(X), none, 250)).toEqual([X]);
    expect(r.acted(token(X), [X], [X], 300).size).toBe(0);
    expect(r.refusals(X)).toBe(1);
    expect(r.nextDueAt).toBe(1_300);
    expect(r.due(token(X), none, 1_299)).toEqual([]);
    expect(r.due(token(X), none, 1_300)).toEqual([X]);
    r.acted(token(X), [X], [X], 1_300);
    expect(r.refusals(X)).toBe(2);
    expect(r.due(token(X), none, 3_299)).toEqual([]);
    expect(r.due(token(X), none, 3_300)).toEqual([X]);
  });

  it("lets a refused release go once a try is not refused (released, or our ENI shown without it)", () => {
    const r = releases();
    r.due(token(X), none, 0);
    r.acted(token(X), r.due(token(X), none, 250), [X], 250);
    const due = r.due(token(X), none, 1_250);
    expect([...r.acted(token(X), due, [], 1_250).keys()]).toEqual([X]);
    expect(r.refusals(X)).toBe(0);
    expect(r.due(token(), none, 1_300)).toEqual([]);
    expect(r.nextDueAt).toBeUndefined();
  });

  it("matches a refused address whatever its spelling", () => {
    const r = releases();
    const spelled = "2001:DB8:100:1:0:0:0:180";
    r.due(token(spelled), none, 0);
    r.acted(token(spelled), r.due(token(spelled), none, 250), [Y], 250);
    expect(r.refusals(Y)).toBe(1);
    expect(r.due(token(spelled), none, 251)).toEqual([]);
  });
});
