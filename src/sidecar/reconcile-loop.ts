import { Ec2Error } from "../eni/errors/ec2-error.js";
import { family } from "../eni/ip.js";
import { plan as planOffline } from "../eni/planner.js";
import {
  applyPlan,
  confirmPlan,
  type Observation,
  observe,
  planFor,
  type ReconcileDeps,
} from "../eni/reconcile.js";
import type { Placement, Plan, PlanPolicy, PodInterface } from "../eni/types.js";
import { addressesOf } from "./address-diff.js";
import type { ReleasedToken } from "./address-watcher.js";
import { type BackoffPolicy, backoffDelay, DEFAULT_BACKOFF } from "./backoff.js";
import type { ProbeResult, SidecarStatus } from "./http-server.js";
import type { SidecarMetrics } from "./metrics.js";

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
  /** Full reconcile period in ms, even when nothing changed (IPMGR_RESYNC_INTERVAL_MS). */
  readonly resyncIntervalMs: number;
  /** IMDS-only drift check period in ms (IPMGR_DRIFT_CHECK_INTERVAL_MS). */
  readonly driftCheckIntervalMs: number;
  /** Wait for IMDS to show what EC2 accepted (IPMGR_CONFIRM_TIMEOUT_MS / IPMGR_CONFIRM_INTERVAL_MS). */
  readonly confirm: { readonly timeoutMs: number; readonly intervalMs: number };
  /** Backoff between repairs of one drifting address. Default 1 s doubling to 60 s. */
  readonly repairBackoff?: BackoffPolicy;
  /** Backoff between attempts after a failed reconcile. Default 1 s doubling to 60 s. */
  readonly failureBackoff?: BackoffPolicy;
  /**
   * How long, in ms, a drifting address must stay held by our ENI for its episode to end (and its backoff
   * to reset). Default: twice the repair backoff's maximum, so that a rival retrying at the maximum is still
   * seen as the same episode.
   */
  readonly episodeQuietMs?: number;
  /**
   * How long one step (a reconcile with its EC2 retries and IMDS confirmation) may run before /healthz calls
   * the loop stuck, in ms. Default: the confirm timeout plus 120 s.
   */
  readonly maxStepMs?: number;
  /** For tests: the jitter source, in [0, 1). */
  readonly random?: () => number;
}

/** A drifting address: configured here, held by our ENI earlier, taken away since. */
interface DriftEpisode {
  readonly startedAt: number;
  /** Repairs made in this episode. */
  attempts: number;
  /** Clock time before which no repair is made. */
  nextRepairAt: number;
  /** The address is not on our ENI at the last observation. */
  pendingRepair: boolean;
  /** Since when our ENI holds it again (undefined while it does not). */
  heldSince: number | undefined;
  /** Logged (and counted, when another ENI holds it) once per episode. */
  reported: boolean;
  /** The ENI that held it when the episode was reported; undefined when none did. */
  otherHolder: string | undefined;
}

interface StatusView {
  readonly plan: Plan;
  /** Addresses seen on the interfaces at that observation (all families and kinds). */
  readonly present: ReadonlySet<string>;
  /** Placements held by their ENI. */
  readonly held: ReadonlySet<string>;
}

/** The first sentence of an error, for logs and /readyz. */
function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function isAbortFrom(signal: AbortSignal, error: unknown): boolean {
  return (
    signal.aborted && (error === signal.reason || (error instanceof Error && error.name === "AbortError"))
  );
}

/**
 * The sidecar's state machine. Every step is one of:
 * - a reconcile (observe, plan, apply, confirm) after a change on the pod interfaces, a resync, a drift
 *   repair coming due, or a retry after a failure;
 * - a drift check: IMDS only, no EC2 call; if an address is not where it must be, a reconcile follows.
 *
 * Drift: an address we held that is still configured here but no longer on our ENI (split brain, or
 * something unassigned it). It is repaired with per-address backoff and counted, and the episode is logged
 * once, naming the other holder. An address that left our interface and came back (failback) is a plain
 * change, repaired at once.
 */
export class ReconcileLoop implements SidecarStatus {
  readonly #o: ReconcileLoopOptions;
  readonly #repairBackoff: BackoffPolicy;
  readonly #failureBackoff: BackoffPolicy;
  readonly #episodeQuietMs: number;
  readonly #maxStepMs: number;
  readonly #random: () => number;

  /** Addresses our ENI held at the last observation (or confirmation). */
  readonly #held = new Set<string>();
  readonly #episodes = new Map<string, DriftEpisode>();
  #view: StatusView | undefined;

  #changePending = false;
  #changeDetectedAt: number | undefined;
  #reconcileNow = false;
  #nextResyncAt = 0;
  #nextDriftCheckAt = 0;

  #failures = 0;
  #retryAt: number | undefined;
  #failureKey: string | undefined;
  #lastFailure: string | undefined;
  #driftCheckFailureKey: string | undefined;
  #refusalKey = "";

  #started = false;
  #lastTickAt: number | undefined;
  #stepStartedAt: number | undefined;
  #wake: AbortController | undefined;

  constructor(options: ReconcileLoopOptions) {
    this.#o = options;
    this.#repairBackoff = options.repairBackoff ?? DEFAULT_BACKOFF;
    this.#failureBackoff = options.failureBackoff ?? DEFAULT_BACKOFF;
    this.#episodeQuietMs = options.episodeQuietMs ?? 2 * this.#repairBackoff.maxMs;
    this.#maxStepMs = options.maxStepMs ?? options.confirm.timeoutMs + 120_000;
    this.#random = options.random ?? Math.random;
  }

  /** The watcher saw a (coalesced) change at clock time `detectedAt`: reconcile as soon as possible. */
  notifyChange(detectedAt: number): void {
    this.#changePending = true;
    this.#changeDetectedAt ??= detectedAt;
    this.#wake?.abort();
  }

  /** Startup (init) placed these addresses: they count as held, so that losing one later is drift. */
  seed(plan: Plan): void {
    const held = new Set(plan.placements.map((p) => p.address));
    for (const address of held) this.#held.add(address);
    const present = new Set([
      ...held,
      ...plan.refusals.map((r) => r.address),
      ...plan.skipped.map((s) => s.address),
    ]);
    this.#setView({ plan, present, held });
  }

  /** Number of consecutive failed reconciles (0 when the last one worked). */
  get failures(): number {
    return this.#failures;
  }

  /** Runs until `signal` aborts; the step in progress (an EC2 call) is finished first, never cut. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock } = this.#o.deps;
    const start = clock.now();
    this.#started = true;
    this.#nextResyncAt = start + this.#o.resyncIntervalMs;
    this.#nextDriftCheckAt = start + this.#o.driftCheckIntervalMs;
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
        else await this.#reconcileStep(signal);
      } catch (error) {
        if (isAbortFrom(signal, error)) break;
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
  #due(now: number): "reconcile" | "drift-check" | number {
    if (this.#changePending) return "reconcile";
    let wakeAt = this.#nextDriftCheckAt;
    if (this.#retryAt !== undefined) {
      if (now >= this.#retryAt) return "reconcile";
      wakeAt = Math.min(wakeAt, this.#retryAt);
    } else {
      if (this.#reconcileNow || now >= this.#nextResyncAt) return "reconcile";
      wakeAt = Math.min(wakeAt, this.#nextResyncAt);
      for (const episode of this.#episodes.values()) {
        if (!episode.pendingRepair) continue;
        if (now >= episode.nextRepairAt) return "reconcile";
        wakeAt = Math.min(wakeAt, episode.nextRepairAt);
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

  async #reconcileStep(signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.#o.deps;
    const measuredFrom = this.#changeDetectedAt;
    this.#changePending = false;
    this.#changeDetectedAt = undefined;
    this.#reconcileNow = false;
    try {
      await this.#reconcile(signal, measuredFrom);
    } catch (error) {
      if (isAbortFrom(signal, error)) throw error;
      this.#changeDetectedAt ??= measuredFrom;
      this.#failures += 1;
      const delay = backoffDelay(this.#failureBackoff, this.#failures, this.#random);
      this.#retryAt = clock.now() + delay;
      this.#o.metrics.reconcile("error");
      this.#lastFailure = describeError(error);
      const key = error instanceof Ec2Error ? `${error.operation}:${error.code}` : this.#lastFailure;
      if (key !== this.#failureKey) {
        this.#failureKey = key;
        logger.error(
          { err: error, failures: this.#failures, retryInMs: delay },
          "reconcile failed; retrying with backoff (logged again only if the error changes)",
        );
      }
      return;
    }
    if (this.#failures > 0) {
      logger.info({ failures: this.#failures }, "reconcile works again");
    }
    this.#failures = 0;
    this.#retryAt = undefined;
    this.#failureKey = undefined;
    this.#lastFailure = undefined;
    const now = clock.now();
    this.#nextResyncAt = now + this.#o.resyncIntervalMs;
    this.#nextDriftCheckAt = now + this.#o.driftCheckIntervalMs;
  }

  async #reconcile(signal: AbortSignal, measuredFrom: number | undefined): Promise<void> {
    const { deps, watcher, metrics, policy } = this.#o;
    const token = watcher.released();
    const observation = await observe(deps);
    const offline = planOffline({ interfaces: observation.interfaces, enis: observation.enis, policy });
    this.#track(offline);
    await this.#reportNewEpisodes(offline);

    const now = deps.clock.now();
    const heldBack = new Set<string>();
    for (const [address, episode] of this.#episodes) {
      if (episode.pendingRepair && now < episode.nextRepairAt) heldBack.add(address);
    }
    const present = addressesOf(observation.interfaces);
    const released = this.#o.releaseOnRemove ? [...token.keys()].filter((a) => !present.has(a)) : [];
    const planned = await planFor(withoutAddresses(observation, heldBack), policy, released, deps);
    signal.throwIfAborted();

    const repairs = new Set<string>();
    for (const action of planned.actions) {
      if (action.kind !== "assign-ipv4" && action.kind !== "assign-ipv6") continue;
      for (const address of action.addresses)
        if (this.#episodes.get(address)?.pendingRepair) repairs.add(address);
    }
    const mutating = planned.actions.filter((a) => a.addresses.length > 0);
    if (mutating.length > 0) {
      deps.logger.info(
        { actions: mutating.map((a) => ({ kind: a.kind, eniId: a.eniId, addresses: a.addresses })) },
        "applying changes through EC2",
      );
    }
    const { mutatingCalls } = await applyPlan(planned, deps);
    const acceptedAt = deps.clock.now();
    if (mutatingCalls > 0 && measuredFrom !== undefined) metrics.changeToAssigned(acceptedAt - measuredFrom);
    for (const address of repairs) {
      const episode = this.#episodes.get(address);
      if (episode === undefined) continue;
      episode.attempts += 1;
      episode.pendingRepair = false;
      episode.nextRepairAt = acceptedAt + backoffDelay(this.#repairBackoff, episode.attempts, this.#random);
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
    }
    watcher.acknowledgeReleased(token);

    // Everything planned is now held (confirmed through IMDS, or already in place); held-back addresses are not.
    const held = new Set(planned.placements.map((p) => p.address));
    for (const address of held) {
      this.#held.add(address);
      const episode = this.#episodes.get(address);
      if (episode !== undefined) {
        episode.pendingRepair = false;
        episode.heldSince ??= deps.clock.now();
      }
    }
    this.#setView({ plan: offline, present, held });
    metrics.reconcile(mutatingCalls > 0 ? "applied" : "noop");
  }

  /** IMDS only: finds drift (or anything not in place) and asks for a reconcile. Never calls EC2. */
  async #driftCheck(): Promise<void> {
    const { deps, policy } = this.#o;
    this.#nextDriftCheckAt = deps.clock.now() + this.#o.driftCheckIntervalMs;
    let observation: Observation;
    let offline: Plan;
    try {
      observation = await observe(deps);
      offline = planOffline({ interfaces: observation.interfaces, enis: observation.enis, policy });
    } catch (error) {
      const key = describeError(error);
      if (key !== this.#driftCheckFailureKey) {
        this.#driftCheckFailureKey = key;
        deps.logger.warn({ err: error }, "drift check failed (IMDS); trying again at the next check");
      }
      return;
    }
    if (this.#driftCheckFailureKey !== undefined) {
      this.#driftCheckFailureKey = undefined;
      deps.logger.info("drift check works again");
    }
    this.#track(offline);
    const satisfied = new Set(offline.satisfied);
    this.#setView({ plan: offline, present: addressesOf(observation.interfaces), held: satisfied });
    const out = offline.placements.filter((p) => !satisfied.has(p.address) && !this.#episodes.has(p.address));
    if (out.length > 0) {
      deps.logger.debug({ addresses: out.map((p) => p.address) }, "drift check: addresses not in place");
      this.#reconcileNow = true;
    }
  }

  /** Updates `held` and the drift episodes from an observation's offline plan. */
  #track(offline: Plan): void {
    const { clock, logger } = this.#o.deps;
    const now = clock.now();
    const satisfied = new Set(offline.satisfied);
    const wanted = new Map(offline.placements.map((p) => [p.address, p]));
    for (const [address, placement] of wanted) {
      const episode = this.#episodes.get(address);
      if (satisfied.has(address)) {
        this.#held.add(address);
        if (episode !== undefined) {
          episode.pendingRepair = false;
          episode.heldSince ??= now;
          if (now - episode.heldSince >= this.#episodeQuietMs) {
            this.#episodes.delete(address);
            logger.info(
              { address, eniId: placement.eniId, repairs: episode.attempts },
              "drift episode over: our ENI has held the address undisturbed",
            );
          }
        }
        continue;
      }
      if (this.#held.delete(address) && episode === undefined) {
        this.#episodes.set(address, {
          startedAt: now,
          attempts: 0,
          nextRepairAt: now,
          pendingRepair: true,
          heldSince: undefined,
          reported: false,
          otherHolder: undefined,
        });
      } else if (episode !== undefined) {
        episode.pendingRepair = true;
        episode.heldSince = undefined;
      }
    }
    for (const address of this.#held) if (!wanted.has(address)) this.#held.delete(address);
    for (const [address, episode] of this.#episodes) {
      if (wanted.has(address)) continue;
      this.#episodes.delete(address);
      logger.info(
        { address, repairs: episode.attempts, otherHolder: episode.otherHolder },
        "drift episode over: the address is no longer configured here",
      );
    }
    this.#logRefusals(offline);
  }

  /** Logs each drift episode once, naming the ENI that took the address; counts it as a conflict if one did. */
  async #reportNewEpisodes(offline: Plan): Promise<void> {
    const { deps, metrics } = this.#o;
    for (const [address, episode] of this.#episodes) {
      if (episode.reported || !episode.pendingRepair) continue;
      const placement = offline.placements.find((p) => p.address === address);
      if (placement === undefined) continue;
      let holders: string[];
      try {
        holders = await this.#holdersOf(address);
      } catch (error) {
        // Only the log line loses the other ENI's name; the repair itself goes ahead.
        deps.logger.warn({ err: error, address }, "could not look up which ENI holds the drifted address");
        holders = [];
      }
      if (holders.includes(placement.eniId)) {
        // EC2 says our ENI holds it: IMDS is lagging, nothing drifted.
        this.#episodes.delete(address);
        this.#held.add(address);
        continue;
      }
      episode.reported = true;
      episode.otherHolder = holders[0];
      if (episode.otherHolder !== undefined) {
        metrics.conflict();
        deps.logger.warn(
          {
            address,
            interface: placement.interfaceName,
            ourEniId: placement.eniId,
            otherEniId: episode.otherHolder,
            repairBackoffMs: this.#repairBackoff,
          },
          `conflict: ${address} is configured on ${placement.interfaceName} here (ENI ${placement.eniId}) but ` +
            `ENI ${episode.otherHolder} holds it; another pod claims the same address (split brain?). ` +
            "Taking it back with backoff; logged once per episode.",
        );
      } else {
        deps.logger.warn(
          { address, interface: placement.interfaceName, ourEniId: placement.eniId },
          `drift: ${address} is configured on ${placement.interfaceName} here but no longer on ENI ` +
            `${placement.eniId}, and no ENI holds it; assigning it again with backoff. Logged once per episode.`,
        );
      }
    }
  }

  async #holdersOf(address: string): Promise<string[]> {
    const filter = family(address) === 4 ? { ipv4Addresses: [address] } : { ipv6Addresses: [address] };
    const enis = await this.#o.deps.ec2.describeNetworkInterfaces(filter);
    return enis.map((e) => e.eniId);
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

  #setView(view: StatusView): void {
    this.#view = view;
    this.#o.metrics.addressesHeld(view.plan.placements.filter((p) => view.held.has(p.address)).length);
  }

  /** Releases the addresses of our interfaces that our ENIs hold (IPMGR_RELEASE_ON_EXIT). */
  async releaseOwn(): Promise<{ mutatingCalls: number; released: string[] }> {
    const { deps, policy, watcher } = this.#o;
    const ours = new Set([...addressesOf(watcher.snapshot()), ...this.#held]);
    const observation = await observe(deps);
    // Our interfaces without their addresses: the planner releases only from the ENIs behind them, and
    // nothing counts as still present.
    const interfaces = watcher.snapshot().map((i) => ({ ...i, addresses: [] }));
    const planned = planOffline({ interfaces, enis: observation.enis, policy, released: [...ours] });
    const { mutatingCalls } = await applyPlan(planned, deps);
    const released = planned.actions.flatMap((a) => a.addresses);
    deps.logger.info(
      { released },
      released.length === 0 ? "nothing to release on exit" : "released our addresses",
    );
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
        this.#failures > 0 ? [`${this.#failures} failed reconcile(s) in a row: ${this.#lastFailure}`] : [],
    };
  }

  readiness(): ProbeResult {
    const view = this.#view;
    if (!this.#started || view === undefined) return { ok: false, lines: ["startup has not finished"] };
    const lines: string[] = [];
    for (const iface of this.#o.watcher.snapshot()) {
      for (const address of iface.addresses) {
        if (!view.present.has(address)) lines.push(`${address} on ${iface.name}: seen, not reconciled yet`);
      }
    }
    for (const refusal of view.plan.refusals) lines.push(`refused: ${refusal.detail}`);
    const now = this.#o.deps.clock.now();
    for (const placement of view.plan.placements) {
      if (view.held.has(placement.address)) continue;
      lines.push(this.#missingLine(placement, now));
    }
    if (lines.length > 0 && this.#lastFailure !== undefined)
      lines.push(`last reconcile failed: ${this.#lastFailure}`);
    if (lines.length > 0) return { ok: false, lines };
    return {
      ok: true,
      lines: view.plan.placements.map((p) => `${p.address} on ${p.interfaceName} held by ${p.eniId}`),
    };
  }

  #missingLine(placement: Placement, now: number): string {
    const episode = this.#episodes.get(placement.address);
    const head = `${placement.address} on ${placement.interfaceName}: not held by ${placement.eniId}`;
    if (episode === undefined) return `${head} yet`;
    const who = episode.otherHolder === undefined ? "" : ` (held by ${episode.otherHolder})`;
    const wait = Math.max(0, episode.nextRepairAt - now);
    return `${head}${who}; drift repair ${episode.attempts + 1} in ${wait} ms`;
  }
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
