import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError } from "../errors/config-error.js";
import type { Logger } from "./logger.js";

/**
 * The HTTP server of the long-running commands (sidecar, bridge): /healthz and /readyz for the kubelet's
 * probes, /metrics for Prometheus.
 */

export interface ProbeResult {
  readonly ok: boolean;
  /** Human-readable lines: what is wrong, or what is fine. */
  readonly lines: readonly string[];
}

/** What the server asks the command on every probe. Must be cheap and must not throw. */
export interface ProbeStatus {
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
  readonly status: ProbeStatus;
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

/**
 * Why the server cannot listen, as the setting to change: these are configuration errors (exit 2), not
 * bugs. Other errors are returned as they are.
 */
function listenError(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  const options = { cause: error };
  switch (code) {
    case "EADDRINUSE":
      return new ConfigError(
        "IPMGR_HTTP_PORT",
        String(port),
        `port ${port} on ${host} is already in use (EADDRINUSE); set IPMGR_HTTP_PORT to a free port, and the probes' port with it`,
        options,
      );
    case "EACCES":
      return new ConfigError(
        "IPMGR_HTTP_PORT",
        String(port),
        `listening on port ${port} is not permitted (EACCES); use a port from 1024 up, or give the container NET_BIND_SERVICE`,
        options,
      );
    case "EADDRNOTAVAIL":
      return new ConfigError(
        "IPMGR_HTTP_HOST",
        host,
        "no interface of this pod has this address (EADDRNOTAVAIL); use 0.0.0.0 (every IPv4 address), :: (every address) or one of the pod's addresses",
        options,
      );
    case "EAFNOSUPPORT":
      return new ConfigError(
        "IPMGR_HTTP_HOST",
        host,
        "this pod has no IPv6 (EAFNOSUPPORT); use 0.0.0.0 (every IPv4 address) or one of the pod's IPv4 addresses",
        options,
      );
    default:
      return error;
  }
}

/**
 * Starts the probe and metrics server; resolves once it listens.
 * @throws ConfigError when the port is taken or not permitted, or the address is not this pod's.
 */
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
    const onError = (error: Error): void => reject(listenError(error, options.host, options.port));
    server.once("error", onError);
    server.listen(options.port, options.host, () => {
      server.off("error", onError);
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
