/**
 * doctor's one Kubernetes read: this node's whereabouts slices, from the NodeSlicePools
 * (whereabouts.cni.cncf.io/v1alpha1, `status.allocations[{nodeName, sliceRange}]`), with one read-only GET of
 * the cluster-wide list. Its own small module on node:http(s), not the bridge's Kubernetes client: no command
 * imports another's folder, and doctor must not load @kubernetes/client-node for one GET.
 *
 * Where it asks: the kubeconfig of IPMGR_KUBECONFIG or --kubeconfig when set (kubeconfig.ts: from a shell, or
 * against the simulator), else the pod's in-cluster configuration (KUBERNETES_SERVICE_HOST and _PORT, the
 * service account's token and CA under /var/run/secrets/kubernetes.io/serviceaccount/), as every in-cluster
 * client does. Without either, or without NODE_NAME or --node-name (the downward API's spec.nodeName), the
 * slice check says why it was not made.
 * RBAC: nodeslicepools list (the bridge's ClusterRole has it; an application pod's service account usually
 * does not, and doctor then says so).
 */
import { readFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

/** One slice whereabouts gave this node. */
export interface NodeSlice {
  /** `namespace/name` of the NodeSlicePool. */
  readonly pool: string;
  /** The pool's `spec.range`: the whole node-sliced range. */
  readonly poolRange: string;
  /** `status.allocations[].sliceRange`. */
  readonly sliceRange: string;
}

/** This node's slices, or why they could not be read (a sentence for the check's detail). */
export type NodeSliceAnswer =
  | { readonly kind: "ok"; readonly slices: readonly NodeSlice[] }
  | { readonly kind: "not-read"; readonly why: string; readonly fix?: string };

/** RBAC: nodeslicepools (whereabouts.cni.cncf.io) list. */
export interface NodeSliceSource {
  slicesOf(nodeName: string): Promise<NodeSliceAnswer>;
}

const PATH = "/apis/whereabouts.cni.cncf.io/v1alpha1/nodeslicepools";
const SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

type Raw = Record<string, unknown> | undefined;
const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const record = (value: unknown): Raw =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;

/** The slices of `nodeName` in a NodeSlicePoolList, sorted by pool then slice. */
export function slicesOfNode(list: unknown, nodeName: string): NodeSlice[] {
  const items = record(list)?.items;
  const out: NodeSlice[] = [];
  for (const item of Array.isArray(items) ? items : []) {
    const metadata = record(record(item)?.metadata);
    const pool = `${text(metadata?.namespace) ?? ""}/${text(metadata?.name) ?? ""}`;
    const poolRange = text(record(record(item)?.spec)?.range) ?? "";
    const allocations = record(record(item)?.status)?.allocations;
    for (const allocation of Array.isArray(allocations) ? allocations : []) {
      const a = record(allocation);
      const sliceRange = text(a?.sliceRange);
      if (text(a?.nodeName) === nodeName && sliceRange !== undefined)
        out.push({ pool, poolRange, sliceRange });
    }
  }
  return out.sort((a, b) => a.pool.localeCompare(b.pool) || a.sliceRange.localeCompare(b.sliceRange));
}

export interface KubeEndpoint {
  /** `https://host:port` (in cluster) or `http://...` (the simulator). */
  readonly server: string;
  readonly token?: string;
  /** PEM of the CA that signed the API server's certificate. */
  readonly ca?: string;
  /** PEM of a client certificate and its key (a kubeconfig's user), instead of or beside the token. */
  readonly cert?: string;
  readonly key?: string;
  /** The kubeconfig's `insecure-skip-tls-verify`: the server's certificate is not checked. */
  readonly insecure?: boolean;
  /** The kubeconfig it comes from; undefined: the pod's service account (in cluster). */
  readonly kubeconfig?: string;
  /** Per request, in ms. */
  readonly timeoutMs: number;
}

/** One GET of the NodeSlicePool list. */
export class KubeNodeSlices implements NodeSliceSource {
  constructor(private readonly endpoint: KubeEndpoint) {}

  async slicesOf(nodeName: string): Promise<NodeSliceAnswer> {
    let answer: { status: number; body: string };
    try {
      answer = await this.#get(PATH);
    } catch (error) {
      return {
        kind: "not-read",
        why: `not checked: the Kubernetes API at ${this.endpoint.server} did not answer (${error instanceof Error ? error.message : String(error)}).`,
        fix:
          this.endpoint.kubeconfig === undefined
            ? "check the pod's route to the API server (KUBERNETES_SERVICE_HOST), or run doctor in the bridge's pod"
            : `check the server of the kubeconfig ${this.endpoint.kubeconfig}, and that the API server runs`,
      };
    }
    if (answer.status === 404) {
      return {
        kind: "ok",
        slices: [],
      };
    }
    if (answer.status === 401 || answer.status === 403) {
      return {
        kind: "not-read",
        why: `not checked: the Kubernetes API refused to list NodeSlicePools (HTTP ${answer.status}) to ${this.endpoint.kubeconfig === undefined ? "this pod's service account" : `the user of the kubeconfig ${this.endpoint.kubeconfig}`}.`,
        fix: "run doctor in the bridge's pod, whose ClusterRole may list nodeslicepools (kubectl exec -n <namespace> ds/<bridge> -- multus-ipmgr doctor), or grant list on nodeslicepools.whereabouts.cni.cncf.io",
      };
    }
    if (answer.status < 200 || answer.status >= 300) {
      return {
        kind: "not-read",
        why: `not checked: listing NodeSlicePools answered HTTP ${answer.status}: ${answer.body.slice(0, 200)}`,
      };
    }
    try {
      return { kind: "ok", slices: slicesOfNode(JSON.parse(answer.body), nodeName) };
    } catch (error) {
      return {
        kind: "not-read",
        why: `not checked: the NodeSlicePool list is not JSON (${error instanceof Error ? error.message : String(error)}).`,
      };
    }
  }

  #get(path: string): Promise<{ status: number; body: string }> {
    const url = new URL(path, this.endpoint.server);
    const request = url.protocol === "https:" ? httpsRequest : httpRequest;
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.endpoint.token !== undefined) headers.authorization = `Bearer ${this.endpoint.token}`;
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method: "GET",
          headers,
          timeout: this.endpoint.timeoutMs,
          ...(this.endpoint.ca === undefined ? {} : { ca: this.endpoint.ca }),
          ...(this.endpoint.cert === undefined ? {} : { cert: this.endpoint.cert }),
          ...(this.endpoint.key === undefined ? {} : { key: this.endpoint.key }),
          ...(this.endpoint.insecure === true ? { rejectUnauthorized: false } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
          );
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer within ${this.endpoint.timeoutMs} ms`)));
      req.on("error", reject);
      req.end();
    });
  }
}

/**
 * The in-cluster endpoint from the pod's environment and service account, or why there is none (a sentence
 * for the skipped check). `dir`: the service account directory (tests point it elsewhere).
 */
export async function inClusterEndpoint(
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  dir = SERVICE_ACCOUNT,
): Promise<KubeEndpoint | string> {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT ?? "443";
  if (host === undefined || host === "") {
    return "not checked: no Kubernetes API (KUBERNETES_SERVICE_HOST is not set: doctor does not run in a pod; outside one, IPMGR_KUBECONFIG or --kubeconfig names a kubeconfig, NODE_NAME or --node-name the node).";
  }
  let token: string;
  let ca: string;
  try {
    token = (await readFile(`${dir}/token`, "utf8")).trim();
    ca = await readFile(`${dir}/ca.crt`, "utf8");
  } catch (error) {
    return `not checked: no Kubernetes API credentials (${error instanceof Error ? error.message : String(error)}; automountServiceAccountToken may be false).`;
  }
  const server = host.includes(":") ? `https://[${host}]:${port}` : `https://${host}:${port}`;
  return { server, token, ca, timeoutMs };
}
