/** The settings of the sidecar's reconcile loop, and what it needs from the address watcher. */
import type { BackoffPolicy } from "../eni/backoff.js";
import type { ReconcileDeps } from "../eni/reconcile.js";
import type { PlanPolicy, PodInterface } from "../eni/types.js";
import type { ReleasedToken } from "./address-watcher.js";
import type { ElasticIpFollower } from "./elastic-ip-follower.js";
import type { SidecarMetrics } from "./metrics.js";

/** 1 s doubling to 60 s: repairs of a drifted address against a rival that holds it. */
export const DEFAULT_REPAIR_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

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
