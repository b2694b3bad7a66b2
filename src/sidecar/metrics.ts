import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Ec2CallObserver } from "../eni/ec2-api.js";
import {
  nodeProcessStats,
  type ProcessStats,
  registerEc2CallMetrics,
  registerProcessMetrics,
} from "../eni/process/process-metrics.js";

export type { ProcessStats } from "../eni/process/process-metrics.js";

/** How a reconcile ended: `applied` made EC2 changes, `noop` found everything in place, `error` failed. */
export type ReconcileOutcome = "applied" | "noop" | "error";

const PREFIX = "multus_ipmgr_";

/**
 * The sidecar's Prometheus metrics, on a registry of their own (not prom-client's global one, so that tests
 * and several instances in one process never collide), with the process metrics of registerProcessMetrics.
 */
export class SidecarMetrics {
  readonly registry = new Registry();
  readonly #reconciles: Counter<"outcome">;
  readonly #addressesHeld: Gauge;
  readonly #conflicts: Counter;
  readonly #addressesInConflict: Gauge;
  readonly #driftRepairs: Counter;
  readonly #changeToAssigned: Histogram;
  readonly #elasticIpAssociations: Counter;
  readonly #elasticIpFollow: Histogram;
  readonly #elasticIpsNotAssociated: Gauge;

  constructor(processStats: ProcessStats = nodeProcessStats) {
    const registers = [this.registry];
    registerProcessMetrics(this.registry, processStats);
    this.ec2Observer = registerEc2CallMetrics(this.registry, PREFIX);
    this.#reconciles = new Counter({
      name: `${PREFIX}reconciles_total`,
      help: "Reconciles run, by outcome: applied (EC2 changed), noop (all in place), error.",
      labelNames: ["outcome"],
      registers,
    });
    this.#addressesHeld = new Gauge({
      name: `${PREFIX}addresses_held`,
      help: "Pod addresses currently held by the right ENI, as last observed through IMDS.",
      registers,
    });
    this.#conflicts = new Counter({
      name: `${PREFIX}conflicts_total`,
      help: "Conflict episodes: an address configured here was found on another ENI (another pod claims it).",
      registers,
    });
    this.#addressesInConflict = new Gauge({
      name: `${PREFIX}addresses_in_conflict`,
      help: "Addresses configured here whose drift episode saw another ENI hold them (split brain), until the episode ends.",
      registers,
    });
    this.#driftRepairs = new Counter({
      name: `${PREFIX}drift_repairs_total`,
      help: "Repairs of drift: an address configured here, held by our ENI earlier, assigned again.",
      registers,
    });
    this.#changeToAssigned = new Histogram({
      name: `${PREFIX}change_to_assigned_seconds`,
      help: "From detecting an address change on the pod interfaces to EC2 accepting the resulting calls, in seconds.",
      buckets: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#elasticIpAssociations = new Counter({
      name: `${PREFIX}elastic_ip_associations_total`,
      help: "AssociateAddress calls EC2 accepted: an Elastic IP of IPMGR_ELASTIC_IPS pointed at the address our ENI holds.",
      registers,
    });
    this.#elasticIpFollow = new Histogram({
      name: `${PREFIX}elastic_ip_follow_seconds`,
      help: "From our ENI taking a mapped address (EC2 accepting the assign, or the observation showing it) to DescribeAddresses showing its Elastic IP on our ENI, in seconds.",
      buckets: [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#elasticIpsNotAssociated = new Gauge({
      name: `${PREFIX}elastic_ips_not_associated`,
      help: "Mapped addresses our ENI holds whose Elastic IP is not (yet) shown on them; alert on > 0 for more than a minute.",
      registers,
    });
    for (const outcome of ["applied", "noop", "error"] as const) this.#reconciles.inc({ outcome }, 0);
    this.#elasticIpAssociations.inc(0);
    this.#conflicts.inc(0);
    this.#driftRepairs.inc(0);
  }

  /** Feed this to the EC2 adapter as its observer. Never throws. */
  readonly ec2Observer: Ec2CallObserver;

  reconcile(outcome: ReconcileOutcome): void {
    this.#reconciles.inc({ outcome });
  }

  addressesHeld(count: number): void {
    this.#addressesHeld.set(count);
  }

  conflict(): void {
    this.#conflicts.inc();
  }

  addressesInConflict(count: number): void {
    this.#addressesInConflict.set(count);
  }

  driftRepair(count = 1): void {
    this.#driftRepairs.inc(count);
  }

  changeToAssigned(ms: number): void {
    this.#changeToAssigned.observe(Math.max(0, ms) / 1000);
  }

  elasticIpAssociated(): void {
    this.#elasticIpAssociations.inc();
  }

  elasticIpFollowed(ms: number): void {
    this.#elasticIpFollow.observe(Math.max(0, ms) / 1000);
  }

  elasticIpsNotAssociated(count: number): void {
    this.#elasticIpsNotAssociated.set(count);
  }

  /** Prometheus text exposition format. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
