/**
 * The bridge's loop: Kubernetes changes wake it; changes arriving within the wave window are gathered
 * into one wave; a wave reads this node's ENIs from IMDS, computes the desired state from everything the
 * watches hold, and makes the EC2 calls that close the gap (at most one assign per ENI and family).
 * Every wave starts from the full state, so nothing is lost between waves: a wave that fails (EC2 throttled
 * or unavailable after its retries, IMDS failing) is run again whole after a capped exponential backoff.
 */
import type { BackoffPolicy } from "../eni/backoff.js";
import type { Ec2Api } from "../eni/ec2-api.js";
import { readEnis } from "../eni/eni-discovery.js";
import { IpmgrError } from "../eni/errors/ipmgr-error.js";
import type { Imds } from "../eni/imds.js";
import { LoopSchedule } from "../eni/loop-schedule.js";
import { isAssign, isMove } from "../eni/plan-actions.js";
import type { Clock } from "../eni/process/clock.js";
import type { Logger } from "../eni/process/logger.js";
import type { ProbeResult } from "../eni/process/probe-server.js";
import { planFor } from "../eni/reconcile.js";
import type { Plan } from "../eni/types.js";
import type { AttachStep } from "./attach/attach-step.js";
import type { CniClaims } from "./cni/cni-claims.js";
import { BridgeWatches } from "./kube/bridge-watches.js";
import {
  CONFIRM_TIMEOUT_MS,
  CONFIRMATION_MAX_AGE_MS,
  type IpPoolInfo,
  type KubeApi,
  type OverlappingReservationInfo,
  type PodInfo,
} from "./kube/kube-api.js";
import type { ViewTrust } from "./kube/view-trust.js";
import { MultusEnis } from "./node/multus-enis.js";
import type { PrefixMode } from "./prefixes/prefix-mode.js";
import type { SubnetView } from "./reservations/reservation-cover.js";
import { type DesiredState, desiredState } from "./state/desired-state.js";
import type { WhereaboutsRange } from "./state/whereabouts-ranges.js";
import type { BridgeMetrics, WaveOutcome } from "./telemetry/metrics.js";
import type { PodEventReporter } from "./telemetry/pod-events.js";
import {
  ConflictEpisodes,
  DEFAULT_EPISODE_CHECK_MS,
  DEFAULT_REPAIR_BACKOFF,
  episodeKey,
  withoutTaken,
} from "./waves/conflict-episodes.js";
import { type AddressCount, countPodAddresses } from "./waves/pod-address-count.js";
import { RefusedAddresses } from "./waves/refused-addresses.js";
import { ReleaseGuard } from "./waves/release-guard.js";
import { announceReleases, applyWave } from "./waves/wave-apply.js";
import { overlayRecent, planWave, type RecentChange } from "./waves/wave-plan.js";
import { decideReleases } from "./waves/wave-releases.js";
import { reportLines, tellWave, type WaveReport, type WaveReportInput } from "./waves/wave-report.js";

export { NO_MANAGE_TAG } from "./node/multus-enis.js";

/**
 * A runtime waits on a CNI ADD: its wave gathers for 10 ms at most, not the whole wave window (200 ms by
 * default), so that ADD adds about one EC2 round trip. 50 pods starting together still make at most two
 * assigns per ENI and family: those that arrive while the first wave runs join the next.
 */
export const CNI_WAVE_WINDOW_MS = 10;

export interface BridgeDeps {
  readonly kube: KubeApi;
  readonly imds: Imds;
  readonly ec2: Ec2Api;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: BridgeMetrics;
  readonly events: PodEventReporter;
  /** Prefix mode (IPMGR_BRIDGE_PREFIX_MODE); undefined when off. */
  readonly prefixes?: PrefixMode;
  /** Plugin mode (IPMGR_BRIDGE_CNI_SOCKET): the chained plugin's claims, in every wave; undefined when off. */
  readonly cni?: CniClaims;
  /** Attach mode (IPMGR_BRIDGE_ATTACH): its pass, when due, before each wave reads the ENIs; undefined when off. */
  readonly attach?: Pick<AttachStep, "step" | "nextAt" | "lines">;
}

export interface BridgeOptions {
  readonly nodeName: string;
  readonly allowedCidrs: readonly string[];
  /** Device indexes of the Multus ENIs; empty: the ENIs tagged no_manage=true. */
  readonly deviceIndexes: readonly number[];
  readonly waveWindowMs: number;
  /**
   * The window of a wave a CNI ADD waits on (plugin mode), ms: at most waveWindowMs. Default
   * CNI_WAVE_WINDOW_MS.
   */
  readonly cniWaveWindowMs?: number;
  readonly releaseGraceMs: number;
  readonly releaseDryRun: boolean;
  readonly resyncIntervalMs: number;
  readonly retry: BackoffPolicy;
  /** How long an EC2 change is trusted over IMDS, which reflects it with a delay, in ms. */
  readonly recentMemoryMs: number;
  /** Addresses per ENI and family for the instance type; undefined: unknown (no room check). */
  readonly addressesPerEni: number | undefined;
  /**
   * A watch not heard from (event or bookmark) for this long makes the view stale: no release until it is
   * heard from again, ms. The same bound as the Kubernetes adapter's silence watchdog.
   */
  readonly watchSilenceMs: number;
  /** Pacing of repairs of an address another ENI took back (ConflictEpisodes). Default 1 s doubling to 60 s. */
  readonly repairBackoff?: BackoffPolicy;
  /** While such an episode is open, a wave looks again after this many ms at most. Default 1,000. */
  readonly episodeCheckMs?: number;
  /**
   * The fresh list that confirms releases fails after this long, ms; releases wait for it, assigns never do.
   * Default CONFIRM_TIMEOUT_MS (kube-api.ts).
   */
  readonly confirmTimeoutMs?: number;
}

export type { WaveReport } from "./waves/wave-report.js";

/** The desired state from a reading of the pods, IPPools and reservations, on the ENIs of one wave. */
type DesiredFrom = (
  pods: readonly PodInfo[],
  ipPools: readonly IpPoolInfo[],
  reservations: readonly OverlappingReservationInfo[],
) => DesiredState;

function isAbort(error: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (error instanceof Error && error.name === "AbortError");
}

export class Bridge {
  readonly #watches = new BridgeWatches();
  #dirty = true;
  /** The last wave changed the ENIs and refused addresses for room: the next runs without the window. */
  #roomMade = false;
  /** A CNI ADD waits on the next wave: its window is CNI_WAVE_WINDOW_MS at most. */
  #urgent = false;
  #lastWaveAt = Number.NEGATIVE_INFINITY;
  /** Failed waves, the retry's time and the wake-up on a change. */
  readonly #schedule: LoopSchedule;
  #unusedSince = new Map<string, number>();
  #recent: RecentChange[] = [];
  #nextPendingAt: number | undefined;
  #dryRunLogged = new Set<string>();
  #report: WaveReport | undefined;
  #running = false;
  #stopped = false;
  #lastGoodRanges = new Map<string, readonly WhereaboutsRange[]>();
  /** The desired state from a reading, on the ENIs of the last wave: /readyz counts the pods' addresses. */
  #desiredNow: DesiredFrom | undefined;
  readonly #guard: ReleaseGuard;
  readonly #multusEnis: MultusEnis;
  readonly #confirmTimeoutMs: number;
  /** Addresses EC2 refused: held back from the batches, asked again alone after a backoff. */
  readonly #refused = new RefusedAddresses();

  /** Addresses another ENI took back after ours held them (two pods on two nodes carrying one address). */
  readonly #episodes: ConflictEpisodes;
  #nextEpisodeCheckAt: number | undefined;

  constructor(
    private readonly deps: BridgeDeps,
    private readonly options: BridgeOptions,
  ) {
    this.#episodes = new ConflictEpisodes({ backoff: options.repairBackoff ?? DEFAULT_REPAIR_BACKOFF });
    this.#guard = new ReleaseGuard(deps);
    this.#multusEnis = new MultusEnis(deps.ec2, options.deviceIndexes);
    this.#schedule = new LoopSchedule({ clock: deps.clock, backoff: options.retry });
    this.#confirmTimeoutMs = options.confirmTimeoutMs ?? CONFIRM_TIMEOUT_MS;
    deps.cni?.onChange((urgent) => this.changed(urgent));
  }

  /** Starts the four watches; resolves once each has listed once (or failed and is being retried). */
  async start(): Promise<void> {
    const { kube, metrics } = this.deps;
    const listener = {
      changed: () => this.changed(),
      failed: (resource: string) => metrics.watchRestart(resource),
      healthChanged: () => this.#healthChanged(),
    };
    await this.#watches.start(kube, this.options.nodeName, listener);
    await this.deps.prefixes?.start(listener);
  }

  /** Whether releases may act on the watches' caches now, and why not. */
  #trustNow(): ViewTrust {
    return this.#watches.trust(this.deps.clock.now(), this.options.watchSilenceMs);
  }

  /** A watch failed, relisted or works again: graces restart on a stale view, a wave runs when it is back. */
  #healthChanged(): void {
    if (this.#noteTrust(this.#trustNow())) this.changed();
  }

  /** Records the trust (the guard logs each change once); every grace restarts while the view is stale. */
  #noteTrust(trust: ViewTrust): boolean {
    if (!trust.trusted) this.#unusedSince = new Map();
    return this.#guard.noteTrust(trust, this.#watches.faulted, this.deps.clock.now());
  }

  /**
   * A Kubernetes object changed: a wave runs after the window. `urgent` (a CNI ADD waits): after
   * CNI_WAVE_WINDOW_MS at most; ADDs that come while that wave runs are gathered by the next.
   */
  changed(urgent = false): void {
    this.#dirty = true;
    if (urgent) this.#urgent = true;
    this.#schedule.wake();
  }

  /** The last wave's report; undefined before the first. */
  get report(): WaveReport | undefined {
    return this.#report;
  }

  #lastSubnets: SubnetView[] = [];
  /** The subnets of this node's Multus ENIs at the last wave, for the reservations keeper. */
  get lastSubnets(): readonly SubnetView[] {
    return this.#lastSubnets;
  }

  /** Whether the view of the cluster can be trusted now (every watch listed, watching, heard from). */
  get trusted(): boolean {
    return this.#trustNow().trusted;
  }

  /** Whether every watch has listed once. */
  get synced(): boolean {
    return this.#watches.synced;
  }

  /** The ranges the last wave managed, for the reservations keeper. */
  #lastDesired: DesiredState | undefined;
  get lastDesired(): DesiredState | undefined {
    return this.#lastDesired;
  }

  /** Runs waves until `signal` aborts; resolves then. Throws only for a bug. */
  async run(signal: AbortSignal): Promise<void> {
    this.#running = true;
    try {
      while (!signal.aborted) {
        await this.#waitForTrigger(signal);
        if (signal.aborted) break;
        // A wave owed to a refusal for room runs at once: what it retries is known, nothing to gather.
        if (!this.#roomMade) await this.#gather(signal);
        this.#dirty = false;
        this.#roomMade = false;
        this.#urgent = false;
        await this.runWave(signal);
      }
    } catch (error) {
      if (!isAbort(error, signal)) throw error;
    } finally {
      this.#running = false;
      this.#stopped = true;
    }
  }

  /** The wave window: changes gathered; a CNI ADD coming meanwhile shortens it to CNI_WAVE_WINDOW_MS. */
  async #gather(signal: AbortSignal): Promise<void> {
    const { clock } = this.deps;
    const start = clock.now();
    for (;;) {
      const window = this.#urgent
        ? Math.min(this.options.waveWindowMs, this.options.cniWaveWindowMs ?? CNI_WAVE_WINDOW_MS)
        : this.options.waveWindowMs;
      if (clock.now() >= start + window) return;
      await this.#schedule.sleepUntil(start + window, signal, true);
    }
  }

  /** One wave, its failure handled (backoff scheduled). Exposed for tests. */
  async runWave(signal: AbortSignal): Promise<WaveOutcome> {
    const { clock, logger, metrics } = this.deps;
    const started = clock.now();
    try {
      const outcome = await this.#wave(signal);
      metrics.wave(outcome, clock.now() - started);
      const failures = this.#schedule.failures;
      if (this.#schedule.succeeded() !== undefined) logger.info({ failures }, "waves work again");
      return outcome;
    } catch (error) {
      if (isAbort(error, signal)) throw error;
      metrics.wave("error", clock.now() - started);
      const message = error instanceof Error ? error.message : String(error);
      const { failures, retryInMs } = this.#schedule.failed(message, message);
      this.deps.cni?.waveFailed(message);
      if (!(error instanceof IpmgrError)) logger.error({ err: error }, "a wave failed unexpectedly");
      // The first failure and every tenth: a wave that keeps failing stays visible in the log.
      if (failures === 1 || failures % 10 === 0) {
        logger.warn(
          { err: error, failures, retryInMs },
          "a wave failed; it runs again whole after the backoff",
        );
      }
      return "error";
    } finally {
      this.#lastWaveAt = clock.now();
    }
  }

  async #waitForTrigger(signal: AbortSignal): Promise<void> {
    const { clock } = this.deps;
    for (;;) {
      signal.throwIfAborted();
      const now = clock.now();
      const retryAt = this.#schedule.retryAt;
      if (retryAt !== undefined) {
        // While backing off, changes wait: the retry runs the whole state anyway.
        if (now >= retryAt) return;
        await this.#schedule.sleepUntil(retryAt, signal, false);
        continue;
      }
      if (this.#dirty) return;
      const due = Math.min(
        this.#lastWaveAt + this.options.resyncIntervalMs,
        this.#nextPendingAt ?? Infinity,
        this.#nextEpisodeCheckAt ?? Infinity,
        this.#refused.nextAt() ?? Infinity,
        this.deps.prefixes?.nextAt ?? Infinity,
        this.deps.attach?.nextAt ?? Infinity,
      );
      if (now >= due) return;
      await this.#schedule.sleepUntil(due, signal, true);
    }
  }

  async #wave(signal: AbortSignal): Promise<WaveOutcome> {
    const { clock, logger, imds, ec2 } = this.deps;
    const collections = this.#watches.collections;
    if (collections === undefined) throw new Error("internal: the bridge ran before start()");
    const trust = this.#trustNow();
    this.#noteTrust(trust);
    // Attach mode first: the ENIs it makes are among those read next (once IMDS shows them).
    await this.deps.attach?.step(signal);
    const now = clock.now();
    const observed = await readEnis(imds);
    signal.throwIfAborted();
    const multusEniIds = await this.#multusEnis.ids(observed, now);
    const overlay = overlayRecent(observed, this.#recent, now);
    this.#recent = overlay.recent;
    // Prefix mode first: its prefixes hold pod addresses (no call) and EC2 refuses a single address inside one.
    let enis =
      (await this.deps.prefixes?.wave(
        {
          enis: overlay.enis,
          multusEniIds,
          nads: collections.nads.list(),
          pods: collections.pods.list(),
          trusted: trust.trusted,
          freshPods: () => collections.pods.fetchNow(this.#confirmTimeoutMs),
        },
        signal,
      )) ?? overlay.enis;

    // The plugin's claims count as their pods carrying the addresses (cni/cni-pods.ts).
    const nodePods = (all: readonly PodInfo[]): PodInfo[] => {
      const mine = all.filter((p) => p.nodeName === this.options.nodeName);
      return this.deps.cni?.podsWith(mine) ?? mine;
    };
    const lastGoodRanges = this.#lastGoodRanges;
    const unusedBefore = this.#unusedSince;
    const desiredFrom: DesiredFrom = (pods, ipPools, reservations) =>
      desiredState({
        pods: nodePods(pods),
        nads: collections.nads.list(),
        ipPools,
        overlappingReservations: reservations,
        enis,
        multusEniIds,
        allowedCidrs: this.options.allowedCidrs,
        now,
        releaseGraceMs: this.options.releaseGraceMs,
        unusedSince: unusedBefore,
        lastGoodRanges,
      });
    const desired = desiredFrom(
      collections.pods.list(),
      collections.ipPools.list(),
      collections.reservations.list(),
    );
    this.#lastGoodRanges = desired.rangesByNad;
    this.#guard.reportProblems(desired);
    // Confirmed beside the wave: a list that hangs holds the releases, never this wave's assigns.
    const { releases, heldReleases, holds, unusedSince, nextAt } = decideReleases({
      desired,
      trusted: trust.trusted,
      now,
      releaseGraceMs: this.options.releaseGraceMs,
      retryMs: this.options.retry.baseMs,
      confirm: (due) =>
        this.#guard.confirmBeside(due, now, {
          freshReading: async () => {
            const fresh = await this.#watches.fresh(this.#confirmTimeoutMs);
            return desiredFrom(fresh.pods, fresh.ipPools, fresh.reservations);
          },
          isAbort: () => this.#stopped || signal.aborted,
          maxAgeMs: this.options.waveWindowMs + CONFIRMATION_MAX_AGE_MS,
          settled: () => this.changed(),
        }),
    });
    this.#unusedSince = unusedSince;
    // CNI DELs: released at once, unless another pod or claim carries the address; held as the guard holds.
    const nodeView = collections.pods.list().filter((p) => p.nodeName === this.options.nodeName);
    const releasing = this.deps.cni?.withReleases(releases, nodeView, enis, holds.size === 0) ?? releases;
    this.#guard.hold(holds);
    this.#nextPendingAt = nextAt;
    this.#lastDesired = desired;
    this.#desiredNow = desiredFrom;
    this.#lastSubnets = enis
      .filter((e) => multusEniIds.has(e.eniId))
      .map((e) => ({ subnetId: e.subnetId, cidrs: [...e.subnetIpv4Cidrs, ...e.subnetIpv6Cidrs] }));

    // Taken back after our repair before IMDS showed it: EC2's answer, not our memory, goes on /readyz.
    const takenBack = await this.#episodes.look(
      desired.interfaces,
      desired.podOfInterface,
      enis,
      now,
      this.deps,
      observed,
    );
    if (takenBack.size > 0) {
      enis = withoutTaken(enis, takenBack);
      this.#recent = this.#recent.filter((c) => !takenBack.has(episodeKey(c.eniId, c.address)));
    }
    const plan: Plan = await planFor(
      { interfaces: this.#episodes.withoutHeldBack(desired.interfaces, enis, clock.now()), enis },
      { policy: { allowedCidrs: this.options.allowedCidrs } },
      { ec2 },
    );
    const wave = this.#refused.holdBack(
      planWave({
        plan,
        releases: this.options.releaseDryRun ? [] : releasing,
        enis,
        multusEniIds,
        addressesPerEni: this.options.addressesPerEni,
      }),
      now,
    );
    announceReleases(releasing, this.options.releaseDryRun ? this.#dryRunLogged : undefined, this.deps);
    const { done, failures, notHeld, calls } = await applyWave(plan, wave, { ec2, logger }, signal);
    const prefixCalls = this.deps.prefixes?.lastWave ?? { calls: 0, changed: 0 };
    const mutatingCalls = calls + prefixCalls.calls;
    const until = clock.now() + this.options.recentMemoryMs;
    for (const action of done) {
      const kind = isAssign(action) ? "assigned" : "released";
      if (isMove(action)) continue;
      if (kind === "assigned") this.#episodes.assigned(action.eniId, action.addresses, clock.now());
      // A refused release is gone from the ENI too, by EC2's own answer: remembered as such, not counted.
      for (const address of action.addresses)
        this.#recent.push({ eniId: action.eniId, address, kind, until });
      const changed = action.addresses.filter((address) => !notHeld.has(`${action.eniId} ${address}`));
      if (kind === "released") this.deps.metrics.released(changed.length, false);
    }

    // Addresses refused for room, after calls that changed the ENIs (moves off them among others): the
    // next wave comes at once, not at the resync.
    if (done.size > 0 && wave.refusals.some((r) => r.reason === "eni-full")) {
      this.#dirty = true;
      this.#roomMade = true;
    }

    this.#nextEpisodeCheckAt = this.#episodes.nextCheckAt(
      clock.now(),
      this.options.episodeCheckMs ?? DEFAULT_EPISODE_CHECK_MS,
    );

    // An action EC2 refused counts as the wave's error, even when others went through.
    const outcome: WaveOutcome =
      failures.length > 0 ? "error" : done.size + prefixCalls.changed > 0 ? "applied" : "noop";
    const taken = this.#episodes.conflicts(now);
    this.#tellWave({
      desired,
      wave,
      enis,
      done,
      failures,
      taken,
      outcome,
      mutatingCalls,
      at: now,
      heldReleases,
    });
    if (this.#report !== undefined)
      this.deps.cni?.waveEnded({
        held: this.#report.heldAfter,
        multusEniIds,
        refusals: wave.refusals,
        failures,
        skipped: desired.skippedPods.map((s) => s.pod),
      });
    // Remembered until the ENI holds the address or no pod wants it there.
    this.#refused.learn(failures, clock.now());
    const wanted = new Set(plan.placements.map((p) => `${p.eniId} ${p.address}`));
    const heldAfter = this.#report?.heldAfter.keys;
    this.#refused.retain((key) => wanted.has(key) && heldAfter?.has(key) !== true);
    return outcome;
  }

  #tellWave(input: WaveReportInput): void {
    const told = tellWave(input);
    for (const event of told.events) this.deps.events.report(event);
    this.deps.metrics.view(told.view);
    this.#report = told.report;
  }

  /** The managed pods' addresses now, counted against what the last wave left held on the ENIs. */
  #countNow(report: WaveReport): AddressCount {
    const collections = this.#watches.collections;
    if (collections === undefined || this.#desiredNow === undefined) return report;
    const desired = this.#desiredNow(
      collections.pods.list(),
      collections.ipPools.list(),
      collections.reservations.list(),
    );
    return countPodAddresses(desired.interfaces, report.heldAfter);
  }

  /** /healthz: the loop runs (or has not been asked to yet). */
  health(): ProbeResult {
    if (this.#stopped) return { ok: false, lines: ["the wave loop has stopped"] };
    return { ok: true, lines: [this.#running ? "the wave loop runs" : "starting"] };
  }

  /**
   * /readyz: ready once every watch has listed, the last wave succeeded and every address of the managed pods
   * (those of pods the last wave did not see yet included) is held by its ENI; the unheld ones are named.
   * Addresses refused by policy (outside the allowed CIDRs or the ENI's subnet, not on a Multus ENI) and
   * conflicts are listed in the body but do not make the bridge unready: they are not the bridge's to hold.
   */
  readiness(extra: readonly string[] = []): ProbeResult {
    const lines: string[] = [];
    let ok = true;
    if (this.#watches.collections === undefined) {
      return { ok: false, lines: ["the Kubernetes watches have not started"] };
    }
    const trust = this.#trustNow();
    if (!trust.trusted) ok = false;
    lines.push(...this.#guard.lines(trust));
    const report = this.#report;
    if (report === undefined) {
      ok = false;
      lines.push("no wave has run yet");
    } else {
      const count = this.#countNow(report);
      if (count.unheld.length > 0) ok = false;
      lines.push(...reportLines(report, count));
    }
    const lastFailure = this.#schedule.open?.description;
    if (lastFailure !== undefined) {
      ok = false;
      lines.push(`the last wave failed (it runs again after a backoff): ${lastFailure}`);
    }
    lines.push(...(this.deps.prefixes?.lines() ?? []), ...(this.deps.attach?.lines() ?? []), ...extra);
    return { ok, lines };
  }
}
