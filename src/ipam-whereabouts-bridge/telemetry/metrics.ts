import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Ec2CallObserver } from "../../eni/ec2-api.js";
import { registerEc2CallMetrics, registerProcessMetrics } from "../../eni/process/process-metrics.js";

const PREFIX = "multus_ipmgr_bridge_";

/** Why releases are held: a watch is not trusted, a live pod cannot be read, a confirming list failed. */
export type ReleaseHoldReason = "stale-view" | "unreadable-pod" | "unconfirmed";
const HELD_REASONS: readonly ReleaseHoldReason[] = ["stale-view", "unreadable-pod", "unconfirmed"];

/** How a wave ended: `applied` made EC2 changes, `noop` found everything in place, `error` is retried. */
export type WaveOutcome = "applied" | "noop" | "error";

/** What became of an orphaned ENI due for deletion: `deleted`, `dry_run` (reported only), `error` (EC2 refused). */
export type OrphanDeletionOutcome = "deleted" | "dry_run" | "error";
const ORPHAN_OUTCOMES: readonly OrphanDeletionOutcome[] = ["deleted", "dry_run", "error"];

/** Attach mode's state of a network at the last pass (attach/attach-mode.ts), as a label value. */
export const ATTACH_STATES = ["attached", "waiting", "refused", "retry_later"] as const;
export type AttachStateLabel = (typeof ATTACH_STATES)[number];

/**
 * The bridge's Prometheus metrics, on a registry of their own, with the process metrics of
 * registerProcessMetrics.
 */
export class BridgeMetrics {
  readonly registry = new Registry();
  readonly #pods: Gauge<"state">;
  readonly #addressesHeld: Gauge;
  readonly #addressesWanted: Gauge;
  readonly #refused: Gauge;
  readonly #conflicts: Gauge;
  readonly #pendingReleases: Gauge;
  readonly #waves: Counter<"outcome">;
  readonly #waveDuration: Histogram;
  readonly #releases: Counter<"mode">;
  readonly #watchRestarts: Counter<"resource">;
  readonly #reservationsMissing: Gauge;
  readonly #reservationMissing: Gauge<"subnet" | "cidr" | "nad">;
  readonly #reservationsCreated: Counter;
  readonly #events: Counter<"outcome">;
  readonly #viewTrusted: Gauge;
  readonly #releasesHeld: Gauge<"reason">;
  readonly #inputProblems: Gauge<"kind">;
  readonly #prefixesWanted: Gauge;
  readonly #prefixesHeld: Gauge;
  readonly #prefixesDeferred: Gauge;
  readonly #prefixRefused: Gauge<"nad" | "reason">;
  readonly #prefixReleasesPending: Gauge;
  readonly #prefixReleases: Counter<"mode">;
  readonly #prefixSwapGap: Histogram;
  readonly #orphanEnis: Gauge<"state">;
  readonly #orphanDeletions: Counter<"outcome">;
  readonly #startupTaint: Gauge;
  readonly #startupTaintChanges: Counter<"action">;
  readonly #cniRequests: Counter<"command" | "outcome">;
  readonly #cniAdd: Histogram;
  readonly #attachNetworks: Gauge<"state">;
  readonly #attachCalls: Counter;

  constructor() {
    const registers = [this.registry];
    registerProcessMetrics(this.registry);
    this.ec2Observer = registerEc2CallMetrics(this.registry, PREFIX);
    this.#pods = new Gauge({
      name: `${PREFIX}pods`,
      help: "Pods of this node seen at the last wave, by state: managed, opted-out, sidecar.",
      labelNames: ["state"],
      registers,
    });
    this.#addressesWanted = new Gauge({
      name: `${PREFIX}addresses_wanted`,
      help: "Addresses of this node's managed pods, at the last wave (those refused by policy, outside the allowed CIDRs or the ENI's subnet or not on a Multus ENI, and conflicts excluded).",
      registers,
    });
    this.#addressesHeld = new Gauge({
      name: `${PREFIX}addresses_held`,
      help: "Of those, the addresses their ENI holds after the last wave.",
      registers,
    });
    this.#refused = new Gauge({
      name: `${PREFIX}addresses_refused`,
      help: "Pod addresses refused at the last wave (outside the allowed CIDRs or the ENI's subnet, a primary, not a Multus ENI, ENI full).",
      registers,
    });
    this.#conflicts = new Gauge({
      name: `${PREFIX}conflicts`,
      help: "Pod addresses in conflict at the last wave (whereabouts allocates them to another pod, two pods carry them, or another node's ENI took one back).",
      registers,
    });
    this.#pendingReleases = new Gauge({
      name: `${PREFIX}releases_pending`,
      help: "Unused addresses of managed ranges not released yet: in their grace period, or due and held or waiting for the fresh list that confirms them.",
      registers,
    });
    this.#waves = new Counter({
      name: `${PREFIX}waves_total`,
      help: "Waves run, by outcome: applied (EC2 changed), noop (all in place), error (the wave failed and runs again whole after a backoff, or EC2 refused one of its actions or addresses).",
      labelNames: ["outcome"],
      registers,
    });
    this.#waveDuration = new Histogram({
      name: `${PREFIX}wave_duration_seconds`,
      help: "Wall time of a wave, IMDS reads and EC2 calls included, in seconds.",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#releases = new Counter({
      name: `${PREFIX}releases_total`,
      help: "Addresses released from a Multus ENI after their grace period, by mode: released, or dry-run (logged only).",
      labelNames: ["mode"],
      registers,
    });
    this.#watchRestarts = new Counter({
      name: `${PREFIX}watch_restarts_total`,
      help: "Kubernetes lists or watches that failed and were restarted after a backoff, by resource.",
      labelNames: ["resource"],
      registers,
    });
    this.#reservationsMissing = new Gauge({
      name: `${PREFIX}reservation_drift`,
      help: "CIDR blocks of whereabouts ranges that no explicit subnet CIDR reservation covers, at the last comparison by this bridge (0 when it does not hold the Lease).",
      registers,
    });
    this.#reservationMissing = new Gauge({
      name: `${PREFIX}reservation_missing`,
      help: "1 for each CIDR block of a whereabouts range that no explicit subnet CIDR reservation covers, at the last comparison by this bridge (the full list behind reservation_drift; none when it does not hold the Lease).",
      labelNames: ["subnet", "cidr", "nad"],
      registers,
    });
    this.#reservationsCreated = new Counter({
      name: `${PREFIX}reservations_created_total`,
      help: "Subnet CIDR reservations this bridge created (IPMGR_BRIDGE_RESERVATIONS=create).",
      registers,
    });
    this.#events = new Counter({
      name: `${PREFIX}kube_events_total`,
      help: "Kubernetes Events about pods, by outcome: posted, suppressed (same event within the interval, or over the rate), failed.",
      labelNames: ["outcome"],
      registers,
    });
    this.#viewTrusted = new Gauge({
      name: `${PREFIX}view_trusted`,
      help: "1 when every Kubernetes watch is listed, watching and heard from within the silence bound; 0 while releases are held on a stale view.",
      registers,
    });
    this.#releasesHeld = new Gauge({
      name: `${PREFIX}releases_held`,
      help: "1 while releases are held, by reason: stale-view (a watch failing, relisting or silent; set and cleared with view_trusted), unreadable-pod (a live pod's network-status cannot be read), unconfirmed (a fresh list to confirm a release failed or was not answered within 10 s).",
      labelNames: ["reason"],
      registers,
    });
    this.#inputProblems = new Gauge({
      name: `${PREFIX}input_problems`,
      help: "Objects' input the bridge cannot read at the last wave, by kind: Pod (network-status), NetworkAttachmentDefinition (spec.config), IPPool (spec.range, allocations).",
      labelNames: ["kind"],
      registers,
    });
    this.#prefixesWanted = new Gauge({
      name: `${PREFIX}prefixes_wanted`,
      help: "Prefix mode: delegated prefixes (/28, /80) that this node's slices of node-sliced whereabouts ranges make, on their master's ENI, at the last wave.",
      registers,
    });
    this.#prefixesHeld = new Gauge({
      name: `${PREFIX}prefixes_held`,
      help: "Prefix mode: of those, the prefixes their ENI holds after the last wave.",
      registers,
    });
    this.#prefixesDeferred = new Gauge({
      name: `${PREFIX}prefixes_deferred`,
      help: "Prefix mode (defer): prefixes waiting because their ENI holds single addresses inside (released after their grace when no pod uses them).",
      registers,
    });
    this.#prefixRefused = new Gauge({
      name: `${PREFIX}prefix_refused`,
      help: "Prefix mode: 1 for each NAD whose node slice cannot be held as prefixes, by reason (slice-too-small, unaligned, outside-eni-subnet, ...); the network stays per-address. The NAD's Warning Event PrefixModeRefused names the fix.",
      labelNames: ["nad", "reason"],
      registers,
    });
    this.#prefixReleasesPending = new Gauge({
      name: `${PREFIX}prefix_releases_pending`,
      help: "Prefix mode: prefixes of slices this node no longer owns, unused, waiting for their grace period to end.",
      registers,
    });
    this.#prefixReleases = new Counter({
      name: `${PREFIX}prefix_releases_total`,
      help: "Prefix mode: prefixes released from a Multus ENI after their grace period, by mode: released, or dry-run (logged only).",
      labelNames: ["mode"],
      registers,
    });
    this.#prefixSwapGap = new Histogram({
      name: `${PREFIX}prefix_swap_gap_seconds`,
      help: "Prefix mode (swap): from the unassign of the single addresses inside a new prefix to the end of the prefix assign that routes them again, its retries included (and of the restore of the singles when the assign fails), in seconds.",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#orphanEnis = new Gauge({
      name: `${PREFIX}orphan_enis`,
      help: "Attach mode, on the Lease holder: this cluster's ENIs attached to nothing at the last orphan sweep, by state: waiting (in their grace period), deletable (past it: kept in dry run, or their delete failed).",
      labelNames: ["state"],
      registers,
    });
    this.#orphanDeletions = new Counter({
      name: `${PREFIX}orphan_eni_deletions_total`,
      help: "Attach mode: orphaned ENIs of this cluster past their grace period, by outcome: deleted, dry_run (logged once, not deleted), error (EC2 refused or failed the delete; tried again at the next sweep).",
      labelNames: ["outcome"],
      registers,
    });
    for (const state of ["waiting", "deletable"]) this.#orphanEnis.set({ state }, 0);
    for (const outcome of ORPHAN_OUTCOMES) this.#orphanDeletions.inc({ outcome }, 0);
    this.#startupTaint = new Gauge({
      name: `${PREFIX}startup_taint`,
      help: "Attach mode: 1 while the node carries the startup taint (IPMGR_BRIDGE_STARTUP_TAINT) as the bridge last read or wrote it, 0 while it is off.",
      registers,
    });
    this.#startupTaintChanges = new Counter({
      name: `${PREFIX}startup_taint_changes_total`,
      help: "Attach mode: startup taint changes this bridge made, by action: removed (the node's networks ready), added (a network lost).",
      labelNames: ["action"],
      registers,
    });
    for (const action of ["removed", "added"] as const) this.#startupTaintChanges.inc({ action }, 0);
    this.#cniRequests = new Counter({
      name: `${PREFIX}cni_requests_total`,
      help: "Plugin mode: requests of the chained CNI plugin on the bridge's socket, by command (ADD, DEL, CHECK) and outcome: ok, try-again (CNI error 11: the deadline passed or the bridge is stopping), error (any other CNI error).",
      labelNames: ["command", "outcome"],
      registers,
    });
    this.#cniAdd = new Histogram({
      name: `${PREFIX}cni_add_seconds`,
      help: "Plugin mode: from an ADD's request to its successful answer (EC2 holds the pod's addresses, or a prefix of their ENI covers them), in seconds.",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#attachNetworks = new Gauge({
      name: `${PREFIX}attach_networks`,
      help: "Attach mode: the configured networks (IPMGR_BRIDGE_ATTACH_NETWORKS) at the last attach pass, by state: attached (an ENI at the network's slot), waiting (its attachment is changing), refused (the plan or EC2 refused it; tried again after a backoff), retry_later (EC2 failed or throttled; tried again after a backoff).",
      labelNames: ["state"],
      registers,
    });
    this.#attachCalls = new Counter({
      name: `${PREFIX}attach_ec2_calls_total`,
      help: "Attach mode: EC2 calls of the attach passes, reads and writes, retries included.",
      registers,
    });
    for (const state of ATTACH_STATES) this.#attachNetworks.set({ state }, 0);
    for (const mode of ["released", "dry-run"] as const) this.#prefixReleases.inc({ mode }, 0);
    for (const reason of HELD_REASONS) this.#releasesHeld.set({ reason }, 0);
    for (const kind of ["Pod", "NetworkAttachmentDefinition", "IPPool"]) this.#inputProblems.set({ kind }, 0);
    this.#viewTrusted.set(0);
    for (const outcome of ["applied", "noop", "error"] as const) this.#waves.inc({ outcome }, 0);
    for (const mode of ["released", "dry-run"] as const) this.#releases.inc({ mode }, 0);
    this.#reservationsCreated.inc(0);
  }

  /** Feed this to the EC2 adapter as its observer. Never throws. */
  readonly ec2Observer: Ec2CallObserver;

  wave(outcome: WaveOutcome, ms: number): void {
    this.#waves.inc({ outcome });
    this.#waveDuration.observe(Math.max(0, ms) / 1000);
  }

  view(v: {
    managed: number;
    optedOut: number;
    sidecar: number;
    wanted: number;
    held: number;
    refused: number;
    conflicts: number;
    pendingReleases: number;
  }): void {
    this.#pods.set({ state: "managed" }, v.managed);
    this.#pods.set({ state: "opted-out" }, v.optedOut);
    this.#pods.set({ state: "sidecar" }, v.sidecar);
    this.#addressesWanted.set(v.wanted);
    this.#addressesHeld.set(v.held);
    this.#refused.set(v.refused);
    this.#conflicts.set(v.conflicts);
    this.#pendingReleases.set(v.pendingReleases);
  }

  /** Whether the view is trusted, and which reasons hold releases now. */
  trust(trusted: boolean, held: ReadonlySet<ReleaseHoldReason>): void {
    this.#viewTrusted.set(trusted ? 1 : 0);
    for (const reason of HELD_REASONS) this.#releasesHeld.set({ reason }, held.has(reason) ? 1 : 0);
  }

  /** Input problems at the last wave, counted by kind of object. */
  inputProblems(counts: Readonly<Record<string, number>>): void {
    for (const kind of ["Pod", "NetworkAttachmentDefinition", "IPPool"]) {
      this.#inputProblems.set({ kind }, counts[kind] ?? 0);
    }
  }

  /** Prefix mode's view after a wave. */
  prefixes(v: {
    wanted: number;
    held: number;
    deferred: number;
    pendingReleases: number;
    refused: readonly { nad: string; reason: string }[];
  }): void {
    this.#prefixesWanted.set(v.wanted);
    this.#prefixesHeld.set(v.held);
    this.#prefixesDeferred.set(v.deferred);
    this.#prefixReleasesPending.set(v.pendingReleases);
    this.#prefixRefused.reset();
    for (const r of v.refused) this.#prefixRefused.set({ nad: r.nad, reason: r.reason }, 1);
  }

  prefixesReleased(count: number, dryRun: boolean): void {
    this.#prefixReleases.inc({ mode: dryRun ? "dry-run" : "released" }, count);
  }

  /** The time single addresses were unassigned before the prefix over them was assigned, ms. */
  cniRequest(command: string, outcome: "ok" | "try-again" | "error"): void {
    this.#cniRequests.inc({ command, outcome });
  }

  cniAdd(ms: number): void {
    this.#cniAdd.observe(Math.max(0, ms) / 1000);
  }

  prefixSwapGap(ms: number): void {
    this.#prefixSwapGap.observe(Math.max(0, ms) / 1000);
  }

  released(count: number, dryRun: boolean): void {
    this.#releases.inc({ mode: dryRun ? "dry-run" : "released" }, count);
  }

  watchRestart(resource: string): void {
    this.#watchRestarts.inc({ resource });
  }

  /** The blocks still missing after a comparison (none when this replica does not hold the Lease). */
  reservationDrift(missing: readonly { subnetId: string; cidr: string; nad: string }[]): void {
    this.#reservationsMissing.set(missing.length);
    this.#reservationMissing.reset();
    for (const block of missing) {
      this.#reservationMissing.set({ subnet: block.subnetId, cidr: block.cidr, nad: block.nad }, 1);
    }
  }

  /** The orphan sweep's view after a sweep (both 0 when this bridge does not hold the Lease). */
  orphanEnis(v: { waiting: number; deletable: number }): void {
    this.#orphanEnis.set({ state: "waiting" }, v.waiting);
    this.#orphanEnis.set({ state: "deletable" }, v.deletable);
  }

  orphanDeletion(outcome: OrphanDeletionOutcome): void {
    this.#orphanDeletions.inc({ outcome });
  }

  reservationCreated(): void {
    this.#reservationsCreated.inc();
  }

  /** Whether the node carries the startup taint now. */
  startupTaint(on: boolean): void {
    this.#startupTaint.set(on ? 1 : 0);
  }

  startupTaintChanged(action: "removed" | "added"): void {
    this.#startupTaintChanges.inc({ action });
  }

  /** An attach pass: its networks counted by state, and its EC2 calls. */
  attachPass(states: readonly AttachStateLabel[], calls: number): void {
    for (const state of ATTACH_STATES)
      this.#attachNetworks.set({ state }, states.filter((s) => s === state).length);
    this.#attachCalls.inc(calls);
  }

  event(outcome: "posted" | "suppressed" | "failed"): void {
    this.#events.inc({ outcome });
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
