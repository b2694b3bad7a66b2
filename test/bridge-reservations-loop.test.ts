/**
 * The reservations loop on a manual clock, with a keeper and a wave view standing in for the real ones: when
 * it passes, when it prunes (never on a stale view or an unreadable NAD), what it says, and that the Lease
 * runs beside it. The keeper's own work against the simulator: test/bridge-reservations.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { SubnetView } from "../src/ipam-whereabouts-bridge/reservations/reservation-cover.js";
import type { ReservationStatus } from "../src/ipam-whereabouts-bridge/reservations/reservation-keeper.js";
import {
  FIRST_WAVE_POLL_MS,
  type HolderSweep,
  type Keeper,
  ReservationsLoop,
  type WaveView,
} from "../src/ipam-whereabouts-bridge/reservations/reservations-loop.js";
import type { WhereaboutsRange } from "../src/ipam-whereabouts-bridge/state/whereabouts-ranges.js";
import { captureLogger } from "./helpers/loggers.js";
import { flush, ManualClock } from "./helpers/manual-clock.js";

const INTERVAL_MS = 60_000;

const range: WhereaboutsRange = {
  nad: "default/multus-a",
  family: 4,
  cidr: "192.0.2.0/26",
  first: "192.0.2.1",
  last: "192.0.2.62",
  exclude: [],
  networkName: "",
  slicePrefix: undefined,
};
const subnet: SubnetView = { subnetId: "subnet-0a", cidrs: ["192.0.2.0/24"] };
const status: ReservationStatus = { leader: true, missing: [], created: [], problems: [] };

class FakeKeeper implements Keeper {
  readonly calls: string[] = [];
  passError: Error | undefined;
  leaseSignal: AbortSignal | undefined;
  readonly lease = {
    run: (signal: AbortSignal): Promise<void> => {
      this.leaseSignal = signal;
      return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    },
  };

  async pass(
    ranges: readonly WhereaboutsRange[],
    subnets: readonly SubnetView[],
  ): Promise<ReservationStatus> {
    this.calls.push(
      `pass ${ranges.map((r) => r.cidr).join(",")} in ${subnets.map((s) => s.subnetId).join(",")}`,
    );
    if (this.passError !== undefined) throw this.passError;
    return status;
  }

  async prune(
    ranges: readonly WhereaboutsRange[],
    subnets: readonly SubnetView[],
    carried: readonly string[] = [],
  ): Promise<string[]> {
    this.calls.push(
      `prune ${ranges.map((r) => r.cidr).join(",")} in ${subnets.map((s) => s.subnetId).join(",")}` +
        (carried.length === 0 ? "" : ` carrying ${carried.join(",")}`),
    );
    return [];
  }

  lines(): string[] {
    return ["reservation missing: 192.0.2.0/26 in subnet-0a"];
  }
}

class Waves implements WaveView {
  lastDesired: { ranges: WhereaboutsRange[]; unreadableNads: string[]; carried: string[] } | undefined;
  lastSubnets: readonly SubnetView[] = [subnet];
  synced = false;
  trusted = true;

  /** A wave has run over every watch's list. */
  waved(unreadableNads: string[] = [], carried: string[] = []): void {
    this.lastDesired = { ranges: [range], unreadableNads, carried };
    this.synced = true;
  }
}

/** A loop started on a manual clock; `before` sets the wave view and keeper up before its first look. */
function started(
  before: (waves: Waves, keeper: FakeKeeper) => void = () => undefined,
  intervalMs = INTERVAL_MS,
  orphans?: HolderSweep,
) {
  const clock = new ManualClock();
  const { logger, lines } = captureLogger();
  const keeper = new FakeKeeper();
  const waves = new Waves();
  before(waves, keeper);
  const stop = new AbortController();
  const loop = new ReservationsLoop(keeper, waves, {
    intervalMs,
    clock,
    logger,
    ...(orphans === undefined ? {} : { orphans }),
  });
  let ended = false;
  const running = loop.run(stop.signal).then(() => {
    ended = true;
  });
  const said = (msg: string) => lines.filter((l) => l.msg === msg);
  return { clock, keeper, waves, stop, loop, running, said, ended: () => ended };
}

const PASS = "pass 192.0.2.0/26 in subnet-0a";
const PRUNE = "prune 192.0.2.0/26 in subnet-0a";
const KEPT = "reservations are kept, none is deleted, until every NAD reads and the view is trusted";

describe("ReservationsLoop", () => {
  it("makes no pass before the first wave, and looks again after FIRST_WAVE_POLL_MS rather than the interval", async () => {
    const { clock, keeper, stop, running } = started();
    await flush();
    expect(keeper.calls).toEqual([]);
    expect(clock.sleeps).toEqual([FIRST_WAVE_POLL_MS]);
    await clock.advance(FIRST_WAVE_POLL_MS);
    expect(clock.sleeps).toEqual([FIRST_WAVE_POLL_MS, FIRST_WAVE_POLL_MS]);
    stop.abort();
    await running;
  });

  it("sleeps the interval itself before the first wave when the interval is the shorter", async () => {
    const { clock, stop, running } = started(undefined, 250);
    await flush();
    expect(clock.sleeps).toEqual([250]);
    stop.abort();
    await running;
  });

  it("makes no pass while a wave has run but a watch has not listed yet, and waits the whole interval", async () => {
    const { clock, keeper, waves, stop, running } = started();
    await flush();
    waves.waved();
    waves.synced = false;
    await clock.advance(FIRST_WAVE_POLL_MS);
    expect(keeper.calls).toEqual([]);
    expect(clock.sleeps.at(-1)).toBe(INTERVAL_MS);
    stop.abort();
    await running;
  });

  it("passes then prunes, once per interval, with the last wave's ranges and subnets", async () => {
    const { clock, keeper, stop, running } = started((waves) => waves.waved());
    await flush();
    expect(keeper.calls).toEqual([PASS, PRUNE]);
    await clock.advance(INTERVAL_MS - 1);
    expect(keeper.calls).toEqual([PASS, PRUNE]);
    await clock.advance(1);
    expect(keeper.calls).toEqual([PASS, PRUNE, PASS, PRUNE]);
    stop.abort();
    await running;
  });

  it("gives the prune the addresses pods carry, which it deletes no reservation over", async () => {
    const { keeper, stop, running } = started((waves) => waves.waved([], ["192.0.2.5", "192.0.2.9"]));
    await flush();
    expect(keeper.calls).toEqual([PASS, `${PRUNE} carrying 192.0.2.5,192.0.2.9`]);
    stop.abort();
    await running;
  });

  it("prunes nothing while the view of the cluster is stale, says why once, and prunes once it is trusted", async () => {
    const { clock, keeper, waves, stop, running, said } = started((waves) => {
      waves.waved();
      waves.trusted = false;
    });
    await flush();
    await clock.advance(INTERVAL_MS);
    expect(keeper.calls).toEqual([PASS, PASS]);
    expect(said(KEPT).map((l) => l.reason)).toEqual(["the view of the cluster is stale"]);
    waves.trusted = true;
    await clock.advance(INTERVAL_MS);
    expect(keeper.calls).toEqual([PASS, PASS, PASS, PRUNE]);
    expect(said(KEPT)).toHaveLength(1);
    stop.abort();
    await running;
  });

  it("prunes nothing while a NAD cannot be read, and says so again when the reason changes", async () => {
    const { clock, keeper, waves, stop, running, said } = started((waves) =>
      waves.waved(["default/multus-b"]),
    );
    await flush();
    waves.trusted = false;
    await clock.advance(INTERVAL_MS);
    expect(keeper.calls).toEqual([PASS, PASS]);
    expect(said(KEPT).map((l) => l.reason)).toEqual([
      "NAD default/multus-b cannot be read",
      "the view of the cluster is stale; NAD default/multus-b cannot be read",
    ]);
    stop.abort();
    await running;
  });

  it("says a failed pass once however often it fails, prunes nothing then, and says when it works again", async () => {
    const { clock, keeper, stop, running, said } = started((waves, keeper) => {
      keeper.passError = new Error("EC2 refused: UnauthorizedOperation");
      waves.waved();
    });
    await flush();
    await clock.advance(INTERVAL_MS);
    expect(keeper.calls).toEqual([PASS, PASS]);
    expect(said("the reservations pass failed; it runs again after the interval")).toHaveLength(1);
    keeper.passError = undefined;
    await clock.advance(INTERVAL_MS);
    expect(keeper.calls).toEqual([PASS, PASS, PASS, PRUNE]);
    expect(said("the reservations pass works again")).toHaveLength(1);
    stop.abort();
    await running;
  });

  it("renews the Lease beside the passes on the same signal, and ends with it", async () => {
    const { keeper, stop, running, ended } = started();
    await flush();
    expect(keeper.leaseSignal).toBe(stop.signal);
    expect(ended()).toBe(false);
    stop.abort();
    await running;
    expect(ended()).toBe(true);
  });

  it("gives the keeper's /readyz lines", () => {
    const { loop, stop } = started();
    stop.abort();
    expect(loop.lines()).toEqual(["reservation missing: 192.0.2.0/26 in subnet-0a"]);
  });

  it("runs the orphan sweep after every pass, failed ones too, with the clock's time", async () => {
    const swept: number[] = [];
    let keeper: FakeKeeper | undefined;
    const orphans: HolderSweep = {
      sweep: async (now) => {
        swept.push(now);
        keeper?.calls.push("sweep");
      },
    };
    const t = started(
      (waves, k) => {
        keeper = k;
        waves.waved();
      },
      INTERVAL_MS,
      orphans,
    );
    await flush();
    expect(t.keeper.calls).toEqual([PASS, PRUNE, "sweep"]);
    t.keeper.passError = new Error("EC2 refused: UnauthorizedOperation");
    await t.clock.advance(INTERVAL_MS);
    expect(t.keeper.calls).toEqual([PASS, PRUNE, "sweep", PASS, "sweep"]);
    expect(swept.map((at) => at - (swept[0] ?? 0))).toEqual([0, INTERVAL_MS]);
    t.stop.abort();
    await t.running;
  });

  it("says a failed orphan sweep once, keeps passing, and says when it works again", async () => {
    let failure: Error | undefined = new Error("EC2 refused: RequestLimitExceeded");
    const orphans: HolderSweep = {
      sweep: async () => {
        if (failure !== undefined) throw failure;
      },
    };
    const t = started((waves) => waves.waved(), INTERVAL_MS, orphans);
    await flush();
    await t.clock.advance(INTERVAL_MS);
    expect(t.keeper.calls).toEqual([PASS, PRUNE, PASS, PRUNE]);
    expect(t.said("the orphan sweep failed; it runs again after the interval")).toHaveLength(1);
    failure = undefined;
    await t.clock.advance(INTERVAL_MS);
    expect(t.said("the orphan sweep works again")).toHaveLength(1);
    t.stop.abort();
    await t.running;
  });
});
