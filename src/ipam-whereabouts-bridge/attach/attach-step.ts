/**
 * Attach mode's step in the bridge's wave loop (bridge.ts runs it at the start of each wave, as prefix mode's):
 * an attach pass (attach-mode.ts) when one is due, that is at the first wave, once per resync interval, and
 * when the last pass asked to look again (a backoff ended, an attachment was changing). Waves in between,
 * woken by pods, make no EC2 call here. After each pass: the metric, the /readyz lines, an Event on the
 * Node for a network refused, failed or held by an ENI that is not ours, and `onPass` (the startup taint's
 * wake-up). A pass that throws (the instance's ENIs could not be read) fails the wave, whose backoff retries it.
 */
import type { Clock } from "../../eni/process/clock.js";
import type { AttachStateLabel, BridgeMetrics } from "../telemetry/metrics.js";
import type { PodEventReporter } from "../telemetry/pod-events.js";
import type { AttachInstanceFacts, AttachMode, AttachNetworkReport, AttachReport } from "./attach-mode.js";

export interface AttachStepDeps {
  readonly attach: Pick<AttachMode, "reconcile">;
  /** The instance's facts (instance-facts.ts), read at the first pass; retried while they throw. */
  readonly facts: () => Promise<AttachInstanceFacts>;
  readonly clock: Clock;
  readonly metrics: Pick<BridgeMetrics, "attachPass">;
  readonly events: Pick<PodEventReporter, "report">;
  /** Called after every pass that read EC2 (the startup taint's wake()). */
  readonly onPass?: () => void;
}

export interface AttachStepOptions {
  /** The Node the Events are posted on. */
  readonly nodeName: string;
  /** A pass at least this often, ms: the bridge's resync interval (IPMGR_BRIDGE_RESYNC_INTERVAL_MS). */
  readonly resyncIntervalMs: number;
}

export class AttachStep {
  #facts: AttachInstanceFacts | undefined;
  #report: AttachReport | undefined;
  #lastPassAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: AttachStepDeps,
    private readonly options: AttachStepOptions,
  ) {}

  /** The last pass's report; undefined before the first pass read the instance's ENIs. */
  get report(): AttachReport | undefined {
    return this.#report;
  }

  /** When a wave is due for a pass the last one asked for; undefined: only at the resync. */
  get nextAt(): number | undefined {
    return this.#report?.nextAt;
  }

  /** A pass when due; the report of the last pass either way. Throws what the wave must retry whole. */
  async step(signal: AbortSignal): Promise<AttachReport | undefined> {
    const now = this.deps.clock.now();
    const asked = this.#report?.nextAt;
    if (now < this.#lastPassAt + this.options.resyncIntervalMs && (asked === undefined || now < asked))
      return this.#report;
    this.#facts ??= await this.deps.facts();
    const report = await this.deps.attach.reconcile(this.#facts, signal);
    this.#report = report;
    this.#lastPassAt = now;
    this.deps.metrics.attachPass(
      report.networks.map(
        (n) => (n.state === "retry-later" ? "retry_later" : n.state) satisfies AttachStateLabel,
      ),
      report.calls,
    );
    for (const network of report.networks) this.#tell(network);
    this.deps.onPass?.();
    return report;
  }

  /** /readyz lines: one per network. They never make the bridge unready: the startup taint keeps pods off. */
  lines(): string[] {
    const report = this.#report;
    if (report === undefined) return ["attach mode: the instance's ENIs have not been read yet"];
    return report.networks.map((n) =>
      n.attached && n.problems.length === 0
        ? `attach mode: network ${n.network}: ENI ${n.eniId} attached at card ${n.networkCardIndex} device ${n.deviceIndex}`
        : `attach mode: network ${n.network} (${n.state}): ${n.problems.join("; ") || "no ENI attached yet"}`,
    );
  }

  /** An Event on the Node for a network refused or failed, or whose slot holds an ENI with problems. */
  #tell(network: AttachNetworkReport): void {
    const reason =
      network.state === "refused"
        ? "AttachRefused"
        : network.state === "retry-later"
          ? "AttachFailed"
          : network.attached && network.problems.length > 0
            ? "AttachProblem"
            : undefined;
    // A network held in its backoff says the same again: the reporter posts one message once per interval.
    if (reason === undefined || network.problems.length === 0) return;
    const { nodeName } = this.options;
    this.deps.events.report({
      pod: { namespace: "", name: nodeName, uid: nodeName, kind: "Node" },
      type: "Warning",
      reason,
      // Without "tried again in N s": the reporter posts a message once per interval, not once per pass.
      message: network.problems.map((p) => p.replace(/; tried again in \d+ s$/, "")).join("; "),
    });
  }
}
