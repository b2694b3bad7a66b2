import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Ec2CallObserver, Ec2CallRecord } from "../eni/ec2-api.js";

/** How a reconcile ended: `applied` made EC2 changes, `noop` found everything in place, `error` failed. */
export type ReconcileOutcome = "applied" | "noop" | "error";

const PREFIX = "multus_ipmgr_";

/** What the process metrics read, at scrape time. */
export interface ProcessStats {
  residentMemoryBytes(): number;
  cpuSeconds(): number;
  /** V8's heap: total (reserved by the heap spaces) and used, in bytes; and memory held outside it. */
  heap(): { readonly totalBytes: number; readonly usedBytes: number; readonly externalBytes: number };
}

const nodeProcessStats: ProcessStats = {
  residentMemoryBytes: () => process.memoryUsage.rss(),
  heap: () => {
    const usage = process.memoryUsage();
    return { totalBytes: usage.heapTotal, usedBytes: usage.heapUsed, externalBytes: usage.external };
  },
  cpuSeconds: () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  },
};

/**
 * The sidecar's Prometheus metrics, on a registry of their own (not prom-client's global one, so that tests
 * and several instances in one process never collide). Of the default process metrics, only resident memory and
 * CPU time, read at scrape time: the rest include an event-loop monitor that wakes the process every 10 ms,
 * which would cost more than the whole idle sidecar.
 */
export class SidecarMetrics {
  readonly registry = new Registry();
  readonly #reconciles: Counter<"outcome">;
  readonly #ec2Calls: Counter<"operation" | "outcome">;
  readonly #ec2Duration: Histogram<"operation">;
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
    // The two standard process metrics, read only when scraped (prom-client's defaults are left out: see above).
    new Gauge({
      name: "process_resident_memory_bytes",
      help: "Resident memory size in bytes.",
      registers,
      collect() {
        this.set(processStats.residentMemoryBytes());
      },
    });
    // The heap figures prom-client's default metrics would give, read only when scraped: where the RSS goes.
    for (const [name, help, pick] of [
      ["nodejs_heap_size_total_bytes", "Process heap size from Node.js in bytes.", "totalBytes"],
      ["nodejs_heap_size_used_bytes", "Process heap size used from Node.js in bytes.", "usedBytes"],
      ["nodejs_external_memory_bytes", "Node.js external memory size in bytes.", "externalBytes"],
    ] as const) {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(processStats.heap()[pick]);
        },
      });
    }
    let cpuReported = 0;
    new Counter({
      name: "process_cpu_seconds_total",
      help: "Total user and system CPU time spent in seconds.",
      registers,
      collect() {
        const now = processStats.cpuSeconds();
        if (now > cpuReported) this.inc(now - cpuReported);
        cpuReported = Math.max(cpuReported, now);
      },
    });
    this.#reconciles = new Counter({
      name: `${PREFIX}reconciles_total`,
      help: "Reconciles run, by outcome: applied (EC2 changed), noop (all in place), error.",
      labelNames: ["outcome"],
      registers,
    });
    this.#ec2Calls = new Counter({
      name: `${PREFIX}ec2_calls_total`,
      help: "EC2 API calls, by EC2 action and outcome (ok or error); one call includes all its retries.",
      labelNames: ["operation", "outcome"],
      registers,
    });
    this.#ec2Duration = new Histogram({
      name: `${PREFIX}ec2_call_duration_seconds`,
      help: "Wall time of an EC2 API call, every retry and backoff included, in seconds.",
      labelNames: ["operation"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
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
  readonly ec2Observer: Ec2CallObserver = (record: Ec2CallRecord): void => {
    this.#ec2Calls.inc({ operation: record.operation, outcome: record.outcome });
    this.#ec2Duration.observe({ operation: record.operation }, record.durationMs / 1000);
  };

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
