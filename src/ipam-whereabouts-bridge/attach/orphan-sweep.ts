/**
 * The orphan sweep of attach mode, run by the reservations Lease holder every reservation interval: the ENIs
 * of this cluster (tag multus-ipmgr.io/cluster=IPMGR_CLUSTER_NAME) that EC2 shows available (attached to
 * nothing) for IPMGR_BRIDGE_ORPHAN_GRACE_MS are deleted, or in dry run logged once and counted. The first-seen
 * times live in this process only: a new holder starts its own clock, so an orphan waits up to one more grace
 * period after a takeover, never less.
 * Right before deleting, the sweep reads this cluster's available ENIs again (one call, only in a sweep
 * where something is due) and deletes only those still there: the first read may be a whole slow sweep old.
 * EC2 itself refuses to delete an ENI that is attached or attaching (InvalidNetworkInterface.InUse), which
 * guards the moment between that read and the delete: such a refusal keeps the ENI and is not an error.
 */

import { ATTACH_TAGS } from "../../eni/attach-networks.js";
import type { Ec2EniLifecycleApi } from "../../eni/ec2-eni-lifecycle-api.js";
import { Ec2Error } from "../../eni/errors/ec2-error.js";
import type { Logger } from "../../eni/process/logger.js";
import type { Ec2NetworkInterface } from "../../eni/types.js";
import type { BridgeMetrics } from "../telemetry/metrics.js";
import { isOrphanCandidate, orphanPlan } from "./orphan-plan.js";

/**
 * EC2's refusals of a delete because the ENI is in use: it was attached since it was read. The simulator
 * answers IncorrectState (issue 28's list of EC2's errors), EC2 InvalidNetworkInterface.InUse.
 */
const IN_USE_CODES = new Set(["InvalidNetworkInterface.InUse", "IncorrectState"]);

export interface OrphanSweepOptions {
  /** IPMGR_BRIDGE_ORPHANS, when not off: delete, or dry-run (log and count, delete none). */
  readonly mode: "delete" | "dry-run";
  /** IPMGR_CLUSTER_NAME. */
  readonly clusterName: string;
  /** IPMGR_BRIDGE_ORPHAN_GRACE_MS, in ms. */
  readonly graceMs: number;
}

export interface OrphanSweepDeps {
  readonly ec2: Pick<Ec2EniLifecycleApi, "describeEnisByTags" | "deleteNetworkInterface">;
  /** Whether this process holds the reservations Lease now (LeaseRenewer.holds). */
  readonly holds: () => boolean;
  readonly logger: Logger;
  readonly metrics: Pick<BridgeMetrics, "orphanEnis" | "orphanDeletion">;
}

/** What one sweep did, by ENI id. */
export interface OrphanSweepResult {
  readonly waiting: readonly string[];
  readonly deleted: readonly string[];
  /** Dry run: due and reported (logged and counted once per ENI). */
  readonly reported: readonly string[];
  readonly failed: readonly string[];
}

const NOTHING: OrphanSweepResult = { waiting: [], deleted: [], reported: [], failed: [] };

export class OrphanSweeper {
  /** When each candidate was first seen available, clock ms. */
  #firstSeen: ReadonlyMap<string, number> = new Map();
  /** Dry run: the ENIs already logged and counted. */
  readonly #reported = new Set<string>();
  /** The last failure of each ENI whose delete fails, logged once until it changes. */
  readonly #failures = new Map<string, string>();
  #holding = false;

  constructor(
    private readonly deps: OrphanSweepDeps,
    private readonly options: OrphanSweepOptions,
  ) {}

  /**
   * One sweep at `now` (clock ms). Off the Lease, it forgets every first-seen time and sets the gauges to 0.
   * @throws Ec2Error when the ENIs cannot be read; nothing is deleted then.
   */
  async sweep(now: number): Promise<OrphanSweepResult> {
    if (!this.deps.holds()) {
      this.#forget();
      return NOTHING;
    }
    this.#holding = true;
    const plan = orphanPlan(await this.#read(), this.#firstSeen, now, this.options);
    this.#firstSeen = plan.seen;
    for (const id of [...this.#reported]) if (!plan.seen.has(id)) this.#reported.delete(id);
    for (const id of [...this.#failures.keys()]) if (!plan.seen.has(id)) this.#failures.delete(id);
    const result =
      plan.due.length === 0
        ? { ...NOTHING, waiting: plan.waiting }
        : this.options.mode === "dry-run"
          ? { ...NOTHING, waiting: plan.waiting, reported: this.#report(plan.due) }
          : { ...(await this.#delete(plan.due)), waiting: plan.waiting };
    const deletable = this.options.mode === "dry-run" ? plan.due.length : result.failed.length;
    this.deps.metrics.orphanEnis({ waiting: plan.waiting.length, deletable });
    return result;
  }

  #read(): Promise<Ec2NetworkInterface[]> {
    return this.deps.ec2.describeEnisByTags({
      tags: { [ATTACH_TAGS.cluster]: this.options.clusterName },
      status: "available",
    });
  }

  #forget(): void {
    if (!this.#holding) return;
    this.#holding = false;
    this.#firstSeen = new Map();
    this.#reported.clear();
    this.#failures.clear();
    this.deps.metrics.orphanEnis({ waiting: 0, deletable: 0 });
  }

  #report(due: readonly Ec2NetworkInterface[]): string[] {
    const reported: string[] = [];
    for (const eni of due) {
      if (this.#reported.has(eni.eniId)) continue;
      this.#reported.add(eni.eniId);
      reported.push(eni.eniId);
      this.deps.metrics.orphanDeletion("dry_run");
      this.deps.logger.info(
        { eni: eni.eniId, ...this.#describe(eni) },
        "orphaned ENI: this cluster's, available past IPMGR_BRIDGE_ORPHAN_GRACE_MS; not deleted (IPMGR_BRIDGE_ORPHANS=dry-run)",
      );
    }
    return reported;
  }

  async #delete(
    due: readonly Ec2NetworkInterface[],
  ): Promise<Pick<OrphanSweepResult, "deleted" | "failed" | "reported">> {
    const { ec2, logger, metrics } = this.deps;
    const still = new Set(
      (await this.#read())
        .filter((eni) => isOrphanCandidate(eni, this.options.clusterName))
        .map((eni) => eni.eniId),
    );
    const seen = new Map(this.#firstSeen);
    const deleted: string[] = [];
    const failed: string[] = [];
    for (const eni of due) {
      if (!still.has(eni.eniId)) {
        seen.delete(eni.eniId);
        continue;
      }
      // Every delete first checks that the Lease is still ours, as the reservations keeper's writes do.
      if (!this.deps.holds()) {
        logger.warn("lost the reservations Lease during the orphan sweep: no further ENI is deleted");
        break;
      }
      try {
        await ec2.deleteNetworkInterface(eni.eniId);
        seen.delete(eni.eniId);
        this.#failures.delete(eni.eniId);
        deleted.push(eni.eniId);
        metrics.orphanDeletion("deleted");
        logger.info(
          { eni: eni.eniId, ...this.#describe(eni) },
          "deleted an orphaned ENI: this cluster's, available past IPMGR_BRIDGE_ORPHAN_GRACE_MS",
        );
      } catch (error) {
        if (error instanceof Ec2Error && IN_USE_CODES.has(error.code)) {
          seen.delete(eni.eniId);
          logger.info(
            { eni: eni.eniId },
            "an orphan candidate was attached meanwhile (EC2 refused its delete); kept",
          );
          continue;
        }
        failed.push(eni.eniId);
        metrics.orphanDeletion("error");
        const message = error instanceof Error ? error.message : String(error);
        if (this.#failures.get(eni.eniId) !== message) {
          logger.warn(
            { eni: eni.eniId, err: error },
            "could not delete an orphaned ENI; the next sweep tries again",
          );
        }
        this.#failures.set(eni.eniId, message);
      }
    }
    this.#firstSeen = seen;
    return { deleted, failed, reported: [] };
  }

  #describe(eni: Ec2NetworkInterface): Record<string, string | undefined> {
    return {
      subnet: eni.subnetId,
      instance: eni.tags[ATTACH_TAGS.instance],
      network: eni.tags[ATTACH_TAGS.network],
    };
  }
}
