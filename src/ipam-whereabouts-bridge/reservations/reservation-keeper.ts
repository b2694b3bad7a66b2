/**
 * Subnet CIDR reservations over the whereabouts ranges, kept by one bridge at a time: the holder of a
 * coordination.k8s.io Lease compares the reservations of every subnet of its VPC that a range overlaps
 * (whatever the Availability Zone: nodes of other zones have no Lease holder of their own) with the
 * ranges, and in `create` mode creates what is missing, tagged as ours. Without ec2:DescribeSubnets it
 * keeps to its own Multus ENIs' subnets and says so in /readyz. It never deletes a reservation it did not
 * create.
 * EC2 takes no client token for CreateSubnetCidrReservation: a create retried after a lost answer may be
 * refused as an overlap with the one that was made, so a refused create is followed by a re-read, and a
 * block now covered counts as created.
 * The Lease (lease-renewer.ts) is renewed on a timer of its own beside the passes, and every create or
 * delete first checks that it is still ours: a pass slower than the Lease neither loses it nor writes on
 * after losing it.
 */

import type { Ec2Api } from "../../eni/ec2-api.js";
import { Ec2Error } from "../../eni/errors/ec2-error.js";
import { cidrContains, cidrsOverlap } from "../../eni/ip.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { SubnetCidrReservation } from "../../eni/types.js";
import type { KubeApi } from "../kube/kube-api.js";
import type { WhereaboutsRange } from "../state/whereabouts-ranges.js";
import type { BridgeMetrics } from "../telemetry/metrics.js";
import { LeaseRenewer } from "./lease-renewer.js";
import {
  reservationGap,
  type SubnetView,
  type WantedBlock,
  wantedReservations,
} from "./reservation-cover.js";

/** The tag our reservations carry; only reservations with it are ever deleted. */
export const RESERVATION_TAG = "multus-ipmgr.io/managed-by";
export const RESERVATION_TAG_VALUE = "bridge";

/** Missing blocks that /readyz lists one by one; beyond, it gives the count and the first ones. */
export const MISSING_LISTED = 3;

export interface ReservationKeeperOptions {
  readonly mode: "report" | "create";
  readonly leaseNamespace: string;
  readonly leaseName: string;
  readonly leaseDurationMs: number;
  /** This replica, as the Lease's holderIdentity. */
  readonly identity: string;
  /** The node's VPC (from IMDS): whose subnets are compared. Undefined: only the node's own subnets. */
  readonly vpcId: string | undefined;
}

export interface ReservationStatus {
  /** Whether this replica holds the Lease. */
  readonly leader: boolean;
  /** Blocks still missing after the last pass (created ones excluded). */
  readonly missing: readonly WantedBlock[];
  readonly created: readonly WantedBlock[];
  readonly problems: readonly string[];
}

export class ReservationKeeper {
  #status: ReservationStatus = { leader: false, missing: [], created: [], problems: [] };
  /** The subnets of the last pass: the VPC's, or the node's own when the VPC's could not be listed. */
  #scopeSubnets: readonly SubnetView[] = [];
  /** Whether the denied ec2:DescribeSubnets was logged (once until it works again). */
  #deniedLogged = false;
  /** The last prune's reservations kept for a carried address, one sentence each (logged once, /readyz). */
  #keptLines: string[] = [];

  constructor(
    private readonly deps: {
      kube: KubeApi;
      ec2: Ec2Api;
      clock: Clock;
      logger: Logger;
      metrics: BridgeMetrics;
    },
    private readonly options: ReservationKeeperOptions,
  ) {
    this.lease = new LeaseRenewer(
      { kube: deps.kube, clock: deps.clock, logger: deps.logger },
      {
        namespace: options.leaseNamespace,
        name: options.leaseName,
        durationMs: options.leaseDurationMs,
        identity: options.identity,
      },
    );
  }

  /** The Lease; its `run` renews it on a timer of its own (ReservationsLoop runs it beside the passes). */
  readonly lease: LeaseRenewer;

  get status(): ReservationStatus {
    return this.#status;
  }

  /**
   * /readyz lines (they never make the bridge unready). Up to MISSING_LISTED missing blocks get a line each;
   * more (an IPv6 /64 range takes some 60 blocks) get one line with the count and the first few, the full
   * list being the `reservation_missing` metric.
   */
  lines(): string[] {
    const s = this.#status;
    if (!s.leader) return [];
    return [...this.#missingLines(s), ...this.#keptLines];
  }

  #missingLines(s: ReservationStatus): string[] {
    const create = this.options.mode === "create";
    if (s.missing.length > MISSING_LISTED) {
      const shown = s.missing
        .slice(0, MISSING_LISTED)
        .map((b) => `${b.cidr} in ${b.subnetId} (NAD ${b.nad})`);
      const subnets = [...new Set(s.missing.map((b) => b.subnetId))].length;
      return [
        `${s.missing.length} reservation blocks missing in ${subnets} subnet${subnets === 1 ? "" : "s"}: ` +
          `${shown.join(", ")} and ${s.missing.length - MISSING_LISTED} more, each a multus_ipmgr_bridge_reservation_missing series on /metrics; ` +
          (create
            ? "the next pass creates them"
            : "set IPMGR_BRIDGE_RESERVATIONS=create, or create each with aws ec2 create-subnet-cidr-reservation --reservation-type explicit"),
        ...s.problems,
      ];
    }
    return [
      ...s.missing.map(
        (b) =>
          `reservation missing: ${b.cidr} in ${b.subnetId} (whereabouts range ${b.range} of NAD ${b.nad}); ` +
          (create
            ? "the next pass creates it"
            : `set IPMGR_BRIDGE_RESERVATIONS=create, or aws ec2 create-subnet-cidr-reservation --subnet-id ${b.subnetId} --cidr ${b.cidr} --reservation-type explicit`),
      ),
      ...s.problems,
    ];
  }

  /** Takes or renews the Lease; true when this replica holds it. A lost race is not an error. */
  acquire(): Promise<boolean> {
    return this.lease.renew();
  }

  /**
   * Whether a reservation may be written now: the Lease is still ours (LeaseRenewer.holds). A pass that lost
   * it midway stops writing, says so once, and reports itself as not the holder.
   */
  #mayWrite(what: string): boolean {
    if (this.lease.holds()) return true;
    if (!this.#stoppedLogged) {
      this.deps.logger.warn(
        { lease: `${this.options.leaseNamespace}/${this.options.leaseName}`, next: what },
        "the reservations Lease is no longer ours (lost, or not renewed within its renew deadline): this pass writes nothing more",
      );
    }
    this.#stoppedLogged = true;
    return false;
  }
  #stoppedLogged = false;

  /**
   * One pass: renew or take the Lease; if held, compare and (in `create` mode) create. `ranges` and
   * `subnets` come from the last wave (whereabouts ranges of every NAD, the node's Multus ENIs' subnets);
   * the VPC's other subnets are listed here.
   */
  async pass(
    ranges: readonly WhereaboutsRange[],
    subnets: readonly SubnetView[],
  ): Promise<ReservationStatus> {
    const leader = await this.acquire();
    this.#stoppedLogged = false;
    if (!leader) {
      this.#status = { leader: false, missing: [], created: [], problems: [] };
      this.deps.metrics.reservationDrift([]);
      return this.#status;
    }
    const scope = await this.#scope(subnets);
    const wanted = wantedReservations(ranges, scope.subnets);
    const subnetIds = [...new Set(wanted.map((w) => w.subnetId))].sort();
    const existing = await this.#read(subnetIds);
    const gap = reservationGap(wanted, existing);
    const problems = [...scope.problems, ...gap.problems];
    const created: WantedBlock[] = [];
    let missing = gap.missing;
    let stillLeader = true;
    if (this.options.mode === "create") {
      missing = [];
      for (const block of gap.missing) {
        if (stillLeader && !this.#mayWrite(`create ${block.cidr} in ${block.subnetId}`)) stillLeader = false;
        if (stillLeader && (await this.#create(block))) created.push(block);
        else missing.push(block);
      }
    } else if (gap.missing.length > 0) {
      this.deps.logger.warn(
        { missing: gap.missing.map((b) => `${b.subnetId} ${b.cidr}`) },
        "whereabouts ranges without an explicit subnet CIDR reservation (IPMGR_BRIDGE_RESERVATIONS=report)",
      );
    }
    for (const problem of gap.problems)
      this.deps.logger.warn({ problem }, "a subnet CIDR reservation is in the way");
    this.deps.metrics.reservationDrift(missing);
    this.#status = { leader: stillLeader, missing, created, problems };
    this.#scopeSubnets = scope.subnets;
    return this.#status;
  }

  /**
   * Every subnet of the VPC (other zones' included), with the node's own; the node's own alone when
   * ec2:DescribeSubnets is denied (a role from before this read was needed), reported, not fatal.
   */
  async #scope(own: readonly SubnetView[]): Promise<{ subnets: SubnetView[]; problems: string[] }> {
    const { vpcId } = this.options;
    if (vpcId === undefined) return { subnets: [...own], problems: [] };
    try {
      const vpc = (await this.deps.ec2.describeVpcSubnets(vpcId)).map((s) => ({
        subnetId: s.subnetId,
        cidrs: [s.ipv4Cidr, ...s.ipv6Cidrs].filter((c) => c !== ""),
      }));
      const seen = new Set(vpc.map((s) => s.subnetId));
      this.#deniedLogged = false;
      return { subnets: [...vpc, ...own.filter((s) => !seen.has(s.subnetId))], problems: [] };
    } catch (error) {
      if (!(error instanceof Ec2Error) || error.kind !== "permission") throw error;
      const problem =
        `ec2:DescribeSubnets is denied (${error.code}), so only the subnets of this node's Multus ENIs ` +
        `(${own.map((s) => s.subnetId).join(", ") || "none"}) are compared, not those of other zones of ${vpcId}: ` +
        "add ec2:DescribeSubnets to the bridge's role (deploy/iam/iam-policy-bridge.json)";
      if (!this.#deniedLogged) this.deps.logger.warn({ err: error }, problem);
      this.#deniedLogged = true;
      return { subnets: [...own], problems: [problem] };
    }
  }

  async #read(subnetIds: readonly string[]): Promise<SubnetCidrReservation[]> {
    const lists = await Promise.all(subnetIds.map((id) => this.deps.ec2.getSubnetCidrReservations(id)));
    return lists.flat();
  }

  /** Creates one block; true when it is covered afterwards (made by us, or found there after a refusal). */
  async #create(block: WantedBlock): Promise<boolean> {
    const { ec2, logger, metrics } = this.deps;
    try {
      const made = await ec2.createSubnetCidrReservation(
        block.subnetId,
        block.cidr,
        "explicit",
        `multus-ipmgr: whereabouts range ${block.range} of NAD ${block.nad}`.slice(0, 255),
        { [RESERVATION_TAG]: RESERVATION_TAG_VALUE },
      );
      metrics.reservationCreated();
      logger.info(
        { reservationId: made.reservationId, subnetId: block.subnetId, cidr: block.cidr, nad: block.nad },
        "created a subnet CIDR reservation",
      );
      return true;
    } catch (error) {
      if (!(error instanceof Ec2Error) || error.kind !== "refused") throw error;
      // EC2 takes no client token: a create whose answer was lost and that was retried is refused as an
      // overlap with the reservation it made. Read again; covered now is success.
      const again = reservationGap([block], await this.#read([block.subnetId]));
      if (again.missing.length === 0 && again.problems.length === 0) {
        logger.info(
          { subnetId: block.subnetId, cidr: block.cidr, code: error.code },
          "the reservation was already there",
        );
        return true;
      }
      logger.warn(
        { err: error, subnetId: block.subnetId, cidr: block.cidr },
        "EC2 refused a subnet CIDR reservation",
      );
      return false;
    }
  }

  /**
   * Deletes reservations tagged as ours whose blocks no whereabouts range wants any more (a NAD removed or
   * narrowed). Only in `create` mode, only by the Lease holder; a reservation without our tag is never
   * deleted, nor one over an address of `carried` (addresses pods carry: a NAD whose range a typo took, read
   * first by a bridge that never saw the range, must not free a live pod's address to EC2). Returns the ids
   * deleted.
   */
  async prune(
    ranges: readonly WhereaboutsRange[],
    subnets: readonly SubnetView[],
    carried: readonly string[] = [],
  ): Promise<string[]> {
    if (this.options.mode !== "create" || !this.#status.leader) return [];
    // The last pass's scope (the VPC's subnets), so that a reservation of another zone is pruned too.
    const scope = this.#scopeSubnets.length > 0 ? this.#scopeSubnets : subnets;
    const wanted = wantedReservations(ranges, scope);
    const subnetIds = scope.map((s) => s.subnetId);
    const deleted: string[] = [];
    const keptLines: string[] = [];
    for (const r of await this.#read(subnetIds)) {
      if (r.tags[RESERVATION_TAG] !== RESERVATION_TAG_VALUE) continue;
      if (wanted.some((w) => w.subnetId === r.subnetId && cidrsOverlap(w.cidr, r.cidr))) continue;
      const inUse = carried.find((a) => cidrContains(r.cidr, a));
      if (inUse !== undefined) {
        const line =
          `reservation ${r.reservationId} (${r.cidr} in ${r.subnetId}${r.description === undefined ? "" : `, "${r.description}"`}) ` +
          `is kept though no whereabouts range covers it: a pod carries ${inUse} in it; it goes once no pod does (or delete it by hand)`;
        if (!this.#keptLines.includes(line)) this.deps.logger.warn({ reservationId: r.reservationId }, line);
        keptLines.push(line);
        continue;
      }
      if (!this.#mayWrite(`delete ${r.reservationId}`)) break;
      this.deps.logger.info(
        { reservationId: r.reservationId, subnetId: r.subnetId, cidr: r.cidr },
        "deleting our subnet CIDR reservation: no whereabouts range covers it any more",
      );
      await this.deps.ec2.deleteSubnetCidrReservation(r.reservationId);
      deleted.push(r.reservationId);
    }
    this.#keptLines = keptLines;
    return deleted;
  }
}
