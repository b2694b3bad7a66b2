/**
 * BridgeLifecycle on a manual clock, with a wave loop, a reservations loop, an Event reporter and a
 * Kubernetes client standing in for the real ones: the probes it serves (on loopback), the one signal that
 * stops both loops, the shutdown grace counted on the injected clock, the bounded wait for Events, and the
 * clean-up after a failure. The real parts together, in the built binary: test/bridge-e2e.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ProbeResult } from "../src/eni/process/probe-server.js";
import { BridgeLifecycle, EVENTS_FLUSH_WAIT_MS } from "../src/ipam-whereabouts-bridge/bridge-lifecycle.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { captureLogger } from "./helpers/loggers.js";
import { flush, ManualClock } from "./helpers/manual-clock.js";

/** How a stand-in loop answers the stop signal. */
type OnStop = "stops" | "ignores-until-inflight-aborted" | "fails";

class FakeLoop {
  signal: AbortSignal | undefined;
  started = 0;
  finished = false;

  constructor(
    private readonly onStop: OnStop,
    private readonly inflight: AbortSignal,
  ) {}

  async start(): Promise<void> {
    this.started += 1;
  }

  run(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    return new Promise<void>((resolve, reject) => {
      const until = this.onStop === "ignores-until-inflight-aborted" ? this.inflight : signal;
      until.addEventListener(
        "abort",
        () => {
          this.finished = true;
          if (this.onStop === "fails") reject(new Error("the wave loop broke while stopping"));
          else resolve();
        },
        { once: true },
      );
    });
  }

  health(): ProbeResult {
    return { ok: true, lines: ["the wave loop runs"] };
  }

  readiness(extra: readonly string[] = []): ProbeResult {
    return { ok: true, lines: ["1 of 1 pod addresses held by their ENI; 0 releases pending", ...extra] };
  }

  lines(): string[] {
    return ["reservation missing: 192.0.2.0/26 in subnet-0a"];
  }
}

const open: BridgeLifecycle[] = [];
afterEach(async () => {
  for (const lifecycle of open.splice(0)) await lifecycle.close();
});

function lifecycle(
  options: {
    waves?: OnStop;
    reservations?: OnStop | "off";
    eventsHang?: boolean;
    http?: boolean;
    cni?: { start: () => Promise<void>; stop: () => Promise<void> };
  } = {},
) {
  const clock = new ManualClock();
  const { logger, lines } = captureLogger();
  const inflight = new AbortController();
  const waves = new FakeLoop(options.waves ?? "stops", inflight.signal);
  const reservations =
    options.reservations === "off"
      ? undefined
      : new FakeLoop(options.reservations ?? "stops", inflight.signal);
  const kube = {
    closed: 0,
    close: async () => {
      kube.closed += 1;
    },
  };
  const events = {
    flushed: false,
    flush: () =>
      options.eventsHang === true
        ? new Promise<void>(() => undefined)
        : Promise.resolve().then(() => {
            events.flushed = true;
          }),
  };
  const bridge = new BridgeLifecycle({
    waves,
    reservations,
    events,
    kube,
    metrics: new BridgeMetrics(),
    clock,
    logger,
    inflight,
    cni: options.cni,
    http: options.http === true ? { host: "127.0.0.1", port: 0 } : undefined,
  });
  open.push(bridge);
  return { bridge, clock, waves, reservations, kube, events, inflight, lines };
}

/** Settles `promise` into a readable state, so that a test can look without awaiting it. */
function track<T>(promise: Promise<T>) {
  const state: { value?: T; error?: unknown; settled: boolean } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { value, settled: true }),
    (error: unknown) => Object.assign(state, { error, settled: true }),
  );
  return state;
}

describe("BridgeLifecycle", () => {
  it("serves /healthz and /readyz (with the reservations' lines) from start, and closes the server at shutdown", async () => {
    const { bridge, waves } = lifecycle({ http: true });
    await bridge.start();
    expect(waves.started).toBe(1);
    const address = bridge.http;
    if (address === undefined) throw new Error("no HTTP server after start");
    const base = `http://${address.host}:${address.port}`;
    const healthz = await fetch(`${base}/healthz`);
    expect(healthz.status).toBe(200);
    const readyz = await fetch(`${base}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.text()).toContain("reservation missing: 192.0.2.0/26 in subnet-0a");
    void bridge.run();
    expect(await bridge.shutdown(30_000)).toBe("ok");
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it("stops both loops with one signal; once they finish: ok, Events flushed, the client closed, nothing aborted", async () => {
    const { bridge, waves, reservations, kube, events, inflight, clock } = lifecycle();
    await bridge.start();
    const running = bridge.run();
    await flush();
    expect(waves.signal?.aborted).toBe(false);
    expect(reservations?.signal).toBe(waves.signal);
    expect(await bridge.shutdown(30_000)).toBe("ok");
    await running;
    expect(waves.signal?.aborted).toBe(true);
    expect(waves.finished && reservations?.finished).toBe(true);
    expect(events.flushed).toBe(true);
    expect(kube.closed).toBe(1);
    expect(inflight.signal.aborted).toBe(false);
    expect(clock.now()).toBe(1_700_000_000_000);
  });

  it("plugin mode: starts the CNI socket after the watches, and stops it first at shutdown, before the last wave", async () => {
    const order: string[] = [];
    let waves: FakeLoop | undefined;
    const cni = {
      start: async () => {
        order.push(`cni start after ${waves?.started ?? 0} watch starts`);
      },
      stop: async () => {
        order.push(`cni stop, loops stopped: ${waves?.signal?.aborted}`);
      },
    };
    const made = lifecycle({ cni });
    waves = made.waves;
    await made.bridge.start();
    void made.bridge.run();
    expect(await made.bridge.shutdown(30_000)).toBe("ok");
    expect(order).toEqual(["cni start after 1 watch starts", "cni stop, loops stopped: false"]);
  });

  it("runs without reservations (IPMGR_BRIDGE_RESERVATIONS=off)", async () => {
    const { bridge, reservations } = lifecycle({ reservations: "off" });
    expect(reservations).toBeUndefined();
    await bridge.start();
    void bridge.run();
    expect(await bridge.shutdown(30_000)).toBe("ok");
  });

  it("counts the grace on the injected clock; when it runs out, aborts the calls in flight: grace-expired", async () => {
    const { bridge, clock, inflight, lines } = lifecycle({ reservations: "ignores-until-inflight-aborted" });
    await bridge.start();
    void bridge.run();
    const shutdown = track(bridge.shutdown(5_000));
    await flush();
    await clock.advance(4_999);
    expect(shutdown.settled).toBe(false);
    expect(inflight.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(shutdown).toMatchObject({ settled: true, value: "grace-expired" });
    expect(inflight.signal.aborted).toBe(true);
    expect(
      lines.filter((l) => l.msg === "the shutdown grace ran out: the calls in flight were aborted"),
    ).toEqual([expect.objectContaining({ graceMs: 5_000 })]);
  });

  it("waits for Events being posted at most EVENTS_FLUSH_WAIT_MS, then closes the client", async () => {
    const { bridge, clock, kube } = lifecycle({ eventsHang: true });
    await bridge.start();
    void bridge.run();
    const shutdown = track(bridge.shutdown(30_000));
    await flush();
    await clock.advance(EVENTS_FLUSH_WAIT_MS - 1);
    expect(shutdown.settled).toBe(false);
    expect(kube.closed).toBe(0);
    await clock.advance(1);
    expect(shutdown).toMatchObject({ settled: true, value: "ok" });
    expect(kube.closed).toBe(1);
  });

  it("rejects a shutdown when a loop fails while stopping; close() then closes the client once", async () => {
    const { bridge, kube } = lifecycle({ waves: "fails" });
    await bridge.start();
    const running = bridge.run();
    running.catch(() => undefined);
    await expect(bridge.shutdown(30_000)).rejects.toThrow("the wave loop broke while stopping");
    expect(kube.closed).toBe(0);
    await bridge.close();
    await bridge.close();
    expect(kube.closed).toBe(1);
  });

  it("closes nothing twice after a shutdown that finished", async () => {
    const { bridge, kube } = lifecycle();
    await bridge.start();
    void bridge.run();
    await bridge.shutdown(30_000);
    await bridge.close();
    expect(kube.closed).toBe(1);
  });

  it("close() after a failure stops the loops and closes the server", async () => {
    const { bridge, waves, kube } = lifecycle({ http: true });
    await bridge.start();
    void bridge.run();
    const address = bridge.http;
    if (address === undefined) throw new Error("no HTTP server after start");
    await bridge.close();
    expect(waves.signal?.aborted).toBe(true);
    expect(kube.closed).toBe(1);
    await expect(fetch(`http://${address.host}:${address.port}/healthz`)).rejects.toThrow();
  });
});
