import { type Clock, withinDeadline } from "../eni/process/clock.js";
import type { Logger } from "../eni/process/logger.js";
import { type MetricsSource, type RunningHttpServer, startHttpServer } from "../eni/process/probe-server.js";
import type { Bridge } from "./bridge.js";
import type { CniServer } from "./cni/cni-server.js";
import type { KubeApi } from "./kube/kube-api.js";
import type { ReservationsLoop } from "./reservations/reservations-loop.js";
import type { StartupTaintController } from "./startup-taint/startup-taint-controller.js";
import type { PodEventReporter } from "./telemetry/pod-events.js";

/**
 * At shutdown, how long the Kubernetes Events still being posted may take before the client is closed under
 * them, in ms. An Event is a courtesy to whoever reads `kubectl describe pod`: it must not hold the exit.
 */
export const EVENTS_FLUSH_WAIT_MS = 1_000;

export interface BridgeLifecycleOptions {
  /** The wave loop (Bridge). */
  readonly waves: Pick<Bridge, "start" | "run" | "health" | "readiness">;
  /** The reservations beside the waves; undefined when IPMGR_BRIDGE_RESERVATIONS=off. */
  readonly reservations: Pick<ReservationsLoop, "run" | "lines"> | undefined;
  /** Attach mode's startup taint beside the waves; undefined when off. */
  readonly startupTaint?: Pick<StartupTaintController, "run">;
  /** The Events being posted, waited for (at most EVENTS_FLUSH_WAIT_MS) at shutdown. */
  readonly events: Pick<PodEventReporter, "flush">;
  /** The Kubernetes client: the lifecycle owns it and closes it. */
  readonly kube: Pick<KubeApi, "close">;
  readonly metrics: MetricsSource;
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * Aborted when the shutdown grace runs out: the EC2 and IMDS adapters must be built on its signal, so
   * that the calls in flight, and their retries, are cut.
   */
  readonly inflight: AbortController;
  /** Plugin mode's socket (IPMGR_BRIDGE_CNI_SOCKET); undefined when off. */
  readonly cni?: Pick<CniServer, "start" | "stop"> | undefined;
  /** The HTTP server (/healthz, /readyz, /metrics); undefined runs none (tests). */
  readonly http: { readonly host: string; readonly port: number } | undefined;
}

/** How a shutdown went: `ok`, or `grace-expired` when the wave or a pass in progress outlived the grace. */
export type ShutdownOutcome = "ok" | "grace-expired";

/**
 * One bridge: the HTTP server, the wave loop and the reservations loop beside it, the way the Sidecar class
 * holds the sidecar's. `start()` brings up the probes and the watches; `run()` starts the loops;
 * `shutdown()` stops them within a grace on the injected clock; `close()` cleans up after a failure.
 */
export class BridgeLifecycle {
  readonly #o: BridgeLifecycleOptions;
  readonly #stop = new AbortController();
  #http: RunningHttpServer | undefined;
  #waves: Promise<void> | undefined;
  #reservations: Promise<void> | undefined;
  #startupTaint: Promise<void> | undefined;
  #closed = false;

  constructor(options: BridgeLifecycleOptions) {
    this.#o = options;
  }

  /** The bound HTTP address (with the real port when 0 was asked), once started. */
  get http(): { host: string; port: number } | undefined {
    return this.#http === undefined ? undefined : { host: this.#http.host, port: this.#http.port };
  }

  /** Starts the HTTP server (/readyz answers 503 until the first wave), then the watches. */
  async start(): Promise<void> {
    const { http, waves, reservations, metrics, logger } = this.#o;
    if (http !== undefined) {
      this.#http = await startHttpServer({
        ...http,
        status: {
          health: () => waves.health(),
          readiness: () => waves.readiness(reservations?.lines() ?? []),
        },
        metrics,
        logger,
      });
    }
    await waves.start();
    await this.#o.cni?.start();
  }

  /**
   * Starts the wave loop and the reservations loop; returns the wave loop, which resolves only once
   * `shutdown()` stops it and rejects only for a bug (the caller waits for it or the first signal).
   */
  run(): Promise<void> {
    const signal = this.#stop.signal;
    this.#waves ??= this.#o.waves.run(signal);
    this.#reservations ??= this.#o.reservations?.run(signal) ?? Promise.resolve();
    this.#startupTaint ??= this.#o.startupTaint?.run(signal) ?? Promise.resolve();
    return this.#waves;
  }

  /**
   * Stops both loops and waits up to `graceMs` for the wave or pass in progress. When the grace runs out,
   * the EC2 and IMDS calls in flight are aborted (`inflight`). Then waits briefly for the Events being
   * posted, and closes the Kubernetes client and the HTTP server. A loop that fails while stopping rejects
   * this (the caller then `close()`s and maps the error to an exit code).
   */
  async shutdown(graceMs: number): Promise<ShutdownOutcome> {
    const { clock, logger, inflight, events } = this.#o;
    // First, before the last wave: new requests get code 11, the ADDs waiting answer it, the socket goes.
    await this.#o.cni?.stop();
    this.#stop.abort();
    const loops = Promise.all([this.#waves, this.#reservations, this.#startupTaint]).then(() => true);
    const finished = await withinDeadline(loops, clock.now() + graceMs, clock);
    if (!finished) {
      inflight.abort(new Error("the shutdown grace ran out"));
      logger.warn({ graceMs }, "the shutdown grace ran out: the calls in flight were aborted");
      // The cut calls end the loops at once; waiting for them lets a swap cut in the middle log the
      // addresses it left held by no ENI before the process exits.
      await withinDeadline(
        loops.catch((error: unknown) => {
          logger.warn({ err: error }, "a loop failed after the shutdown grace ran out");
          return true;
        }),
        clock.now() + EVENTS_FLUSH_WAIT_MS,
        clock,
      );
    }
    await withinDeadline(
      events.flush().then(() => true),
      clock.now() + EVENTS_FLUSH_WAIT_MS,
      clock,
    );
    await this.#o.kube.close();
    await this.#http?.close();
    this.#closed = true;
    return finished ? "ok" : "grace-expired";
  }

  /**
   * After a failure: stops the loops and closes the Kubernetes client and the HTTP server, unless a shutdown
   * already did. A failure to close is logged, not thrown: the first failure is the one reported.
   */
  async close(): Promise<void> {
    this.#stop.abort();
    if (this.#closed) return;
    this.#closed = true;
    const { kube, logger } = this.#o;
    const http = this.#http;
    const cni = this.#o.cni;
    for (const step of [() => cni?.stop(), () => kube.close(), () => http?.close()]) {
      await step()?.catch((error: unknown) => logger.warn({ err: error }, "cleanup after failure failed"));
    }
  }
}
