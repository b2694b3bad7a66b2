import { describe, expect, it } from "vitest";
import { type Clock, systemClock } from "../src/eni/process/clock.js";
import { createLogger } from "../src/eni/process/logger.js";
import type { KubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import type { DesiredState, Release } from "../src/ipam-whereabouts-bridge/state/desired-state.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { PodEventReporter } from "../src/ipam-whereabouts-bridge/telemetry/pod-events.js";
import { ReleaseGuard } from "../src/ipam-whereabouts-bridge/waves/release-guard.js";
import { captureLogger } from "./helpers/loggers.js";
import { ManualClock } from "./helpers/manual-clock.js";

const release = (address: string): Release => ({
  eniId: "eni-0multus",
  address,
  family: 4,
  reason: "unused",
});

/** Only the fields the guard reads. */
const reading = (releases: Release[], unreadablePods: string[] = []): DesiredState =>
  ({ releases, unreadablePods, problems: [] }) as unknown as DesiredState;

function guard(clock: Clock = systemClock): { guard: ReleaseGuard; metrics: BridgeMetrics } {
  const metrics = new BridgeMetrics();
  const logger = createLogger("silent");
  const kube = { createEvent: async () => undefined } as unknown as KubeApi;
  const events = new PodEventReporter(kube, { now: () => 0, sleep: async () => undefined }, logger, metrics, {
    repeatIntervalMs: 1_000,
    perSecond: 10,
    burst: 10,
  });
  return { guard: new ReleaseGuard({ clock, logger, metrics, events }), metrics };
}

const never = () => false;

describe("ReleaseGuard", () => {
  it("releases only what the fresh reading agrees on, and names what it finds in use", async () => {
    const { guard: g } = guard();
    const result = await g.confirm(
      [release("198.51.100.199"), release("198.51.100.200")],
      async () => reading([release("198.51.100.199")]),
      never,
    );
    expect(result?.confirmed.map((r) => r.address)).toEqual(["198.51.100.199"]);
    expect(result?.inUse).toEqual(["eni-0multus 198.51.100.200"]);
  });

  it("holds every release when the fresh reading fails or cannot read a live pod", async () => {
    const { guard: g } = guard();
    const failing = async (): Promise<DesiredState> => {
      throw new Error("connect ECONNREFUSED");
    };
    expect(await g.confirm([release("198.51.100.199")], failing, never)).toBeUndefined();
    expect(
      await g.confirm(
        [release("198.51.100.199")],
        async () => reading([release("198.51.100.199")], ["cnf/a"]),
        never,
      ),
    ).toBeUndefined();
  });

  it("lets an abort through", async () => {
    const { guard: g } = guard();
    const aborted = new Error("aborted");
    await expect(
      g.confirm(
        [release("198.51.100.199")],
        async () => {
          throw aborted;
        },
        (error) => error === aborted,
      ),
    ).rejects.toBe(aborted);
  });

  it("says when the view comes back, and shows a stale view's reasons and the holds on /readyz and the metrics", async () => {
    const { guard: g, metrics } = guard();
    expect(g.noteTrust({ trusted: true, reasons: [] }, false, 0)).toBe(true);
    expect(g.noteTrust({ trusted: true, reasons: [] }, false, 1_000)).toBe(false);
    const stale = { trusted: false, reasons: ["the pods watch fails: refused"] };
    expect(g.noteTrust(stale, true, 2_000)).toBe(false);
    g.hold(new Set(["stale-view"] as const));
    expect(g.lines(stale)).toEqual([
      "the view of the cluster is stale; releases are held:",
      "  the pods watch fails: refused",
    ]);
    const text = await metrics.text();
    expect(text).toContain("multus_ipmgr_bridge_view_trusted 0");
    expect(text).toContain('multus_ipmgr_bridge_releases_held{reason="stale-view"} 1');
    expect(g.noteTrust({ trusted: true, reasons: [] }, false, 3_000)).toBe(true);
  });

  it("moves releases_held{reason=stale-view} with view_trusted at once, not at the next wave", async () => {
    const { guard: g, metrics } = guard();
    g.noteTrust({ trusted: true, reasons: [] }, false, 0);
    g.hold(new Set(["unreadable-pod"] as const));
    const lines = async () =>
      (await metrics.text())
        .split("\n")
        .filter((l) => /^multus_ipmgr_bridge_(view_trusted|releases_held)/.test(l));
    g.noteTrust({ trusted: false, reasons: ["the pods watch fails: refused"] }, true, 1_000);
    expect(await lines()).toEqual(
      expect.arrayContaining([
        "multus_ipmgr_bridge_view_trusted 0",
        'multus_ipmgr_bridge_releases_held{reason="stale-view"} 1',
        'multus_ipmgr_bridge_releases_held{reason="unreadable-pod"} 1',
      ]),
    );
    g.noteTrust({ trusted: true, reasons: [] }, false, 2_000);
    expect(await lines()).toEqual(
      expect.arrayContaining([
        "multus_ipmgr_bridge_view_trusted 1",
        'multus_ipmgr_bridge_releases_held{reason="stale-view"} 0',
        'multus_ipmgr_bridge_releases_held{reason="unreadable-pod"} 1',
      ]),
    );
  });

  it("keeps the stale-view hold with the trust when a wave that began on a stale view reports its holds after the view came back", async () => {
    const { guard: g, metrics } = guard();
    g.noteTrust({ trusted: false, reasons: ["the pods watch fails: refused"] }, true, 0);
    g.noteTrust({ trusted: true, reasons: [] }, false, 1_000);
    g.hold(new Set(["stale-view"] as const));
    expect(await metrics.text()).toContain('multus_ipmgr_bridge_releases_held{reason="stale-view"} 0');
    g.noteTrust({ trusted: false, reasons: ["the pods watch fails: refused"] }, true, 2_000);
    g.hold(new Set());
    expect(await metrics.text()).toContain('multus_ipmgr_bridge_releases_held{reason="stale-view"} 1');
  });

  it("logs a stale view and its return once each, with counts: a minute of an API flapping every 2 s in four lines", () => {
    const { logger, lines } = captureLogger();
    const metrics = new BridgeMetrics();
    const events = new PodEventReporter(
      { createEvent: async () => undefined } as unknown as KubeApi,
      { now: () => 0, sleep: async () => undefined },
      logger,
      metrics,
      { repeatIntervalMs: 1_000, perSecond: 10, burst: 10 },
    );
    const g = new ReleaseGuard({ clock: systemClock, logger, metrics, events });
    g.noteTrust({ trusted: true, reasons: [] }, false, 0);
    for (let t = 1_000; t <= 61_000; t += 1_000) {
      const up = t % 2_000 === 0;
      // The reasons change at each note, as a silence counts up and other watches fail.
      g.noteTrust(
        up ? { trusted: true, reasons: [] } : { trusted: false, reasons: [`the pods watch fails (${t})`] },
        !up,
        t,
      );
    }
    g.noteTrust({ trusted: true, reasons: [] }, false, 62_000);
    expect(lines.map((l) => l.msg)).toEqual([
      "the view of the cluster is stale: releases are held until every watch is back and heard from, and each release's grace restarts then",
      "the view of the cluster is trusted again after 1 s stale; release graces restart now",
      "the view of the cluster is stale: releases are held until every watch is back and heard from, and each release's grace restarts then (before: it went stale 29 times in the last 58 s (29 s in all), not logged one by one)",
      "the view of the cluster is trusted again after 1 s stale; release graces restart now",
    ]);
    expect(lines[2]).toMatchObject({
      staleTimes: 29,
      staleMs: 29_000,
      reasons: ["the pods watch fails (61000)"],
    });
  });

  describe("confirmBeside", () => {
    /** A fresh reading the test answers when it wants. */
    function pendingReading(): {
      read: () => Promise<DesiredState>;
      answer(d: DesiredState): void;
      calls: number;
    } {
      const state: { calls: number; answer: (d: DesiredState) => void } = {
        calls: 0,
        answer: () => {
          throw new Error("no list is running");
        },
      };
      return {
        read: () => {
          state.calls += 1;
          return new Promise<DesiredState>((resolve) => {
            state.answer = resolve;
          });
        },
        answer: (d) => state.answer(d),
        get calls() {
          return state.calls;
        },
      };
    }
    const due = [release("198.51.100.199"), release("198.51.100.200")];

    it("releases nothing until its list settles, starts one list at a time, then uses the answer once", async () => {
      const clock = new ManualClock();
      const { guard: g } = guard(clock);
      const r = pendingReading();
      let settled = 0;
      const options = { freshReading: r.read, isAbort: never, maxAgeMs: 10_000, settled: () => settled++ };
      expect(g.confirmBeside(due, clock.now(), options)).toEqual({
        confirmed: [],
        inUse: [],
        failed: false,
        waiting: true,
      });
      expect(g.confirmBeside(due, clock.now(), options)).toEqual({
        confirmed: [],
        inUse: [],
        failed: false,
        waiting: true,
      });
      expect(r.calls).toBe(1);
      expect(g.lines({ trusted: true, reasons: [] })).toEqual([
        "2 due releases wait for a fresh list that confirms them",
      ]);
      r.answer(reading([release("198.51.100.199")]));
      await g.idle();
      expect(settled).toBe(1);
      const turn = g.confirmBeside(due, clock.now(), options);
      expect(turn.confirmed.map((x) => x.address)).toEqual(["198.51.100.199"]);
      expect(turn.inUse).toEqual(["eni-0multus 198.51.100.200"]);
      // Used once: the next wave starts a new list.
      expect(g.confirmBeside(due, clock.now(), options).confirmed).toEqual([]);
      expect(r.calls).toBe(2);
    });

    it("drops an answer older than maxAgeMs and lists again; a failed list holds the releases once", async () => {
      const clock = new ManualClock();
      const { guard: g } = guard(clock);
      const r = pendingReading();
      let settled = 0;
      const options = { freshReading: r.read, isAbort: never, maxAgeMs: 1_000, settled: () => settled++ };
      g.confirmBeside(due, clock.now(), options);
      r.answer(reading(due));
      await g.idle();
      await clock.advance(1_001);
      expect(g.confirmBeside(due, clock.now(), options).confirmed).toEqual([]);
      expect(r.calls).toBe(2);
      r.answer(reading(due, ["cnf/unreadable"]));
      await g.idle();
      expect(settled).toBe(2);
      expect(g.confirmBeside(due, clock.now(), options)).toEqual({
        confirmed: [],
        inUse: [],
        failed: true,
        waiting: false,
      });
      g.hold(new Set(["unconfirmed"] as const));
      expect(g.lines({ trusted: true, reasons: [] })).toEqual([
        "releases are held: the fresh list that confirms them failed (a live pod's network-status cannot be read); tried again shortly",
      ]);
      // The next list: still failing while it runs, no longer once it succeeds.
      expect(g.confirmBeside(due, clock.now(), options)).toEqual({
        confirmed: [],
        inUse: [],
        failed: true,
        waiting: true,
      });
      r.answer(reading(due));
      await g.idle();
      expect(g.confirmBeside(due, clock.now(), options).failed).toBe(false);
    });
  });
});
