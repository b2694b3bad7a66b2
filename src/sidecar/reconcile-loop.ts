import { type BackoffPolicy, backoffDelay } from "../eni/backoff.js";
import { DriftEpisodes, type EpisodeEvent, type Holder } from "../eni/drift-episodes.js";
import { Ec2Error } from "../eni/errors/ec2-error.js";
import { family, tryCanonical } from "../eni/ip.js";
import { isAssign, isRelease } from "../eni/plan-actions.js";
import { plan as planOffline } from "../eni/planner.js";
import type { ProbeResult, ProbeStatus } from "../eni/process/probe-server.js";
import {
  applyPlan,
  confirmPlan,
  type Observation,
  observe,
  planFor,
  type ReconcileDeps,
} from "../eni/reconcile.js";
import type { Plan, PlanPolicy, PodInterface } from "../eni/types.js";
import { addressesOf } from "./address-diff.js";
import type { ReleasedToken } from "./address-watcher.js";
import { ChangeTiming } from "./change-timing.js";
import { Ec2Answers } from "./ec2-answers.js";
import type { ElasticIpFollower } from "./elastic-ip-follower.js";
import type { SidecarMetrics } from "./metrics.js";
import { PendingReleases, RELEASE_REFUSALS_BEFORE_WARNING } from "./pending-releases.js";
import { type ReadinessView, readinessOf } from "./readiness.js";
import { ReconcileFailures } from "./reconcile-failures.js";

/** 1 s doubling to 60 s: drift repairs and failed reconciles. */
const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

/** What the loop needs from the address watcher. */
export interface WatchedAddresses {
  snapshot(): readonly PodInterface[];
  released(): ReleasedToken;
  acknowledgeReleased(token: ReleasedToken): void;
  readonly lastPollAt: number | undefined;
  readonly pollIntervalMs: number;
}

export interface ReconcileLoopOptions {
  readonly deps: ReconcileDeps;
  readonly watcher: WatchedAddresses;
  readonly metrics: SidecarMetrics;
  readonly policy: PlanPolicy;
  /** Release an address that left our interfaces, if our ENI still holds it (IPMGR_RELEASE_ON_REMOVE). */
  readonly releaseOnRemove: boolean;
  /**
   * How long, in ms, an address must stay off our interfaces before it is released (IPMGR_RELEASE_SETTLE_MS):
   * an application that removes an address and adds it back (a bounce) keeps it routed. Default 250.
   */
  readonly releaseSettleMs?: number;
  /** Between tries of a release EC2 refused (its reads lag a move). Default 1 s doubling to 60 s. */
  readonly releaseRetryBackoff?: BackoffPolicy;
  /** Full reconcile period in ms, even when nothing changed (IPMGR_RESYNC_INTERVAL_MS). */
  readonly resyncIntervalMs: number;
  /** Drift check period in ms (IPMGR_DRIFT_CHECK_INTERVAL_MS); each check comes after 70 to 90 % of it. */
  readonly driftCheckIntervalMs: number;
  /**
   * Drift check period in ms while a drift episode is open (IPMGR_EPISODE_CHECK_INTERVAL_MS), when shorter
   * than the normal one. Default 500.
   */
  readonly episodeCheckIntervalMs?: number;
  /** Wait for IMDS to show what EC2 accepted (IPMGR_CONFIRM_TIMEOUT_MS / IPMGR_CONFIRM_INTERVAL_MS). */
  readonly confirm: { readonly timeoutMs: number; readonly intervalMs: number };
  /** Pacing of repairs against a rival that holds the address. Default 1 s doubling to 60 s. */
  readonly repairBackoff?: BackoffPolicy;
  /** Backoff between attempts after a failed reconcile. Default 1 s doubling to 5 s. */
  readonly failureBackoff?: BackoffPolicy;
  /**
   * How long, in ms, a drifting address must stay held by our ENI for its episode to end. Default: twice the
   * repair backoff's maximum, so that a rival retrying at the maximum is still seen as the same episode.
   */
  readonly episodeQuietMs?: number;
  /**
   * How long one step (a reconcile with its EC2 retries and IMDS confirmation) may run before /healthz calls
   * the loop stuck, in ms. Default: the confirm timeout plus 120 s.
   */
  readonly maxStepMs?: number;
  /** For tests: the jitter source, in [0, 1). */
  readonly random?: () => number;
  /** Called after each reconcile that made EC2 calls (the sidecar's idle collector listens). */
  readonly onWork?: () => void;
  /**
   * IPMGR_ELASTIC_IPS: told which addresses our ENIs hold after every observation and reconcile, and run as
   * a step of its own when its check is due. Undefined: no Elastic IP.
   */
  readonly elasticIps?: ElasticIpFollower;
}

/** 1 s doubling to 5 s: after EC2 comes back from an outage, the next attempt is at most ~6 s away. */
export const DEFAULT_FAILURE_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 5_000 };
export const DEFAULT_EPISODE_CHECK_INTERVAL_MS = 500;
export const DEFAULT_RELEASE_SETTLE_MS = 250;

/** The first sentence of an error, for logs and /readyz. */
function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** What one observation (IMDS, plus EC2 for the holders of lost addresses) showed. */
interface Observed {
  readonly observation: Observation;
  readonly offline: Plan;
  /** Clock time just before the interfaces were read. */
  readonly observedAt: number;
}

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
  readonly #failureBackoff: BackoffPolicy;
  readonly #episodeCheckIntervalMs: number;
  readonly #maxStepMs: number;
  readonly #random: () => number;

  /**
   * The addresses on our interfaces at startup: what CNI ADD put there (the IPAM's), and a floating address
   * only if it was already there when this container started. Any other address is floating.
   */
  readonly #atStartup = new Set<string>();
  /** Addresses our ENI held at the last observation (or confirmation). */
  readonly #held = new Set<string>();
  readonly #episodes: DriftEpisodes;
  readonly #releases: PendingReleases;
  /** What EC2 answered that IMDS does not show: assignments not yet confirmed, refusals on facts we cannot read. */
  readonly #ec2 = new Ec2Answers();
  #view: ReadinessView | undefined;

  #changePending = false;
  /** change_to_assigned: when the changes the steps make were seen. */
  readonly #changeTiming = new ChangeTiming();
  #reconcileNow = false;
  #nextResyncAt = 0;
  #nextDriftCheckAt = 0;

  #failures = 0;
  #retryAt: number | undefined;
  /** The failure logged, open until what failed is done: not merely until the next step works. */
  readonly #failureLog = new ReconcileFailures();
  /** Addresses of the actions EC2 refused in the step in progress (set before it throws). */
  #stepFailedAddresses: readonly string[] = [];
  #observeFailureKey: string | undefined;
  #holderFailureKey: string | undefined;
  #refusalKey = "";

  #started = false;
  #lastTickAt: number | undefined;
  #stepStartedAt: number | undefined;
  #wake: AbortController | undefined;

  constructor(options: ReconcileLoopOptions) {
    this.#o = options;
    const repairBackoff = options.repairBackoff ?? DEFAULT_BACKOFF;
    this.#failureBackoff = options.failureBackoff ?? DEFAULT_FAILURE_BACKOFF;
    this.#episodeCheckIntervalMs = options.episodeCheckIntervalMs ?? DEFAULT_EPISODE_CHECK_INTERVAL_MS;
    this.#releases = new PendingReleases({
      settleMs: options.releaseSettleMs ?? DEFAULT_RELEASE_SETTLE_MS,
      ...(options.releaseRetryBackoff === undefined ? {} : { retryBackoff: options.releaseRetryBackoff }),
      random: options.random ?? Math.random,
    });
    this.#maxStepMs = options.maxStepMs ?? options.confirm.timeoutMs + 120_000;
    this.#random = options.random ?? Math.random;
    this.#episodes = new DriftEpisodes({
      backoff: repairBackoff,
      quietMs: options.episodeQuietMs ?? 2 * repairBackoff.maxMs,
      random: this.#random,
    });
  }

  /** The watcher saw a (coalesced) change at clock time `detectedAt`: reconcile as soon as possible. */
  notifyChange(detectedAt: number): void {
    this.#changePending = true;
    this.#changeTiming.seen(detectedAt);
    this.#wake?.abort();
  }

  /** Reconcile at the next turn of the loop (releases carried over from a previous run wait there). */
  requestReconcile(): void {
    this.#reconcileNow = true;
    this.#wake?.abort();
  }

  /** Startup (init) placed these addresses: they count as held, so that losing one later is drift. */
  seed(plan: Plan): void {
    const held = new Set(plan.placements.map((p) => p.address));
    for (const address of held) this.#held.add(address);
    this.#o.elasticIps?.held(heldBy(plan, held), this.#o.deps.clock.now());
    const present = new Set([
      ...held,
      ...plan.refusals.map((r) => r.address),
      ...plan.skipped.map((s) => s.address),
    ]);
    for (const address of present) this.#atStartup.add(tryCanonical(address) ?? address);
    this.#setView({ plan, present, held, observedAt: this.#o.deps.clock.now() });
  }

  /** Number of consecutive failed reconciles (0 when the last one worked). */
  get failures(): number {
    return this.#failures;
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
        await this.#sleep(work - now, signal);
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
        this.#retryAt =
          clock.now() + backoffDelay(this.#failureBackoff, Math.max(1, this.#failures), this.#random);
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
    if (this.#retryAt !== undefined) {
      if (now >= this.#retryAt) return "reconcile";
      wakeAt = Math.min(wakeAt, this.#retryAt);
    } else {
      if (this.#reconcileNow || now >= this.#nextResyncAt) return "reconcile";
      wakeAt = Math.min(wakeAt, this.#nextResyncAt);
      for (const due of [this.#episodes.nextRepairAt(), this.#releases.nextDueAt]) {
        if (due === undefined) continue;
        if (now >= due) return "reconcile";
        wakeAt = Math.min(wakeAt, due);
      }
    }
    if (now >= this.#nextDriftCheckAt) return "drift-check";
    return wakeAt;
  }

  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    const wake = new AbortController();
    this.#wake = wake;
    try {
      await this.#o.deps.clock.sleep(Math.max(0, ms), AbortSignal.any([signal, wake.signal]));
    } catch (error) {
      if (!signal.aborted && !wake.signal.aborted) throw error;
    } finally {
      this.#wake = undefined;
    }
  }

  /** The next drift check: 70 to 90 % of the period, so that /readyz never reads an observation older than it. */
  #scheduleDriftCheck(now: number): void {
    const period =
      this.#episodes.size > 0
        ? Math.min(this.#o.driftCheckIntervalMs, this.#episodeCheckIntervalMs)
        : this.#o.driftCheckIntervalMs;
    this.#nextDriftCheckAt = now + period * (0.7 + 0.2 * this.#random());
  }

  async #reconcileStep(signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.#o.deps;
    const measuredFrom = this.#changeTiming.stepStarts();
    this.#changePending = false;
    this.#reconcileNow = false;
    this.#stepFailedAddresses = [];
    try {
      await this.#reconcile(signal, measuredFrom);
    } catch (error) {
      if (signal.aborted) throw error;
      this.#changeTiming.stepFailed(measuredFrom);
      this.#failures += 1;
      const delay = backoffDelay(this.#failureBackoff, this.#failures, this.#random);
      this.#retryAt = clock.now() + delay;
      this.#o.metrics.reconcile("error");
      const description = describeError(error);
      const key = error instanceof Ec2Error ? `${error.operation}:${error.code}` : description;
      const failed = this.#failureLog.failed(key, description, this.#stepFailedAddresses);
      if (failed.log) {
        logger.warn(
          {
            err: error,
            failures: failed.count,
            retryInMs: delay,
            ...(failed.previous === undefined
              ? {}
              : { previousError: failed.previous.description, previousFailures: failed.previous.count }),
          },
          "reconcile failed; retrying with backoff (logged again only if the error changes)",
        );
      }
      return;
    }
    const recovered = this.#failureLog.succeeded((address) => this.#outstanding(address));
    if (recovered !== undefined) {
      logger.info({ failures: recovered.count, error: recovered.description }, "reconcile works again");
    }
    this.#failures = 0;
    this.#retryAt = undefined;
    const now = clock.now();
    this.#nextResyncAt = now + this.#o.resyncIntervalMs;
    this.#scheduleDriftCheck(now);
  }

  async #reconcile(signal: AbortSignal, measuredFrom: number | undefined): Promise<void> {
    const { deps, watcher, metrics, policy } = this.#o;
    const token = watcher.released();
    const { observation, offline, observedAt } = await this.#observe();

    const now = deps.clock.now();
    const heldBack = this.#episodes.heldBack(now);
    const present = addressesOf(observation.interfaces);
    const released = this.#o.releaseOnRemove ? this.#releases.due(token, present, now) : [];
    const planned = await planFor(
      withoutAddresses(observation, heldBack),
      {
        policy,
        released,
        assignedUnconfirmed: this.#ec2.assignedUnconfirmed,
        learnedRefusals: this.#ec2.refusals(now),
        floating: this.#floating(present),
      },
      deps,
    );
    signal.throwIfAborted();

    const repairs = new Set<string>();
    for (const action of planned.actions) {
      if (!isAssign(action)) continue;
      for (const address of action.addresses)
        if (this.#episodes.repairDue(address, now)) repairs.add(address);
    }
    const mutating = planned.actions.filter((a) => a.addresses.length > 0);
    if (mutating.length > 0) {
      deps.logger.info(
        { actions: mutating.map((a) => ({ kind: a.kind, eniId: a.eniId, addresses: a.addresses })) },
        "applying changes through EC2",
      );
    }
    const { mutatingCalls, refusedReleases, failures } = await applyPlan(planned, deps, {
      goOnAfterRefusal: true,
    });
    // Our release made room on an ENI EC2 had called full: ask again at once, not at the next read.
    if (this.#ec2.applied(planned, new Set(failures.map((f) => f.action)))) this.#reconcileNow = true;
    // Another instance's primary, a full ENI: not asked about again before the next resync, or before the
    // full ENI holds fewer addresses (see docs/troubleshooting.md, exit 6 `eni-full`).
    this.#ec2.refusedBy(
      failures,
      { placements: planned.placements, enis: observation.enis },
      deps.clock.now() + this.#o.resyncIntervalMs,
    );
    const first = failures[0];
    if (first !== undefined) {
      // One refused action must not keep the others unrouted: they were all tried, and what EC2 accepted stays
      // done. The step fails on the first refusal; the failure backoff retries it. Releases done are forgotten,
      // a failed release is kept for a later try.
      this.#stepFailedAddresses = failures.flatMap((f) => f.action.addresses);
      const notReleased = failures.filter((f) => isRelease(f.action)).flatMap((f) => f.action.addresses);
      watcher.acknowledgeReleased(
        this.#releases.acted(token, released, [...refusedReleases, ...notReleased], deps.clock.now()),
      );
      throw first.error;
    }
    const acceptedAt = deps.clock.now();
    const changeMs = this.#changeTiming.stepDone(
      measuredFrom,
      observedAt,
      mutatingCalls > 0 ? acceptedAt : undefined,
    );
    if (changeMs !== undefined) metrics.changeToAssigned(changeMs);
    for (const address of repairs) {
      this.#episodes.repaired(address, acceptedAt);
      metrics.driftRepair();
    }
    if (mutatingCalls > 0) {
      deps.logger.info(
        {
          mutatingCalls,
          ...(measuredFrom === undefined ? {} : { sinceChangeMs: acceptedAt - measuredFrom }),
        },
        "EC2 accepted the changes",
      );
      await confirmPlan(planned, deps, { ...this.#o.confirm, signal });
      this.#ec2.confirmed(planned.placements.map((p) => p.address));
    }
    // What the planner was given and EC2 did not refuse: a release not yet due, or refused, stays for later.
    watcher.acknowledgeReleased(this.#releases.acted(token, released, refusedReleases, deps.clock.now()));
    for (const address of refusedReleases) {
      if (this.#releases.refusals(address) !== RELEASE_REFUSALS_BEFORE_WARNING) continue;
      deps.logger.warn(
        { address, refusals: RELEASE_REFUSALS_BEFORE_WARNING },
        `EC2 refused ${RELEASE_REFUSALS_BEFORE_WARNING} times in a row to release ${address}, which has left our interfaces but which our ENI still shows; trying again with backoff up to 60 s (logged once)`,
      );
    }

    // Everything planned is now held (confirmed through IMDS, or already in place); held-back addresses are not.
    const confirmedAt = deps.clock.now();
    const held = new Set(planned.placements.map((p) => p.address));
    this.#ec2.held(held);
    for (const address of held) {
      this.#held.add(address);
      this.#episodeEvent(this.#episodes.held(address, confirmedAt));
    }
    // An address we assigned moved when EC2 accepted it; one already in place was seen now.
    this.#o.elasticIps?.held(heldBy(planned, held), mutatingCalls > 0 ? acceptedAt : confirmedAt);
    this.#setView({ plan: offline, present, held, observedAt: confirmedAt });
    metrics.reconcile(mutatingCalls > 0 ? "applied" : "noop");
    if (mutatingCalls > 0) this.#o.onWork?.();
  }

  /**
   * Whether what a failed step tried on `address` is still to be done, after a step that worked: a release
   * still pending, or an address configured here that our ENI does not hold (refused up front since, or held
   * back). One that left the interface, or whose release is done or moot, is not.
   */
  #outstanding(address: string): boolean {
    if (this.#releases.has(address)) return true;
    const view = this.#view;
    if (view === undefined) return false;
    if (view.plan.refusals.some((r) => r.address === address)) return true;
    return view.plan.placements.some((p) => p.address === address) && !view.held.has(address);
  }

  /**
   * The floating addresses among `present`: those that appeared after startup. The planner refuses one inside
   * a prefix (a node's whereabouts slice); the pod's own IPAM addresses, there since CNI ADD, may lie in one.
   */
  #floating(present: Iterable<string>): string[] {
    return [...present]
      .map((address) => tryCanonical(address) ?? address)
      .filter((address) => !this.#atStartup.has(address));
  }

  /** Observes; asks for a reconcile when something is out of place and may be repaired now. */
  async #driftCheck(): Promise<void> {
    const { deps } = this.#o;
    this.#scheduleDriftCheck(deps.clock.now());
    let observed: Observed;
    try {
      observed = await this.#observe();
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
    const { offline } = observed;
    const satisfied = new Set(offline.satisfied);
    const heldBack = this.#episodes.heldBack(deps.clock.now());
    const out = offline.placements.filter((p) => !satisfied.has(p.address) && !heldBack.has(p.address));
    if (out.length > 0) {
      deps.logger.debug({ addresses: out.map((p) => p.address) }, "drift check: addresses not in place");
      this.#reconcileNow = true;
    }
    // A check may open an episode: the next one comes at the episode's pace.
    this.#scheduleDriftCheck(deps.clock.now());
  }

  /**
   * One observation: the pod's interfaces and our ENIs through IMDS; then, for addresses taken off our ENI,
   * who holds them (one EC2 read per family). Updates the episodes and the readiness view.
   */
  async #observe(): Promise<Observed> {
    const { deps, policy } = this.#o;
    const observedAt = deps.clock.now();
    const observation = await observe(deps);
    this.#ec2.observed(observation.enis, observation.interfaces);
    const offline = planOffline({
      interfaces: observation.interfaces,
      enis: observation.enis,
      policy,
      learnedRefusals: this.#ec2.refusals(),
      floating: this.#floating(addressesOf(observation.interfaces)),
    });
    const satisfied = new Set(offline.satisfied);
    const wanted = new Map(offline.placements.map((p) => [p.address, p]));
    const lost: string[] = [];
    for (const address of wanted.keys()) {
      if (satisfied.has(address)) {
        this.#held.add(address);
        this.#episodeEvent(this.#episodes.held(address, observedAt));
      } else if (this.#episodes.lost(address, observedAt, this.#held.has(address))) {
        this.#held.delete(address);
        lost.push(address);
      }
    }
    for (const address of this.#held) if (!wanted.has(address)) this.#held.delete(address);
    for (const event of this.#episodes.keepOnly(new Set(wanted.keys()))) this.#episodeEvent(event);

    const holders = await this.#holdersOf(lost);
    const now = deps.clock.now();
    for (const address of lost) {
      const holder = holders.get(address);
      const placement = wanted.get(address);
      if (placement !== undefined && holder === placement.eniId) {
        // EC2 says our ENI holds it: IMDS is lagging, nothing drifted.
        this.#held.add(address);
        this.#episodeEvent(this.#episodes.held(address, now));
        satisfied.add(address);
        continue;
      }
      this.#episodeEvent(this.#episodes.holder(address, holder, now));
    }
    this.#logRefusals(offline);
    this.#setView({
      plan: offline,
      present: addressesOf(observation.interfaces),
      held: satisfied,
      observedAt,
    });
    this.#o.elasticIps?.held(heldBy(offline, satisfied), observedAt);
    return { observation, offline, observedAt };
  }

  /** Who holds each address: another ENI's id, null for none, absent when the read failed. */
  async #holdersOf(addresses: readonly string[]): Promise<Map<string, Holder>> {
    const result = new Map<string, Holder>();
    if (addresses.length === 0) return result;
    const v4 = addresses.filter((a) => family(a) === 4);
    const v6 = addresses.filter((a) => family(a) === 6);
    try {
      const enis = [
        ...(v4.length === 0 ? [] : await this.#o.deps.ec2.describeNetworkInterfaces({ ipv4Addresses: v4 })),
        ...(v6.length === 0 ? [] : await this.#o.deps.ec2.describeNetworkInterfaces({ ipv6Addresses: v6 })),
      ];
      for (const address of addresses) {
        const holder = enis.find((e) => e.ipv4s.includes(address) || e.ipv6s.includes(address));
        result.set(address, holder?.eniId ?? null);
      }
    } catch (error) {
      // Unknown holders are paced as rivals; the repair itself goes ahead when its backoff has passed.
      const key = describeError(error);
      if (key !== this.#holderFailureKey) {
        this.#holderFailureKey = key;
        this.#o.deps.logger.warn(
          { err: error, addresses },
          "could not look up which ENI holds the addresses taken off our ENI; repairing them with backoff",
        );
      }
      return result;
    }
    this.#holderFailureKey = undefined;
    return result;
  }

  /** Logs and counts what the episodes report: each conflict and each drift once per episode. */
  #episodeEvent(event: EpisodeEvent | undefined): void {
    if (event === undefined) return;
    const { deps, metrics } = this.#o;
    const { episode } = event;
    const placement = this.#view?.plan.placements.find((p) => p.address === episode.address);
    const where =
      placement === undefined ? "" : ` on ${placement.interfaceName} here (ENI ${placement.eniId})`;
    switch (event.kind) {
      case "conflict":
        metrics.conflict();
        deps.logger.warn(
          {
            address: episode.address,
            interface: placement?.interfaceName,
            ourEniId: placement?.eniId,
            otherEniId: episode.rival,
          },
          `conflict: ${episode.address} is configured${where} but ENI ${episode.rival} holds it; another pod ` +
            "claims the same address (split brain?). Taking it back with backoff, at once if it is let go; " +
            "logged once per episode.",
        );
        break;
      case "drift":
        deps.logger.warn(
          { address: episode.address, interface: placement?.interfaceName, ourEniId: placement?.eniId },
          `drift: ${episode.address} is configured${where} but no ENI holds it any more; assigning it again ` +
            "at once. Logged once per episode.",
        );
        break;
      case "over":
        deps.logger.info(
          {
            address: episode.address,
            repairs: episode.repairs,
            moves: episode.moves,
            otherEniId: episode.rival,
          },
          event.reason === "quiet"
            ? "drift episode over: our ENI has held the address undisturbed"
            : "drift episode over: the address is no longer configured here",
        );
        break;
    }
    metrics.addressesInConflict(this.#episodes.conflicts());
  }

  #logRefusals(offline: Plan): void {
    const key = offline.refusals.map((r) => `${r.address}|${r.interfaceName}|${r.reason}`).join("\n");
    if (key === this.#refusalKey) return;
    this.#refusalKey = key;
    if (offline.refusals.length === 0) {
      this.#o.deps.logger.info("no address refused any more");
      return;
    }
    for (const refusal of offline.refusals) {
      this.#o.deps.logger.error(
        { address: refusal.address, interface: refusal.interfaceName, reason: refusal.reason },
        refusal.detail,
      );
    }
  }

  #setView(view: ReadinessView): void {
    this.#view = view;
    this.#o.metrics.addressesHeld(view.plan.placements.filter((p) => view.held.has(p.address)).length);
    this.#o.metrics.addressesInConflict(this.#episodes.conflicts());
  }

  /** Releases the addresses of our interfaces that our ENIs hold (IPMGR_RELEASE_ON_EXIT). */
  async releaseOwn(): Promise<{ mutatingCalls: number; released: string[] }> {
    const { deps, policy, watcher } = this.#o;
    const ours = new Set([...addressesOf(watcher.snapshot()), ...this.#held]);
    const observation = await observe(deps);
    // Our interfaces without their addresses: the planner releases only from the ENIs behind them, and
    // nothing counts as still present.
    const interfaces = watcher.snapshot().map((i) => ({ ...i, addresses: [] }));
    const planned = planOffline({
      interfaces,
      enis: observation.enis,
      policy,
      released: [...ours],
      assignedUnconfirmed: this.#ec2.assignedUnconfirmed,
    });
    // Every release is tried, even after one EC2 denies (say, a missing permission for IPv6 only).
    const { mutatingCalls, refusedReleases, failures } = await applyPlan(planned, deps, {
      goOnAfterRefusal: true,
    });
    // A release EC2 refused: our ENI no longer held the address (applyPlan logged it); nothing to do on exit.
    const notReleased = new Set([...refusedReleases, ...failures.flatMap((f) => f.action.addresses)]);
    const released = planned.actions.flatMap((a) => a.addresses).filter((a) => !notReleased.has(a));
    deps.logger.info(
      { released },
      released.length === 0 ? "nothing to release on exit" : "released our addresses",
    );
    const first = failures[0];
    if (first !== undefined) throw first.error;
    return { mutatingCalls, released };
  }

  health(): ProbeResult {
    const now = this.#o.deps.clock.now();
    const lines: string[] = [];
    const { watcher } = this.#o;
    const pollLimit = Math.max(3 * watcher.pollIntervalMs, 1_000);
    if (watcher.lastPollAt === undefined || now - watcher.lastPollAt > pollLimit) {
      lines.push(`the interfaces were not read in the last ${pollLimit} ms`);
    }
    if (this.#started) {
      if (this.#stepStartedAt !== undefined) {
        if (now - this.#stepStartedAt > this.#maxStepMs) {
          lines.push(`a reconcile step has been running for ${now - this.#stepStartedAt} ms`);
        }
      } else {
        const tickLimit = 3 * this.#o.driftCheckIntervalMs;
        if (this.#lastTickAt === undefined || now - this.#lastTickAt > tickLimit) {
          lines.push(`the reconcile loop has not run in the last ${tickLimit} ms`);
        }
      }
    }
    if (lines.length > 0) return { ok: false, lines };
    return {
      ok: true,
      lines:
        this.#failures > 0
          ? [`${this.#failures} failed reconcile(s) in a row: ${this.#failureLog.open?.description}`]
          : [],
    };
  }

  readiness(): ProbeResult {
    if (!this.#started || this.#view === undefined) return { ok: false, lines: ["startup has not finished"] };
    const now = this.#o.deps.clock.now();
    const addresses = readinessOf({
      view: this.#view,
      now,
      maxAgeMs: this.#o.driftCheckIntervalMs,
      configured: this.#o.watcher.snapshot(),
      episodes: this.#episodes,
      lastFailure: this.#failureLog.open?.description,
    });
    const elasticIps = this.#o.elasticIps?.readiness(now);
    if (elasticIps === undefined) return addresses;
    return { ok: addresses.ok && elasticIps.ok, lines: [...addresses.lines, ...elasticIps.lines] };
  }
}

/** The placements of `plan` whose address is in `held`: address -> the ENI (ours) that holds it. */
function heldBy(plan: Plan, held: ReadonlySet<string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of plan.placements) if (held.has(p.address)) out.set(p.address, p.eniId);
  return out;
}

function withoutAddresses(observation: Observation, drop: ReadonlySet<string>): Observation {
  if (drop.size === 0) return observation;
  return {
    ...observation,
    interfaces: observation.interfaces.map((iface) => ({
      ...iface,
      addresses: iface.addresses.filter((a) => !drop.has(a)),
    })),
  };
}
