/**
 * One node's bridge in the scale model: the wave loop of src/ipam-whereabouts-bridge/bridge.ts (`run`,
 * `#waitForTrigger`, `runWave`) on the model's event queue instead of a Clock, with its settings and its
 * backoffs: changes gathered for the wave window; a wave that EC2 throttles past every retry runs again
 * whole after `backoffDelay` (src/eni/backoff.ts); each call retried as the EC2 adapter's `withRetry` does
 * (src/eni/retry.ts `backoffDelayMs`, full jitter, `ec2MaxAttempts` attempts); a wave at least every resync
 * interval and when a release's grace ends; a wave at once, without the window, after one that changed the
 * ENIs and refused addresses for room. The wave's calls come from the node's wave planner (the seam).
 *
 * Not modelled: IMDS (the model's ENIs are what EC2 holds, at once), the Multus ENI tag read (the bridge is
 * configured with device indexes), Kubernetes (a pod is seen when it starts), confirmation reads.
 */
import { type BackoffPolicy, backoffDelay } from "../../src/eni/backoff.js";
import { backoffDelayMs, type RetryOptions } from "../../src/eni/retry.js";
import type { ModelAccount } from "./account.js";
import type { EventQueue } from "./event-queue.js";
import type { ModelNode } from "./model-node.js";
import { ec2ActionOf, type ModelAction, type NodeWavePlan } from "./node-wave.js";

export interface ModelBridgeSettings {
  readonly waveWindowMs: number;
  readonly resyncIntervalMs: number;
  readonly releaseGraceMs: number;
  /** The wave backoff (IPMGR_BRIDGE_RETRY_BASE_MS / _MAX_MS). */
  readonly retry: BackoffPolicy;
  /** The EC2 adapter's retries (IPMGR_EC2_MAX_ATTEMPTS, _RETRY_BASE_MS, _RETRY_MAX_MS). */
  readonly ec2: Required<RetryOptions>;
  /** Time from a request to its answer, accepted or throttled, in ms. */
  readonly callLatencyMs: number;
}

export interface ModelBridgeDeps {
  readonly queue: EventQueue;
  readonly account: ModelAccount;
  readonly node: ModelNode;
  /** The seam: the planner of one node's wave, called with a key equal for equal inputs. */
  readonly planWave: (
    node: ModelNode,
    nowMs: number,
  ) => { plan: NodeWavePlan; nextReleaseAt: number | undefined };
  readonly random: () => number;
  /** Called after every accepted call and every change of the node. */
  readonly onChange: () => void;
}

export class ModelBridge {
  #dirty = true;
  #roomMade = false;
  #retryAt: number | undefined;
  #failures = 0;
  #lastWaveAt = Number.NEGATIVE_INFINITY;
  #nextPendingAt: number | undefined;
  /** Busy in the window or in a wave: a change only marks the state dirty. */
  #busy = false;
  /** Invalidates a scheduled wake-up that a later one replaced. */
  #wakeToken = 0;
  waves = 0;
  failedWaves = 0;

  constructor(
    private readonly deps: ModelBridgeDeps,
    private readonly settings: ModelBridgeSettings,
  ) {}

  /** The bridge starts (its watches have listed): its first wave comes after the window. */
  start(): void {
    if (!this.#busy && this.#retryAt === undefined) this.#schedule();
  }

  /** Something the bridge watches changed. */
  changed(): void {
    this.deps.onChange();
    this.#dirty = true;
    if (!this.#busy && this.#retryAt === undefined) this.#schedule();
  }

  #schedule(): void {
    const { queue } = this.deps;
    const token = ++this.#wakeToken;
    let at: number;
    if (this.#retryAt !== undefined) at = this.#retryAt;
    else if (this.#dirty) at = queue.now;
    else {
      at = Math.min(
        this.#lastWaveAt + this.settings.resyncIntervalMs,
        this.#nextPendingAt ?? Number.POSITIVE_INFINITY,
      );
    }
    queue.at(at, () => {
      if (token === this.#wakeToken) this.#triggered();
    });
  }

  #triggered(): void {
    this.#busy = true;
    ++this.#wakeToken;
    if (this.settings.waveWindowMs > 0 && !this.#roomMade) {
      this.deps.queue.after(this.settings.waveWindowMs, () => this.#wave());
    } else {
      this.#wave();
    }
  }

  #wave(): void {
    const { node, queue } = this.deps;
    this.#dirty = false;
    this.#roomMade = false;
    this.waves += 1;
    const { plan, nextReleaseAt } = this.deps.planWave(node, queue.now);
    this.#nextPendingAt = nextReleaseAt;
    this.#next(plan, 0, 0);
  }

  #next(plan: NodeWavePlan, index: number, done: number): void {
    const action = plan.actions[index];
    if (action === undefined) {
      this.#waveDone(done > 0 && plan.eniFull);
      return;
    }
    this.#attempt(plan, index, done, action, 1);
  }

  #attempt(plan: NodeWavePlan, index: number, done: number, action: ModelAction, attempt: number): void {
    const { queue, account, node } = this.deps;
    const { callLatencyMs, ec2 } = this.settings;
    if (account.request(ec2ActionOf(action), queue.now)) {
      queue.after(callLatencyMs, () => {
        node.apply(action);
        this.deps.onChange();
        this.#next(plan, index + 1, done + 1);
      });
    } else if (attempt < ec2.maxAttempts) {
      // Throttled: the answer, then the adapter's backoff, then the next attempt (one event for the three).
      const delay = callLatencyMs + backoffDelayMs(attempt, ec2, this.deps.random);
      queue.after(delay, () => this.#attempt(plan, index, done, action, attempt + 1));
    } else {
      queue.after(callLatencyMs, () => this.#waveFailed());
    }
  }

  #waveFailed(): void {
    const now = this.deps.queue.now;
    this.failedWaves += 1;
    this.#failures += 1;
    this.#retryAt = now + backoffDelay(this.settings.retry, this.#failures, this.deps.random);
    this.#lastWaveAt = now;
    this.#busy = false;
    this.#schedule();
  }

  #waveDone(roomMade: boolean): void {
    this.#failures = 0;
    this.#retryAt = undefined;
    if (roomMade) {
      this.#dirty = true;
      this.#roomMade = true;
    }
    this.#lastWaveAt = this.deps.queue.now;
    this.#busy = false;
    this.#schedule();
  }
}
