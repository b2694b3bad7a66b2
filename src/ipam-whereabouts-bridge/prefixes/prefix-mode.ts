/**
 * Prefix mode's part of a wave (docs/prefix-mode.md): watches whereabouts' NodeSlicePools, plans with
 * prefix-plan.ts, makes the EC2 calls, and hands the address plan the ENIs as they are afterwards, so that
 * every pod address inside a prefix counts as held (no call) and none is assigned singly inside one.
 *
 * Releases of prefixes take the same precautions as address releases: a trusted view (the bridge's watches
 * and the NodeSlicePool watch listed, watching and heard from), every pod's network-status readable, a fresh
 * list of pods and NodeSlicePools that agrees, the grace, and IPMGR_BRIDGE_RELEASE_DRY_RUN.
 */

import type { BackoffPolicy } from "../../eni/backoff.js";
import type { Ec2Api } from "../../eni/ec2-api.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { EniState, IpFamily } from "../../eni/types.js";
import {
  CONFIRM_TIMEOUT_MS,
  CONFIRMATION_MAX_AGE_MS,
  type KubeApi,
  type NadInfo,
  type NodeSlicePoolInfo,
  type PodInfo,
  type WatchedCollection,
  type WatchListener,
} from "../kube/kube-api.js";
import { viewTrust } from "../kube/view-trust.js";
import { hostInterfaceMacs } from "../node/host-interface-macs.js";
import { podFinished } from "../state/desired-state.js";
import { podNetworks } from "../state/pod-networks.js";
import type { BridgeMetrics } from "../telemetry/metrics.js";
import type { PodEventReporter } from "../telemetry/pod-events.js";
import { InstancePrefixSupport } from "./instance-prefix-support.js";
import { applyPrefixSteps, type RefusedAssign } from "./prefix-apply.js";
import {
  type PrefixOverlapMode,
  type PrefixPlan,
  type PrefixRelease,
  planPrefixes,
  prefixKey,
  prefixSteps,
} from "./prefix-plan.js";
import { PrefixRefusalMemory, sliceFingerprint } from "./prefix-refusal-memory.js";
import { BesideConfirmation } from "./prefix-release-confirmation.js";
import { SwapCheck } from "./prefix-swap-check.js";

export interface PrefixModeDeps {
  readonly kube: KubeApi;
  readonly ec2: Ec2Api;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: BridgeMetrics;
  readonly events: PodEventReporter;
}

export interface PrefixModeOptions {
  readonly nodeName: string;
  readonly allowedCidrs: readonly string[];
  readonly overlap: PrefixOverlapMode;
  /** Grace of a prefix of a slice the node no longer owns, ms (the address releases' grace). */
  readonly releaseGraceMs: number;
  readonly releaseDryRun: boolean;
  /** How long an EC2 change is trusted over IMDS, ms. */
  readonly recentMemoryMs: number;
  readonly addressesPerEni: number | undefined;
  readonly watchSilenceMs: number;
  /** The node's network interfaces, name -> MAC; default: /sys/class/net (the bridge runs on the host network). */
  readonly hostMacs?: () => ReadonlyMap<string, string>;
  /** The instance type (IMDS), looked up once with DescribeInstanceTypes: a non-Nitro type refuses every slice. */
  readonly instanceType?: string;
  /** How long a slice EC2 refused waits before it is tried again (unless its ENI changes inside it). */
  readonly refusalBackoff?: BackoffPolicy;
  /** The fresh list that confirms prefix releases fails after this long, ms. Default CONFIRM_TIMEOUT_MS. */
  readonly confirmTimeoutMs?: number;
}

/** What a wave tells prefix mode. */
export interface PrefixWaveInput {
  /** This node's ENIs as IMDS shows them (the address changes EC2 accepted recently overlaid). */
  readonly enis: readonly EniState[];
  readonly multusEniIds: ReadonlySet<string>;
  readonly nads: readonly NadInfo[];
  readonly pods: readonly PodInfo[];
  /** Whether the bridge's own watches are trusted now. */
  readonly trusted: boolean;
  /** A fresh list of this node's pods, to confirm releases; it must time out (CONFIRM_TIMEOUT_MS). */
  readonly freshPods: () => Promise<readonly PodInfo[]>;
}

interface RecentPrefixChange {
  readonly eniId: string;
  readonly family: IpFamily;
  /** A prefix (CIDR) or a single address. */
  readonly value: string;
  readonly kind: "assigned" | "released";
  readonly until: number;
}

export class PrefixMode {
  #pools: WatchedCollection<NodeSlicePoolInfo> | undefined;
  #unusedSince = new Map<string, number>();
  #recent: RecentPrefixChange[] = [];
  #dryRunLogged = new Set<string>();
  #refusalsLogged = new Set<string>();
  #nextAt: number | undefined;
  #lines: string[] = [];
  #slicesHeld = false;
  #lastWave = { calls: 0, changed: 0 };
  readonly #refused: PrefixRefusalMemory;
  readonly #prefixSupport: InstancePrefixSupport;
  readonly #swapCheck: SwapCheck;
  readonly #confirmation: BesideConfirmation;

  constructor(
    private readonly deps: PrefixModeDeps,
    private readonly options: PrefixModeOptions,
  ) {
    this.#refused = new PrefixRefusalMemory(options.refusalBackoff);
    this.#prefixSupport = new InstancePrefixSupport(deps, options.instanceType);
    this.#swapCheck = new SwapCheck(deps);
    // The waves that wait for a list come every second (#nextAt): an answer is used within about that.
    this.#confirmation = new BesideConfirmation(deps.clock, 1_000 + CONFIRMATION_MAX_AGE_MS);
  }

  /** Starts the NodeSlicePool watch (RBAC: nodeslicepools list, watch). */
  async start(listener: WatchListener): Promise<void> {
    this.#pools = await this.deps.kube.watchNodeSlicePools(listener);
  }

  /** When a wave is due for a prefix release whose grace ends; undefined: none pending. */
  get nextAt(): number | undefined {
    return this.#nextAt;
  }

  /** The EC2 writes of the last wave's prefix part: all of them, and those EC2 accepted. */
  get lastWave(): { readonly calls: number; readonly changed: number } {
    return this.#lastWave;
  }

  /**
   * Whether the last wave found every prefix of the node's slices held and no NAD refused (attach mode's
   * startup taint waits for it); false before the first wave.
   */
  get slicesHeld(): boolean {
    return this.#slicesHeld;
  }

  /** /readyz lines of the last wave. */
  lines(): readonly string[] {
    return this.#lines;
  }

  /**
   * The prefix part of a wave: plan, release (when safe), assign. Returns the ENIs as they are now, for the
   * address plan. Throws what the wave must retry whole (EC2 unavailable after its retries, an abort).
   */
  async wave(input: PrefixWaveInput, signal: AbortSignal): Promise<EniState[]> {
    const { clock, logger, metrics } = this.deps;
    const pools = this.#pools;
    if (pools === undefined) throw new Error("internal: prefix mode ran before start()");
    const now = clock.now();
    this.#lastWave = { calls: 0, changed: 0 };
    const enis = this.#overlay(input.enis, now);
    const nonNitro = await this.#prefixSupport.nonNitro(signal);
    const fingerprintOf = (eniId: string, slice: string) =>
      sliceFingerprint(enis, eniId, slice.includes(":") ? 6 : 4, slice);
    let withheld = this.#refused.withheld(now, fingerprintOf);
    const planFrom = (
      pods: readonly PodInfo[],
      slicePools: readonly NodeSlicePoolInfo[],
      unusedSince: ReadonlyMap<string, number>,
    ) =>
      planPrefixes({
        nodeName: this.options.nodeName,
        nads: input.nads,
        slicePools,
        enis,
        multusEniIds: input.multusEniIds,
        hostMacs: (this.options.hostMacs ?? hostInterfaceMacs)(),
        allowedCidrs: this.options.allowedCidrs,
        carried: carriedBy(pods, this.options.nodeName).addresses,
        addressesPerEni: this.options.addressesPerEni,
        overlap: this.options.overlap,
        now,
        releaseGraceMs: this.options.releaseGraceMs,
        unusedSince,
        withheld,
        ...(nonNitro === undefined ? {} : { nonNitro }),
      });
    const trusted = input.trusted && viewTrust([pools.health()], now, this.options.watchSilenceMs).trusted;
    const readable = carriedBy(input.pods, this.options.nodeName).readable;
    let plan = planFrom(input.pods, pools.list(), this.#unusedSince);
    const taken = await this.#swapCheck.taken(plan, enis, signal);
    for (const t of taken)
      this.#refused.refused(
        { ...t, fingerprint: fingerprintOf(t.eniId, t.slice) },
        "held-in-subnet",
        t.cause,
        now,
      );
    if (taken.length > 0) {
      withheld = this.#refused.withheld(now, fingerprintOf);
      plan = planFrom(input.pods, pools.list(), this.#unusedSince);
    }
    this.#unusedSince = trusted ? plan.unusedSince : new Map();
    let releases: PrefixRelease[] = trusted && readable ? plan.releases : [];
    if (releases.length > 0)
      releases = this.#confirmBeside(
        releases,
        (pods, slicePools) => planFrom(pods, slicePools, plan.unusedSince),
        input,
        signal,
      );
    this.#nextAt = plan.pending.length === 0 ? undefined : Math.min(...plan.pending.map((p) => p.releaseAt));
    if (plan.releases.length > 0 && releases.length === 0)
      this.#nextAt = Math.min(this.#nextAt ?? Infinity, now + 1_000);

    for (const r of releases) {
      if (this.options.releaseDryRun) {
        const key = prefixKey(r.eniId, r.prefix);
        if (this.#dryRunLogged.has(key)) continue;
        this.#dryRunLogged.add(key);
        metrics.prefixesReleased(1, true);
        logger.info(
          { eniId: r.eniId, prefix: r.prefix, reason: r.reason },
          "dry run: would release the prefix",
        );
      } else {
        logger.info({ eniId: r.eniId, prefix: r.prefix, reason: r.reason }, "releasing the prefix");
      }
    }
    const steps = prefixSteps(plan, this.options.releaseDryRun ? [] : releases);
    const applied = await applyPrefixSteps(
      steps,
      { ...this.deps, remember: (...change) => this.#remember(...change) },
      signal,
    );
    this.#lastWave = { calls: applied.calls, changed: applied.changed };
    if (applied.refusedAssigns.length > 0) {
      this.#remembered(applied.refusedAssigns, plan, fingerprintOf, now);
      withheld = this.#refused.withheld(now, fingerprintOf);
      plan = planFrom(input.pods, pools.list(), this.#unusedSince);
    }
    const retryAt = this.#refused.nextAt(now);
    if (retryAt !== undefined) this.#nextAt = Math.min(this.#nextAt ?? Infinity, retryAt);
    this.#report(plan, applied.failures);
    return this.#overlay(input.enis, clock.now());
  }

  /** The slices of the prefix assigns EC2 refused, remembered as refused (the plan withholds them). */
  #remembered(
    refusedAssigns: readonly RefusedAssign[],
    plan: PrefixPlan,
    fingerprintOf: (eniId: string, slice: string) => string,
    now: number,
  ): void {
    for (const r of refusedAssigns) {
      const slices = new Set(
        plan.wanted.filter((w) => w.eniId === r.eniId && r.prefixes.includes(w.prefix)).map((w) => w.slice),
      );
      for (const slice of slices) {
        this.#refused.refused(
          { eniId: r.eniId, slice, fingerprint: fingerprintOf(r.eniId, slice) },
          "ec2-refused",
          `EC2 refused the prefixes ${r.prefixes.join(", ")} on ENI ${r.eniId}: ${r.message}`,
          now,
        );
      }
    }
  }

  /**
   * The releases a fresh list of pods and NodeSlicePools, run beside the waves, agreed on; none while it runs
   * or when it failed (prefix-release-confirmation.ts). Those it found in use start their grace again.
   */
  #confirmBeside(
    releases: PrefixRelease[],
    replan: (pods: readonly PodInfo[], pools: readonly NodeSlicePoolInfo[]) => PrefixPlan,
    input: PrefixWaveInput,
    signal: AbortSignal,
  ): PrefixRelease[] {
    const key = (r: PrefixRelease) => prefixKey(r.eniId, r.prefix);
    const turn = this.#confirmation.turn(releases.map(key), () =>
      this.#freshAgreement(replan, input, signal),
    );
    if (turn === undefined) return [];
    for (const inUse of turn.inUse) this.#unusedSince.delete(inUse);
    return releases.filter((r) => turn.confirmed.has(key(r)));
  }

  /** The prefix releases a fresh list agrees on (`prefixKey`s); undefined when it failed or timed out. */
  async #freshAgreement(
    replan: (pods: readonly PodInfo[], pools: readonly NodeSlicePoolInfo[]) => PrefixPlan,
    input: PrefixWaveInput,
    signal: AbortSignal,
  ): Promise<ReadonlySet<string> | undefined> {
    const pools = this.#pools;
    if (pools === undefined) return undefined;
    try {
      const [pods, slicePools] = await Promise.all([
        input.freshPods(),
        pools.fetchNow(this.options.confirmTimeoutMs ?? CONFIRM_TIMEOUT_MS),
      ]);
      if (!carriedBy(pods, this.options.nodeName).readable) return undefined;
      return new Set(replan(pods, slicePools).releases.map((r) => prefixKey(r.eniId, r.prefix)));
    } catch (error) {
      if (signal.aborted) {
        this.deps.logger.debug({ err: error }, "the list confirming prefix releases ended with the bridge");
      } else {
        this.deps.logger.warn(
          { err: error },
          "could not list pods and NodeSlicePools afresh to confirm prefix releases; they are held and tried again shortly",
        );
      }
      return undefined;
    }
  }

  #remember(
    eniId: string,
    family: IpFamily,
    values: readonly string[],
    kind: RecentPrefixChange["kind"],
  ): void {
    const until = this.deps.clock.now() + this.options.recentMemoryMs;
    this.#recent = this.#recent.filter((c) => !(c.eniId === eniId && values.includes(c.value)));
    for (const value of values) this.#recent.push({ eniId, family, value, kind, until });
  }

  /** The ENIs with the changes EC2 accepted recently that IMDS does not show yet. */
  #overlay(enis: readonly EniState[], now: number): EniState[] {
    this.#recent = this.#recent.filter((c) => c.until > now);
    return enis.map((eni) => {
      const mine = this.#recent.filter((c) => c.eniId === eni.eniId);
      if (mine.length === 0) return eni;
      const apply = (list: readonly string[], fam: IpFamily, prefixes: boolean): string[] => {
        let out = [...list];
        for (const c of mine) {
          if (c.family !== fam || c.value.includes("/") !== prefixes) continue;
          if (c.kind === "assigned" && !out.includes(c.value)) out.push(c.value);
          if (c.kind === "released") out = out.filter((v) => v !== c.value);
        }
        return out;
      };
      return {
        ...eni,
        ipv4s: apply(eni.ipv4s, 4, false),
        ipv6s: apply(eni.ipv6s, 6, false),
        ipv4Prefixes: apply(eni.ipv4Prefixes ?? [], 4, true),
        ipv6Prefixes: apply(eni.ipv6Prefixes ?? [], 6, true),
      };
    });
  }

  /** Metrics, one warning and an Event per refused NAD, and the /readyz lines. */
  #report(plan: PrefixPlan, failures: readonly string[]): void {
    const { logger, metrics, events } = this.deps;
    const assigned = new Set(
      this.#recent.filter((c) => c.kind === "assigned").map((c) => prefixKey(c.eniId, c.value)),
    );
    const held = plan.wanted.filter(
      (w) => plan.held.includes(w) || assigned.has(prefixKey(w.eniId, w.prefix)),
    ).length;
    metrics.prefixes({
      wanted: plan.wanted.length,
      held,
      deferred: plan.deferred.length,
      pendingReleases: plan.pending.length,
      refused: plan.refusals.map((r) => ({ nad: r.nad, reason: r.reason })),
    });
    const keys = new Set<string>();
    for (const r of plan.refusals) {
      const key = `${r.nad} ${r.detail}`;
      keys.add(key);
      if (!this.#refusalsLogged.has(key)) logger.warn({ nad: r.nad, reason: r.reason }, r.detail);
      events.report({
        pod: { namespace: r.namespace, name: r.name, uid: r.uid, kind: "NetworkAttachmentDefinition" },
        type: "Warning",
        reason: "PrefixModeRefused",
        message: r.detail,
      });
    }
    this.#refusalsLogged = keys;
    this.#slicesHeld = held === plan.wanted.length && plan.refusals.length === 0 && failures.length === 0;
    this.#lines = [
      `prefix mode: ${held} of ${plan.wanted.length} prefixes held; ${plan.deferred.length} waiting for single addresses inside to go; ${plan.pending.length} releases pending`,
      ...plan.refusals.map((r) => `prefix mode refused: ${r.detail}`),
      ...failures.map((f) => `prefix mode failed: ${f}`),
    ];
  }
}

/** The addresses this node's pods carry (finished pods carry none), and whether every pod's network-status reads. */
function carriedBy(
  pods: readonly PodInfo[],
  nodeName: string,
): { addresses: Set<string>; readable: boolean } {
  const addresses = new Set<string>();
  let readable = true;
  for (const pod of pods) {
    if (pod.nodeName !== nodeName || podFinished(pod)) continue;
    const networks = podNetworks(pod);
    if (networks.problems.length > 0) readable = false;
    for (const a of networks.attachments) for (const address of a.addresses) addresses.add(address);
  }
  return { addresses, readable };
}
