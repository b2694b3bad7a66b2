import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../eni/logger.js";

/** Default port of the sidecar's HTTP server (IPMGR_HTTP_PORT). */
export const DEFAULT_HTTP_PORT = 9180;
/** Default listen address (IPMGR_HTTP_HOST): every IPv4 address, so that the kubelet's probes reach it. */
export const DEFAULT_HTTP_HOST = "0.0.0.0";

export interface ProbeResult {
  readonly ok: boolean;
  /** Human-readable lines: what is wrong, or what is fine. */
  readonly lines: readonly string[];
}

/** What the server asks the sidecar on every probe. Must be cheap and must not throw. */
export interface SidecarStatus {
  /** /healthz: the loop is alive. */
  health(): ProbeResult;
  /** /readyz: every current address is held by the right ENI, nothing is refused. */
  readiness(): ProbeResult;
}

export interface MetricsSource {
  readonly contentType: string;
  text(): Promise<string>;
}

export interface HttpServerOptions {
  readonly host: string;
  /** TCP port; 0 picks a free one (tests). */
  readonly port: number;
  readonly status: SidecarStatus;
  readonly metrics: MetricsSource;
  readonly logger: Logger;
}

export interface RunningHttpServer {
  /** The bound address, with the real port when 0 was asked. */
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

function send(
  response: ServerResponse,
  status: number,
  body: string,
  contentType = "text/plain; charset=utf-8",
): void {
  response.writeHead(status, { "content-type": contentType, "cache-control": "no-store" });
  response.end(body);
}

function sendProbe(response: ServerResponse, result: ProbeResult, okWord: string, failWord: string): void {
  const head = result.ok ? okWord : failWord;
  const body = [head, ...result.lines.map((line) => `- ${line}`)].join("\n");
  send(response, result.ok ? 200 : 503, `${body}\n`);
}

async function handle(
  options: HttpServerOptions,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const path = (request.url ?? "/").split("?")[0];
  if (request.method !== "GET" && request.method !== "HEAD") {
    response.setHeader("allow", "GET, HEAD");
    send(response, 405, "method not allowed\n");
    return;
  }
  switch (path) {
    case "/healthz":
      sendProbe(response, options.status.health(), "ok", "unhealthy");
      return;
    case "/readyz":
      sendProbe(response, options.status.readiness(), "ready", "not ready");
      return;
    case "/metrics":
      send(response, 200, await options.metrics.text(), options.metrics.contentType);
      return;
    default:
      send(response, 404, "not found: try /healthz, /readyz or /metrics\n");
  }
}

/** Starts the probe and metrics server; resolves once it listens (rejects if the port is taken). */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const server: Server = createServer((request, response) => {
    handle(options, request, response).catch((error: unknown) => {
      options.logger.error({ err: error, url: request.url }, "HTTP handler failed");
      if (!response.headersSent) send(response, 500, "internal error\n");
      else response.destroy();
    });
  });
  // Probes are short; never let a slow client hold the process at exit.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (error) => options.logger.error({ err: error }, "HTTP server error"));
  const address = server.address() as AddressInfo;
  return {
    host: address.address,
    port: address.port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        server.closeAllConnections();
      }),
  };
}
