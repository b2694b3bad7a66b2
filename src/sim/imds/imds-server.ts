import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Clock } from "../../eni/process/clock.js";
import type { FaultState } from "../fault-state.js";
import { tokenHangs } from "../faults.js";
import { sendText } from "../http-util.js";
import type { SimEni } from "../sim-state.js";
import type { StateStore } from "../state-store.js";
import type { Topology, TopologyInstance } from "../topology.js";
import { lookupMetadata, metadataTree } from "./metadata-tree.js";
import { TokenStore } from "./token-store.js";

export interface ImdsServerDeps {
  readonly instance: TopologyInstance;
  readonly topology: Topology;
  readonly store: StateStore;
  readonly faults: FaultState;
  readonly clock: Clock;
  /** Called with one line per request (for --verbose); default none. */
  readonly log?: ((line: string) => void) | undefined;
  /** Called with one line per request the server failed to answer. */
  readonly errorLog: (line: string) => void;
}

const maxTtlSeconds = 21_600;

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The instance's ENIs as IMDS shows them: which ones are attached as of imdsAttachmentLagMs ago (IMDS learns
 * of an attach or a detach late), each with its addresses as of staleReadsMs ago (or as it was then, when it
 * has left the instance since).
 */
function enisShown(deps: ImdsServerDeps, staleReadsMs: number): SimEni[] {
  const id = deps.instance.id;
  const contents = deps.store.asOf(staleReadsMs).enis;
  const lagMs = deps.topology.imdsAttachmentLagMs;
  if (lagMs <= 0) return contents.filter((e) => e.instanceId === id);
  const then = deps.store.asOf(Math.max(staleReadsMs, lagMs)).enis.filter((e) => e.instanceId === id);
  return then.map((old) => contents.find((e) => e.eniId === old.eniId && e.instanceId === id) ?? old);
}

/** Returns the status answered, or undefined when the request is left hanging. */
async function handle(
  deps: ImdsServerDeps,
  tokens: TokenStore,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<number | undefined> {
  const faults = deps.faults.get();
  if (faults.imdsLatencyMs > 0) await deps.clock.sleep(faults.imdsLatencyMs);
  if (faults.imdsDisabled) {
    sendText(res, 403, "Forbidden");
    return 403;
  }
  // @aws-sdk/ec2-metadata-service sends `//latest/...`; IMDS tolerates it, so do we.
  const path = new URL((req.url ?? "/").replace(/^\/+/, "/"), "http://imds").pathname;
  if (path === "/latest/api/token") {
    if (req.method !== "PUT") {
      sendText(res, 405, "Method Not Allowed");
      return 405;
    }
    // IMDS refuses token requests that went through a proxy.
    if (header(req, "x-forwarded-for") !== undefined) {
      sendText(res, 403, "Forbidden");
      return 403;
    }
    const ttlText = header(req, "x-aws-ec2-metadata-token-ttl-seconds") ?? "";
    const ttl = Number(ttlText);
    if (!/^\d+$/.test(ttlText) || ttl < 1 || ttl > maxTtlSeconds) {
      sendText(res, 400, "Bad Request");
      return 400;
    }
    // The hop-limit symptom: the answer never reaches the caller. close() drops the socket.
    if (tokenHangs(deps.faults.get(), deps.instance.id)) return undefined;
    sendText(res, 200, tokens.issue(ttl), { "x-aws-ec2-metadata-token-ttl-seconds": String(ttl) });
    return 200;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    sendText(res, 405, "Method Not Allowed");
    return 405;
  }
  const token = header(req, "x-aws-ec2-metadata-token");
  // With httpTokens optional a missing token is fine (IMDSv1), but a bad one is still refused.
  if (token === undefined ? deps.topology.httpTokens === "required" : !tokens.isValid(token)) {
    sendText(res, 401, "Unauthorized");
    return 401;
  }
  const value = path.startsWith("/latest/")
    ? lookupMetadata(
        metadataTree(deps.instance, enisShown(deps, faults.staleReadsMs), deps.topology),
        path.slice("/latest/".length),
      )
    : undefined;
  if (value === undefined) {
    sendText(res, 404, "Not Found");
    return 404;
  }
  sendText(res, 200, value);
  return 200;
}

/** The IMDSv2 endpoint of one instance. */
export function createImdsServer(deps: ImdsServerDeps): Server {
  const tokens = new TokenStore(deps.clock);
  return createServer((req, res) => {
    handle(deps, tokens, req, res).then(
      (status) => deps.log?.(`imds ${deps.instance.id} ${req.method} ${req.url} ${status ?? "(hanging)"}`),
      (error: unknown) => {
        deps.errorLog(`imds: ${String(error)}`);
        res.destroy();
      },
    );
  });
}
