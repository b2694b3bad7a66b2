import type { AddressEvents } from "../eni/address-events.js";
import type { BackoffPolicy } from "../eni/backoff.js";
import { withinDeadline } from "../eni/process/clock.js";
import { type RunningHttpServer, startHttpServer } from "../eni/process/probe-server.js";
import type { ConfirmOptions, ReconcileDeps } from "../eni/reconcile.js";
import { type ReconcileOnceResult, reconcileOnce } from "../eni/reconcile-once.js";
import type { ElasticIpMapping, Plan, PlanPolicy } from "../eni/types.js";
import { AddressWatcher } from "./address-watcher.js";
import { ElasticIpFollower } from "./elastic-ip-follower.js";
import { IdleCollector } from "./idle-collector.js";
import type { SidecarMetrics } from "./metrics.js";
import { ReconcileLoop } from "./reconcile-loop.js";
import type { ReleaseJournal } from "./release-journal.js";

export interface SidecarOptions {
  readonly deps: ReconcileDeps;
  readonly metrics: SidecarMetrics;
  readonly policy: PlanPolicy;
  /** Startup: bounded wait for the interfaces to carry addresses, in ms (IPMGR_WAIT_FOR_ADDRESSES_MS of init). */
  readonly waitForAddressesMs: number;
  readonly confirm: Omit<ConfirmOptions, "signal">;
  readonly releaseOnRemove: boolean;
  /** How long an address must stay off our interfaces before it is released, in ms (IPMGR_RELEASE_SETTLE_MS). */
  readonly releaseSettleMs?: number;
  /** Drift check period while an episode is open, in ms (IPMGR_EPISODE_CHECK_INTERVAL_MS). */
  readonly episodeCheckIntervalMs?: number;
  /**
   * Aborts the EC2 and IMDS calls in flight when the shutdown grace runs out: `deps` must be built with its
   * signal. Without it, a shutdown waits for the step in progress however long it takes.
   */
  readonly inflight?: AbortController;
  /**
   * A full garbage collection, run once the sidecar has made no EC2 change for `idleCollectAfterMs` after a
   * burst of them (IdleCollector). Undefined: none.
   */
  readonly idleCollect?: () => void;
  /** Quiet time before the idle collection, in ms. Default 10000. */
  readonly idleCollectAfterMs?: number;
  /** Interface poll period in ms, without address events or while they are down (IPMGR_POLL_INTERVAL_MS). */
  readonly pollIntervalMs: number;
  /**
   * A started address event source (`ip monitor`); the sidecar owns it and stops it on shutdown.
   * Undefined: poll only.
   */
  readonly addressEvents?: AddressEvents;
  /** Poll period in ms while address events are live (IPMGR_EVENTS_FALLBACK_POLL_MS; default 1000). */
  readonly eventsFallbackPollMs?: number;
  readonly resyncIntervalMs: number;
  readonly driftCheckIntervalMs: number;
  /** The HTTP server; undefined runs none (tests that only look at EC2). */
  readonly http: { readonly host: string; readonly port: number } | undefined;
  /** Watcher coalescing, in ms (defaults in address-watcher.ts). */
  readonly settleMs?: number;
  readonly maxCoalesceMs?: number;
  /** Cheap change detector for the watcher (osInterfacesFingerprint() with the OS interface source). */
  readonly fingerprint?: () => string;
  readonly repairBackoff?: BackoffPolicy;
  readonly failureBackoff?: BackoffPolicy;
  /** Between tries of a release EC2 refused. Default 1 s doubling to 60 s. */
  readonly releaseRetryBackoff?: BackoffPolicy;
  readonly episodeQuietMs?: number;
  /** IPMGR_ELASTIC_IPS: Elastic IPs that follow their addresses while our ENI holds them. Default none. */
  readonly elasticIps?: readonly ElasticIpMapping[];
  /** Pacing of Elastic IP re-checks and repeated associations; default 1 s doubling to 30 s. */
  readonly elasticIpBackoff?: BackoffPolicy;
  /**
   * IPMGR_STATE_FILE: where pending releases are kept across a container restart, with what the previous
   * run left pending (released at start unless the pod carries them again). Undefined: none kept.
   */
  readonly releaseJournal?: { readonly journal: ReleaseJournal; readonly pending: readonly string[] };
  /**
   * Load the EC2 SDK right after startup rather than on the first EC2 call, so that the first failover does
   * not pay for parsing it (about 100 ms). Default true.
   */
  readonly preloadEc2?: boolean;
}

export interface ShutdownOptions {
  /** How long the step in progress (an EC2 call) may take to finish, release included, in ms. */
  readonly graceMs: number;
  readonly releaseOnExit: boolean;
}

/** How a shutdown went: `ok`, or `grace-expired` when the step in progress or the release outlived the grace. */
export type ShutdownOutcome = "ok" | "grace-expired";

/**
 * One sidecar: the HTTP server, the address watcher, the startup (what `init` does) and the reconcile loop.
 * `start()` brings up the probes; `run()` does the startup, then loops until `shutdown()`.
 */
export class Sidecar {
  readonly #o: SidecarOptions;
  /** `options.deps`, but reading the interfaces through the watcher (see AddressWatcher.source). */
  readonly #deps: ReconcileDeps;
  readonly watcher: AddressWatcher;
  readonly loop: ReconcileLoop;
  readonly #stop = new AbortController();
  readonly #idleCollector: IdleCollector | undefined;
  #http: RunningHttpServer | undefined;
  #running: Promise<void> | undefined;
  #initPlan: Plan | undefined;

  constructor(options: SidecarOptions) {
    this.#o = options;
    const { deps } = options;
    this.watcher = new AddressWatcher({
      source: deps.interfaces,
      clock: deps.clock,
      logger: deps.logger,
      pollIntervalMs: options.pollIntervalMs,
      ...(options.addressEvents === undefined ? {} : { events: options.addressEvents }),
      ...(options.eventsFallbackPollMs === undefined
        ? {}
        : { eventsFallbackPollMs: options.eventsFallbackPollMs }),
      ...(options.settleMs === undefined ? {} : { settleMs: options.settleMs }),
      ...(options.maxCoalesceMs === undefined ? {} : { maxCoalesceMs: options.maxCoalesceMs }),
      ...(options.fingerprint === undefined ? {} : { fingerprint: options.fingerprint }),
      ...(options.releaseJournal === undefined
        ? {}
        : { onReleasedChange: (released) => options.releaseJournal?.journal.save(released) }),
    });
    // Every read of the interfaces in this process is the watcher's too: an address that startup, a drift
    // check or a resync read and assigned is one the watcher saw, and released once it is gone.
    this.#deps = { ...deps, interfaces: this.watcher.source };
    this.#idleCollector =
      options.idleCollect === undefined
        ? undefined
        : new IdleCollector(options.idleCollect, options.idleCollectAfterMs ?? 10_000, deps.clock);
    const collector = this.#idleCollector;
    this.loop = new ReconcileLoop({
      deps: this.#deps,
      ...(collector === undefined ? {} : { onWork: () => collector.noteActivity() }),
      watcher: this.watcher,
      metrics: options.metrics,
      policy: options.policy,
      releaseOnRemove: options.releaseOnRemove,
      ...(options.releaseSettleMs === undefined ? {} : { releaseSettleMs: options.releaseSettleMs }),
      ...(options.episodeCheckIntervalMs === undefined
        ? {}
        : { episodeCheckIntervalMs: options.episodeCheckIntervalMs }),
      resyncIntervalMs: options.resyncIntervalMs,
      driftCheckIntervalMs: options.driftCheckIntervalMs,
      confirm: options.confirm,
      ...(options.repairBackoff === undefined ? {} : { repairBackoff: options.repairBackoff }),
      ...(options.failureBackoff === undefined ? {} : { failureBackoff: options.failureBackoff }),
      ...(options.releaseRetryBackoff === undefined
        ? {}
        : { releaseRetryBackoff: options.releaseRetryBackoff }),
      ...(options.episodeQuietMs === undefined ? {} : { episodeQuietMs: options.episodeQuietMs }),
      ...(options.elasticIps === undefined || options.elasticIps.length === 0
        ? {}
        : {
            elasticIps: new ElasticIpFollower({
              mappings: options.elasticIps,
              deps,
              metrics: options.metrics,
              confirm: options.confirm,
              recheckIntervalMs: options.resyncIntervalMs,
              ...(options.elasticIpBackoff === undefined ? {} : { retryBackoff: options.elasticIpBackoff }),
            }),
          }),
    });
  }

  /** The bound HTTP address (with the real port when 0 was asked), once started. */
  get http(): { host: string; port: number } | undefined {
    return this.#http === undefined ? undefined : { host: this.#http.host, port: this.#http.port };
  }

  /** The plan startup carried out; undefined until it is done. */
  get initPlan(): Plan | undefined {
    return this.#initPlan;
  }

  /** Whether shutdown was asked. */
  get stopping(): boolean {
    return this.#stop.signal.aborted;
  }

  /** Starts the HTTP server (probes answer 503 on /readyz until startup is done). */
  async start(): Promise<void> {
    const { http, metrics, deps } = this.#o;
    if (http === undefined) return;
    this.#http = await startHttpServer({ ...http, status: this.loop, metrics, logger: deps.logger });
    deps.logger.info({ host: this.#http.host, port: this.#http.port }, "serving /healthz /readyz /metrics");
  }

  /**
   * Startup, then the loop. Resolves when shutdown stops the loop (also during startup); rejects when
   * startup fails (the same errors, and so exit codes, as `init`).
   */
  run(): Promise<void> {
    this.#running ??= this.#run();
    return this.#running;
  }

  async #run(): Promise<void> {
    const deps = this.#deps;
    const signal = this.#stop.signal;
    await this.watcher.start((change) => this.loop.notifyChange(change.detectedAt));
    const carried = this.#carryOverReleases();
    let init: ReconcileOnceResult;
    try {
      init = await reconcileOnce(deps, {
        policy: this.#o.policy,
        waitForAddressesMs: this.#o.waitForAddressesMs,
        // A restart: the pod's network is long set up, and the addresses to release may have been its only ones.
        addressesRequired: carried.length === 0,
        confirm: { ...this.#o.confirm, signal },
        signal,
      });
    } catch (error) {
      if (signal.aborted) {
        // Leaving anyway: the error is not the exit's reason, but it is not hidden either.
        deps.logger.info({ err: error }, "startup ended by the shutdown");
        return;
      }
      throw error;
    }
    this.#initPlan = init.plan;
    this.loop.seed(init.plan);
    if (carried.length > 0) this.loop.requestReconcile();
    if (this.#o.preloadEc2 ?? true) this.#preloadEc2();
    await this.loop.run(signal);
  }

  /** The releases a previous run of this container left pending (IPMGR_STATE_FILE), handed to the watcher. */
  #carryOverReleases(): string[] {
    const journal = this.#o.releaseJournal;
    if (journal === undefined) return [];
    const carried = this.watcher.carryOver(journal.pending);
    const onThePodAgain = journal.pending.filter((a) => !carried.includes(a));
    if (journal.pending.length > 0) {
      this.#o.deps.logger.info(
        { file: journal.journal.path, releasing: carried, onThePodAgain },
        "releases left pending by the previous run: made once settled, from our ENI only, even when the pod carries no address; none of an address the pod carries again",
      );
    }
    return carried;
  }

  #preloadEc2(): void {
    import("../eni/ec2-client.js").then(
      () => this.#o.deps.logger.debug("EC2 SDK loaded"),
      (error: unknown) =>
        this.#o.deps.logger.warn({ err: error }, "could not preload the EC2 SDK; loading it on first use"),
    );
  }

  /**
   * Stops watching and the loop; waits up to `graceMs` for the step in progress, then optionally releases our
   * addresses within what is left of the grace, then closes the HTTP server. When the grace runs out, the
   * EC2 and IMDS calls in flight are aborted (`inflight`), so no attempt starts after it and this returns
   * within about the grace. Errors of the release propagate (the caller maps them to an exit code).
   */
  async shutdown(options: ShutdownOptions): Promise<ShutdownOutcome> {
    const { clock, logger } = this.#o.deps;
    const deadline = clock.now() + options.graceMs;
    this.#stop.abort(new Error("sidecar shutting down"));
    this.#idleCollector?.stop();
    await this.watcher.stop();
    try {
      const running = this.#running ?? Promise.resolve();
      // A startup failure after the signal is not worth reporting: we are leaving anyway.
      const settled = running.then(
        () => true,
        (error: unknown) => {
          logger.warn({ err: error }, "startup failed while shutting down");
          return true;
        },
      );
      if (!(await withinDeadline(settled, deadline, clock))) {
        logger.warn(
          { graceMs: options.graceMs },
          "the step in progress did not finish within the shutdown grace; aborting the calls in flight",
        );
        await this.#abortInflight(settled);
        return "grace-expired";
      }
      if (options.releaseOnExit) {
        const release = this.loop.releaseOwn().then(() => true);
        if (!(await withinDeadline(release, deadline, clock))) {
          logger.warn(
            { graceMs: options.graceMs },
            "releasing our addresses did not finish within the shutdown grace; aborting the calls in flight",
          );
          await this.#abortInflight(release.catch(() => true));
          return "grace-expired";
        }
      }
      return "ok";
    } finally {
      await this.#http?.close();
    }
  }

  /** Aborts the calls in flight and waits, briefly, for the work that made them to unwind. */
  async #abortInflight(work: Promise<boolean>): Promise<void> {
    const inflight = this.#o.inflight;
    if (inflight === undefined) return;
    inflight.abort(new ShutdownGraceExpired());
    await withinDeadline(work, this.#o.deps.clock.now() + ABORT_UNWIND_MS, this.#o.deps.clock);
  }
}

/** How long aborted work may take to unwind (sockets closed, promises settled) before shutdown returns. */
const ABORT_UNWIND_MS = 500;

/** The reason calls in flight are aborted with when the shutdown grace runs out. */
class ShutdownGraceExpired extends Error {
  override name = "AbortError";
  constructor() {
    super("the shutdown grace ran out");
  }
}
