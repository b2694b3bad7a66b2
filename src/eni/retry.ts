/**
 * Our one retry policy for EC2, decided once.
 *
 * The SDK client is built with `maxAttempts: 1`, so the SDK never retries; we retry here, and only errors
 * known to be retryable. Stacking the two would multiply attempts (3 SDK x 8 ours = 24 calls against a
 * throttled bucket) and hide the real attempt count from our logs and metrics.
 *
 * Retryable: throttling, 5xx, network errors (no response), and, on reads only, EC2's eventual consistency
 * (`InvalidNetworkInterfaceID.NotFound` right after an ENI appeared). A NotFound on a mutating call is not
 * retried: the ENI came from IMDS, so EC2 not knowing it means it is gone, and waiting will not bring it back.
 * Permission errors and bad parameters fail at once.
 */
import pRetry from "p-retry";
import { type Clock, systemClock } from "./process/clock.js";

/** Retry tuning. */
export interface RetryOptions {
  /** Attempts in total, the first one included. Default 8. */
  readonly maxAttempts?: number;
  /** Upper bound of the first backoff, in milliseconds; doubles per retry. Default 200. */
  readonly baseDelayMs?: number;
  /** Upper bound of any single backoff, in milliseconds. Default 5000. */
  readonly maxDelayMs?: number;
}

export const DEFAULT_RETRY_OPTIONS: Required<RetryOptions> = {
  maxAttempts: 8,
  baseDelayMs: 200,
  maxDelayMs: 5000,
};

/** Whether an EC2 call is a read (Describe/Get) or a write. Eventual consistency is retried on reads only. */
export type Ec2Access = "read" | "write";

const THROTTLING_CODES: ReadonlySet<string> = new Set([
  "RequestLimitExceeded",
  "Throttling",
  "ThrottlingException",
  "ThrottledException",
  "RequestThrottled",
  "RequestThrottledException",
  "TooManyRequestsException",
  "SlowDown",
  "EC2ThrottledException",
  "BandwidthLimitExceeded",
]);

const SERVER_CODES: ReadonlySet<string> = new Set([
  "InternalError",
  "InternalFailure",
  "ServiceUnavailable",
  "Unavailable",
  "RequestTimeout",
  "RequestTimeoutException",
]);

const NETWORK_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

const EVENTUALLY_CONSISTENT_CODES: ReadonlySet<string> = new Set(["InvalidNetworkInterfaceID.NotFound"]);

interface SdkLikeError {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly Code?: unknown;
  readonly message?: unknown;
  readonly $fault?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
}

function asRecord(err: unknown): SdkLikeError {
  return typeof err === "object" && err !== null ? (err as SdkLikeError) : {};
}

/** The HTTP status of an SDK error, or undefined when no response arrived. */
export function httpStatusOf(err: unknown): number | undefined {
  const status = asRecord(err).$metadata?.httpStatusCode;
  return typeof status === "number" ? status : undefined;
}

/** The AWS error code of an SDK service exception (its `name`), or the Node error code of a network error. */
export function errorCodeOf(err: unknown): string {
  const e = asRecord(err);
  for (const candidate of [e.Code, e.code, e.name]) {
    if (typeof candidate === "string" && candidate !== "" && candidate !== "Error") return candidate;
  }
  return "UnknownError";
}

/** True when no HTTP response arrived: refused, reset, timed out, DNS hiccup. */
export function isNetworkFailure(err: unknown): boolean {
  if (httpStatusOf(err) !== undefined) return false;
  const e = asRecord(err);
  const codes = [e.code, e.name, asRecord((err as { cause?: unknown } | null)?.cause).code];
  if (codes.some((c) => typeof c === "string" && (NETWORK_CODES.has(c) || c === "TimeoutError"))) return true;
  return typeof e.message === "string" && /socket hang up|ECONNRESET|ECONNREFUSED|ETIMEDOUT/.test(e.message);
}

/**
 * Whether a failed EC2 call may succeed if repeated unchanged: throttling, 5xx, no response, or (reads only)
 * an ENI that EC2 does not know yet.
 */
export function isRetryableEc2Failure(err: unknown, access: Ec2Access = "write"): boolean {
  const code = errorCodeOf(err);
  if (THROTTLING_CODES.has(code) || SERVER_CODES.has(code)) return true;
  const status = httpStatusOf(err);
  if (status !== undefined && status >= 500) return true;
  if (asRecord(err).$fault === "server" && status === undefined) return true;
  if (isNetworkFailure(err)) return true;
  return access === "read" && EVENTUALLY_CONSISTENT_CODES.has(code);
}

/**
 * Capped exponential backoff with full jitter: a uniform draw in [0, min(maxDelayMs, baseDelayMs * 2^(retry-1))).
 * `retry` counts from 1 (the wait before the second attempt).
 */
export function backoffDelayMs(
  retry: number,
  options: RetryOptions = {},
  random: () => number = Math.random,
): number {
  const base = options.baseDelayMs ?? DEFAULT_RETRY_OPTIONS.baseDelayMs;
  const max = options.maxDelayMs ?? DEFAULT_RETRY_OPTIONS.maxDelayMs;
  const ceiling = Math.min(max, base * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** What `withRetry` needs besides the function. */
export interface RetryRun extends RetryOptions {
  /** Decides whether a failure is worth another attempt. */
  readonly isRetryable: (err: unknown) => boolean;
  /** Sleeps between attempts. Default: the system clock. */
  readonly clock?: Clock;
  /** Cancels the waits and further attempts; the promise then rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /** Called before each backoff wait, with the attempt that failed (from 1) and the wait in milliseconds. */
  readonly onRetry?: (err: unknown, failedAttempt: number, delayMs: number) => void;
}

/**
 * Runs `fn` until it succeeds, fails with a non-retryable error, or `maxAttempts` is used up; rejects with the
 * last error unchanged. `fn` receives the attempt number (from 1).
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, run: RetryRun): Promise<T> {
  const maxAttempts = Math.max(1, run.maxAttempts ?? DEFAULT_RETRY_OPTIONS.maxAttempts);
  const clock = run.clock ?? systemClock;
  // p-retry runs the loop; we do the waiting in shouldRetry (minTimeout 0) so that it goes through the injected
  // clock and uses full jitter, which p-retry's `randomize` (x1 to x2) does not offer.
  return pRetry(fn, {
    retries: maxAttempts - 1,
    minTimeout: 0,
    maxTimeout: 0,
    signal: run.signal,
    shouldRetry: async ({ error, attemptNumber }) => {
      if (!run.isRetryable(error)) return false;
      const delayMs = backoffDelayMs(attemptNumber, run);
      run.onRetry?.(error, attemptNumber, delayMs);
      await clock.sleep(delayMs, run.signal);
      return true;
    },
  });
}
