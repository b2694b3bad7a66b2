/**
 * One new node's bridge in attach mode, on the scale model's event queue: it sends its calls
 * (attach-calls.ts) one after the other, as the bridge does. Each call is retried as the EC2 adapter's
 * `withRetry` does (src/eni/retry.ts `backoffDelayMs`, full jitter, `ec2MaxAttempts` attempts). A call of
 * the attach pass still throttled after those is left for the next pass: the network is held back
 * (attach-mode.ts: 1 s doubling to 5 min, up to 25 % jitter, src/eni/backoff.ts), and that pass reads the
 * instance's ENIs again before it goes on where the last one stopped (the ClientToken answers a create that
 * was made; an ENI made and not attached is found available and attached). A prefix assign of the wave loop
 * failing so runs again after the wave backoff.
 */
import { type BackoffPolicy, backoffDelay } from "../../src/eni/backoff.js";
import { backoffDelayMs, type RetryOptions } from "../../src/eni/retry.js";
import type { ModelAccount } from "./account.js";
import { type AttachCall, PASS_READS } from "./attach-calls.js";
import type { EventQueue } from "./event-queue.js";

/** attach-mode.ts: a network refused or failed is held back 1 s doubling to 5 min. */
export const ATTACH_HOLD: BackoffPolicy = { baseMs: 1_000, maxMs: 300_000 };

export interface AttachNodeSettings {
  /** The EC2 adapter's retries (IPMGR_EC2_MAX_ATTEMPTS, _RETRY_BASE_MS, _RETRY_MAX_MS). */
  readonly ec2: Required<RetryOptions>;
  /** The wave backoff (IPMGR_BRIDGE_RETRY_BASE_MS / _MAX_MS), for the prefix assigns. */
  readonly waveRetry: BackoffPolicy;
  /** Time from a request to its answer, accepted or throttled, in ms. */
  readonly callLatencyMs: number;
}

export interface AttachNodeDeps {
  readonly queue: EventQueue;
  readonly account: ModelAccount;
  readonly random: () => number;
  /** Called once, when the node's last call is answered. */
  readonly onDone: () => void;
}

export class ModelAttachNode {
  /** Index of the next call of `calls` to send. */
  #next = 0;
  #failures = 0;
  /** Reads sent again at the start of a later pass. */
  #rereads: AttachCall[] = [];
  /** When the last call was answered, in ms; NaN until then. */
  doneAt = Number.NaN;
  /** Passes or waves that failed past the adapter's retries. */
  heldBack = 0;

  constructor(
    private readonly calls: readonly AttachCall[],
    private readonly deps: AttachNodeDeps,
    private readonly settings: AttachNodeSettings,
  ) {}

  /** The bridge starts on the new node. */
  start(): void {
    this.#send();
  }

  #send(): void {
    const call = this.#rereads[0] ?? this.calls[this.#next];
    if (call === undefined) {
      this.doneAt = this.deps.queue.now;
      this.deps.onDone();
      return;
    }
    this.#attempt(call, 1);
  }

  #attempt(call: AttachCall, attempt: number): void {
    const { queue, account, random } = this.deps;
    const { callLatencyMs, ec2 } = this.settings;
    if (account.request(call.action, queue.now)) {
      queue.after(callLatencyMs, () => {
        if (this.#rereads.length > 0) this.#rereads.shift();
        else this.#next += 1;
        this.#failures = 0;
        this.#send();
      });
    } else if (attempt < ec2.maxAttempts) {
      // Throttled: the answer, then the adapter's backoff, then the next attempt (one event for the three).
      queue.after(callLatencyMs + backoffDelayMs(attempt, ec2, random), () =>
        this.#attempt(call, attempt + 1),
      );
    } else {
      this.heldBack += 1;
      this.#failures += 1;
      const policy = call.loop === "attach" ? ATTACH_HOLD : this.settings.waveRetry;
      const hold = callLatencyMs + backoffDelay(policy, this.#failures, random);
      queue.after(hold, () => {
        // A new attach pass opens with its reads; a wave only plans again.
        if (call.loop === "attach" && !PASS_READS.includes(call)) this.#rereads = [...PASS_READS];
        this.#send();
      });
    }
  }
}
