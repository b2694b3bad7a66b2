/**
 * What stands between the bridge's desired state and a release: whether the view of the cluster can be
 * trusted (view-trust.ts), input it cannot read, and a fresh list that must agree before an address goes.
 * Keeps the holds and says each change once: a warning when the view goes stale or trusted again, one per
 * unreadable object (with an Event on it), the metrics, and the lines /readyz shows.
 *
 * The fresh list runs beside the waves, never in them (`confirmBeside`): a list that hangs must not delay
 * the assigns of new pods. A wave that finds releases due starts one list; a later wave makes the releases
 * it confirmed, if it settled recently; a list that fails or times out confirms nothing.
 */
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { EventObjectKind } from "../kube/kube-api.js";
import { foldedWords, type StateChange, StateChangeLog } from "../kube/state-change-log.js";
import type { ViewTrust } from "../kube/view-trust.js";
import type { DesiredState, Release } from "../state/desired-state.js";
import { unusedKey } from "../state/desired-state.js";
import type { BridgeMetrics, ReleaseHoldReason } from "../telemetry/metrics.js";
import type { PodEventReporter } from "../telemetry/pod-events.js";

/** The Event reason for input the bridge cannot read, by the kind of object that holds it. */
const PROBLEM_REASON: Readonly<Record<Exclude<EventObjectKind, "Node">, string>> = {
  Pod: "NetworkStatusUnreadable",
  NetworkAttachmentDefinition: "NetworkConfigUnreadable",
  IPPool: "AllocationUnreadable",
};

export interface ReleaseGuardDeps {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: BridgeMetrics;
  readonly events: PodEventReporter;
}

/** A confirmation: the releases both readings agree on, and the (ENI, address) keys the fresh one keeps. */
export interface Confirmation {
  readonly confirmed: Release[];
  /** `unusedKey`s of the releases the fresh reading finds in use: their graces start again. */
  readonly inUse: string[];
}

/** What a wave may do with its due releases now (`confirmBeside`). */
export interface ConfirmationTurn {
  /** The releases a fresh list confirmed: make them now. */
  readonly confirmed: Release[];
  /** `unusedKey`s of due releases a fresh list found in use: their graces start again. */
  readonly inUse: string[];
  /** The last fresh list failed or timed out, and none has succeeded since: the releases are held. */
  readonly failed: boolean;
  /** A fresh list runs: a wave comes when it ends. */
  readonly waiting: boolean;
}

interface SettledConfirmation {
  readonly at: number;
  /** Undefined: the list failed, timed out or could not read a live pod. */
  readonly confirmation: Confirmation | undefined;
}

/** Within this window a stale view that comes back and goes stale again is counted, not logged again, ms. */
export const TRUST_LOG_WINDOW_MS = 60_000;

export class ReleaseGuard {
  #trusted = false;
  #everTrusted = false;
  readonly #staleLog = new StateChangeLog(TRUST_LOG_WINDOW_MS);
  #holds = new Set<ReleaseHoldReason>();
  #warnedProblems = new Set<string>();
  #problemLines: string[] = [];
  /** The fresh list running beside the waves, and the releases it confirms. */
  #running: { readonly promise: Promise<void>; readonly count: number } | undefined;
  #settled: SettledConfirmation | undefined;
  #lastFailure: string | undefined;
  /** The last confirming list failed, and none has succeeded since. */
  #failing = false;

  constructor(private readonly deps: ReleaseGuardDeps) {}

  /**
   * Records the trust at `now` (ms) and logs each change of state once (state-change-log.ts): stale, with the
   * reasons, and trusted again, with how long it was stale; a view that flaps is counted and told in one line
   * a minute. A stale view is logged only once the view has been trusted, or when a watch has failed: not
   * while the first lists run. The stale-view hold (and its metric) follows the trust at once. Returns
   * whether the view has just become trusted again.
   */
  noteTrust(trust: ViewTrust, faulted: boolean, now: number): boolean {
    const was = this.#trusted;
    this.#trusted = trust.trusted;
    const told = this.#staleLog.note(!trust.trusted && (this.#everTrusted || faulted), now);
    if (told !== undefined) this.#tell(told, trust);
    const returned = trust.trusted && !was;
    if (returned) this.#everTrusted = true;
    if (trust.trusted) this.#holds.delete("stale-view");
    else this.#holds.add("stale-view");
    this.deps.metrics.trust(trust.trusted, this.#holds);
    return returned;
  }

  #tell(told: StateChange, trust: ViewTrust): void {
    const { logger } = this.deps;
    const folded =
      told.folded === undefined
        ? {}
        : { staleTimes: told.folded.times, staleMs: told.folded.badMs, overMs: told.folded.overMs };
    const before = told.folded === undefined ? "" : ` (before: ${foldedWords(told.folded, "it went stale")})`;
    if (told.kind === "bad") {
      logger.warn(
        { reasons: trust.reasons, ...folded },
        `the view of the cluster is stale: releases are held until every watch is back and heard from, and each release's grace restarts then${before}`,
      );
    } else if (told.kind === "good") {
      logger.info(
        { staleMs: told.badMs },
        `the view of the cluster is trusted again after ${Math.round(told.badMs / 1000)} s stale; release graces restart now`,
      );
    } else {
      logger.warn(
        folded,
        `the view of the cluster flapped: ${foldedWords(told.folded, "it went stale")}; it is ${trust.trusted ? "trusted" : "stale"} now`,
      );
    }
  }

  /** The reasons releases are held at this wave. */
  hold(holds: ReadonlySet<ReleaseHoldReason>): void {
    // The stale-view hold follows the trust now, which may have changed while the wave ran.
    this.#holds = new Set([...holds].filter((reason) => reason !== "stale-view"));
    if (!this.#trusted) this.#holds.add("stale-view");
    // No release due, or one confirmed: an old failure says nothing about the next list.
    if (!holds.has("unconfirmed")) this.#failing = false;
    this.deps.metrics.trust(this.#trusted, this.#holds);
  }

  /** Each unreadable input: a warning once, an Event on its object, a /readyz line and the metric. */
  reportProblems(desired: DesiredState): void {
    const { logger, events, metrics } = this.deps;
    const keys = new Set<string>();
    const counts: Record<string, number> = {};
    const lines: string[] = [];
    for (const problem of desired.problems) {
      const object = `${problem.kind} ${problem.namespace}/${problem.name}`;
      const key = `${object} ${problem.message}`;
      keys.add(key);
      counts[problem.kind] = (counts[problem.kind] ?? 0) + 1;
      lines.push(`cannot read: ${problem.message}`);
      if (!this.#warnedProblems.has(key)) logger.warn({ object }, problem.message);
      events.report({
        pod: { namespace: problem.namespace, name: problem.name, uid: problem.uid, kind: problem.kind },
        type: "Warning",
        reason: PROBLEM_REASON[problem.kind],
        message: problem.message,
      });
    }
    this.#warnedProblems = keys;
    this.#problemLines = [...new Set(lines)];
    metrics.inputProblems(counts);
  }

  /**
   * The releases a fresh reading (pods, IPPools and reservations listed again) agrees on: a watch can lag (a
   * connection that stalls without failing), and a release on a stale reading takes a live pod's address.
   * Undefined when the fresh reading failed or cannot read a live pod: nothing is released then.
   */
  async confirm(
    releases: readonly Release[],
    freshReading: () => Promise<DesiredState>,
    isAbort: (error: unknown) => boolean,
  ): Promise<Confirmation | undefined> {
    const { logger } = this.deps;
    let fresh: DesiredState;
    try {
      fresh = await freshReading();
      this.#lastFailure = undefined;
    } catch (error) {
      if (isAbort(error)) throw error;
      this.#lastFailure = error instanceof Error ? error.message : String(error);
      logger.warn(
        { err: error, releases: releases.length },
        "could not list pods, IPPools and reservations afresh to confirm releases; they are held and tried again shortly",
      );
      return undefined;
    }
    if (fresh.unreadablePods.length > 0) {
      this.#lastFailure = "a live pod's network-status cannot be read";
      return undefined;
    }
    const agreed = new Set(fresh.releases.map((r) => unusedKey(r.eniId, r.address)));
    const confirmed: Release[] = [];
    const inUse: string[] = [];
    for (const r of releases) {
      const key = unusedKey(r.eniId, r.address);
      if (agreed.has(key)) {
        confirmed.push(r);
        continue;
      }
      inUse.push(key);
      logger.info(
        { eniId: r.eniId, address: r.address },
        "not released: a fresh list shows the address in use, which the watch has not delivered yet",
      );
    }
    return { confirmed, inUse };
  }

  /**
   * The confirmation of a wave's due releases, run beside the waves. A list that settled at most `maxAgeMs`
   * ago is used once: the due releases it confirmed are made, those it found in use restart their grace.
   * Otherwise, when no list runs, one starts over the due releases (`confirm` with `freshReading`), and
   * `settled` is called when it ends, so that a wave comes to use it. `freshReading` must time out well
   * below a pod's patience: until it settles, the releases wait; the assigns never do.
   */
  confirmBeside(
    due: readonly Release[],
    now: number,
    options: {
      readonly freshReading: () => Promise<DesiredState>;
      readonly isAbort: (error: unknown) => boolean;
      readonly maxAgeMs: number;
      readonly settled: () => void;
    },
  ): ConfirmationTurn {
    const settled = this.#settled;
    this.#settled = undefined;
    if (settled !== undefined && settled.confirmation === undefined) {
      // The next list starts at a later wave (the caller looks again shortly), not at once: a list that
      // fails fast must not run back to back with waves.
      this.#failing = true;
      return { confirmed: [], inUse: [], failed: true, waiting: false };
    }
    if (settled?.confirmation !== undefined && now - settled.at <= options.maxAgeMs) {
      this.#failing = false;
      const confirmedKeys = new Set(settled.confirmation.confirmed.map((r) => unusedKey(r.eniId, r.address)));
      const inUse = new Set(settled.confirmation.inUse);
      const confirmed = due.filter((r) => confirmedKeys.has(unusedKey(r.eniId, r.address)));
      const undecided = due.filter(
        (r) => !confirmedKeys.has(unusedKey(r.eniId, r.address)) && !inUse.has(unusedKey(r.eniId, r.address)),
      );
      if (undecided.length > 0) this.#start(undecided, options);
      return {
        confirmed,
        inUse: due.map((r) => unusedKey(r.eniId, r.address)).filter((key) => inUse.has(key)),
        failed: false,
        waiting: this.#running !== undefined,
      };
    }
    if (this.#running === undefined) this.#start(due, options);
    // Still failing until a list succeeds: the hold stays visible while the next list runs.
    return { confirmed: [], inUse: [], failed: this.#failing, waiting: true };
  }

  /** Starts a fresh list beside the waves; its result waits in `#settled` for the next wave. */
  #start(
    releases: readonly Release[],
    options: Pick<Parameters<ReleaseGuard["confirmBeside"]>[2], "freshReading" | "isAbort" | "settled">,
  ): void {
    const promise = this.confirm(releases, options.freshReading, options.isAbort)
      .then(
        (confirmation) => {
          this.#settled = { at: this.#now(), confirmation };
        },
        (error: unknown) => {
          // Only an abort (the bridge stopping) gets here: nothing is confirmed.
          this.deps.logger.debug({ err: error }, "the confirming list ended with the bridge");
          this.#settled = { at: this.#now(), confirmation: undefined };
        },
      )
      .finally(() => {
        this.#running = undefined;
        options.settled();
      });
    this.#running = { promise, count: releases.length };
  }

  #now(): number {
    return this.deps.clock.now();
  }

  /** Waits for the confirming list running beside the waves, if any. */
  async idle(): Promise<void> {
    await this.#running?.promise;
  }

  /** /readyz lines: why releases are held, and what cannot be read. */
  lines(trust: ViewTrust): string[] {
    const lines: string[] = [];
    if (!trust.trusted) {
      lines.push("the view of the cluster is stale; releases are held:");
      for (const reason of trust.reasons) lines.push(`  ${reason}`);
    }
    if (this.#holds.has("unreadable-pod")) {
      lines.push("releases are held: a live pod's network-status cannot be read (see below)");
    }
    if (this.#holds.has("unconfirmed")) {
      lines.push(
        `releases are held: the fresh list that confirms them failed (${this.#lastFailure ?? "unknown"}); tried again shortly`,
      );
    }
    if (this.#running !== undefined) {
      lines.push(`${this.#running.count} due releases wait for a fresh list that confirms them`);
    }
    lines.push(...this.#problemLines);
    return lines;
  }
}
