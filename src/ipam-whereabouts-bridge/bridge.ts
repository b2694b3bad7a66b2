/**
 * The bridge's loop: Kubernetes changes wake it; changes arriving within the wave window are gathered
 * into one wave; a wave reads this node's ENIs from IMDS, computes the desired state from everything the
 * watches hold, and makes the EC2 calls that close the gap (at most one assign per ENI and family).
 * Every wave starts from the full state, so nothing is lost between waves: a wave that fails (EC2 throttled
 * or unavailable after its retries, IMDS failing) is run again whole after a capped exponential backoff.
 */
import { type BackoffPolicy, backoffDelay } from "../eni/backoff.js";
import type { Ec2Api } from "../eni/ec2-api.js";
import { readEnis } from "../eni/eni-discovery.js";
import { Ec2Error } from "../eni/errors/ec2-error.js";
import { IpmgrError } from "../eni/errors/ipmgr-error.js";
import type { Imds } from "../eni/imds.js";
import { coveringPrefix } from "../eni/ip.js";
import { linkedAbort } from "../eni/linked-abort.js";
import { isAssign, isMove } from "../eni/plan-actions.js";
import type { Clock } from "../eni/process/clock.js";
import type { Logger } from "../eni/process/logger.js";
import type { ProbeResult } from "../eni/process/probe-server.js";
import { applyPlan, planFor } from "../eni/reconcile.js";
import type { EniState, Plan, PlanAction } from "../eni/types.js";
import { ConflictEpisodes, DEFAULT_EPISODE_CHECK_MS, DEFAULT_REPAIR_BACKOFF } from "./conflict-episodes.js";
import { type DesiredState, desiredState, type PodRef } from "./desired-state.js";
import type {
  IpPoolInfo,
  KubeApi,
  NadInfo,
  OverlappingReservationInfo,
  PodInfo,
  WatchedCollection,
} from "./kube-api.js";
import type { BridgeMetrics, ReleaseHoldReason, WaveOutcome } from "./metrics.js";
import type { PodEventReporter } from "./pod-events.js";
import type { PrefixMode } from "./prefix-mode.js";
import { ReleaseGuard } from "./release-guard.js";
import type { SubnetView } from "./reservation-cover.js";
import { type ViewTrust, viewTrust } from "./view-trust.js";
import { type BridgeRefusal, overlayRecent, planWave, type RecentChange } from "./wave-plan.js";
import type { WhereaboutsRange } from "./whereabouts-ranges.js";

/** The tag that marks an ENI the VPC CNI must leave alone: a Multus ENI. */
export const NO_MANAGE_TAG = "node.k8s.amazonaws.com/no_manage";

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
}

export interface BridgeOptions {
  readonly nodeName: string;
  readonly allowedCidrs: readonly string[];
  /** Device indexes of the Multus ENIs; empty: the ENIs tagged no_manage=true. */
  readonly deviceIndexes: readonly number[];
  readonly waveWindowMs: number;
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
}

/** What the last wave saw and did, for /readyz and the tests. */
export interface WaveReport {
  readonly at: number;
  readonly outcome: WaveOutcome;
  readonly mutatingCalls: number;
  readonly wanted: number;
  readonly held: number;
  readonly refusals: readonly BridgeRefusal[];
  readonly conflicts: readonly string[];
  readonly failures: readonly string[];
  readonly pendingReleases: number;
}

const WAKE = Symbol("wake");

interface Collections {
  readonly pods: WatchedCollection<PodInfo>;
  readonly nads: WatchedCollection<NadInfo>;
  readonly ipPools: WatchedCollection<IpPoolInfo>;
  readonly reservations: WatchedCollection<OverlappingReservationInfo>;
}

function ref(pod: PodRef): string {
  return `${pod.namespace}/${pod.name}`;
}

/** Whether the ENI holds a delegated prefix over the address (prefix mode): held, with no call. */
function insidePrefix(enis: readonly EniState[], eniId: string, address: string): boolean {
  const eni = enis.find((e) => e.eniId === eniId);
  return (
    eni !== undefined &&
    coveringPrefix([...(eni.ipv4Prefixes ?? []), ...(eni.ipv6Prefixes ?? [])], address) !== undefined
  );
}

function isAbort(error: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (error instanceof Error && error.name === "AbortError");
}

export class Bridge {
  #collections: Collections | undefined;
  #dirty = true;
  /** The last wave changed the ENIs and refused addresses for room: the next runs without the window. */
  #roomMade = false;
  #wake: (() => void) | undefined;
  #lastWaveAt = Number.NEGATIVE_INFINITY;
  #retryAt: number | undefined;
  #failures = 0;
  #lastFailure: string | undefined;
  #unusedSince = new Map<string, number>();
  #recent: RecentChange[] = [];
  #nextPendingAt: number | undefined;
  #taggedEniIds: Set<string> | undefined;
  #dryRunLogged = new Set<string>();
  #report: WaveReport | undefined;
  #running = false;
  #stopped = false;
  #lastGoodRanges = new Map<string, readonly WhereaboutsRange[]>();
  readonly #guard: ReleaseGuard;

  /** Addresses another ENI took back after ours held them (two pods on two nodes carrying one address). */
  readonly #episodes: ConflictEpisodes;
  #nextEpisodeCheckAt: number | undefined;

  constructor(
    private readonly deps: BridgeDeps,
    private readonly options: BridgeOptions,
  ) {
    this.#episodes = new ConflictEpisodes({ backoff: options.repairBackoff ?? DEFAULT_REPAIR_BACKOFF });
    this.#guard = new ReleaseGuard(deps);
  }

  /** Starts the four watches; resolves once each has listed once (or failed and is being retried). */
  async start(): Promise<void> {
    const { kube, metrics } = this.deps;
    const listener = {
      changed: () => this.changed(),
      failed: (resource: string) => metrics.watchRestart(resource),
      healthChanged: () => this.#healthChanged(),
    };
    const [pods, nads, ipPools, reservations] = await Promise.all([
      kube.watchPods(this.options.nodeName, listener),
      kube.watchNetworkAttachmentDefinitions(listener),
      kube.watchIpPools(listener),
      kube.watchOverlappingReservations(listener),
    ]);
    this.#collections = { pods, nads, ipPools, reservations };
    await this.deps.prefixes?.start(listener);
  }

  /** Whether releases may act on the watches' caches now, and why not. */
  #trustNow(): ViewTrust {
    const c = this.#collections;
    if (c === undefined) return { trusted: false, reasons: ["the Kubernetes watches have not started"] };
    return viewTrust(
      Object.values(c).map((collection) => collection.health()),
      this.deps.clock.now(),
      this.options.watchSilenceMs,
    );
  }

  /** A watch failed, relisted or works again: graces restart on a stale view, a wave runs when it is back. */
  #healthChanged(): void {
    if (this.#noteTrust(this.#trustNow())) this.changed();
  }

  /** Records the trust (the guard logs each change once); every grace restarts while the view is stale. */
  #noteTrust(trust: ViewTrust): boolean {
    if (!trust.trusted) this.#unusedSince = new Map();
    const faulted = Object.values(this.#collections ?? {}).some((c) => c.health().fault !== undefined);
    return this.#guard.noteTrust(trust, faulted);
  }

  /** A Kubernetes object changed: a wave runs after the window. */
  changed(): void {
    this.#dirty = true;
    this.#wake?.();
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
    const c = this.#collections;
    return c !== undefined && Object.values(c).every((collection) => collection.synced);
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
        if (this.options.waveWindowMs > 0 && !this.#roomMade)
          await this.deps.clock.sleep(this.options.waveWindowMs, signal);
        this.#dirty = false;
        this.#roomMade = false;
        await this.runWave(signal);
      }
    } catch (error) {
      if (!isAbort(error, signal)) throw error;
    } finally {
      this.#running = false;
      this.#stopped = true;
    }
  }

  /** One wave, its failure handled (backoff scheduled). Exposed for tests. */
  async runWave(signal: AbortSignal): Promise<WaveOutcome> {
    const { clock, logger, metrics } = this.deps;
    const started = clock.now();
    try {
      const outcome = await this.#wave(signal);
      metrics.wave(outcome, clock.now() - started);
      if (this.#failures > 0) logger.info({ failures: this.#failures }, "waves work again");
      this.#failures = 0;
      this.#lastFailure = undefined;
      this.#retryAt = undefined;
      return outcome;
    } catch (error) {
      if (isAbort(error, signal)) throw error;
      metrics.wave("error", clock.now() - started);
      this.#failures += 1;
      const delay = backoffDelay(this.options.retry, this.#failures);
      this.#retryAt = clock.now() + delay;
      this.#lastFailure = error instanceof Error ? error.message : String(error);
      if (!(error instanceof IpmgrError)) logger.error({ err: error }, "a wave failed unexpectedly");
      if (this.#failures === 1 || this.#failures % 10 === 0) {
        logger.warn(
          { err: error, failures: this.#failures, retryInMs: delay },
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
      if (this.#retryAt !== undefined) {
        // While backing off, changes wait: the retry runs the whole state anyway.
        if (now >= this.#retryAt) return;
        await this.#sleepUntil(this.#retryAt, signal, false);
        continue;
      }
      if (this.#dirty) return;
      const due = Math.min(
        this.#lastWaveAt + this.options.resyncIntervalMs,
        this.#nextPendingAt ?? Infinity,
        this.#nextEpisodeCheckAt ?? Infinity,
        this.deps.prefixes?.nextAt ?? Infinity,
      );
      if (now >= due) return;
      await this.#sleepUntil(due, signal, true);
    }
  }

  async #sleepUntil(at: number, signal: AbortSignal, wakeOnChange: boolean): Promise<void> {
    const link = linkedAbort(signal);
    if (wakeOnChange) this.#wake = () => link.abort(WAKE);
    try {
      await this.deps.clock.sleep(Math.max(0, at - this.deps.clock.now()), link.signal);
    } catch (error) {
      if (error !== WAKE) throw error;
    } finally {
      link.dispose();
      this.#wake = undefined;
    }
  }

  /** The Multus ENIs: by device index when configured, else by the no_manage tag (EC2, read when needed). */
  async #multusEniIds(enis: readonly EniState[], resync: boolean): Promise<Set<string>> {
    if (this.options.deviceIndexes.length > 0) {
      return new Set(
        enis.filter((e) => this.options.deviceIndexes.includes(e.deviceIndex)).map((e) => e.eniId),
      );
    }
    const known = this.#taggedEniIds;
    const unknown =
      known === undefined || enis.some((e) => !known.has(e.eniId) && !this.#untagged.has(e.eniId));
    if (unknown || resync) {
      const described = await this.deps.ec2.describeNetworkInterfaces({ eniIds: enis.map((e) => e.eniId) });
      this.#taggedEniIds = new Set(
        described.filter((e) => e.tags[NO_MANAGE_TAG] === "true").map((e) => e.eniId),
      );
      this.#untagged = new Set(described.filter((e) => e.tags[NO_MANAGE_TAG] !== "true").map((e) => e.eniId));
    }
    return new Set(this.#taggedEniIds);
  }
  #untagged = new Set<string>();
  #lastTagReadAt = Number.NEGATIVE_INFINITY;

  async #wave(signal: AbortSignal): Promise<WaveOutcome> {
    const { clock, logger, imds, ec2 } = this.deps;
    const collections = this.#collections;
    if (collections === undefined) throw new Error("internal: the bridge ran before start()");
    const trust = this.#trustNow();
    this.#noteTrust(trust);
    const now = clock.now();
    const observed = await readEnis(imds);
    signal.throwIfAborted();
    const resyncTags = now - this.#lastTagReadAt >= this.options.resyncIntervalMs;
    const multusEniIds = await this.#multusEniIds(observed, resyncTags);
    if (resyncTags) this.#lastTagReadAt = now;
    const overlay = overlayRecent(observed, this.#recent, now);
    this.#recent = overlay.recent;
    // Prefix mode first: its prefixes hold pod addresses (no call) and EC2 refuses a single address inside one.
    const enis =
      (await this.deps.prefixes?.wave(
        {
          enis: overlay.enis,
          multusEniIds,
          nads: collections.nads.list(),
          pods: collections.pods.list(),
          trusted: trust.trusted,
          freshPods: () => collections.pods.fetchNow(),
        },
        signal,
      )) ?? overlay.enis;

    const nodePods = (all: readonly PodInfo[]): PodInfo[] =>
      all.filter((p) => p.nodeName === this.options.nodeName);
    const lastGoodRanges = this.#lastGoodRanges;
    const unusedBefore = this.#unusedSince;
    const desiredFrom = (
      pods: readonly PodInfo[],
      ipPools: readonly IpPoolInfo[],
      reservations: readonly OverlappingReservationInfo[],
    ): DesiredState =>
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
    // A stale view knows nothing to be unused: no grace runs and nothing is released until it is trusted.
    const holds = new Set<ReleaseHoldReason>();
    if (!trust.trusted) holds.add("stale-view");
    if (desired.unreadablePods.length > 0) holds.add("unreadable-pod");
    this.#unusedSince = trust.trusted ? desired.unusedSince : new Map();
    let releases = holds.size === 0 ? desired.releases : [];
    if (releases.length > 0) {
      const confirmation = await this.#guard.confirm(
        releases,
        () => this.#freshReading(desiredFrom, signal),
        (error) => isAbort(error, signal),
      );
      if (confirmation === undefined) {
        holds.add("unconfirmed");
        releases = [];
      } else {
        releases = confirmation.confirmed;
        for (const key of confirmation.inUse) this.#unusedSince.delete(key);
      }
    }
    this.#guard.hold(holds);
    this.#nextPendingAt =
      desired.pending.length === 0 ? undefined : Math.min(...desired.pending.map((p) => p.releaseAt));
    if (holds.has("unconfirmed") || (holds.has("unreadable-pod") && desired.releases.length > 0)) {
      // Held releases are due: look again soon rather than at the resync.
      this.#nextPendingAt = Math.min(this.#nextPendingAt ?? Infinity, now + this.options.retry.baseMs);
    }
    this.#lastDesired = desired;
    this.#lastSubnets = enis
      .filter((e) => multusEniIds.has(e.eniId))
      .map((e) => ({ subnetId: e.subnetId, cidrs: [...e.subnetIpv4Cidrs, ...e.subnetIpv6Cidrs] }));

    await this.#episodes.look(desired.interfaces, desired.podOfInterface, enis, now, this.deps);
    const plan: Plan = await planFor(
      { interfaces: this.#episodes.withoutHeldBack(desired.interfaces, enis, clock.now()), enis },
      { policy: { allowedCidrs: this.options.allowedCidrs } },
      { ec2 },
    );
    const wave = planWave({
      plan,
      releases: this.options.releaseDryRun ? [] : releases,
      enis,
      multusEniIds,
      addressesPerEni: this.options.addressesPerEni,
    });
    for (const release of releases) {
      const key = `${release.eniId} ${release.address}`;
      if (this.options.releaseDryRun) {
        if (this.#dryRunLogged.has(key)) continue;
        this.#dryRunLogged.add(key);
        this.deps.metrics.released(1, true);
        logger.info(
          { eniId: release.eniId, address: release.address, reason: release.reason },
          "dry run: would release",
        );
      } else {
        logger.info({ eniId: release.eniId, address: release.address, reason: release.reason }, "releasing");
      }
    }

    const failures: { action: PlanAction; error: unknown }[] = [];
    const done = new Set<PlanAction>();
    /** Releases EC2 refused because the ENI no longer held the address (applyPlan logs each). */
    const notHeld = new Set<string>();
    for (const action of wave.actions) {
      signal.throwIfAborted();
      try {
        const { refusedReleases } = await applyPlan({ ...plan, actions: [action] }, { ec2, logger });
        for (const address of refusedReleases) notHeld.add(`${action.eniId} ${address}`);
        if (refusedReleases.length > 0) {
          logger.warn(
            { eniId: action.eniId, addresses: refusedReleases },
            "EC2 refused to release addresses the ENI seemed to hold; taken as gone until IMDS shows them again after the confirm timeout, then released again",
          );
        }
        done.add(action);
      } catch (error) {
        // Throttled or unavailable after every retry: the whole wave runs again after a backoff.
        if (error instanceof Ec2Error && error.kind === "unavailable") throw error;
        if (!(error instanceof IpmgrError)) throw error;
        failures.push({ action, error });
        logger.warn({ err: error, action }, "EC2 refused an action of the wave; the others go on");
      }
    }
    const mutatingCalls = done.size + failures.length;
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

    const outcome: WaveOutcome = done.size > 0 ? "applied" : "noop";
    this.#reportWave(desired, wave, enis, done, failures, outcome, mutatingCalls, now);
    return outcome;
  }

  /** The desired state from a fresh list of this node's pods, the IPPools and the reservations. */
  async #freshReading(
    desiredFrom: (
      pods: readonly PodInfo[],
      ipPools: readonly IpPoolInfo[],
      reservations: readonly OverlappingReservationInfo[],
    ) => DesiredState,
    signal: AbortSignal,
  ): Promise<DesiredState> {
    const c = this.#collections;
    if (c === undefined) throw new Error("internal: the bridge confirmed releases before start()");
    const [pods, ipPools, reservations] = await Promise.all([
      c.pods.fetchNow(),
      c.ipPools.fetchNow(),
      c.reservations.fetchNow(),
    ]);
    signal.throwIfAborted();
    return desiredFrom(pods, ipPools, reservations);
  }

  #reportWave(
    desired: DesiredState,
    wave: ReturnType<typeof planWave>,
    enis: readonly EniState[],
    done: ReadonlySet<PlanAction>,
    failures: readonly { action: PlanAction; error: unknown }[],
    outcome: WaveOutcome,
    mutatingCalls: number,
    at: number,
  ): void {
    const { events, metrics } = this.deps;
    const heldBefore = new Set(enis.flatMap((e) => [...e.ipv4s, ...e.ipv6s].map((a) => `${e.eniId} ${a}`)));
    const assignedNow = new Set<string>();
    for (const action of done) {
      if (isAssign(action)) {
        for (const a of action.addresses) assignedNow.add(`${action.eniId} ${a}`);
      }
    }
    const failedBy = new Map<string, string>();
    for (const { action, error } of failures) {
      for (const a of action.addresses)
        failedBy.set(a, error instanceof Error ? error.message : String(error));
    }

    // Per pod: what is now held, what was assigned in this wave, what could not be.
    const perPod = new Map<string, { pod: PodRef; assigned: string[]; problems: string[] }>();
    const entry = (pod: PodRef) => {
      const key = ref(pod);
      const found = perPod.get(key) ?? { pod, assigned: [], problems: [] };
      perPod.set(key, found);
      return found;
    };
    let held = 0;
    for (const p of wave.placements) {
      const pod = desired.podOfInterface.get(p.interfaceName);
      if (pod === undefined) continue;
      const key = `${p.eniId} ${p.address}`;
      const failure = failedBy.get(p.address);
      if (failure !== undefined && !heldBefore.has(key)) {
        entry(pod).problems.push(failure);
        continue;
      }
      if (heldBefore.has(key) || assignedNow.has(key) || insidePrefix(enis, p.eniId, p.address)) held += 1;
      if (assignedNow.has(key))
        entry(pod).assigned.push(`${p.address} (${p.interfaceName.split("/").pop()}) on ${p.eniId}`);
    }
    for (const refusal of wave.refusals) {
      const pod = desired.podOfInterface.get(refusal.interfaceName);
      if (pod !== undefined) entry(pod).problems.push(refusal.detail);
    }
    for (const { pod, assigned, problems } of perPod.values()) {
      if (problems.length > 0) {
        events.report({ pod, type: "Warning", reason: "AddressesNotAssigned", message: problems.join(" ") });
      } else if (assigned.length > 0) {
        events.report({
          pod,
          type: "Normal",
          reason: "AddressesAssigned",
          message: `assigned ${assigned.join(", ")}`,
        });
      }
    }
    for (const conflict of desired.conflicts) {
      events.report({
        pod: conflict.pod,
        type: "Warning",
        reason: "AddressConflict",
        message: conflict.detail,
      });
      events.report({
        pod: conflict.other,
        type: "Warning",
        reason: "AddressConflict",
        message: conflict.detail,
      });
    }
    const taken = this.#episodes.conflicts(at);
    for (const conflict of taken) {
      events.report({
        pod: conflict.pod,
        type: "Warning",
        reason: "AddressConflict",
        message: conflict.message,
      });
    }

    const conflictLines = [...new Set([...desired.conflicts, ...taken].map((c) => c.detail))];
    metrics.view({
      managed: desired.managedPods.length,
      optedOut: desired.skippedPods.filter((s) => s.reason === "opted-out").length,
      sidecar: desired.skippedPods.filter((s) => s.reason === "sidecar").length,
      wanted: wave.placements.length,
      held,
      refused: wave.refusals.length,
      conflicts: conflictLines.length,
      pendingReleases: desired.pending.length,
    });
    this.#report = {
      at,
      outcome,
      mutatingCalls,
      wanted: wave.placements.length,
      held,
      refusals: wave.refusals,
      conflicts: conflictLines,
      failures: [...new Set(failedBy.values())],
      pendingReleases: desired.pending.length,
    };
  }

  /** /healthz: the loop runs (or has not been asked to yet). */
  health(): ProbeResult {
    if (this.#stopped) return { ok: false, lines: ["the wave loop has stopped"] };
    return { ok: true, lines: [this.#running ? "the wave loop runs" : "starting"] };
  }

  /**
   * /readyz: ready once every watch has listed and the last wave succeeded recently. Refused addresses,
   * conflicts and missing reservations are listed in the body but do not make the bridge unready: they are
   * the pods' configuration, which restarting the bridge would not fix.
   */
  readiness(extra: readonly string[] = []): ProbeResult {
    const lines: string[] = [];
    const c = this.#collections;
    let ok = true;
    if (c === undefined) {
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
      lines.push(
        `${report.held} of ${report.wanted} pod addresses held by their ENI; ${report.pendingReleases} releases pending`,
      );
      for (const r of report.refusals) lines.push(`refused: ${r.detail}`);
      for (const conflict of report.conflicts) lines.push(`conflict: ${conflict}`);
      for (const failure of report.failures) lines.push(`failed: ${failure}`);
    }
    if (this.#lastFailure !== undefined) {
      ok = false;
      lines.push(`the last wave failed (it runs again after a backoff): ${this.#lastFailure}`);
    }
    lines.push(...(this.deps.prefixes?.lines() ?? []), ...extra);
    return { ok, lines };
  }
}
