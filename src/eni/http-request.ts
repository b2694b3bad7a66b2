import { Agent, request } from "node:http";

/** A finished HTTP exchange: status and the whole body as text. */
export interface HttpAnswer {
  readonly status: number;
  readonly ok: boolean;
  readonly body: string;
}

/** A request that got no answer within its timeout (`code` is `ETIMEDOUT`, as Node's own). */
export class HttpTimeoutError extends Error {
  override name = "HttpTimeoutError";
  readonly code = "ETIMEDOUT";
}

// One keep-alive agent: IMDS answers dozens of small requests at start-up over a handful of sockets.
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/**
 * A small HTTP/1.1 client on node:http. Not global fetch: in Node 20 the first fetch() loads undici, which
 * costs 40 to 60 ms of start-up on these machines; `init` makes its IMDS requests before anything else.
 */
export function httpRequest(
  url: string,
  options: {
    method: "GET" | "PUT";
    headers: Record<string, string>;
    timeoutMs: number;
    signal?: AbortSignal;
  },
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method, headers: options.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        clearTimeout(timer);
        const status = res.statusCode ?? 0;
        resolve({ status, ok: status >= 200 && status < 300, body: Buffer.concat(chunks).toString("utf8") });
      });
    });
    const timer = setTimeout(() => {
      req.destroy(new HttpTimeoutError(`no answer within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    const onAbort = (): void => {
      req.destroy(options.signal?.reason instanceof Error ? options.signal.reason : new Error("aborted"));
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });
    req.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.on("close", () => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    });
    if (options.method === "PUT") req.setHeader("content-length", "0");
    req.end();
  });
}
