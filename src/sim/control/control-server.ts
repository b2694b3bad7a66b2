import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { CallLog } from "../call-log.js";
import { KubeApiError } from "../errors/kube-api-error.js";
import type { FaultState } from "../fault-state.js";
import { type Faults, kubeFaultFields, partialFaultsSchema } from "../faults.js";
import { BodyTooLargeError, readBody, sendJson } from "../http-util.js";
import type { KubeCluster } from "../kube/kube-cluster.js";
import type { SimState } from "../sim-state.js";

export interface ControlServerDeps {
  readonly state: () => SimState;
  readonly calls: CallLog;
  readonly faults: FaultState;
  /** The simulated cluster, when the world has a `kubernetes` section. */
  readonly kube?: KubeCluster | undefined;
}

class BadBody extends Error {
  override name = "BadBody";
}

/** Control bodies may be large: thousands of pods added at once. */
const maxControlBodyBytes = 64 * 1024 * 1024;

async function jsonBody(req: IncomingMessage, optional = false): Promise<unknown> {
  const text = await readBody(req, maxControlBodyBytes);
  if (optional && text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BadBody(`body is not JSON: ${(error as Error).message}`);
  }
}

const kubeRoutes =
  "POST /kubernetes/pods (one pod, or an array of pods), PUT|PATCH|DELETE /kubernetes/pods/NAMESPACE/NAME, POST /kubernetes/nodes, DELETE /kubernetes/nodes/NAME, POST /kubernetes/watches/close[?reset=true], POST /kubernetes/compact";

/** The /kubernetes routes: scripted changes to the simulated cluster. Returns false for a path it does not know. */
async function handleKube(
  kube: KubeCluster | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  parts: readonly string[],
): Promise<boolean> {
  if (parts[0] !== "kubernetes") return false;
  if (kube === undefined) {
    sendJson(res, 404, {
      error: "the world has no kubernetes section, so there is no simulated cluster to change",
    });
    return true;
  }
  const method = req.method ?? "GET";
  const route = `${method} /${parts.slice(0, 2).join("/")}`;
  try {
    if (route === "POST /kubernetes/pods" && parts.length === 2) {
      const body = await jsonBody(req);
      // An array adds them all at once (all or none): `{ added, resourceVersion }`, not the objects.
      if (Array.isArray(body)) {
        const added = kube.addPods(body);
        sendJson(res, 201, { added: added.length, resourceVersion: added.at(-1)?.metadata.resourceVersion });
      } else sendJson(res, 201, kube.addPod(body));
    } else if (parts[1] === "pods" && parts.length === 4) {
      const namespace = parts[2] as string;
      const name = parts[3] as string;
      if (method === "PUT") sendJson(res, 200, kube.replacePod(namespace, name, await jsonBody(req)));
      else if (method === "PATCH") sendJson(res, 200, kube.patchPod(namespace, name, await jsonBody(req)));
      else if (method === "DELETE") {
        const text = url.searchParams.get("gracePeriodSeconds");
        const grace = text === null ? undefined : Number(text);
        if (grace !== undefined && !(Number.isInteger(grace) && grace >= 0)) {
          sendJson(res, 400, {
            error: `gracePeriodSeconds ${JSON.stringify(text)} is not a whole number of seconds`,
          });
          return true;
        }
        sendJson(res, 200, kube.deletePod(namespace, name, grace));
      } else return false;
    } else if (route === "POST /kubernetes/nodes" && parts.length === 2) {
      sendJson(res, 201, kube.addNode(await jsonBody(req)));
    } else if (route === "DELETE /kubernetes/nodes" && parts.length === 3) {
      sendJson(res, 200, kube.deleteNode(parts[2] as string));
    } else if (`${method} /${parts.join("/")}` === "POST /kubernetes/watches/close") {
      const reset = url.searchParams.get("reset");
      if (reset !== null && reset !== "true" && reset !== "false") {
        sendJson(res, 400, { error: `reset ${JSON.stringify(reset)} must be true or false` });
        return true;
      }
      sendJson(res, 200, { closed: kube.closeWatches(reset === "true") });
    } else if (`${method} /${parts.join("/")}` === "POST /kubernetes/compact") {
      sendJson(res, 200, { compactedResourceVersion: String(kube.compact()) });
    } else {
      return false;
    }
  } catch (error) {
    if (error instanceof BadBody) sendJson(res, 400, { error: error.message });
    else if (error instanceof KubeApiError)
      sendJson(res, error.code, { error: error.message, status: error.toStatus() });
    else throw error;
  }
  return true;
}

async function handle(deps: ControlServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://control");
  const path = url.pathname.replace(/\/+$/, "") || "/";
  const route = `${req.method} ${path}`;
  if (
    await handleKube(
      deps.kube,
      req,
      res,
      url,
      path.split("/").filter((p) => p !== ""),
    )
  )
    return;
  switch (route) {
    case "GET /healthz":
      sendJson(res, 200, { ok: true });
      return;
    case "GET /state":
      sendJson(res, 200, deps.state());
      return;
    case "GET /calls":
      sendJson(res, 200, deps.calls.list());
      return;
    case "DELETE /calls":
      deps.calls.clear();
      res.writeHead(204).end();
      return;
    case "GET /faults":
      sendJson(res, 200, deps.faults.get());
      return;
    case "PUT /faults": {
      let input: unknown;
      try {
        input = JSON.parse(await readBody(req, maxControlBodyBytes));
      } catch (error) {
        sendJson(res, 400, { error: `body is not JSON: ${(error as Error).message}` });
        return;
      }
      const parsed = partialFaultsSchema.safeParse(input);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`);
        sendJson(res, 400, { error: `invalid faults: ${problems.join("; ")}` });
        return;
      }
      const kubeFields = kubeFaultFields.filter((f) => parsed.data[f] !== undefined);
      if (deps.kube === undefined && kubeFields.length > 0) {
        sendJson(res, 400, {
          error: `${kubeFields.join(", ")}: the world has no kubernetes section, so there is no Kubernetes API to fail`,
        });
        return;
      }
      deps.faults.set(parsed.data as Partial<Faults>);
      sendJson(res, 200, deps.faults.get());
      return;
    }
    default:
      sendJson(res, 404, {
        error: `no route ${route}; try GET /state, GET|DELETE /calls, GET|PUT /faults, GET /healthz${deps.kube === undefined ? "" : `, ${kubeRoutes}`}`,
      });
  }
}

/** The JSON control API: state, call log and faults of a running simulator, and scripted cluster changes. */
export function createControlServer(deps: ControlServerDeps): Server {
  return createServer((req, res) => {
    handle(deps, req, res).catch((error: unknown) => {
      if (error instanceof BodyTooLargeError) sendJson(res, 413, { error: error.message });
      else sendJson(res, 500, { error: String(error) });
    });
  });
}
