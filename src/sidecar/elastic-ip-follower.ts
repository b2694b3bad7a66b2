import { type BackoffPolicy, backoffDelay } from "../eni/backoff.js";
import type { ElasticIpDecision } from "../eni/elastic-ip-plan.js";
import { checkElasticIps, type ElasticIpCheckDeps, elasticIpProblem } from "../eni/elastic-ips.js";
import { Ec2Error } from "../eni/errors/ec2-error.js";
import type { ProbeResult } from "../eni/process/probe-server.js";
import type { ElasticIpMapping } from "../eni/types.js";
import type { SidecarMetrics } from "./metrics.js";

export interface ElasticIpFollowerOptions {
  /** IPMGR_ELASTIC_IPS. */
  readonly mappings: readonly ElasticIpMapping[];
  readonly deps: ElasticIpCheckDeps;
  readonly metrics: SidecarMetrics;
  /** How long DescribeAddresses may take to show an association EC2 accepted, and the poll interval, in ms. */
  readonly confirm: { readonly timeoutMs: number; readonly intervalMs: number };
  /** Period of the check while every mapped address we hold has its Elastic IP, in ms (the resync period). */
  readonly recheckIntervalMs: number;
  /**
   * Pacing, while something is not in place, of the checks and of the associations of one address that our
   * ENI keeps holding (after the first). Default: 1 s doubling to 30 s, plus up to 25 % jitter.
   */
  readonly retryBackoff?: BackoffPolicy;
  /** For tests: the jitter source, in [0, 1). */
  readonly random?: () => number;
}

export const DEFAULT_ELASTIC_IP_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 30_000 };

/** One mapping as the follower tracks it. */
interface Tracked {
  readonly mapping: ElasticIpMapping;
  /** Our ENI that holds the address at the latest observation; undefined when none does. */
  eniId: string | undefined;
  /** When our ENI took the address: EC2 accepting our assign, or the observation that first showed it. */
  heldSince: number | undefined;
  /** A check since `heldSince` showed the Elastic IP on the address on our ENI, and none since said otherwise. */
  inPlace: boolean;
  /** The last check's decision, and when it was made. */
  decision: ElasticIpDecision | undefined;
  checkedAt: number | undefined;
  /** Why it is not in place (a problem, EC2's refusal, a paced association), for /readyz and the log. */
  problem: string | undefined;
  /** Associations made during this hold, and when the next one may be made. */
  associations: number;
  nextAssociateAt: number | undefined;
}

/** The first sentence of an error, for logs and /readyz. */
function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * Keeps the Elastic IP of each mapped address on our ENI while our ENI holds the address. The reconcile loop
 * tells it which mapped addresses our ENIs hold after every observation and reconcile (`held`), and runs
 * `check` when `dueAt` says: at once after our ENI took an address, with backoff while something is not in
 * place, and every `recheckIntervalMs` otherwise (an Elastic IP taken off behind our back comes back).
 *
 * The decision is planElasticIps': an address our ENI does not hold (the standby) costs no call and moves
 * nothing, so a public address never moves faster than its private address. On top of it, while our ENI keeps
 * holding an address, only its first association is made at once; later ones (something keeps taking the
 * Elastic IP away) are paced by the backoff.
 */
export class ElasticIpFollower {
  readonly #o: ElasticIpFollowerOptions;
  readonly #backoff: BackoffPolicy;
  readonly #random: () => number;
  readonly #tracked: Tracked[];
  #nextCheckAt: number | undefined;
  /** Consecutive checks that left something not in place, or failed. */
  #rounds = 0;
  #lastError: string | undefined;
  #errorKey: string | undefined;

  constructor(options: ElasticIpFollowerOptions) {
    this.#o = options;
    this.#backoff = options.retryBackoff ?? DEFAULT_ELASTIC_IP_BACKOFF;
    this.#random = options.random ?? Math.random;
    this.#tracked = options.mappings.map((mapping) => ({
      mapping,
      eniId: undefined,
      heldSince: undefined,
      inPlace: false,
      decision: undefined,
      checkedAt: undefined,
      problem: undefined,
      associations: 0,
      nextAssociateAt: undefined,
    }));
    options.metrics.elasticIpsNotAssociated(0);
  }

  /**
   * The addresses our ENIs hold at `at` (address -> our ENI): a mapped address our ENI took since the last
   * call makes a check due at once; one it no longer holds is dropped (its Elastic IP is not ours to move).
   */
  held(held: ReadonlyMap<string, string>, at: number): void {
    for (const t of this.#tracked) {
      const eniId = held.get(t.mapping.address);
      if (eniId === t.eniId) continue;
      t.eniId = eniId;
      t.heldSince = eniId === undefined ? undefined : at;
      t.inPlace = false;
      t.problem = undefined;
      t.associations = 0;
      t.nextAssociateAt = undefined;
      if (eniId !== undefined) this.#nextCheckAt = at;
    }
    this.#publish();
  }

  /** When the next check is due; undefined while our ENIs hold no mapped address. */
  dueAt(): number | undefined {
    return this.#tracked.some((t) => t.eniId !== undefined) ? this.#nextCheckAt : undefined;
  }

  /** One check. Never throws, except the signal's abort: failures are retried with backoff and shown on /readyz. */
  async check(signal: AbortSignal): Promise<void> {
    const { deps, metrics } = this.#o;
    const startedAt = deps.clock.now();
    const held = new Map<string, string>();
    for (const t of this.#tracked) if (t.eniId !== undefined) held.set(t.mapping.address, t.eniId);
    let result: Awaited<ReturnType<typeof checkElasticIps>>;
    try {
      result = await checkElasticIps(deps, {
        mappings: this.#o.mappings,
        held,
        confirm: this.#o.confirm,
        signal,
        mayAssociate: (call) => {
          const due = this.#find(call.allocationId)?.nextAssociateAt;
          return due === undefined || startedAt >= due;
        },
      });
    } catch (error) {
      if (signal.aborted) throw error;
      this.#rounds += 1;
      this.#lastError = describeError(error);
      const key = error instanceof Ec2Error ? `${error.operation}:${error.code}` : this.#lastError;
      const delay = backoffDelay(this.#backoff, this.#rounds, this.#random);
      this.#nextCheckAt = deps.clock.now() + delay;
      if (key !== this.#errorKey) {
        this.#errorKey = key;
        deps.logger.error(
          { err: error, retryInMs: delay },
          "Elastic IP check failed; retrying with backoff (logged again only if the error changes)",
        );
      }
      this.#publish();
      return;
    }
    if (this.#errorKey !== undefined) deps.logger.info("Elastic IP check works again");
    this.#errorKey = undefined;
    this.#lastError = undefined;
    const doneAt = deps.clock.now();
    for (const decision of result.plan.decisions) {
      const t = this.#find(decision.mapping.allocationId);
      if (t === undefined || t.eniId === undefined) continue;
      t.decision = decision;
      t.checkedAt = doneAt;
      const associated = result.associated.some((c) => c.allocationId === t.mapping.allocationId);
      if (associated) {
        t.associations += 1;
        t.nextAssociateAt = doneAt + backoffDelay(this.#backoff, t.associations, this.#random);
        metrics.elasticIpAssociated();
        deps.logger.info(
          {
            address: t.mapping.address,
            allocationId: t.mapping.allocationId,
            publicIp: decision.described?.publicIp,
            eniId: t.eniId,
          },
          "Elastic IP associated with the address our ENI took",
        );
      }
      if (associated || decision.status.kind === "in-place") {
        if (!t.inPlace && t.heldSince !== undefined) metrics.elasticIpFollowed(doneAt - t.heldSince);
        t.inPlace = true;
        this.#setProblem(t, undefined);
        continue;
      }
      t.inPlace = false;
      const refused = result.refused.find((r) => r.call.allocationId === t.mapping.allocationId);
      const deferred = result.deferred.some((c) => c.allocationId === t.mapping.allocationId);
      this.#setProblem(
        t,
        elasticIpProblem(decision) ??
          (refused === undefined
            ? deferred
              ? `Elastic IP ${t.mapping.allocationId} was taken off ${t.mapping.address} again; associating it again with backoff`
              : `Elastic IP ${t.mapping.allocationId} not associated with ${t.mapping.address} yet`
            : `EC2 refused to associate Elastic IP ${t.mapping.allocationId} with ${t.mapping.address}: ${refused.error.message}`),
      );
    }
    const open = this.#tracked.filter((t) => t.eniId !== undefined && !t.inPlace);
    if (open.length === 0) {
      this.#rounds = 0;
      this.#nextCheckAt = doneAt + this.#o.recheckIntervalMs;
    } else {
      this.#rounds += 1;
      let next = doneAt + backoffDelay(this.#backoff, this.#rounds, this.#random);
      for (const t of open)
        if (t.nextAssociateAt !== undefined) next = Math.min(next, Math.max(doneAt, t.nextAssociateAt));
      this.#nextCheckAt = next;
    }
    this.#publish();
  }

  /** /readyz: each mapped address with its Elastic IP's state; not ready while one we hold lacks it. */
  readiness(now: number): ProbeResult {
    let ok = true;
    const lines: string[] = [];
    for (const t of this.#tracked) {
      const { address, allocationId } = t.mapping;
      const publicIp = t.decision?.described?.publicIp;
      const name = `Elastic IP ${allocationId}${publicIp === undefined ? "" : ` (${publicIp})`}`;
      if (t.eniId === undefined) {
        lines.push(`${address}: not held by our ENI; ${name} is left to the pod that holds it`);
        continue;
      }
      if (t.inPlace) {
        lines.push(`${address} on ${t.eniId}: ${name} associated`);
        continue;
      }
      ok = false;
      const retry =
        this.#nextCheckAt === undefined
          ? ""
          : `; checking again in ${Math.max(0, this.#nextCheckAt - now)} ms`;
      if (this.#lastError !== undefined) {
        lines.push(`${address} on ${t.eniId}: ${name} could not be checked: ${this.#lastError}${retry}`);
      } else if (t.checkedAt === undefined || t.heldSince === undefined || t.checkedAt < t.heldSince) {
        lines.push(`${address} on ${t.eniId}: ${name} not checked yet`);
      } else {
        lines.push(`${address} on ${t.eniId}: ${t.problem ?? `${name} not associated`}${retry}`);
      }
    }
    return { ok, lines };
  }

  #find(allocationId: string): Tracked | undefined {
    return this.#tracked.find((t) => t.mapping.allocationId === allocationId);
  }

  /** Records why a mapping is not in place; logs each new reason once, and its end. */
  #setProblem(t: Tracked, problem: string | undefined): void {
    if (problem === t.problem) return;
    const fields = { address: t.mapping.address, allocationId: t.mapping.allocationId, eniId: t.eniId };
    if (problem === undefined) this.#o.deps.logger.info(fields, "Elastic IP in place again");
    else this.#o.deps.logger.warn(fields, problem);
    t.problem = problem;
  }

  #publish(): void {
    this.#o.metrics.elasticIpsNotAssociated(
      this.#tracked.filter((t) => t.eniId !== undefined && !t.inPlace).length,
    );
  }
}
