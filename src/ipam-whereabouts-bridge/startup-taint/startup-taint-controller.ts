/**
 * Attach mode's startup taint on this node: every pass reads the links agent's status file, asks
 * taint-decision.ts, and takes the taint off or puts it back through KubeApi only when the decision changes
 * something, with a log line, an Event on the Node and the metrics. Its inputs from attach mode and prefix
 * mode are functions the composition root gives, so this room holds no reference to theirs.
 */
import { readFile } from "node:fs/promises";
import type { BackoffPolicy } from "../../eni/backoff.js";
import { describeError, LoopSchedule } from "../../eni/loop-schedule.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { KubeApi } from "../kube/kube-api.js";
import type { NodeTaint } from "../kube/node-taints.js";
import { type LinkStatus, parseLinkStatus } from "../node/link-status.js";
import type { BridgeMetrics } from "../telemetry/metrics.js";
import type { PodEventReporter } from "../telemetry/pod-events.js";
import { decideTaint, type NetworkAttachReport, type TaintDecision } from "./taint-decision.js";

/**
 * How often the node's taints are read again when this bridge has not written them, ms: someone else may
 * have put the taint on or taken it off. Seldom, because every node's bridge reads its own node: 5,000 nodes
 * at this rate are 17 reads a second for the API server; a patch reads the node first anyway.
 */
export const NODE_REREAD_MS = 300_000;

export interface StartupTaintDeps {
  readonly kube: Pick<KubeApi, "getNodeTaints" | "setNodeTaint">;
  readonly events: Pick<PodEventReporter, "report">;
  readonly metrics: BridgeMetrics;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Attach mode's report of every configured network; undefined until it has read the instance's ENIs once. */
  readonly networks: () => readonly NetworkAttachReport[] | undefined;
  /** Prefix mode: whether the node's slices are held as prefixes; undefined when prefix mode is off. */
  readonly slicesHeld: () => boolean | undefined;
  /** The status file's text, undefined when there is none. Default: read `linkStatusFile`. */
  readonly readLinkStatus?: () => Promise<string | undefined>;
}

export interface StartupTaintOptions {
  readonly nodeName: string;
  /** IPMGR_BRIDGE_STARTUP_TAINT; effect NoSchedule. */
  readonly taintKey: string;
  /** IPMGR_BRIDGE_LINK_STATUS_FILE. */
  readonly linkStatusFile: string;
  /** A status file older than this is treated as absent, ms: LINK_STATUS_STALE_MS. */
  readonly staleAfterMs: number;
  /** A pass this often when nothing wakes it sooner, ms: the links agent's interval (2,000). */
  readonly intervalMs: number;
  /** Backoff after a pass failed (the API server, the file). */
  readonly retry: BackoffPolicy;
}

/** What the file holds, or why it holds nothing the decision can use. */
type LinkRead = { readonly status: LinkStatus } | { readonly problem: string | undefined };

export class StartupTaintController {
  readonly #deps: StartupTaintDeps;
  readonly #o: StartupTaintOptions;
  readonly #schedule: LoopSchedule;
  readonly #taint: NodeTaint;
  readonly #startedAt: number;
  /** Whether the node carries the taint, as last read or written; undefined until read. */
  #taintOn: boolean | undefined;
  #readAt = 0;
  /** The last decision's sentence, numbers aside: logged when it changes, not at every pass. */
  #said: string | undefined;
  #fileProblem: string | undefined;
  /** wake() was called since the current pass began. */
  #woken = false;

  constructor(deps: StartupTaintDeps, options: StartupTaintOptions) {
    this.#deps = deps;
    this.#o = options;
    this.#schedule = new LoopSchedule({ clock: deps.clock, backoff: options.retry });
    this.#taint = { key: options.taintKey, effect: "NoSchedule" };
    this.#startedAt = deps.clock.now();
  }

  /**
   * A network changed (an attach resync ended, a link came up): the next pass runs at once, also when the
   * wake comes during a pass (which may have read before the change).
   */
  wake(): void {
    this.#woken = true;
    this.#schedule.wake();
  }

  /** Passes until `signal` aborts: every intervalMs, at once when woken, after a backoff when one failed. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.#deps;
    while (!signal.aborted) {
      let due: number;
      this.#woken = false;
      try {
        await this.check();
        if (this.#schedule.succeeded() !== undefined)
          logger.info("startup taint: the node's taints are read and written again");
        due = clock.now() + this.#o.intervalMs;
      } catch (error) {
        const description = describeError(error);
        const { log, retryInMs, count } = this.#schedule.failed(description, description);
        if (log)
          logger.warn({ err: error, retryInMs, count }, "startup taint: the pass failed; trying again");
        due = this.#schedule.retryAt ?? clock.now() + retryInMs;
      }
      if (this.#woken && this.#schedule.failures === 0) continue;
      try {
        await this.#schedule.sleepUntil(due, signal, true);
      } catch (error) {
        if (signal.aborted) return;
        throw error;
      }
    }
  }

  /** One pass: read, decide, and change the node's taint when the decision says so. */
  async check(): Promise<TaintDecision> {
    const { clock, kube, metrics } = this.#deps;
    const links = await this.#readLinks();
    const now = clock.now();
    if (this.#taintOn === undefined || now - this.#readAt >= NODE_REREAD_MS) {
      const taints = await kube.getNodeTaints(this.#o.nodeName);
      this.#taintOn = taints.some((t) => t.key === this.#taint.key && t.effect === this.#taint.effect);
      this.#readAt = now;
    }
    const decision = decideTaint({
      networks: this.#deps.networks(),
      links: "status" in links ? links.status : undefined,
      slicesHeld: this.#deps.slicesHeld(),
      taintOn: this.#taintOn,
      taintKey: this.#o.taintKey,
      now,
      startedAt: this.#startedAt,
      staleAfterMs: this.#o.staleAfterMs,
    });
    if (decision.action !== "keep") await this.#change(decision);
    else this.#say(decision);
    metrics.startupTaint(this.#taintOn);
    return decision;
  }

  async #change(decision: TaintDecision): Promise<void> {
    const { kube, metrics, logger, clock } = this.#deps;
    const on = decision.action === "add";
    // Read fresh and tested by the patch: a taint someone else changed in between is not lost.
    const changed = await kube.setNodeTaint(this.#o.nodeName, this.#taint, on);
    this.#taintOn = on;
    this.#readAt = clock.now();
    this.#said = undefined;
    if (!changed) {
      logger.info(
        { node: this.#o.nodeName, reason: decision.reason },
        "startup taint: the node was so already",
      );
      return;
    }
    metrics.startupTaintChanged(on ? "added" : "removed");
    logger[on ? "warn" : "info"](
      { node: this.#o.nodeName, taint: this.#o.taintKey, reason: decision.reason },
      on ? "startup taint put back on the node" : "startup taint taken off the node",
    );
    this.#deps.events.report({
      pod: { namespace: "", name: this.#o.nodeName, uid: this.#o.nodeName, kind: "Node" },
      type: on ? "Warning" : "Normal",
      reason: on ? "StartupTaintAdded" : "StartupTaintRemoved",
      message: decision.reason,
    });
  }

  /** Logs a decision that changes nothing once, when its sentence (ages and waits aside) differs from the last. */
  #say(decision: TaintDecision): void {
    const key = decision.reason.replace(/\d+ ms/g, "N ms");
    if (key === this.#said) return;
    this.#said = key;
    this.#deps.logger.info(
      { node: this.#o.nodeName, ready: decision.ready },
      `startup taint: ${decision.reason}`,
    );
  }

  async #readLinks(): Promise<LinkRead> {
    const { linkStatusFile } = this.#o;
    let text: string | undefined;
    try {
      text = await (this.#deps.readLinkStatus ?? (() => readText(linkStatusFile)))();
    } catch (error) {
      return this.#problem(`${linkStatusFile} cannot be read: ${describeError(error)}`);
    }
    if (text === undefined) return this.#problem(undefined);
    const parsed = parseLinkStatus(text);
    if (typeof parsed === "string") return this.#problem(`${linkStatusFile}: ${parsed}`);
    this.#fileProblem = undefined;
    return { status: parsed };
  }

  /** The file is absent (undefined) or unusable (a sentence, warned once until it changes). */
  #problem(problem: string | undefined): LinkRead {
    if (problem !== undefined && problem !== this.#fileProblem) {
      this.#deps.logger.warn(
        { file: this.#o.linkStatusFile },
        `startup taint: the links agent's status file is unusable: ${problem}`,
      );
    }
    this.#fileProblem = problem;
    return { problem };
  }
}

/** The file's text; undefined when it does not exist (the agent has not written it yet). */
async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
