/**
 * The Kubernetes adapter: the only module that imports @kubernetes/client-node. Loaded with a dynamic
 * import by the bridge's entrypoint, so that no other command parses the client (about 2 MB bundled).
 *
 * Leases and Events go through client-node's typed APIs. Lists and watches do not: client-node 1.4.0's
 * `ListWatch` stops for good on any failure but 410, and its `Watch` sends neither `allowWatchBookmarks` nor
 * `timeoutSeconds` and cannot be aborted before the server answers, so a connection that dies without a word
 * hangs it. The bridge keeps its own reflector (reflector.ts) on a small HTTP source (kube-watch-source.ts),
 * with the health the bridge needs to know whether it may release (view-trust.ts).
 *
 * Each cache entry holds the object's `namespace/name` and the bridge's view of it (`PodInfo`, with only the
 * annotations the bridge reads), converted once when it arrives: 1,000 pods of a node cost a few hundred KB,
 * not the tens of MB whole objects would (managedFields, status, every container's env and probes).
 */
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Lease,
  type V1Taint,
} from "@kubernetes/client-node";
import { NETWORK_STATUS_ANNOTATIONS } from "../../eni/network-status.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import { KubeConflictError } from "./errors/kube-conflict-error.js";
import { KubeError } from "./errors/kube-error.js";
import {
  type ContainerInfo,
  type EventObjectKind,
  type IpPoolInfo,
  type KubeApi,
  type LeaseInfo,
  MANAGED_ANNOTATION,
  type NadInfo,
  type NodeSlicePoolInfo,
  type OverlappingReservationInfo,
  type PodEvent,
  type PodInfo,
  SIDECAR_ANNOTATION,
  type WatchedCollection,
  type WatchListener,
  type WhereaboutsAllocation,
} from "./kube-api.js";
import { describeWatchFailure, httpSource } from "./kube-watch-source.js";
import {
  type NodeTaint,
  type NodeTaints,
  TAINT_PATCH_ATTEMPTS,
  type TaintEffect,
  taintPatch,
} from "./node-taints.js";
import { Reflector } from "./reflector.js";

/** A watch silent this long (no event, no bookmark; API servers send a bookmark about every minute) is dead, ms. */
export const DEFAULT_WATCH_SILENCE_MS = 90_000;
/**
 * kube-apiserver sends a watch with `allowWatchBookmarks` a bookmark about once a minute, ms. A silence bound
 * below it takes every quiet watch for dead at every bound: warned once at start (`silenceBoundWarning`).
 */
export const API_SERVER_BOOKMARK_INTERVAL_MS = 60_000;

/**
 * The warning for a silence bound below the API server's bookmark interval, naming the setting, its value and
 * the fix; undefined for a bound at or above it.
 */
export function silenceBoundWarning(silenceMs: number): string | undefined {
  if (silenceMs >= API_SERVER_BOOKMARK_INTERVAL_MS) return undefined;
  return (
    `IPMGR_BRIDGE_WATCH_SILENCE_MS is ${silenceMs} ms, below the API server's bookmark interval (kube-apiserver ` +
    `sends one about every ${API_SERVER_BOOKMARK_INTERVAL_MS / 1000} s): on a quiet cluster every watch goes silent and is restarted every ` +
    `${silenceMs / 1000} s, the view is stale each time and a release's grace restarts with it (these silences are ` +
    `logged at debug, not warned each time); set IPMGR_BRIDGE_WATCH_SILENCE_MS to ${DEFAULT_WATCH_SILENCE_MS} (the default) or more`
  );
}

/** A list unanswered this long is abandoned and retried, ms. */
export const DEFAULT_LIST_TIMEOUT_MS = 60_000;
/**
 * The API server ends a watch request (`timeoutSeconds`) after at least this, s; the reflector resumes it
 * from its resourceVersion. 5 to 10 minutes with the spread below, as client-go's reflector asks.
 */
export const WATCH_TIMEOUT_MIN_SECONDS = 300;
/**
 * Plus a random share of this, s, drawn once per process: the bridges of many nodes, started together by a
 * DaemonSet rollout, do not all re-watch at the same moment.
 */
export const WATCH_TIMEOUT_SPREAD_SECONDS = 300;
/**
 * A request that is neither a list nor a watch (a Lease, an Event, a pod's uid) unanswered this long fails,
 * ms. An API server answers these in milliseconds; 10 s fails a dead connection well within the Lease's renew
 * deadline (two thirds of IPMGR_BRIDGE_LEASE_DURATION_MS, 60 s by default).
 */
export const REQUEST_TIMEOUT_MS = 10_000;
/**
 * The first delay before a failed list or watch is tried again, ms; it doubles up to
 * IPMGR_BRIDGE_WATCH_RESTART_MAX_MS (whose documentation and lower bound say 250 ms). Short, because the view
 * is distrusted, and releases held, until the watch is back.
 */
export const WATCH_RESTART_BASE_MS = 250;

/** This process's watch timeout, s: WATCH_TIMEOUT_MIN_SECONDS plus a random whole share of the spread. */
export function watchTimeoutSeconds(random: () => number = Math.random): number {
  return WATCH_TIMEOUT_MIN_SECONDS + Math.floor(random() * WATCH_TIMEOUT_SPREAD_SECONDS);
}

export interface KubeClientOptions {
  /** A kubeconfig file; undefined: KUBECONFIG, ~/.kube/config, or the pod's service account (in cluster). */
  readonly kubeconfig: string | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Server-side timeout of one watch request, in seconds (a new watch resumes from its resourceVersion). */
  readonly watchTimeoutSeconds: number;
  /** Timeout of one request that is not a watch (Lease, Event), in ms. */
  readonly requestTimeoutMs: number;
  /** A watch silent this long (no event, no bookmark) is aborted and counted a fault, ms. Default 90 s. */
  readonly watchSilenceMs?: number;
  /** A list unanswered this long is aborted and counted a fault, ms. Default 60 s. */
  readonly listTimeoutMs?: number;
  /** Backoff of a failed list or watch: first delay and cap, in ms. */
  readonly restartBaseMs: number;
  readonly restartMaxMs: number;
  /** Events' `source.component` and `reportingComponent`. */
  readonly component: string;
  /** Events' `source.host` and `reportingInstance`: the node. */
  readonly host: string;
}

const WHEREABOUTS = { group: "whereabouts.cni.cncf.io", version: "v1alpha1" } as const;
const NADS = { group: "k8s.cni.cncf.io", version: "v1", plural: "network-attachment-definitions" } as const;

// biome-ignore lint/suspicious/noExplicitAny: raw JSON from watches and custom object lists, read defensively below.
type Raw = any;

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function record(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) if (typeof v === "string") out[k] = v;
  return out;
}

/** The pod annotations the bridge reads (pod-networks.ts); the others are not kept. */
const POD_ANNOTATIONS_READ: readonly string[] = [
  MANAGED_ANNOTATION,
  SIDECAR_ANNOTATION,
  ...NETWORK_STATUS_ANNOTATIONS,
];

function podAnnotations(value: unknown): Record<string, string> {
  const all = record(value);
  const out: Record<string, string> = {};
  for (const key of POD_ANNOTATIONS_READ) {
    const v = all[key];
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function containersOf(spec: Raw): ContainerInfo[] {
  const all = [
    ...(Array.isArray(spec?.initContainers) ? spec.initContainers : []),
    ...(spec?.containers ?? []),
  ];
  return all.map((c: Raw) => ({
    name: text(c?.name) ?? "",
    image: text(c?.image) ?? "",
    args: Array.isArray(c?.args) ? c.args.filter((a: unknown) => typeof a === "string") : [],
  }));
}

function podOf(pod: Raw): PodInfo {
  const metadata = pod?.metadata ?? {};
  return {
    namespace: text(metadata.namespace) ?? "",
    name: text(metadata.name) ?? "",
    uid: text(metadata.uid) ?? "",
    nodeName: text(pod?.spec?.nodeName),
    deleting: metadata.deletionTimestamp !== undefined && metadata.deletionTimestamp !== null,
    phase: text(pod?.status?.phase),
    annotations: podAnnotations(metadata.annotations),
    containers: containersOf(pod?.spec),
  };
}

function nadOf(nad: Raw): NadInfo {
  return {
    namespace: text(nad?.metadata?.namespace) ?? "",
    name: text(nad?.metadata?.name) ?? "",
    uid: text(nad?.metadata?.uid),
    config: text(nad?.spec?.config) ?? "",
  };
}

function allocationOf(raw: Raw): WhereaboutsAllocation {
  return { id: text(raw?.id), podref: text(raw?.podref), ifname: text(raw?.ifname) };
}

function ipPoolOf(pool: Raw): IpPoolInfo {
  const allocations: Record<string, WhereaboutsAllocation> = {};
  const raw = pool?.spec?.allocations;
  if (typeof raw === "object" && raw !== null) {
    for (const [offset, value] of Object.entries(raw)) allocations[offset] = allocationOf(value);
  }
  return {
    namespace: text(pool?.metadata?.namespace) ?? "",
    name: text(pool?.metadata?.name) ?? "",
    range: text(pool?.spec?.range) ?? "",
    allocations,
  };
}

function nodeSlicePoolOf(pool: Raw): NodeSlicePoolInfo {
  const allocations = Array.isArray(pool?.status?.allocations) ? pool.status.allocations : [];
  const owners = Array.isArray(pool?.metadata?.ownerReferences) ? pool.metadata.ownerReferences : [];
  return {
    namespace: text(pool?.metadata?.namespace) ?? "",
    name: text(pool?.metadata?.name) ?? "",
    range: text(pool?.spec?.range) ?? "",
    sliceSize: text(pool?.spec?.sliceSize) ?? "",
    allocations: allocations.map((a: Raw) => ({
      nodeName: text(a?.nodeName) ?? "",
      sliceRange: text(a?.sliceRange) ?? "",
    })),
    ownerNads: owners
      .filter((o: Raw) => o?.kind === "NetworkAttachmentDefinition" && typeof o?.name === "string")
      .map((o: Raw) => o.name as string),
  };
}

function reservationOf(orip: Raw): OverlappingReservationInfo {
  return {
    namespace: text(orip?.metadata?.namespace) ?? "",
    name: text(orip?.metadata?.name) ?? "",
    podref: text(orip?.spec?.podref),
    containerId: text(orip?.spec?.containerid),
  };
}

function dateOf(value: unknown): Date | undefined {
  if (value instanceof Date) return value;
  if (typeof value === "string") return new Date(value);
  return undefined;
}

function leaseOf(lease: V1Lease): LeaseInfo {
  return {
    namespace: lease.metadata?.namespace ?? "",
    name: lease.metadata?.name ?? "",
    holderIdentity: lease.spec?.holderIdentity,
    leaseDurationSeconds: lease.spec?.leaseDurationSeconds,
    acquireTime: dateOf(lease.spec?.acquireTime),
    renewTime: dateOf(lease.spec?.renewTime),
    leaseTransitions: lease.spec?.leaseTransitions,
    resourceVersion: lease.metadata?.resourceVersion,
  };
}

function leaseBody(lease: LeaseInfo): V1Lease {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name: lease.name,
      namespace: lease.namespace,
      ...(lease.resourceVersion === undefined ? {} : { resourceVersion: lease.resourceVersion }),
    },
    spec: {
      ...(lease.holderIdentity === undefined ? {} : { holderIdentity: lease.holderIdentity }),
      ...(lease.leaseDurationSeconds === undefined
        ? {}
        : { leaseDurationSeconds: lease.leaseDurationSeconds }),
      ...(lease.acquireTime === undefined ? {} : { acquireTime: lease.acquireTime }),
      ...(lease.renewTime === undefined ? {} : { renewTime: lease.renewTime }),
      ...(lease.leaseTransitions === undefined ? {} : { leaseTransitions: lease.leaseTransitions }),
    },
  };
}

/** The status, reason and message of a failed call, whatever client-node threw. */
function statusOf(error: unknown): {
  status: number | undefined;
  reason: string | undefined;
  message: string;
} {
  if (error instanceof ApiException) {
    let body: Raw = error.body;
    if (typeof body === "string") {
      try {
        body = JSON.parse(body);
      } catch {
        body = { message: body };
      }
    }
    return { status: error.code, reason: text(body?.reason), message: text(body?.message) ?? error.message };
  }
  const code = (error as { statusCode?: unknown; code?: unknown } | undefined)?.statusCode;
  return {
    status: typeof code === "number" ? code : undefined,
    reason: undefined,
    message: error instanceof Error ? error.message : String(error),
  };
}

/** One sentence naming the call, what the API server said, and the fix for the usual causes. */
function kubeError(operation: string, error: unknown): KubeError {
  const { status, reason, message } = statusOf(error);
  const fields = { operation, status, reason };
  if (status === 409) {
    return new KubeConflictError(fields, `${operation}: 409 Conflict: ${message}`, { cause: error });
  }
  const fix =
    status === 401
      ? "the service account token was refused; check the kubeconfig or the pod's service account"
      : status === 403
        ? "the bridge's ClusterRole lacks this permission; upgrade the chart (its ClusterRole grants it) or apply deploy/overlays/bridge/bridge-rbac.yaml"
        : status === 404
          ? "the resource is not served; install its CRD (Multus, whereabouts) or check the namespace"
          : status === undefined
            ? "the API server did not answer; check the pod's route to it (KUBERNETES_SERVICE_HOST) or IPMGR_KUBECONFIG"
            : "see the API server's message";
  const said =
    status === undefined ? message : `${status}${reason === undefined ? "" : ` ${reason}`}: ${message}`;
  return new KubeError(fields, `${operation} failed (${said}); ${fix}.`, { cause: error });
}

/** A taint as read, `timeAdded` back in the API's RFC 3339 seconds (client-node makes it a Date). */
function taintOf(taint: V1Taint): NodeTaint {
  return {
    key: taint.key,
    ...(taint.value === undefined ? {} : { value: taint.value }),
    effect: taint.effect as TaintEffect,
    ...(taint.timeAdded === undefined
      ? {}
      : { timeAdded: new Date(taint.timeAdded).toISOString().replace(/\.\d{3}Z$/, "Z") }),
  };
}

const API_VERSION_OF: Readonly<Record<EventObjectKind, string>> = {
  Pod: "v1",
  NetworkAttachmentDefinition: `${NADS.group}/${NADS.version}`,
  IPPool: `${WHEREABOUTS.group}/${WHEREABOUTS.version}`,
  Node: "v1",
};

class KubeClient implements KubeApi {
  readonly #core: CoreV1Api;
  readonly #leases: CoordinationV1Api;
  readonly #reflectors: Reflector<unknown>[] = [];
  readonly #server: string;
  readonly #silenceMs: number;

  constructor(
    private readonly config: KubeConfig,
    private readonly options: KubeClientOptions,
  ) {
    this.#core = config.makeApiClient(CoreV1Api);
    this.#leases = config.makeApiClient(CoordinationV1Api);
    this.#server = config.getCurrentCluster()?.server ?? "the API server";
    this.#silenceMs = options.watchSilenceMs ?? DEFAULT_WATCH_SILENCE_MS;
    const warning = silenceBoundWarning(this.#silenceMs);
    if (warning !== undefined) options.logger.warn({ watchSilenceMs: this.#silenceMs }, warning);
  }

  async #reflect<U>(
    resource: string,
    path: string,
    convert: (object: Raw) => U,
    listener: WatchListener,
    fieldSelector?: string,
  ): Promise<WatchedCollection<U>> {
    const { options } = this;
    const reflector = new Reflector<U>(
      httpSource(this.config, path, convert, fieldSelector, () => options.watchTimeoutSeconds),
      listener,
      {
        resource,
        clock: options.clock,
        logger: options.logger,
        restartBaseMs: options.restartBaseMs,
        restartMaxMs: options.restartMaxMs,
        silenceMs: this.#silenceMs,
        silenceBelowBookmarks: silenceBoundWarning(this.#silenceMs) !== undefined,
        listTimeoutMs: options.listTimeoutMs ?? DEFAULT_LIST_TIMEOUT_MS,
        describe: (error) => describeWatchFailure(resource, this.#server, error),
      },
    );
    this.#reflectors.push(reflector as Reflector<unknown>);
    await reflector.start();
    return reflector;
  }

  watchPods(nodeName: string, listener: WatchListener): Promise<WatchedCollection<PodInfo>> {
    return this.#reflect("pods", "/api/v1/pods", podOf, listener, `spec.nodeName=${nodeName}`);
  }

  watchNetworkAttachmentDefinitions(listener: WatchListener): Promise<WatchedCollection<NadInfo>> {
    return this.#reflect(
      "network-attachment-definitions",
      `/apis/${NADS.group}/${NADS.version}/${NADS.plural}`,
      nadOf,
      listener,
    );
  }

  watchIpPools(listener: WatchListener): Promise<WatchedCollection<IpPoolInfo>> {
    return this.#reflect(
      "ippools",
      `/apis/${WHEREABOUTS.group}/${WHEREABOUTS.version}/ippools`,
      ipPoolOf,
      listener,
    );
  }

  watchNodeSlicePools(listener: WatchListener): Promise<WatchedCollection<NodeSlicePoolInfo>> {
    return this.#reflect(
      "nodeslicepools",
      `/apis/${WHEREABOUTS.group}/${WHEREABOUTS.version}/nodeslicepools`,
      nodeSlicePoolOf,
      listener,
    );
  }

  watchOverlappingReservations(
    listener: WatchListener,
  ): Promise<WatchedCollection<OverlappingReservationInfo>> {
    const plural = "overlappingrangeipreservations";
    return this.#reflect(
      plural,
      `/apis/${WHEREABOUTS.group}/${WHEREABOUTS.version}/${plural}`,
      reservationOf,
      listener,
    );
  }

  async #call<T>(operation: string, call: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${this.options.requestTimeoutMs} ms`)),
        this.options.requestTimeoutMs,
      );
    });
    try {
      return await Promise.race([call(), timeout]);
    } catch (error) {
      throw kubeError(operation, error);
    } finally {
      clearTimeout(timer);
    }
  }

  async podUid(namespace: string, name: string): Promise<string | undefined> {
    try {
      const pod = await this.#call(`get Pod ${namespace}/${name}`, () =>
        this.#core.readNamespacedPod({ name, namespace }),
      );
      return pod.metadata?.uid;
    } catch (error) {
      if (error instanceof KubeError && error.status === 404) return undefined;
      throw error;
    }
  }

  async getLease(namespace: string, name: string): Promise<LeaseInfo | undefined> {
    try {
      return leaseOf(
        await this.#call(`get Lease ${namespace}/${name}`, () =>
          this.#leases.readNamespacedLease({ name, namespace }),
        ),
      );
    } catch (error) {
      if (error instanceof KubeError && error.status === 404) return undefined;
      throw error;
    }
  }

  async createLease(lease: LeaseInfo): Promise<LeaseInfo> {
    const { namespace, name } = lease;
    return leaseOf(
      await this.#call(`create Lease ${namespace}/${name}`, () =>
        this.#leases.createNamespacedLease({ namespace, body: leaseBody(lease) }),
      ),
    );
  }

  async updateLease(lease: LeaseInfo): Promise<LeaseInfo> {
    const { namespace, name } = lease;
    return leaseOf(
      await this.#call(`update Lease ${namespace}/${name}`, () =>
        this.#leases.replaceNamespacedLease({ name, namespace, body: leaseBody(lease) }),
      ),
    );
  }

  async createEvent(event: PodEvent): Promise<void> {
    const { namespace, name, uid } = event.pod;
    const kind = event.pod.kind ?? "Pod";
    const now = new Date(this.options.clock.now());
    // A Node is cluster-scoped: its Events go where kubelet posts them, in `default`, with no namespace in
    // involvedObject (and its name as uid, as kubelet's node reference has: `kubectl describe node` finds them).
    const node = kind === "Node";
    const where = node ? "default" : namespace;
    await this.#call(`create Event on ${kind} ${node ? name : `${namespace}/${name}`}`, () =>
      this.#core.createNamespacedEvent({
        namespace: where,
        body: {
          metadata: { generateName: `${name}.`, namespace: where },
          involvedObject: {
            apiVersion: API_VERSION_OF[kind],
            kind,
            ...(node ? {} : { namespace }),
            name,
            ...(uid === undefined ? {} : { uid }),
          },
          type: event.type,
          reason: event.reason,
          message: event.message,
          source: { component: this.options.component, host: this.options.host },
          reportingComponent: this.options.component,
          reportingInstance: this.options.host,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      }),
    );
  }

  async #readTaints(nodeName: string): Promise<NodeTaints> {
    const node = await this.#call(`get Node ${nodeName}`, () => this.#core.readNode({ name: nodeName }));
    return {
      taints: node.spec?.taints?.map(taintOf),
      resourceVersion: node.metadata?.resourceVersion ?? "",
    };
  }

  async getNodeTaints(nodeName: string): Promise<readonly NodeTaint[]> {
    return (await this.#readTaints(nodeName)).taints ?? [];
  }

  async setNodeTaint(nodeName: string, taint: NodeTaint, present: boolean): Promise<boolean> {
    const operation = `${present ? "put" : "take"} taint ${taint.key}:${taint.effect} ${present ? "on" : "off"} Node ${nodeName}`;
    for (let attempt = 1; ; attempt++) {
      const patch = taintPatch(await this.#readTaints(nodeName), taint, present);
      if (patch === undefined) return false;
      try {
        await this.#call(operation, () =>
          this.#core.patchNode(
            { name: nodeName, body: patch },
            setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
          ),
        );
        return true;
      } catch (error) {
        // 422: the test of the taints failed, another writer changed them since the read; 409 likewise.
        const changed = error instanceof KubeError && (error.status === 422 || error.status === 409);
        if (!changed) throw error;
        if (attempt >= TAINT_PATCH_ATTEMPTS) {
          throw new KubeConflictError(
            { operation, status: error.status, reason: error.reason },
            `${operation}: the node's taints changed under each of ${TAINT_PATCH_ATTEMPTS} attempts (read, then a patch testing what was read); another controller rewrites them: the next resync tries again.`,
            { cause: error },
          );
        }
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.#reflectors.splice(0).map((r) => r.stop()));
  }
}

/**
 * The KubeApi on a kubeconfig. Client-node 1.x refuses a plain-HTTP server unless the cluster entry sets
 * `insecure-skip-tls-verify` (the simulator's kubeconfig does).
 * @throws KubeError when the kubeconfig cannot be read.
 */
export function createKubeApi(options: KubeClientOptions): KubeApi {
  const config = new KubeConfig();
  try {
    if (options.kubeconfig === undefined) config.loadFromDefault();
    else config.loadFromFile(options.kubeconfig);
  } catch (error) {
    throw new KubeError(
      { operation: "load kubeconfig", status: undefined, reason: undefined },
      `the kubeconfig ${options.kubeconfig ?? "(KUBECONFIG, ~/.kube/config or in-cluster)"} cannot be read (${
        error instanceof Error ? error.message : String(error)
      }); set IPMGR_KUBECONFIG to a readable kubeconfig, or run in a pod with a service account.`,
      { cause: error },
    );
  }
  if (config.getCurrentCluster() === null) {
    throw new KubeError(
      { operation: "load kubeconfig", status: undefined, reason: undefined },
      `the kubeconfig ${options.kubeconfig ?? "(KUBECONFIG, ~/.kube/config or in-cluster)"} names no current cluster; set its current-context, or IPMGR_KUBECONFIG.`,
    );
  }
  return new KubeClient(config, options);
}
