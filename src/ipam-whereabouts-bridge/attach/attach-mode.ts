/**
 * Attach mode (docs/attach-mode.md): once per wave or resync, the node's Multus ENIs checked against EC2 and
 * made, attached and set where missing. One pass:
 * 1. DescribeNetworkInterfaces of the instance (EC2 is the source of truth; IMDS lags);
 * 2. only when a network's slot is free and its backoff has ended: DescribeNetworkInterfaces of the available
 *    ENIs of ours made for this instance, and the network's subnet and security groups (attach-targets.ts,
 *    looked up once per process, again after a refusal);
 * 3. the plan (attach-plan.ts), then its calls (attach-apply.ts);
 * 4. the report: per network, attached or not, its ENI, MAC, card and device, its problems.
 *
 * A network refused (by the plan or by EC2) or failed waits before it is tried again: 1 s after the first
 * time, doubling to 5 min, jitter on top (up to 25%). An ENI found at its slot ends the wait at once. Each
 * network's state is logged when it changes, not at every pass.
 */

import { ATTACH_TAGS, type AttachNetwork } from "../../eni/attach-networks.js";
import { type BackoffPolicy, backoffDelay } from "../../eni/backoff.js";
import type { Ec2EniLifecycleApi } from "../../eni/ec2-eni-lifecycle-api.js";
import { Ec2Error } from "../../eni/errors/ec2-error.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { Ec2NetworkInterface } from "../../eni/types.js";
import { applyAttachPlan, type NotFoundRetry } from "./attach-apply.js";
import type { AttachOutcome } from "./attach-outcome.js";
import { type AttachInstance, planAttach, slotOccupant } from "./attach-plan.js";
import { type AttachTarget, AttachTargets, type TargetRefusal } from "./attach-targets.js";
import { SlotTokens } from "./client-token.js";

/** 1 s after a network's first refusal or failure, doubling to 5 min. */
export const DEFAULT_ATTACH_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 300_000 };

/** A slot whose ENI is attaching or detaching is looked at again this soon, ms. */
export const ATTACH_WAIT_MS = 2_000;

/** What the node knows of itself: instance id, zone and VPC (IMDS), the type's limits (DescribeInstanceTypes). */
export type AttachInstanceFacts = AttachInstance;

export interface AttachModeDeps {
  readonly ec2: Ec2EniLifecycleApi;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The backoff's jitter; default Math.random. */
  readonly random?: () => number;
}

export interface AttachModeOptions {
  /** IPMGR_CLUSTER_NAME: the value of the multus-ipmgr.io/cluster tag. */
  readonly clusterName: string;
  /** IPMGR_BRIDGE_ATTACH_NETWORKS, parsed. */
  readonly networks: readonly AttachNetwork[];
  /** Default DEFAULT_ATTACH_BACKOFF. */
  readonly backoff?: BackoffPolicy;
  /** NotFound right after a create; default attach-apply.ts' DEFAULT_NOT_FOUND_RETRY. */
  readonly notFoundRetry?: NotFoundRetry;
}

export type AttachNetworkState = "attached" | "waiting" | "refused" | "retry-later";

export interface AttachNetworkReport {
  readonly network: string;
  readonly networkCardIndex: number;
  readonly deviceIndex: number;
  /** An ENI is attached at the network's slot (ours, or someone else's: then `problems` says so). */
  readonly attached: boolean;
  readonly state: AttachNetworkState;
  readonly eniId?: string;
  readonly mac?: string;
  readonly attachmentId?: string;
  /** EC2's error code of the last failure, when EC2 refused or failed. */
  readonly code?: string;
  /** Sentences naming the network, what is wrong and the fix. */
  readonly problems: readonly string[];
  /** When a refused or failed network is tried again (ms since the epoch). */
  readonly retryAt?: number;
  /** EC2 writes made for this network in this pass, retries included. */
  readonly calls: number;
}

export interface AttachReport {
  readonly networks: readonly AttachNetworkReport[];
  /** Every network has an ENI attached at its slot. */
  readonly allAttached: boolean;
  /** EC2 calls of this pass, reads included. */
  readonly calls: number;
  /** When the next pass is due for a backoff or a wait that ends; undefined: only at the next resync. */
  readonly nextAt: number | undefined;
}

interface Remembered {
  readonly state: "refused" | "retry-later";
  readonly failures: number;
  readonly until: number;
  readonly detail: string;
  readonly code: string | undefined;
}

export class AttachMode {
  readonly #targets: AttachTargets;
  readonly #memory = new Map<string, Remembered>();
  readonly #logged = new Map<string, string>();
  #tokens: SlotTokens | undefined;
  #reads = 0;

  constructor(
    private readonly deps: AttachModeDeps,
    private readonly options: AttachModeOptions,
  ) {
    const { ec2 } = deps;
    this.#targets = new AttachTargets({
      describeSubnetsByTags: (vpcId, tags) => this.#read(() => ec2.describeSubnetsByTags(vpcId, tags)),
      describeSecurityGroupsByTags: (vpcId, tags) =>
        this.#read(() => ec2.describeSecurityGroupsByTags(vpcId, tags)),
    });
  }

  /**
   * One pass. Throws when the instance's ENIs cannot be read (EC2 unavailable after its retries, permission),
   * and on an abort: the caller's loop retries the pass whole.
   */
  async reconcile(facts: AttachInstanceFacts, signal: AbortSignal): Promise<AttachReport> {
    const { ec2, clock } = this.deps;
    const { clusterName, networks } = this.options;
    const now = clock.now();
    this.#reads = 0;
    if (this.#tokens === undefined) this.#tokens = new SlotTokens(facts.instanceId);
    const instanceEnis = await this.#read(() => ec2.describeInstanceEnis(facts.instanceId));
    const free = networks.filter((n) => slotOccupant(n, instanceEnis, facts.instanceId) === undefined);
    const due = free.filter((n) => (this.#memory.get(n.name)?.until ?? 0) <= now);
    const held = new Set(free.filter((n) => !due.includes(n)).map((n) => n.name));
    let availableEnis: Ec2NetworkInterface[] = [];
    const targets = new Map<string, AttachTarget | TargetRefusal>();
    if (due.length > 0) {
      availableEnis = await this.#read(() =>
        ec2.describeEnisByTags({
          tags: { [ATTACH_TAGS.cluster]: clusterName, [ATTACH_TAGS.instance]: facts.instanceId },
          status: "available",
        }),
      );
      this.#forgetGone(due, instanceEnis, availableEnis);
      for (const network of due) {
        const target = await this.#target(network, facts, now, signal);
        if (target === undefined) held.add(network.name);
        else targets.set(network.name, target);
      }
    }
    const plans = planAttach({
      clusterName,
      instance: facts,
      networks: networks.filter((n) => !held.has(n.name)),
      instanceEnis,
      availableEnis,
      targets,
    });
    const outcomes = await applyAttachPlan(
      plans,
      { clusterName, instanceId: facts.instanceId },
      {
        ec2,
        clock,
        logger: this.deps.logger,
        tokens: this.#tokens,
        ...(this.options.notFoundRetry === undefined ? {} : { notFoundRetry: this.options.notFoundRetry }),
        ...(this.deps.random === undefined ? {} : { random: this.deps.random }),
      },
      signal,
    );
    for (const o of outcomes)
      if (o.kind === "attached" && o.foreign === undefined) this.#tokens.seenAttached(o.slot, o.eniId);
    const byName = new Map(outcomes.map((o) => [o.network, o]));
    const reports = networks.map((n) => {
      const outcome = byName.get(n.name);
      return outcome === undefined ? this.#heldReport(n) : this.#outcomeReport(n, outcome, now);
    });
    for (const r of reports) this.#logChange(r);
    const writes = reports.reduce((sum, r) => sum + r.calls, 0);
    const ends = [...this.#memory.values()].map((m) => m.until).filter((t) => t > now);
    if (reports.some((r) => r.state === "waiting")) ends.push(now + ATTACH_WAIT_MS);
    return {
      networks: reports,
      allAttached: reports.every((r) => r.attached),
      calls: this.#reads + writes,
      nextAt: ends.length === 0 ? undefined : Math.min(...ends),
    };
  }

  /** The ENIs our tokens answered that someone deleted since: their slots' tokens move on. */
  #forgetGone(
    due: readonly AttachNetwork[],
    instanceEnis: readonly Ec2NetworkInterface[],
    availableEnis: readonly Ec2NetworkInterface[],
  ): void {
    const present = new Set([...instanceEnis, ...availableEnis].map((e) => e.eniId));
    for (const network of due) {
      const gone = this.#tokens?.goneUnlessIn(network, present);
      if (gone !== undefined)
        this.deps.logger.info(
          { network: network.name, eniId: gone },
          `network ${network.name}: ENI ${gone}, attached before, is gone from EC2 (deleted): a new one is made with the slot's next ClientToken`,
        );
    }
  }

  async #read<T>(run: () => Promise<T>): Promise<T> {
    this.#reads += 1;
    return await run();
  }

  /** The network's target; undefined when the lookup failed (remembered as a failure, with its backoff). */
  async #target(
    network: AttachNetwork,
    facts: AttachInstanceFacts,
    now: number,
    signal: AbortSignal,
  ): Promise<AttachTarget | TargetRefusal | undefined> {
    try {
      return await this.#targets.target(network, facts);
    } catch (error) {
      if (signal.aborted || !(error instanceof Ec2Error)) throw error;
      this.#failed(
        network.name,
        error.kind === "unavailable" ? "retry-later" : "refused",
        `network ${network.name}: could not look up its subnet or security groups (${error.message})`,
        error.code,
        now,
      );
      return undefined;
    }
  }

  #failed(
    name: string,
    state: Remembered["state"],
    detail: string,
    code: string | undefined,
    now: number,
  ): Remembered {
    const failures = (this.#memory.get(name)?.failures ?? 0) + 1;
    const delay = backoffDelay(this.options.backoff ?? DEFAULT_ATTACH_BACKOFF, failures, this.deps.random);
    const remembered = { state, failures, until: now + delay, detail, code };
    this.#memory.set(name, remembered);
    return remembered;
  }

  /** A network with a free slot whose backoff runs: what its last failure said. */
  #heldReport(network: AttachNetwork): AttachNetworkReport {
    const m = this.#memory.get(network.name);
    return {
      network: network.name,
      networkCardIndex: network.networkCardIndex,
      deviceIndex: network.deviceIndex,
      attached: false,
      state: m?.state ?? "retry-later",
      ...(m?.code === undefined ? {} : { code: m.code }),
      problems: m === undefined ? [] : [m.detail],
      ...(m === undefined ? {} : { retryAt: m.until }),
      calls: 0,
    };
  }

  #outcomeReport(network: AttachNetwork, outcome: AttachOutcome, now: number): AttachNetworkReport {
    const base = {
      network: network.name,
      networkCardIndex: network.networkCardIndex,
      deviceIndex: network.deviceIndex,
    };
    switch (outcome.kind) {
      case "attached":
        this.#memory.delete(network.name);
        return {
          ...base,
          attached: true,
          state: "attached",
          eniId: outcome.eniId,
          mac: outcome.mac,
          ...(outcome.attachmentId === undefined ? {} : { attachmentId: outcome.attachmentId }),
          problems: [
            ...(outcome.foreign === undefined ? [] : [outcome.foreign]),
            ...outcome.problems.map((p) => p.message),
          ],
          calls: outcome.calls,
        };
      case "waiting":
        return { ...base, attached: false, state: "waiting", problems: [outcome.detail], calls: 0 };
      case "refused":
      case "retry-later": {
        if (outcome.kind === "refused" && outcome.error?.step === "create")
          this.#targets.forget(network.name);
        const m = this.#failed(network.name, outcome.kind, outcome.detail, outcome.code, now);
        const retry = `tried again in ${Math.round((m.until - now) / 1000)} s`;
        return {
          ...base,
          attached: false,
          state: outcome.kind,
          ...(outcome.code === undefined ? {} : { code: outcome.code }),
          problems: [`${outcome.detail}; ${retry}`],
          retryAt: m.until,
          calls: outcome.calls,
        };
      }
    }
  }

  /** One log line per network when its state or its problems change. */
  #logChange(report: AttachNetworkReport): void {
    const key = `${report.state} ${report.eniId ?? ""} ${report.problems.map(withoutRetry).join(" | ")}`;
    if (this.#logged.get(report.network) === key) return;
    this.#logged.set(report.network, key);
    const fields = {
      network: report.network,
      networkCardIndex: report.networkCardIndex,
      deviceIndex: report.deviceIndex,
      eniId: report.eniId,
      code: report.code,
    };
    if (report.problems.length === 0)
      this.deps.logger.info(fields, `network ${report.network}: its ENI is attached`);
    else
      for (const problem of report.problems)
        (report.state === "waiting" ? this.deps.logger.info : this.deps.logger.warn).call(
          this.deps.logger,
          fields,
          problem,
        );
  }
}

/** A problem without its "tried again in N s", which changes at every refusal. */
function withoutRetry(problem: string): string {
  return problem.replace(/; tried again in \d+ s$/, "");
}
