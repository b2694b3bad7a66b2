/**
 * The HTTP side of the bridge's watches: one list and one watch of a resource path over node:http(s), with
 * the kubeconfig's credentials and TLS settings, as the Reflector asks for them (reflector.ts), and the
 * sentence for a failed list or watch. client-node's own Watch sends neither bookmarks nor timeouts and
 * cannot be aborted before the server answers, so the bridge does not use it; kube-client.ts stays the only
 * importer of @kubernetes/client-node and hands in what this needs of its KubeConfig.
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { type RequestOptions as HttpsRequestOptions, request as httpsRequest } from "node:https";
import { createInterface } from "node:readline";
import {
  type Keyed,
  ListTimeoutError,
  type ReflectorSource,
  WatchSilentError,
  WatchUnansweredError,
} from "./reflector.js";
import type { WatchFault } from "./view-trust.js";

/** What the HTTP source needs of a kubeconfig (client-node's KubeConfig has both). */
export interface KubeEndpoint {
  getCurrentCluster(): { readonly server: string } | null;
  applyToHTTPSOptions(options: HttpsRequestOptions): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: raw JSON from lists and watches, read defensively below.
type Raw = any;

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** A Kubernetes API answer that is not 200, with the Status it carried. */
export class KubeHttpError extends Error {
  override readonly name = "KubeHttpError";
  constructor(
    readonly statusCode: number,
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/**
 * GET on the API server with the kubeconfig's credentials and TLS settings, over node:http(s): client-node's
 * own Watch sends neither bookmarks nor timeouts and cannot be aborted before the server answers. Resolves
 * with the 200 answer; rejects with KubeHttpError for any other status.
 */
async function kubeGet(config: KubeEndpoint, path: string, signal: AbortSignal): Promise<IncomingMessage> {
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new Error("the kubeconfig names no current cluster");
  const url = new URL(path, cluster.server.endsWith("/") ? cluster.server : `${cluster.server}/`);
  const options: HttpsRequestOptions = { method: "GET", headers: { accept: "application/json" } };
  await config.applyToHTTPSOptions(options);
  signal.throwIfAborted();
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = send(url, { ...options, signal }, (answer) => {
      if (answer.statusCode === 200) {
        resolve(answer);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.on("error", reject);
      answer.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        let status: Raw;
        try {
          status = JSON.parse(body);
        } catch {
          status = { message: body };
        }
        reject(
          new KubeHttpError(
            answer.statusCode ?? 0,
            text(status?.reason),
            text(status?.message) ?? `HTTP ${answer.statusCode}`,
          ),
        );
      });
    });
    req.on("error", (error) => reject(signal.aborted ? signal.reason : error));
    req.end();
  });
}

async function readBody(answer: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function keyedOf<U>(object: Raw, convert: (object: Raw) => U): Keyed<U> {
  const namespace = text(object?.metadata?.namespace) ?? "";
  const name = text(object?.metadata?.name) ?? "";
  return { key: `${namespace}/${name}`, view: convert(object) };
}

/** The list and watch of one resource path over HTTP, as the Reflector asks for them. */
export function httpSource<U>(
  config: KubeEndpoint,
  path: string,
  convert: (object: Raw) => U,
  fieldSelector: string | undefined,
  watchTimeoutSeconds: () => number,
): ReflectorSource<U> {
  const query = (extra: Record<string, string>): string => {
    const params = new URLSearchParams(extra);
    if (fieldSelector !== undefined) params.set("fieldSelector", fieldSelector);
    return `${path}?${params.toString()}`;
  };
  return {
    async list(signal) {
      const answer = await kubeGet(config, query({}), signal);
      const body: Raw = JSON.parse(await readBody(answer));
      const items: Raw[] = Array.isArray(body?.items) ? body.items : [];
      return {
        resourceVersion: text(body?.metadata?.resourceVersion) ?? "",
        items: items.map((item) => keyedOf(item, convert)),
      };
    },
    async watch(resourceVersion, signal, opened, event) {
      const answer = await kubeGet(
        config,
        query({
          watch: "true",
          allowWatchBookmarks: "true",
          timeoutSeconds: String(watchTimeoutSeconds()),
          resourceVersion,
        }),
        signal,
      );
      opened();
      await new Promise<void>((resolve, reject) => {
        const lines = createInterface({ input: answer, crlfDelay: Number.POSITIVE_INFINITY });
        let settled = false;
        const finish = (error?: unknown): void => {
          if (settled) return;
          settled = true;
          lines.close();
          if (error === undefined) resolve();
          else {
            answer.destroy();
            reject(error);
          }
        };
        lines.on("line", (line) => {
          if (line.trim() === "") return;
          try {
            const parsed: Raw = JSON.parse(line);
            const type = text(parsed?.type);
            const object: Raw = parsed?.object;
            if (type === "ERROR") {
              event({
                type: "ERROR",
                status: typeof object?.code === "number" ? object.code : undefined,
                message: text(object?.message) ?? "the watch answered an ERROR event",
              });
            } else if (type === "BOOKMARK") {
              event({ type, resourceVersion: text(object?.metadata?.resourceVersion) ?? resourceVersion });
            } else if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") {
              event({
                type,
                object: keyedOf(object, convert),
                resourceVersion: text(object?.metadata?.resourceVersion) ?? resourceVersion,
              });
            }
          } catch (error) {
            finish(error);
          }
        });
        // readline re-emits the input's errors; without this listener they would be thrown.
        lines.on("error", (error) => finish(signal.aborted ? signal.reason : error));
        answer.on("error", (error) => finish(signal.aborted ? signal.reason : error));
        answer.on("aborted", () =>
          finish(signal.aborted ? signal.reason : new Error("the watch connection was reset")),
        );
        lines.on("close", () => finish(signal.aborted ? signal.reason : undefined));
        if (signal.aborted) finish(signal.reason);
        signal.addEventListener("abort", () => finish(signal.reason), { once: true });
      });
    },
  };
}

/**
 * One sentence for a failed list or watch of `resource`, naming what happened and the fix: refused or
 * unreachable, 401, 403 (the RBAC rule to apply), 404 (the CRD to install), silence, a list timeout.
 */
export function describeWatchFailure(resource: string, server: string, error: unknown): WatchFault {
  if (
    error instanceof WatchSilentError ||
    error instanceof WatchUnansweredError ||
    error instanceof ListTimeoutError
  ) {
    return {
      status: undefined,
      detail: `${error.message}; the connection to ${server} is taken as dead and restarted`,
    };
  }
  const status =
    error instanceof KubeHttpError
      ? error.statusCode
      : typeof (error as { statusCode?: unknown })?.statusCode === "number"
        ? (error as { statusCode: number }).statusCode
        : undefined;
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown })?.code;
  const what = `the ${resource} watch fails`;
  if (status === undefined) {
    if (code === "ECONNREFUSED") {
      return {
        status,
        detail: `${what}: ${server} refused the connection; check that the API server is up and reachable from this node`,
      };
    }
    if (code === "ECONNRESET" || message === "socket hang up") {
      // Said of a connection closed before an answer: by the API server, a proxy or a load balancer between
      // (their idle or request timeouts), more often than by a broken route.
      return {
        status,
        detail: `${what}: the connection to ${server} was closed before an answer (${message}); a proxy or load balancer between, or the API server, may cut requests it holds: check their timeouts, then the node's route to the API server`,
      };
    }
    return { status, detail: `${what}: ${message} (${server}); check the node's route to the API server` };
  }
  if (status === 401) {
    return {
      status,
      detail: `${what}: 401 Unauthorized; the service account token or kubeconfig credentials were refused`,
    };
  }
  if (status === 403) {
    return {
      status,
      detail: `${what}: 403 Forbidden (${message}); the bridge's ClusterRole lacks list/watch on ${resource}: upgrade the chart (its ClusterRole grants it) or apply deploy/overlays/bridge/bridge-rbac.yaml`,
    };
  }
  if (status === 404) {
    const crd = CRD_OF[resource];
    return {
      status,
      detail:
        crd === undefined
          ? `${what}: 404 Not Found (${message})`
          : `${what}: 404 Not Found; the CRD ${crd} is not installed (install ${resource === "network-attachment-definitions" ? "Multus" : "whereabouts"})`,
    };
  }
  return { status, detail: `${what}: ${status} (${message}); retried with backoff` };
}

const CRD_OF: Readonly<Record<string, string>> = {
  "network-attachment-definitions": "network-attachment-definitions.k8s.cni.cncf.io",
  ippools: "ippools.whereabouts.cni.cncf.io",
  overlappingrangeipreservations: "overlappingrangeipreservations.whereabouts.cni.cncf.io",
};
