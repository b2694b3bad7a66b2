/**
 * Which of this cluster's ENIs are orphans due for deletion: a pure decision from one DescribeNetworkInterfaces
 * answer, the time each was first seen available, and the clock. The sweep (orphan-sweep.ts) does the I/O.
 * An ENI counts only when the answer itself shows the cluster's tag and status available with no attachment:
 * the request's filters are not trusted alone, so that a reader that dropped a filter deletes nothing of
 * someone else's.
 */

import { ATTACH_TAGS } from "../../eni/attach-networks.js";
import type { Ec2NetworkInterface } from "../../eni/types.js";

export interface OrphanPlanOptions {
  /** IPMGR_CLUSTER_NAME: the value of multus-ipmgr.io/cluster an orphan must carry. Empty: nothing is ours. */
  readonly clusterName: string;
  /** IPMGR_BRIDGE_ORPHAN_GRACE_MS: how long an ENI must have been seen available before it is due, in ms. */
  readonly graceMs: number;
}

export interface OrphanPlan {
  /** The first-seen time (clock ms) of every orphan candidate now: keep it for the next sweep. */
  readonly seen: ReadonlyMap<string, number>;
  /** Candidates still in their grace period, by ENI id. */
  readonly waiting: readonly string[];
  /** Candidates seen available for the grace period or longer: to delete (or, in dry run, to report). */
  readonly due: readonly Ec2NetworkInterface[];
}

/** Whether EC2's answer shows `eni` as an unattached ENI of this cluster. */
export function isOrphanCandidate(eni: Ec2NetworkInterface, clusterName: string): boolean {
  return (
    clusterName !== "" &&
    eni.tags[ATTACH_TAGS.cluster] === clusterName &&
    eni.status === "available" &&
    eni.attachment === undefined
  );
}

/**
 * The plan of one sweep at `now`. An ENI not among the candidates now (attached since, deleted, untagged) is
 * forgotten: its clock starts again if it is ever seen available anew.
 */
export function orphanPlan(
  enis: readonly Ec2NetworkInterface[],
  firstSeen: ReadonlyMap<string, number>,
  now: number,
  options: OrphanPlanOptions,
): OrphanPlan {
  const seen = new Map<string, number>();
  const waiting: string[] = [];
  const due: Ec2NetworkInterface[] = [];
  for (const eni of enis) {
    if (!isOrphanCandidate(eni, options.clusterName) || seen.has(eni.eniId)) continue;
    const since = Math.min(firstSeen.get(eni.eniId) ?? now, now);
    seen.set(eni.eniId, since);
    if (now - since >= options.graceMs) due.push(eni);
    else waiting.push(eni.eniId);
  }
  return { seen, waiting, due };
}
