import { Ec2Error } from "../eni/errors/ec2-error.js";
import { describeError, LoopSchedule } from "../eni/loop-schedule.js";
import type { ProbeResult, ProbeStatus } from "../eni/process/probe-server.js";
import type { Plan } from "../eni/types.js";
import { loopHealth } from "./loop-health.js";
import { ObservedAddresses } from "./observed-addresses.js";
import { readinessOf } from "./readiness.js";
import {
  DEFAULT_EPISODE_CHECK_INTERVAL_MS,
  DEFAULT_FAILURE_BACKOFF,
  type ReconcileLoopOptions,
} from "./reconcile-loop-options.js";
import { ReconcileStep } from "./reconcile-step.js";
import { releaseOnExit } from "./release-on-exit.js";

export {
  DEFAULT_EPISODE_CHECK_INTERVAL_MS,
  DEFAULT_FAILURE_BACKOFF,
  DEFAULT_RELEASE_SETTLE_MS,
  type ReconcileLoopOptions,
  type WatchedAddresses,
} from "./reconcile-loop-options.js";

/**
 * The sidecar's state machine. Every step is one of:
 * - a reconcile (observe, plan, apply, confirm) after a change on the pod interfaces, a resync, a repair
 *   or a release coming due, or a retry after a failure;
 * - a drift check: IMDS, and for an address taken off our ENI one EC2 read to learn who holds it; if an
 *   address is not where it must be and may be repaired, a reconcile follows;
 * - an Elastic IP check (ElasticIpFollower), right after our ENI took a mapped address, and when it is due.
 *
 * Drift (an address we held, still configured here, no longer on our ENI) follows the rules of
 * DriftEpisodes: repaired at once when no ENI holds it, paced by backoff when a rival does. While an
 * episode is open the drift check runs every `episodeCheckIntervalMs`, so a rival letting go is seen fast.
 */
export class ReconcileLoop implements ProbeStatus {
  readonly #o: ReconcileLoopOptions;
  readonly #episodeCheckIntervalMs: number;
  readonly #maxStepMs: number;
  readonly #random: () => number;

  /** Held addresses, drift episodes, EC2's answers and the readiness view. */
  readonly #addresses: ObservedAddresses;
  /** The reconcile itself, with the releases it owes and the change timing it measures. */
  readonly #step: ReconcileStep;
  /** Failed reconciles, the retry's time, the failure logged, the wake-up on a change. */
  readonly #schedule: LoopSchedule;

  #changePending = false;
  #reconcileNow = false;
  #nextResyncAt = 0;
  #nextDriftCheckAt = 0;
  #observeFailureKey: string | undefined;

  #started = false;
  #lastTickAt: number | undefined;
  #stepStartedAt: number | undefined;

  constructor(options: ReconcileLoopOptions) {
    this.#o = options;
    this.#episodeCheckIntervalMs = options.episodeCheckIntervalMs ?? DEFAULT_EPISODE_CHECK_INTERVAL_MS;
    this.#maxStepMs = options.maxStepMs ?? options.confirm.timeoutMs + 120_000;
    this.#random = options.random ?? Math.random;
    this.#addresses = new ObservedAddresses(options);
    this.#step = new ReconcileStep(options, this.#addresses, () => {
      this.#reconcileNow = true;
    });
    this.#schedule = new LoopSchedule({
      clock: options.deps.clock,
      backoff: options.failureBackoff ?? DEFAULT_FAILURE_BACKOFF,
      random: this.#random,
    });
  }

  /** The watcher saw a (coalesced) change at clock time `detectedAt`: reconcile as soon as possible. */
  notifyChange(detectedAt: number): void {
    this.#changePending = true;
    this.#step.changeTiming.seen(detectedAt);
    this.#schedule.wake();
  }

  /** Reconcile at the next turn of the loop (releases carried over from a previous run wait there). */
  requestReconcile(): void {
    this.#reconcileNow = true;
    this.#schedule.wake();
  }

  /** Startup (init) placed these addresses: they count as held, so that losing one later is drift. */
  seed(plan: Plan): void {
    this.#addresses.seed(plan);
  }

  /** Number of consecutive failed reconciles (0 when the last one worked). */
  get failures(): number {
    return this.#schedule.failures;
  }

  /**
   * Runs until `signal` aborts. The step in progress is not cut by `signal`; the EC2 and IMDS calls are
   * cut by the deps' own signal, which the sidecar aborts when the shutdown grace runs out.
   */
  async run(signal: AbortSignal): Promise<void> {
    const { clock } = this.#o.deps;
    const start = clock.now();
    this.#started = true;
    this.#nextResyncAt = start + this.#o.resyncIntervalMs;
    // A random phase per process: two sidecars of a pair never check (and repair) in lockstep.
    this.#nextDriftCheckAt = start + this.#o.driftCheckIntervalMs * this.#random();
    while (!signal.aborted) {
      const now = clock.now();
      this.#lastTickAt = now;
      const work = this.#due(now);
      if (typeof work === "number") {
        try {
          await this.#schedule.sleepUntil(work, signal);
        } catch (error) {
          if (!signal.aborted) throw error;
        }
        continue;
      }
      this.#stepStartedAt = now;
      try {
        if (work === "drift-check") await this.#driftCheck();
        else if (work === "elastic-ips") await this.#o.elasticIps?.check(signal);
        else await this.#reconcileStep(signal);
      } catch (error) {
        if (signal.aborted) break;
        // #reconcileStep and #driftCheck handle their own failures; anything here is a bug in the loop.
        this.#o.deps.logger.error({ err: error }, "sidecar loop step failed unexpectedly");
        this.#schedule.retryLater();
      } finally {
        this.#stepStartedAt = undefined;
        this.#lastTickAt = clock.now();
      }
    }
  }

  /** What to do now, or the clock time to wake up at. */
  #due(now: number): "reconcile" | "drift-check" | "elastic-ips" | number {
    if (this.#changePending) return "reconcile";
    let wakeAt = this.#nextDriftCheckAt;
    // Right after our ENI took a mapped address: before anything but a change on the interfaces.
    const elasticIpsAt = this.#o.elasticIps?.dueAt();
    if (elasticIpsAt !== undefined) {
      if (now >= elasticIpsAt) return "elastic-ips";
      wakeAt = Math.min(wakeAt, elasticIpsAt);
    }
    const retryAt = this.#schedule.retryAt;
    if (retryAt !== undefined) {
      if (now >= retryAt) return "reconcile";
      wakeAt = Math.min(wakeAt, retryAt);
    } else {
      if (this.#reconcileNow || now >= this.#nextResyncAt) return "reconcile";
      wakeAt = Math.min(wakeAt, this.#nextResyncAt);
      for (const due of [this.#addresses.episodes.nextRepairAt(), this.#step.releases.nextDueAt]) {
        if (due === undefined) continue;
        if (now >= due) return "reconcile";
        wakeAt = Math.min(wakeAt, due);
      }
    }
    if (now >= this.#nextDriftCheckAt) return "drift-check";
    return wakeAt;
  }

  /** The next drift check: 70 to 90 % of the period, so that /readyz never reads an observation older than it. */
  #scheduleDriftCheck(now: number): void {
    const period =
      this.#addresses.episodes.size > 0
        ? Math.min(this.#o.driftCheckIntervalMs, this.#episodeCheckIntervalMs)
        : this.#o.driftCheckIntervalMs;
    this.#nextDriftCheckAt = now + period * (0.7 + 0.2 * this.#random());
  }

  async #reconcileStep(signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.#o.deps;
    const timing = this.#step.changeTiming;
    const measuredFrom = timing.stepStarts();
    this.#changePending = false;
    this.#reconcileNow = false;
    try {
      await this.#step.run(signal, measuredFrom);
    } catch (error) {
      if (signal.aborted) throw error;
      timing.stepFailed(measuredFrom);
      const description = describeError(error);
      const key = error instanceof Ec2Error ? `${error.operation}:${error.code}` : description;
      const failed = this.#schedule.failed(key, description, this.#step.failedAddresses);
      this.#o.metrics.reconcile("error");
      if (failed.log) {
        logger.warn(
          {
            err: error,
            failures: failed.count,
            retryInMs: failed.retryInMs,
            ...(failed.previous === undefined
              ? {}
              : { previousError: failed.previous.description, previousFailures: failed.previous.count }),
          },
          "reconcile failed; retrying with backoff (logged again only if the error changes)",
        );
      }
      return;
    }
    // The failure logged stays open until what failed is done (a release still pending, an address
    // configured here that our ENI does not hold), not merely until a step works.
    const recovered = this.#schedule.succeeded(
      (address) => this.#step.releases.has(address) || this.#addresses.outstanding(address),
    );
    if (recovered !== undefined) {
      logger.info({ failures: recovered.count, error: recovered.description }, "reconcile works again");
    }
    const now = clock.now();
    this.#nextResyncAt = now + this.#o.resyncIntervalMs;
    this.#scheduleDriftCheck(now);
  }

  /** Observes; asks for a reconcile when something is out of place and may be repaired now. */
  async #driftCheck(): Promise<void> {
    const { deps } = this.#o;
    this.#scheduleDriftCheck(deps.clock.now());
    let offline: Plan;
    try {
      ({ offline } = await this.#addresses.observe());
    } catch (error) {
      const key = describeError(error);
      if (key !== this.#observeFailureKey) {
        this.#observeFailureKey = key;
        deps.logger.warn({ err: error }, "drift check failed (IMDS); trying again at the next check");
      }
      return;
    }
    if (this.#observeFailureKey !== undefined) {
      this.#observeFailureKey = undefined;
      deps.logger.info("drift check works again");
    }
    const satisfied = new Set(offline.satisfied);
    const heldBack = this.#addresses.episodes.heldBack(deps.clock.now());
    const out = offline.placements.filter((p) => !satisfied.has(p.address) && !heldBack.has(p.address));
    if (out.length > 0) {
      deps.logger.debug({ addresses: out.map((p) => p.address) }, "drift check: addresses not in place");
      this.#reconcileNow = true;
    }
    // A check may open an episode: the next one comes at the episode's pace.
    this.#scheduleDriftCheck(deps.clock.now());
  }

  /** Releases the addresses of our interfaces that our ENIs hold (IPMGR_RELEASE_ON_EXIT). */
  releaseOwn(): Promise<{ mutatingCalls: number; released: string[] }> {
    const { deps, policy, watcher } = this.#o;
    return releaseOnExit({
      deps,
      policy,
      watcher,
      held: this.#addresses.held,
      assignedUnconfirmed: this.#addresses.ec2.assignedUnconfirmed,
    });
  }

  health(): ProbeResult {
    const { watcher } = this.#o;
    return loopHealth({
      now: this.#o.deps.clock.now(),
      lastPollAt: watcher.lastPollAt,
      pollIntervalMs: watcher.pollIntervalMs,
      started: this.#started,
      stepStartedAt: this.#stepStartedAt,
      maxStepMs: this.#maxStepMs,
      lastTickAt: this.#lastTickAt,
      driftCheckIntervalMs: this.#o.driftCheckIntervalMs,
      failures: this.#schedule.failures,
      failure: this.#schedule.open?.description,
    });
  }

  readiness(): ProbeResult {
    const view = this.#addresses.view;
    if (!this.#started || view === undefined) return { ok: false, lines: ["startup has not finished"] };
    const now = this.#o.deps.clock.now();
    const addresses = readinessOf({
      view,
      now,
      maxAgeMs: this.#o.driftCheckIntervalMs,
      configured: this.#o.watcher.snapshot(),
      episodes: this.#addresses.episodes,
      lastFailure: this.#schedule.open?.description,
    });
    const elasticIps = this.#o.elasticIps?.readiness(now);
    if (elasticIps === undefined) return addresses;
    return { ok: addresses.ok && elasticIps.ok, lines: [...addresses.lines, ...elasticIps.lines] };
  }
}
