import { describe, expect, it } from "vitest";
import { ReconcileFailures } from "../src/sidecar/reconcile-failures.js";

const X = "198.51.100.80";
const Y = "198.51.100.81";

describe("ReconcileFailures", () => {
  it("logs the first failure of an error, not its repeats, and counts them", () => {
    const f = new ReconcileFailures();
    expect(f.failed("Unassign:UnauthorizedOperation", "denied", [X])).toEqual({ log: true, count: 1 });
    expect(f.failed("Unassign:UnauthorizedOperation", "denied", [X])).toEqual({ log: false, count: 2 });
    expect(f.open).toEqual({ description: "denied", count: 2 });
  });

  it("logs a different error, carrying the previous one's count", () => {
    const f = new ReconcileFailures();
    f.failed("a", "first", [X]);
    f.failed("a", "first", [X]);
    expect(f.failed("b", "second", [X])).toEqual({
      log: true,
      count: 1,
      previous: { description: "first", count: 2 },
    });
  });

  it("stays open through steps that work while what failed is still outstanding (a release on its backoff)", () => {
    const f = new ReconcileFailures();
    f.failed("a", "denied", [X]);
    expect(f.succeeded(() => true)).toBeUndefined();
    expect(f.failed("a", "denied", [X])).toEqual({ log: false, count: 2 });
    expect(f.succeeded(() => true)).toBeUndefined();
    expect(f.succeeded(() => false)).toEqual({ description: "denied", count: 2 });
    expect(f.open).toBeUndefined();
    expect(f.succeeded(() => false)).toBeUndefined();
  });

  it("is over only when every failed address is done", () => {
    const f = new ReconcileFailures();
    f.failed("a", "denied", [X, Y]);
    expect(f.succeeded((address) => address === Y)).toBeUndefined();
    expect(f.succeeded(() => false)).toEqual({ description: "denied", count: 1 });
  });

  it("is over at the next step that works when the failure named no address (the step ended before any action)", () => {
    const f = new ReconcileFailures();
    f.failed("imds", "IMDS down", []);
    expect(f.succeeded(() => true)).toEqual({ description: "IMDS down", count: 1 });
  });
});
