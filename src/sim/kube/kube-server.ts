import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { KubeApiError } from "../errors/kube-api-error.js";
import {
  acceptsAggregatedDiscovery,
  aggregatedDiscovery,
  aggregatedDiscoveryType,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  simulatedVersion,
} from "./discovery.js";
import { applyContentType, type KubeApi, patchContentTypes } from "./kube-api.js";
import type { KubeFaultGate, RequestTarget } from "./kube-fault-gate.js";
import { isJsonObject, type KubeObject } from "./kube-object.js";
import { parseQuery } from "./list-query.js";
import { openApiV2Protobuf, openApiV2ProtobufType, openApiV3Document, openApiV3Root } from "./openapi.js";
import { deleteBody, jsonBody, objectBody, yamlBody } from "./request-bodies.js";
import { apiVersionOf, findResource, type ResourceDef, type Verb } from "./resources.js";
import { tableOf, wantsTable } from "./table.js";
import type { WatchSettings, WatchStreams } from "./watch-stream.js";

export interface KubeServerDeps {
  readonly api: KubeApi;
  readonly watches: WatchStreams;
  readonly watchSettings: WatchSettings;
  /** The Kubernetes API's faults: every request passes it first. */
  readonly gate: KubeFaultGate;
  /** `host:port` of this server, for /api's serverAddressByClientCIDRs. */
  readonly serverAddress: () => string;
  readonly log?: ((line: string) => void) | undefined;
  readonly errorLog: (line: string) => void;
}

/** A request for a resource: which one, in which namespace, which object. */
interface ResourceRequest {
  readonly resource: ResourceDef;
  /** undefined: cluster-scoped, or every namespace. */
  readonly namespace: string | undefined;
  readonly name: string | undefined;
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  retryAfterSeconds?: number,
  contentType = "application/json",
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(text),
    ...(retryAfterSeconds === undefined ? {} : { "retry-after": String(retryAfterSeconds) }),
  });
  res.end(text);
}

function notFound(): KubeApiError {
  return new KubeApiError(404, "NotFound", "the server could not find the requested resource", {});
}

function methodNotAllowed(): KubeApiError {
  return new KubeApiError(
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
    {},
  );
}

/** Splits `/api/v1/...` or `/apis/<group>/<version>/...` into the group version and the rest. */
function groupVersionOf(
  parts: readonly string[],
): { group: string; version: string; rest: string[] } | undefined {
  if (parts[0] === "api" && parts[1] !== undefined)
    return { group: "", version: parts[1], rest: parts.slice(2) };
  if (parts[0] === "apis" && parts[1] !== undefined && parts[2] !== undefined) {
    return { group: parts[1], version: parts[2], rest: parts.slice(3) };
  }
  return undefined;
}

function resourceRequest(
  group: string,
  version: string,
  rest: readonly string[],
): ResourceRequest | undefined {
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const resource = findResource(group, version, rest[2] as string);
    if (resource === undefined || !resource.namespaced || rest.length > 4) return undefined;
    return { resource, namespace: rest[1] as string, name: rest[3] };
  }
  const resource = findResource(group, version, rest[0] as string);
  if (resource === undefined || rest.length > 2) return undefined;
  // A namespaced resource by name needs its namespace; without one, only the collection (every namespace).
  if (resource.namespaced && rest.length > 1) return undefined;
  return { resource, namespace: undefined, name: rest[1] };
}

/** Whether a watch's resourceVersion resumes from a point (not unset, empty or "0"). */
function resumes(resourceVersion: string | null): boolean {
  return resourceVersion !== null && resourceVersion !== "" && resourceVersion !== "0";
}

function flag(value: string | null): boolean {
  return value === "true" || value === "1";
}

function integer(params: URLSearchParams, name: string): number | undefined {
  const text = params.get(name);
  if (text === null || text === "") return undefined;
  if (!/^-?\d+$/.test(text)) {
    throw new KubeApiError(400, "BadRequest", `invalid ${name} ${JSON.stringify(text)}: must be an integer`);
  }
  return Number(text);
}

/** Drops each item's apiVersion and kind, as typed lists of built-in resources show them. */
function listItems(resource: ResourceDef, items: KubeObject[]): KubeObject[] {
  if (resource.custom) return items;
  return items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest as KubeObject);
}

const verbsByMethod: Readonly<Record<string, Verb>> = {
  GET: "get",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
};

/** The verb of a request for a resource; undefined when the method does not fit the path. */
function verbOf(method: string, target: ResourceRequest, watch: boolean): Verb | undefined {
  if (target.name === undefined) {
    if (method === "GET") return watch ? "watch" : "list";
    if (method === "POST" && (target.namespace !== undefined || !target.resource.namespaced)) return "create";
    return undefined;
  }
  return watch ? undefined : verbsByMethod[method];
}

/** What the faults select a request by: its verb and resource (a non-resource path is a `get`). */
function requestTarget(req: IncomingMessage): RequestTarget {
  const url = new URL(req.url ?? "/", "http://kubernetes");
  const parts = url.pathname.split("/").filter((p) => p !== "");
  const method = req.method ?? "GET";
  const gv = groupVersionOf(parts);
  const target = gv === undefined ? undefined : resourceRequest(gv.group, gv.version, gv.rest);
  if (target === undefined) {
    return { verb: verbsByMethod[method] ?? "get", resource: undefined, group: "", namespace: undefined };
  }
  return {
    verb: verbOf(method, target, flag(url.searchParams.get("watch"))) ?? verbsByMethod[method] ?? "get",
    resource: target.resource.plural,
    group: target.resource.group,
    namespace: target.namespace,
  };
}

async function handleResource(
  deps: KubeServerDeps,
  req: IncomingMessage,
  res: ServerResponse,
  target: ResourceRequest,
  params: URLSearchParams,
): Promise<number> {
  const { api } = deps;
  const { resource, name } = target;
  const namespace = target.namespace ?? "";
  const dryRun = params.getAll("dryRun").includes("All");
  const verb = verbOf(req.method ?? "GET", target, flag(params.get("watch")));
  if (verb === undefined || !resource.verbs.includes(verb)) throw methodNotAllowed();
  const accept = req.headers.accept ?? "";
  const includeObject = params.get("includeObject") ?? "Metadata";
  const table = (objects: KubeObject[], metadata: Record<string, unknown>, headers = true) =>
    tableOf(resource, objects, metadata, deps.watchSettings.clock.now(), { includeObject, headers });
  switch (verb) {
    case "list":
    case "watch": {
      const query = parseQuery(
        resource,
        target.namespace,
        params.get("labelSelector") ?? "",
        params.get("fieldSelector") ?? "",
      );
      if (verb === "watch") {
        const timeoutSeconds = integer(params, "timeoutSeconds");
        deps.watches.open(
          api,
          res,
          {
            resource,
            query,
            resourceVersion: params.get("resourceVersion") ?? undefined,
            allowBookmarks: flag(params.get("allowWatchBookmarks")),
            sendInitialEvents: flag(params.get("sendInitialEvents")),
            timeoutMs: timeoutSeconds === undefined ? undefined : timeoutSeconds * 1000,
            expireResume: resumes(params.get("resourceVersion")) && deps.gate.expireWatchResume(),
            render: wantsTable(accept)
              ? (object, first) =>
                  table([object], { resourceVersion: object.metadata.resourceVersion ?? "" }, first)
              : undefined,
          },
          deps.watchSettings,
        );
        return 200;
      }
      const result = api.list(resource, {
        ...query,
        limit: integer(params, "limit"),
        continueToken: params.get("continue") ?? undefined,
        resourceVersion: params.get("resourceVersion") ?? undefined,
        resourceVersionMatch: params.get("resourceVersionMatch") ?? undefined,
      });
      const metadata = {
        resourceVersion: result.resourceVersion,
        ...(result.continueToken === undefined ? {} : { continue: result.continueToken }),
        ...(result.remainingItemCount === undefined ? {} : { remainingItemCount: result.remainingItemCount }),
      };
      if (wantsTable(accept)) {
        send(res, 200, table(result.items, metadata));
      } else {
        send(res, 200, {
          kind: `${resource.kind}List`,
          apiVersion: apiVersionOf(resource),
          metadata,
          items: listItems(resource, result.items),
        });
      }
      return 200;
    }
    case "get": {
      const object = api.get(resource, namespace, name as string);
      send(
        res,
        200,
        wantsTable(accept)
          ? table([object], { resourceVersion: object.metadata.resourceVersion ?? "" })
          : object,
      );
      return 200;
    }
    case "create": {
      const created = api.create(resource, namespace, await objectBody(req), { dryRun });
      send(res, 201, created);
      return 201;
    }
    case "update": {
      const existed = api.store.get(resource.storage, namespace, name as string) !== undefined;
      const updated = api.update(resource, namespace, name as string, await objectBody(req), { dryRun });
      const status = existed ? 200 : 201;
      send(res, status, updated);
      return status;
    }
    case "patch": {
      const contentType = (req.headers["content-type"] ?? "").split(";")[0]?.trim() ?? "";
      if (contentType === applyContentType) {
        const { object, created } = api.apply(resource, namespace, name as string, await yamlBody(req), {
          dryRun,
          fieldManager: params.get("fieldManager") ?? undefined,
          force: flag(params.get("force")),
        });
        send(res, created ? 201 : 200, object);
        return created ? 201 : 200;
      }
      const type = patchContentTypes[contentType];
      if (type === undefined) {
        throw new KubeApiError(
          415,
          "UnsupportedMediaType",
          `the body of the request was in an unknown format (${contentType || "no content type"}) - accepted media types include: ` +
            `${[...Object.keys(patchContentTypes), applyContentType].join(", ")}`,
        );
      }
      const patched = api.patch(resource, namespace, name as string, type, await jsonBody(req), { dryRun });
      send(res, 200, patched);
      return 200;
    }
    case "delete": {
      const body = await deleteBody(req);
      const options = isJsonObject(body) ? body : {};
      const preconditions = isJsonObject(options.preconditions) ? options.preconditions : {};
      const grace =
        integer(params, "gracePeriodSeconds") ??
        (typeof options.gracePeriodSeconds === "number" ? options.gracePeriodSeconds : undefined);
      const bodyDryRun = Array.isArray(options.dryRun) && options.dryRun.includes("All");
      const { object, gone } = api.delete(resource, namespace, name as string, {
        dryRun: dryRun || bodyDryRun,
        gracePeriodSeconds: grace,
        preconditions: {
          ...(typeof preconditions.uid === "string" ? { uid: preconditions.uid } : {}),
          ...(typeof preconditions.resourceVersion === "string"
            ? { resourceVersion: preconditions.resourceVersion }
            : {}),
        },
      });
      send(res, 200, gone && !resource.returnDeletedObject ? api.deletedStatus(resource, object) : object);
      return 200;
    }
  }
  throw methodNotAllowed();
}

async function handle(deps: KubeServerDeps, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const url = new URL(req.url ?? "/", "http://kubernetes");
  const parts = url.pathname.split("/").filter((p) => p !== "");
  const path = `/${parts.join("/")}`;
  const method = req.method ?? "GET";
  if (method === "GET") {
    if (path === "/version") {
      send(res, 200, simulatedVersion);
      return 200;
    }
    if (path === "/healthz" || path === "/readyz" || path === "/livez") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      return 200;
    }
    if ((path === "/api" || path === "/apis") && acceptsAggregatedDiscovery(req.headers.accept ?? "")) {
      send(res, 200, aggregatedDiscovery(path === "/api"), undefined, aggregatedDiscoveryType);
      return 200;
    }
    if (path === "/api") {
      send(res, 200, apiVersions(deps.serverAddress()));
      return 200;
    }
    if (path === "/apis") {
      send(res, 200, apiGroupList());
      return 200;
    }
    if (path === "/openapi/v2") {
      const document = openApiV2Protobuf();
      res.writeHead(200, { "content-type": openApiV2ProtobufType, "content-length": document.length });
      res.end(document);
      return 200;
    }
    if (path === "/openapi/v3") {
      send(res, 200, openApiV3Root());
      return 200;
    }
    if (parts[0] === "openapi" && parts[1] === "v3") {
      const document = openApiV3Document(parts.slice(2));
      if (document === undefined) throw notFound();
      send(res, 200, document);
      return 200;
    }
    if (parts[0] === "apis" && parts.length === 2) {
      const group = apiGroup(parts[1] as string);
      if (group === undefined) throw notFound();
      send(res, 200, group);
      return 200;
    }
  }
  const gv = groupVersionOf(parts);
  if (gv === undefined) throw notFound();
  if (gv.rest.length === 0) {
    const list = method === "GET" ? apiResourceList(gv.group, gv.version) : undefined;
    if (list === undefined) throw notFound();
    send(res, 200, list);
    return 200;
  }
  const target = resourceRequest(gv.group, gv.version, gv.rest);
  if (target === undefined) throw notFound();
  return handleResource(deps, req, res, target, url.searchParams);
}

/**
 * The simulated Kubernetes API server over HTTP (no TLS; any bearer token, or none, is accepted). Errors
 * are `kind: Status` objects with the API server's code, reason and wording.
 */
export function createKubeServer(deps: KubeServerDeps): Server {
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<number | undefined> => {
    if (!(await deps.gate.admit(requestTarget(req), res))) return undefined;
    return handle(deps, req, res);
  };
  return createServer((req, res) => {
    serve(req, res)
      .then((status) => deps.log?.(`kubernetes ${req.method} ${req.url} ${status ?? "(no answer)"}`))
      .catch((error: unknown) => {
        if (error instanceof KubeApiError) {
          deps.log?.(`kubernetes ${req.method} ${req.url} ${error.code} ${error.reason}`);
          if (!res.headersSent) send(res, error.code, error.toStatus(), error.details?.retryAfterSeconds);
          else res.end();
          return;
        }
        deps.errorLog(
          `kubernetes: internal error on ${req.method} ${req.url}: ${(error as Error).stack ?? String(error)}`,
        );
        if (!res.headersSent) {
          send(
            res,
            500,
            new KubeApiError(500, "InternalError", `Internal error occurred: ${String(error)}`).toStatus(),
          );
        } else {
          res.end();
        }
      });
  });
}
