/**
 * IMDSv2 client on node:http (see http-request.ts for why not fetch).
 *
 * Why not @aws-sdk/ec2-metadata-service (evaluated and removed): it fetches a new token for every request,
 * has no timeout unless one is configured, silently falls back to IMDSv1 when the token PUT fails or times
 * out (which hides the hop-limit problem every pod outside the host network hits), and sends
 * `request("/latest/...")` as `//latest/...`. Here the token is cached, every request has a timeout, and a
 * token PUT that gets no answer is reported as the hop-limit error it almost always is.
 */
import { setMaxListeners } from "node:events";
import { ImdsError } from "./errors/imds-error.js";
import { ImdsHopLimitError } from "./errors/imds-hop-limit-error.js";
import { type HttpAnswer, HttpTimeoutError, httpRequest } from "./http-request.js";
import type { Imds } from "./imds.js";
import { canonicalAddressText } from "./ip.js";
import { type Clock, systemClock } from "./process/clock.js";
import type { Logger } from "./process/logger.js";
import { withRetry } from "./retry.js";

export interface ImdsClientOptions {
  /**
   * Base URL of the metadata service, without a trailing path.
   * Default: `AWS_EC2_METADATA_SERVICE_ENDPOINT` when set, else `http://169.254.169.254`.
   */
  readonly endpoint?: string;
  /** Timeout of each HTTP request (token PUT or GET), in milliseconds. Default 1000. */
  readonly requestTimeoutMs?: number;
  /** Lifetime requested for the IMDSv2 token, in seconds (1 to 21600). Default 21600 (6 hours). */
  readonly tokenTtlSeconds?: number;
  /** Time source for token expiry and retry backoff. Default: the system clock. */
  readonly clock?: Clock;
  /** Receives one debug line per HTTP request. Default: no logging. */
  readonly logger?: Logger;
  /** Cancels every request and wait of this client; calls then reject with the signal's reason. */
  readonly signal?: AbortSignal;
}

const DEFAULT_ENDPOINT = "http://169.254.169.254";
const TOKEN_PATH = "/latest/api/token";
const META = "/latest/meta-data/";
/** Attempts for a GET failing with 5xx, a reset connection or a timeout. Small: IMDS is local. */
const GET_ATTEMPTS = 3;
/** Attempts for a token PUT that times out: two, so that the hop-limit case fails within ~2x the timeout. */
const TOKEN_PUT_ATTEMPTS = 2;
const BACKOFF = { baseDelayMs: 50, maxDelayMs: 400 } as const;

/** Failures worth another attempt. Kept out of the error type so that callers only ever see ImdsError. */
const transient = new WeakSet<object>();

function transientError(err: ImdsError): ImdsError {
  transient.add(err);
  return err;
}

function isTimeout(err: unknown): boolean {
  return err instanceof HttpTimeoutError || (err instanceof Error && err.name === "TimeoutError");
}

/** The Node/undici code of a fetch failure (`ECONNREFUSED`, `ECONNRESET`, `UND_ERR_SOCKET`, ...). */
function networkCode(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === "string") return cause.code;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : err instanceof Error ? err.message : String(err);
}

const RETRYABLE_NETWORK_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "EPIPE",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "ECONNABORTED",
]);

/** Non-empty trimmed lines. */
function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

export class ImdsClient implements Imds {
  readonly endpoint: string;
  private readonly requestTimeoutMs: number;
  private readonly tokenTtlSeconds: number;
  private readonly clock: Clock;
  private readonly logger: Logger | undefined;
  private readonly signal: AbortSignal | undefined;
  private token: { readonly value: string; readonly refreshAt: number } | undefined;
  private tokenInFlight: Promise<string> | undefined;

  constructor(options: ImdsClientOptions = {}) {
    const fromEnv = process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
    this.endpoint = (
      options.endpoint ?? (fromEnv !== undefined && fromEnv !== "" ? fromEnv : DEFAULT_ENDPOINT)
    )
      .trim()
      .replace(/\/+$/, "");
    this.requestTimeoutMs = options.requestTimeoutMs ?? 1000;
    this.tokenTtlSeconds = options.tokenTtlSeconds ?? 21_600;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger;
    this.signal = options.signal;
    // Start-up reads a dozen items in parallel, each listening on this signal until it settles.
    if (options.signal !== undefined) setMaxListeners(64, options.signal);
  }

  /**
   * The raw text at `path` (absolute, e.g. `/latest/meta-data/mac`), or undefined when IMDS answers 404.
   * Owns the token: fetched once, cached, refreshed before it expires and once on a 401.
   */
  async get(path: string): Promise<string | undefined> {
    return withRetry(() => this.getOnce(path), {
      maxAttempts: GET_ATTEMPTS,
      ...BACKOFF,
      clock: this.clock,
      signal: this.signal,
      isRetryable: (err) => typeof err === "object" && err !== null && transient.has(err),
      onRetry: (err, attempt, delayMs) =>
        this.logger?.debug({ path, attempt, delayMs, err: (err as Error).message }, "retrying IMDS request"),
    });
  }

  instanceId(): Promise<string> {
    return this.required("instance-id");
  }

  region(): Promise<string> {
    return this.required("placement/region");
  }

  async macs(): Promise<string[]> {
    const text = await this.required("network/interfaces/macs/");
    return lines(text).map((l) => l.replace(/\/+$/, "").toLowerCase());
  }

  interfaceId(mac: string): Promise<string> {
    return this.required(macPath(mac, "interface-id"));
  }

  async deviceNumber(mac: string): Promise<number> {
    const path = macPath(mac, "device-number");
    const text = await this.required(path);
    if (!/^\d+$/.test(text)) {
      throw new ImdsError(
        META + path,
        200,
        `IMDS at ${this.endpoint} returned ${JSON.stringify(text)} for ${META}${path}, which is not a device number.`,
      );
    }
    return Number(text);
  }

  vpcId(mac: string): Promise<string> {
    return this.required(macPath(mac, "vpc-id"));
  }

  subnetId(mac: string): Promise<string> {
    return this.required(macPath(mac, "subnet-id"));
  }

  subnetIpv4Cidrs(mac: string): Promise<string[]> {
    return this.addressList(macPath(mac, "subnet-ipv4-cidr-block"));
  }

  subnetIpv6Cidrs(mac: string): Promise<string[]> {
    return this.addressList(macPath(mac, "subnet-ipv6-cidr-blocks"));
  }

  localIpv4s(mac: string): Promise<string[]> {
    return this.addressList(macPath(mac, "local-ipv4s"));
  }

  ipv6s(mac: string): Promise<string[]> {
    return this.addressList(macPath(mac, "ipv6s"));
  }

  // IMDS answers 404, not an empty list, for an ENI without prefixes, as for ipv6s.
  ipv4Prefixes(mac: string): Promise<string[]> {
    return this.addressList(macPath(mac, "ipv4-prefix"));
  }

  ipv6Prefixes(mac: string): Promise<string[]> {
    return this.addressList(macPath(mac, "ipv6-prefix"));
  }

  // The one place that decides what a 404 means: an item that must exist is an error, a list is empty.
  private async item(relativePath: string, missing: "error" | "empty"): Promise<string> {
    const path = META + relativePath;
    const text = await this.get(path);
    if (text !== undefined) return text.trim();
    if (missing === "empty") return "";
    throw new ImdsError(
      path,
      404,
      `IMDS at ${this.endpoint} has no ${path} (HTTP 404). If this is a network interface item, the ENI may have ` +
        "been detached or the MAC is not one of this instance's.",
    );
  }

  private required(relativePath: string): Promise<string> {
    return this.item(relativePath, "error");
  }

  private async addressList(relativePath: string): Promise<string[]> {
    return lines(await this.item(relativePath, "empty")).map(canonicalAddressText);
  }

  private async getOnce(path: string): Promise<string | undefined> {
    const token = await this.currentToken();
    let response = await this.request("GET", path, { "X-aws-ec2-metadata-token": token });
    if (response.status === 401) {
      // Expired or revoked early (IMDS restarted, clock jump): one fresh token, one more try.
      this.token = undefined;
      const fresh = await this.currentToken();
      response = await this.request("GET", path, { "X-aws-ec2-metadata-token": fresh });
      if (response.status === 401) {
        throw new ImdsError(
          path,
          401,
          `IMDS at ${this.endpoint} rejected a freshly issued IMDSv2 token for ${path} (HTTP 401).`,
        );
      }
    }
    if (response.ok) return response.body;
    // Read nothing from an error answer, but release its connection for the next request.
    if (response.status === 404) return undefined;
    throw this.statusError(path, response.status);
  }

  private currentToken(): Promise<string> {
    const cached = this.token;
    if (cached !== undefined && this.clock.now() < cached.refreshAt) return Promise.resolve(cached.value);
    this.tokenInFlight ??= this.fetchToken().finally(() => {
      this.tokenInFlight = undefined;
    });
    return this.tokenInFlight;
  }

  private async fetchToken(): Promise<string> {
    let timeouts = 0;
    const value = await withRetry(
      async () => {
        try {
          const response = await this.request("PUT", TOKEN_PATH, {
            "X-aws-ec2-metadata-token-ttl-seconds": String(this.tokenTtlSeconds),
          });
          if (!response.ok) {
            throw this.statusError(TOKEN_PATH, response.status);
          }
          return response.body.trim();
        } catch (err) {
          if (
            err instanceof ImdsError &&
            err.status === undefined &&
            err.cause instanceof Error &&
            isTimeout(err.cause)
          ) {
            timeouts += 1;
            const hopLimit = new ImdsHopLimitError(this.endpoint, this.requestTimeoutMs, {
              cause: err.cause,
            });
            // Never fall back to IMDSv1, and never wait more than twice the timeout on a PUT nobody answers.
            throw timeouts < TOKEN_PUT_ATTEMPTS ? transientError(hopLimit) : hopLimit;
          }
          throw err;
        }
      },
      {
        maxAttempts: GET_ATTEMPTS,
        ...BACKOFF,
        clock: this.clock,
        signal: this.signal,
        isRetryable: (err) => typeof err === "object" && err !== null && transient.has(err),
      },
    ).catch((err: unknown) => {
      // Retried here already: the GET loop around us must not multiply the attempts.
      if (typeof err === "object" && err !== null) transient.delete(err);
      throw err;
    });
    // Refresh ahead of expiry: a token that expires between our check and IMDS's would cost a 401 round trip.
    const marginMs = Math.min(60_000, this.tokenTtlSeconds * 100);
    this.token = { value, refreshAt: this.clock.now() + this.tokenTtlSeconds * 1000 - marginMs };
    return value;
  }

  /** One HTTP request with its own timeout; network failures become ImdsError, transient ones marked. */
  private async request(
    method: "GET" | "PUT",
    path: string,
    headers: Record<string, string>,
  ): Promise<HttpAnswer> {
    const started = this.clock.now();
    try {
      const response = await httpRequest(this.endpoint + path, {
        method,
        headers,
        timeoutMs: this.requestTimeoutMs,
        ...(this.signal === undefined ? {} : { signal: this.signal }),
      });
      this.logger?.debug(
        { method, path, status: response.status, durationMs: this.clock.now() - started },
        "IMDS request",
      );
      return response;
    } catch (err) {
      if (this.signal?.aborted) throw this.signal.reason;
      if (isTimeout(err)) {
        throw transientError(
          new ImdsError(
            path,
            undefined,
            `IMDS at ${this.endpoint} did not answer ${method} ${path} within ${this.requestTimeoutMs} ms.`,
            { cause: err },
          ),
        );
      }
      const code = networkCode(err);
      const failure = new ImdsError(
        path,
        undefined,
        `cannot reach IMDS at ${this.endpoint} (${code}) for ${method} ${path}. This must run on an EC2 instance; ` +
          "elsewhere set AWS_EC2_METADATA_SERVICE_ENDPOINT to a metadata endpoint.",
        { cause: err },
      );
      throw RETRYABLE_NETWORK_CODES.has(code) ? transientError(failure) : failure;
    }
  }

  private statusError(path: string, status: number): ImdsError {
    if (status === 403) {
      return new ImdsError(
        path,
        403,
        `IMDS at ${this.endpoint} answered 403 for ${path}: the instance metadata service is disabled on this ` +
          "instance. Enable it with aws ec2 modify-instance-metadata-options --instance-id <id> --http-endpoint enabled.",
      );
    }
    const error = new ImdsError(
      path,
      status,
      `IMDS at ${this.endpoint} answered HTTP ${status} for ${path}.`,
    );
    return status >= 500 ? transientError(error) : error;
  }
}

function macPath(mac: string, item: string): string {
  return `network/interfaces/macs/${mac.toLowerCase()}/${item}`;
}
