import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Clock } from "../../eni/process/clock.js";
import type { CallLog } from "../call-log.js";
import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { FaultState } from "../fault-state.js";
import type { AttachmentEvent } from "../hotplug.js";
import { BodyTooLargeError, readBody } from "../http-util.js";
import type { StateStore } from "../state-store.js";
import type { Topology } from "../topology.js";
import { actions } from "./actions.js";
import { hideFresh } from "./model/eni-create.js";
import { QueryParams } from "./query-params.js";
import type { TokenBuckets } from "./token-bucket.js";
import { escapeXml, leaf } from "./xml.js";

export interface Ec2ServerDeps {
  readonly topology: Topology;
  readonly store: StateStore;
  readonly faults: FaultState;
  readonly calls: CallLog;
  readonly buckets: TokenBuckets;
  readonly clock: Clock;
  readonly nextId: (prefix: string) => string;
  /** Told of each attach and detach once committed; default none. */
  readonly attachments?: ((event: AttachmentEvent) => void) | undefined;
  /** Called with one line per request (for --verbose); default none. */
  readonly log?: ((line: string) => void) | undefined;
  /** Called with one line per request the server failed to answer (an internal error, with its stack). */
  readonly errorLog: (line: string) => void;
}

const namespace = "http://ec2.amazonaws.com/doc/2016-11-15/";

/** Without a hot-plug stand-in, attachments change nothing outside the state. */
const ignoreAttachments = (_event: AttachmentEvent): void => undefined;

function errorXml(error: Ec2ApiError, requestId: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>' +
    leaf("Code", error.code) +
    leaf("Message", error.message) +
    `</Error></Errors>${leaf("RequestID", requestId)}</Response>`
  );
}

/**
 * The checks every call goes through, in this order: known action, scripted failure (failNext),
 * throttling, IAM (deny), DryRun, an ENI too new to be seen (ec2ReadLagMs), then the action itself.
 */
function answer(deps: Ec2ServerDeps, action: string, params: QueryParams, requestId: string): string {
  const spec = actions[action];
  if (spec === undefined) {
    throw new Ec2ApiError("InvalidAction", `The action ${action} is not valid for this web service.`);
  }
  const faults = deps.faults.get();
  const rule = deps.faults.takeFailNext(action);
  if (rule !== undefined) {
    throw new Ec2ApiError(rule.code, rule.message ?? "Injected failure (simulator).", rule.status);
  }
  if (!deps.buckets.take(spec.bucket(params), faults.throttleScale)) {
    throw new Ec2ApiError("RequestLimitExceeded", "Request limit exceeded.", 503);
  }
  if (faults.deny.includes(action)) {
    // Real EC2 appends an encoded authorization message; this one decodes (base64) to JSON naming the action.
    const encoded = Buffer.from(JSON.stringify({ allowed: false, action: `ec2:${action}` })).toString(
      "base64",
    );
    throw new Ec2ApiError(
      "UnauthorizedOperation",
      `You are not authorized to perform this operation. User: arn:aws:sts::${deps.topology.accountId}:assumed-role/ipmgr-sim/sim ` +
        `is not authorized to perform: ec2:${action} because no identity-based policy allows the ec2:${action} action. ` +
        `Encoded authorization failure message: ${encoded}`,
      403,
    );
  }
  if (params.has("DryRun")) {
    if (!spec.dryRun) throw new Ec2ApiError("UnknownParameter", "The parameter DryRun is not recognized");
    if (params.bool("DryRun")) {
      throw new Ec2ApiError("DryRunOperation", "Request would have succeeded, but DryRun flag is set.", 412);
    }
  }
  const single = params.get("NetworkInterfaceId");
  const named = [...params.list("NetworkInterfaceId"), ...(single === undefined ? [] : [single])];
  hideFresh(deps.store.current(), named, deps.clock.now(), deps.topology.ec2ReadLagMs);
  const body = spec.handler({
    topology: deps.topology,
    store: deps.store,
    params,
    readState: () => deps.store.asOf(deps.faults.get().staleReadsMs),
    nextId: deps.nextId,
    now: () => deps.clock.now(),
    attachments: deps.attachments ?? ignoreAttachments,
  });
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${escapeXml(namespace)}">` +
    `${leaf("requestId", requestId)}${body}</${action}Response>`
  );
}

async function handle(deps: Ec2ServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const requestId = randomUUID();
  const seq = deps.calls.nextSeq();
  const time = new Date(deps.clock.now()).toISOString();
  let params = new QueryParams(new Map());
  let status = 200;
  let outcome = "ok";
  let xml: string;
  try {
    const url = new URL(req.url ?? "/", "http://sim");
    // EC2 takes the parameters from the query string (GET) or the form body (POST); the SDKs POST.
    params =
      req.method === "POST" ? QueryParams.fromForm(await readBody(req)) : QueryParams.fromForm(url.search);
    const latency = deps.faults.get().ec2LatencyMs;
    if (latency > 0) await deps.clock.sleep(latency);
    xml = answer(deps, params.get("Action") ?? "", params, requestId);
  } catch (caught) {
    let error: Ec2ApiError;
    if (caught instanceof Ec2ApiError) {
      error = caught;
    } else if (caught instanceof BodyTooLargeError) {
      error = new Ec2ApiError("RequestEntityTooLarge", caught.message, 413);
    } else {
      error = new Ec2ApiError("InternalError", "An internal error has occurred", 500);
      deps.errorLog(`internal error: ${(caught as Error).stack ?? String(caught)}`);
    }
    status = error.status;
    outcome = error.code;
    xml = errorXml(error, requestId);
  }
  const action = params.get("Action") ?? "";
  deps.calls.record({ seq, time, action, params: params.toRecord(), status, outcome, requestId });
  deps.log?.(`ec2 ${action || "(no action)"} ${status} ${outcome} ${requestId}`);
  res.writeHead(status, {
    "content-type": "text/xml;charset=UTF-8",
    "content-length": Buffer.byteLength(xml),
    "x-amzn-requestid": requestId,
  });
  res.end(xml);
}

export function createEc2Server(deps: Ec2ServerDeps): Server {
  return createServer((req, res) => {
    handle(deps, req, res).catch((error: unknown) => {
      deps.errorLog(String(error));
      res.destroy();
    });
  });
}
