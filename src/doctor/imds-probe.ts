/**
 * The IMDSv2 token request, probed on its own so that doctor can tell its failures apart. The ImdsClient
 * that init uses reports every token PUT that gets no answer as the hop-limit problem; here a plain GET
 * without a token follows, and its answer decides: IMDS answered it (401, or 200 where IMDSv1 is still
 * allowed), so IMDS is reachable and only the PUT's answer is lost, which is what a hop limit of 1 does to a
 * pod outside the host network. HttpPutResponseHopLimit limits PUT answers only.
 */

import { HttpTimeoutError, httpRequest } from "../eni/http-request.js";
import type { Clock } from "../eni/process/clock.js";

export type ImdsProbeResult =
  /** A token was issued. */
  | { readonly kind: "ok"; readonly durationMs: number }
  /**
   * The token PUT got no answer within the timeout, but a GET without a token did: `getStatus` 401 (tokens
   * required) or 200 (IMDSv1 allowed; `instanceId` is then what the GET of `meta-data/instance-id` returned).
   */
  | { readonly kind: "token-timeout"; readonly getStatus: number; readonly instanceId: string | undefined }
  /** Neither the PUT nor the GET was answered within the timeout. */
  | { readonly kind: "no-answer" }
  /** No connection at all, e.g. ECONNREFUSED or ENETUNREACH. */
  | { readonly kind: "unreachable"; readonly code: string }
  /** The PUT was answered with an error status: 403 when the metadata endpoint is disabled. */
  | { readonly kind: "status"; readonly status: number };

/** Probes the IMDSv2 token request of one endpoint. */
export interface ImdsProbe {
  /** Base URL, e.g. `http://169.254.169.254`. */
  readonly endpoint: string;
  /** Timeout of each request, in ms. */
  readonly timeoutMs: number;
  probe(): Promise<ImdsProbeResult>;
}

const TOKEN_PATH = "/latest/api/token";
const INSTANCE_ID_PATH = "/latest/meta-data/instance-id";

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return code;
  return error instanceof Error ? error.message : String(error);
}

export class HttpImdsProbe implements ImdsProbe {
  readonly endpoint: string;
  readonly timeoutMs: number;
  readonly #clock: Clock;
  readonly #signal: AbortSignal | undefined;

  constructor(options: { endpoint: string; timeoutMs: number; clock: Clock; signal?: AbortSignal }) {
    this.endpoint = options.endpoint.trim().replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs;
    this.#clock = options.clock;
    this.#signal = options.signal;
  }

  async probe(): Promise<ImdsProbeResult> {
    const started = this.#clock.now();
    try {
      const answer = await this.#request("PUT", TOKEN_PATH, { "X-aws-ec2-metadata-token-ttl-seconds": "60" });
      if (!answer.ok) return { kind: "status", status: answer.status };
      return { kind: "ok", durationMs: this.#clock.now() - started };
    } catch (error) {
      if (this.#signal?.aborted) throw this.#signal.reason;
      if (!(error instanceof HttpTimeoutError)) return { kind: "unreachable", code: errorCode(error) };
    }
    try {
      const answer = await this.#request("GET", INSTANCE_ID_PATH, {});
      const instanceId =
        answer.ok && /^i-[0-9a-f]+$/.test(answer.body.trim()) ? answer.body.trim() : undefined;
      return { kind: "token-timeout", getStatus: answer.status, instanceId };
    } catch (error) {
      if (this.#signal?.aborted) throw this.#signal.reason;
      if (error instanceof HttpTimeoutError) return { kind: "no-answer" };
      return { kind: "unreachable", code: errorCode(error) };
    }
  }

  #request(method: "GET" | "PUT", path: string, headers: Record<string, string>) {
    return httpRequest(this.endpoint + path, {
      method,
      headers,
      timeoutMs: this.timeoutMs,
      ...(this.#signal === undefined ? {} : { signal: this.#signal }),
    });
  }
}
