/**
 * The bookkeeping both long-running loops share (the sidecar's reconcile loop, the bridge's wave loop): how
 * many steps failed in a row, when the next try is due (capped exponential backoff with jitter), which
 * failure is open and how often it recurred, and a sleep until a due time that a change can cut short.
 * Time comes from the injected Clock; the rest is plain state, so the rules are tested without I/O.
 *
 * A step that works is not yet a recovery. The sidecar retries a release EC2 denied on its own backoff
 * (1 s doubling to 60 s), and the steps in between, which do not try it, work: saying "works again" after
 * each of them, and "failed" again at the next try, told an operator five times in 30 s that a denied
 * release had recovered. So a failure stays open until what failed has been done (the address held, the
 * release made), or has nothing left to do; and it is reported once per distinct error, however often it
 * recurs, with the count carried to the next line. A loop whose failures name no addresses (the bridge's
 * waves, which run whole) sees its failure closed by the first step that works.
 */
import { type BackoffPolicy, backoffDelay } from "./backoff.js";
import { linkedAbort } from "./linked-abort.js";
import type { Clock } from "./process/clock.js";

/** A failure as logs and probes read it. */
export interface FailureRecord {
  /** The error's first sentence (for logs, /healthz, /readyz). */
  readonly description: string;
  /** How many steps failed with this error since it was first seen. */
  readonly count: number;
}

/** What a failed step means for the log and the schedule. */
export interface FailedStep {
  /** This error is new (none was open, or another was): log it. */
  readonly log: boolean;
  /** How many steps failed with this error since it was first seen. */
  readonly count: number;
  /** The different error this one replaces, with its count. */
  readonly previous?: FailureRecord;
}

/** A failed step, with when it is tried again. */
export interface ScheduledRetry extends FailedStep {
  /** Steps failed in a row, this one included. */
  readonly failures: number;
  /** The backoff before the next try, in ms. */
  readonly retryInMs: number;
}

export interface LoopScheduleOptions {
  readonly clock: Clock;
  /** Backoff between tries after a failed step. */
  readonly backoff: BackoffPolicy;
  /** The jitter source, in [0, 1). Default Math.random. */
  readonly random?: () => number;
}

interface Open {
  readonly key: string;
  readonly description: string;
  count: number;
  /** Addresses of the actions that failed; the failure is over when none is outstanding any more. */
  readonly addresses: Set<string>;
}

const WAKE = Symbol("wake");

/** The first sentence of an error, for logs and probes. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

export class LoopSchedule {
  readonly #o: LoopScheduleOptions;
  readonly #random: () => number;
  #failures = 0;
  #retryAt: number | undefined;
  #open: Open | undefined;
  #wake: (() => void) | undefined;

  constructor(options: LoopScheduleOptions) {
    this.#o = options;
    this.#random = options.random ?? Math.random;
  }

  /** Steps failed in a row (0 once one works). */
  get failures(): number {
    return this.#failures;
  }

  /** Clock time of the next try after a failure; undefined while none failed. */
  get retryAt(): number | undefined {
    return this.#retryAt;
  }

  /** The failure still open, if any: it may outlive `failures` while what failed is outstanding. */
  get open(): FailureRecord | undefined {
    const open = this.#open;
    return open === undefined ? undefined : { description: open.description, count: open.count };
  }

  /**
   * A step failed with the error `key` (`description` for people) on the actions of `addresses` (none when
   * the step ended before any action, or the loop retries whole). Schedules the next try after the backoff.
   */
  failed(key: string, description: string, addresses: readonly string[] = []): ScheduledRetry {
    this.#failures += 1;
    const retryInMs = this.#delay();
    this.#retryAt = this.#o.clock.now() + retryInMs;
    const failures = this.#failures;
    const open = this.#open;
    if (open !== undefined && open.key === key) {
      open.count += 1;
      for (const address of addresses) open.addresses.add(address);
      return { log: false, count: open.count, failures, retryInMs };
    }
    this.#open = { key, description, count: 1, addresses: new Set(addresses) };
    return {
      log: true,
      count: 1,
      failures,
      retryInMs,
      ...(open === undefined ? {} : { previous: { description: open.description, count: open.count } }),
    };
  }

  /**
   * A step worked: no retry is due. `outstanding(address)` tells whether what failed on `address` is still
   * to be done. Returns the failure that is over now, for the recovery line; undefined while it is still
   * open, or none was.
   */
  succeeded(outstanding: (address: string) => boolean = () => false): FailureRecord | undefined {
    this.#failures = 0;
    this.#retryAt = undefined;
    const open = this.#open;
    if (open === undefined) return undefined;
    for (const address of open.addresses) if (!outstanding(address)) open.addresses.delete(address);
    if (open.addresses.size > 0) return undefined;
    this.#open = undefined;
    return { description: open.description, count: open.count };
  }

  /** A step broke in a way no failure covers (a bug): try again after the current backoff, counting nothing. */
  retryLater(): void {
    this.#retryAt = this.#o.clock.now() + this.#delay();
  }

  #delay(): number {
    return backoffDelay(this.#o.backoff, Math.max(1, this.#failures), this.#random);
  }

  /** A change happened: cuts short a wakeable sleep in progress (one not in progress needs no waking). */
  wake(): void {
    this.#wake?.();
  }

  /**
   * Sleeps until clock time `at`, or until wake() when `wakeable`. Rejects with the signal's reason when
   * `signal` aborts.
   */
  async sleepUntil(at: number, signal: AbortSignal, wakeable = true): Promise<void> {
    const { clock } = this.#o;
    const link = linkedAbort(signal);
    if (wakeable) this.#wake = () => link.abort(WAKE);
    try {
      await clock.sleep(Math.max(0, at - clock.now()), link.signal);
    } catch (error) {
      if (error !== WAKE) throw error;
    } finally {
      link.dispose();
      this.#wake = undefined;
    }
  }
}
