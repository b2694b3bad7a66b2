/**
 * The one wrapper every EC2 call goes through: retry policy, one log line, one observer record, and the
 * single translation of SDK errors into Ec2Error. Call sites stay one line.
 *
 * Failures and retries are logged at debug only. Every caller reports the error it gets (init once, through
 * reportFailure; the sidecar loop once per error change), so a warn or error line here would repeat on every
 * attempt of a sidecar riding out an EC2 outage. A call that succeeds after retries logs its `attempts`.
 */

import type { Ec2CallObserver } from "./ec2-api.js";
import { Ec2Error, type Ec2ErrorKind } from "./errors/ec2-error.js";
import { type Clock, systemClock } from "./process/clock.js";
import type { Logger } from "./process/logger.js";
import {
  type Ec2Access,
  errorCodeOf,
  httpStatusOf,
  isNetworkFailure,
  isRetryableEc2Failure,
  type RetryOptions,
  withRetry,
} from "./retry.js";

/** What a call is about, for the log line, the observer record and the error message. */
export interface Ec2CallContext {
  readonly eniId?: string | undefined;
  readonly addresses?: readonly string[];
  /** Names the target when it is not an ENI, e.g. `subnet subnet-1` or `reservation scr-1`. */
  readonly target?: string;
  /**
   * A write on an ENI this tool may have just made: `InvalidNetworkInterfaceID.NotFound` is then EC2's
   * eventual consistency (a new ENI is not visible to every call at once) and is retried as for a read.
   */
  readonly retryNotFound?: boolean;
}

export interface Ec2InstrumentationOptions {
  readonly logger: Logger;
  readonly observer?: Ec2CallObserver | undefined;
  readonly retry?: RetryOptions | undefined;
  /** Measures durations and sleeps between retries. Default: the system clock. */
  readonly clock?: Clock | undefined;
  /** Cancels the calls and the backoff waits; calls then reject with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
}

/** The options to hand to `client.send`: the abort signal, when there is one. */
export interface SendOptions {
  abortSignal?: AbortSignal;
}

/** Runs one EC2 call; `fn` gets the options to pass on to the SDK's `send`. */
export type Instrument = <T>(
  operation: string,
  context: Ec2CallContext,
  fn: (sendOptions: SendOptions) => Promise<T>,
) => Promise<T>;

const PERMISSION_CODES: ReadonlySet<string> = new Set(["UnauthorizedOperation", "AuthFailure", "Blocked"]);

/** Describe*, Get*: reads. Everything else changes state. */
export function accessOf(operation: string): Ec2Access {
  return /^(Describe|Get|List)/.test(operation) ? "read" : "write";
}

function requestIdOf(value: unknown): string | undefined {
  const metadata = (value as { $metadata?: { requestId?: unknown } } | null)?.$metadata;
  if (typeof metadata?.requestId === "string" && metadata.requestId !== "") return metadata.requestId;
  const headers = (value as { $response?: { headers?: Record<string, unknown> } } | null)?.$response?.headers;
  const fromHeader = headers?.["x-amzn-requestid"] ?? headers?.["x-amz-request-id"];
  return typeof fromHeader === "string" ? fromHeader : undefined;
}

function kindOf(err: unknown, code: string): Ec2ErrorKind {
  if (PERMISSION_CODES.has(code) || code === "CredentialsProviderError") return "permission";
  if (isRetryableEc2Failure(err, "write")) return "unavailable";
  return "refused";
}

function describeTarget(context: Ec2CallContext): string {
  let where = "";
  if (context.eniId !== undefined) where += ` on ${context.eniId}`;
  if (context.target !== undefined) where += ` on ${context.target}`;
  if (context.addresses !== undefined && context.addresses.length > 0) {
    where += ` for ${context.addresses.join(", ")}`;
  }
  return where;
}

/** The user-facing sentence for a failed call. */
export function ec2ErrorMessage(
  operation: string,
  context: Ec2CallContext,
  fields: {
    kind: Ec2ErrorKind;
    code: string;
    awsMessage: string;
    requestId: string | undefined;
    attempts: number;
  },
): string {
  const where = describeTarget(context);
  const request = `request id ${fields.requestId ?? "none"}`;
  const detail = `${fields.code} ${JSON.stringify(fields.awsMessage)} (${request})`;
  switch (fields.kind) {
    case "permission":
      if (fields.code === "CredentialsProviderError") {
        return (
          `EC2 ${operation}${where} found no AWS credentials: ${detail}. Give the pod an IRSA/Pod Identity role, ` +
          "or let it use the node role through IMDS (hop limit 2)."
        );
      }
      return (
        `EC2 denied ${operation}${where}: ${detail}. The IAM action ec2:${operation} is missing: ` +
        `grant ec2:${operation} to the node role or the pod's IRSA/Pod Identity role.`
      );
    case "refused":
      return `EC2 refused ${operation}${where}: ${detail}.`;
    case "unavailable":
      return (
        `EC2 ${operation}${where} still failed after ${fields.attempts} ` +
        `attempt${fields.attempts === 1 ? "" : "s"}: ${detail}. EC2 is throttling or unreachable; try again later.`
      );
  }
}

/** Builds the wrapper. One per adapter; the options apply to every call. */
export function createInstrument(options: Ec2InstrumentationOptions): Instrument {
  const clock = options.clock ?? systemClock;
  const { logger, observer, signal } = options;
  const sendOptions: SendOptions = signal === undefined ? {} : { abortSignal: signal };

  const notify = (record: Parameters<Ec2CallObserver>[0]): void => {
    if (observer === undefined) return;
    try {
      observer(record);
    } catch (err) {
      // The observer must not throw; if it does, the EC2 call's own outcome still stands.
      logger.error({ err, operation: record.operation }, "EC2 call observer threw");
    }
  };

  return async <T>(
    operation: string,
    context: Ec2CallContext,
    fn: (sendOptions: SendOptions) => Promise<T>,
  ): Promise<T> => {
    const access = accessOf(operation);
    const eniId = context.eniId;
    const addresses = context.addresses ?? [];
    const started = clock.now();
    let attempts = 0;
    try {
      const result = await withRetry(
        () => {
          attempts += 1;
          return fn(sendOptions);
        },
        {
          ...options.retry,
          clock,
          signal,
          isRetryable: (err) => isRetryableEc2Failure(err, context.retryNotFound === true ? "read" : access),
          onRetry: (err, failedAttempt, delayMs) =>
            logger.debug(
              {
                operation,
                eniId,
                addresses,
                attempt: failedAttempt,
                delayMs,
                errorCode: errorCodeOf(err),
                requestId: requestIdOf(err),
                err: err instanceof Error ? err.message : String(err),
              },
              `EC2 ${operation} failed, retrying`,
            ),
        },
      );
      const record = {
        operation,
        eniId,
        addresses,
        requestId: requestIdOf(result),
        durationMs: clock.now() - started,
        attempts,
        outcome: "ok" as const,
        errorCode: undefined,
      };
      if (access === "write") logger.info(record, `EC2 ${operation}`);
      else logger.debug(record, `EC2 ${operation}`);
      notify(record);
      return result;
    } catch (err) {
      // Cancelled by us: not an EC2 outcome; the caller gets the reason it gave, as from every other wait.
      if (signal?.aborted) throw signal.reason;
      // Ec2Error's contract: `NetworkError` when no response arrived; the socket-level code stays in the message.
      const code =
        isNetworkFailure(err) && httpStatusOf(err) === undefined ? "NetworkError" : errorCodeOf(err);
      const requestId = requestIdOf(err);
      const kind = kindOf(err, code);
      const record = {
        operation,
        eniId,
        addresses,
        requestId,
        durationMs: clock.now() - started,
        attempts,
        outcome: "error" as const,
        errorCode: code,
      };
      const awsMessage = err instanceof Error ? err.message : String(err);
      const message = ec2ErrorMessage(operation, context, { kind, code, awsMessage, requestId, attempts });
      // Debug only: the caller reports the error (see the module comment), and a refusal may still turn out
      // fine (the adapter re-reads the ENI: "already assigned here").
      logger.debug({ ...record, kind, err: awsMessage }, `EC2 ${operation} failed`);
      notify(record);
      throw new Ec2Error({ operation, code, requestId, eniId, kind }, message, { cause: err });
    }
  };
}
