/**
 * The Kubernetes adapter: the only module that imports @kubernetes/client-node. Loaded with a dynamic
 * import by the bridge's entrypoint, so that no other command parses the client (about 2 MB bundled).
 *
 * What client-node 1.4.0 does, and what this adapter adds:
 * - `ListWatch` (its informer) lists, then watches from the list's resourceVersion; on 410 Gone it relists.
 *   On any other failure (a list refused, a watch answered 5xx, a connection reset) it calls its error
 *   callbacks and stops for good: the adapter restarts it with capped exponential backoff.
 * - Its `Watch` never sends `allowWatchBookmarks` nor `timeoutSeconds`, and creates a 30 s timeout signal
 *   that it then overwrites: a watch whose connection dies silently would hang forever, and a watch with a
 *   field selector (pods of one node) falls behind the cluster's resourceVersion and meets 410 on every
 *   reconnect. The adapter's watch asks for bookmarks and a server-side timeout, and aborts a watch that
 *   stays silent past that timeout.
 * - Watch events carry raw JSON; lists are deserialized (dates as Date). The conversion below reads both.
 * - Its cache keeps every object whole, as listed or watched (a pod's managedFields, status, every container's
 *   env and probes, every annotation). The adapter hands the informer, instead, each object's identity and
 *   resourceVersion and the bridge's view of it (`PodInfo`, with the annotations the bridge reads only),
 *   converted once when it arrives: 1,000 pods of a node cost a few hundred KB, not tens of MB.
 */
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  ListWatch,
  type V1Lease,
  Watch,
} from "@kubernetes/client-node";
import { backoffDelay } from "../eni/backoff.js";
import { NETWORK_STATUS_ANNOTATIONS } from "../eni/network-status.js";
import type { Clock } from "../eni/process/clock.js";
import type { Logger } from "../eni/process/logger.js";
import { KubeConflictError } from "./errors/kube-conflict-error.js";
import { KubeError } from "./errors/kube-error.js";
import type {
  ContainerInfo,
  IpPoolInfo,
  KubeApi,
  LeaseInfo,
  NadInfo,
  OverlappingReservationInfo,
  PodEvent,
  PodInfo,
  WatchedCollection,
  WatchListener,
  WhereaboutsAllocation,
} from "./kube-api.js";
import { MANAGED_ANNOTATION, SIDECAR_ANNOTATION } from "./pod-networks.js";

export interface KubeClientOptions {
  /** A kubeconfig file; undefined: KUBECONFIG, ~/.kube/config, or the pod's service account (in cluster). */
  readonly kubeconfig: string | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Server-side timeout of one watch request, in seconds (a new watch resumes from its resourceVersion). */
  readonly watchTimeoutSeconds: number;
  /** Timeout of one request that is not a watch (Lease, Event), in ms. */
  readonly requestTimeoutMs: number;
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
    annotations: podAnnotations(metadata.annotations),
    containers: containersOf(pod?.spec),
  };
}

function nadOf(nad: Raw): NadInfo {
  return {
    namespace: text(nad?.metadata?.namespace) ?? "",
    name: text(nad?.metadata?.name) ?? "",
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
        ? "the bridge's ClusterRole lacks this permission; apply examples/overlays/bridge/bridge-rbac.yaml"
        : status === 404
          ? "the resource is not served; install its CRD (Multus, whereabouts) or check the namespace"
          : status === undefined
            ? "the API server did not answer; check the pod's route to it (KUBERNETES_SERVICE_HOST) or IPMGR_KUBECONFIG"
            : "see the API server's message";
  const said =
    status === undefined ? message : `${status}${reason === undefined ? "" : ` ${reason}`}: ${message}`;
  return new KubeError(fields, `${operation} failed (${said}); ${fix}.`, { cause: error });
}

/**
 * client-node's Watch with what it lacks: bookmarks (a selective watch keeps up with the cluster's
 * resourceVersion instead of meeting 410), a server-side timeout, and a client-side one a little longer,
 * which aborts a watch whose connection died without a word (the informer then reports an error and is
 * restarted).
 */
class BoundedWatch extends Watch {
  constructor(
    config: KubeConfig,
    private readonly timeoutSeconds: number,
  ) {
    super(config);
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: Raw, watchObj?: Raw) => void,
    done: (err: Raw) => void,
  ): Promise<AbortController> {
    let timer: NodeJS.Timeout | undefined;
    let controller: AbortController | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => controller?.abort(), (this.timeoutSeconds + 30) * 1000);
      timer.unref();
    };
    arm();
    controller = await super.watch(
      path,
      { ...queryParams, allowWatchBookmarks: true, timeoutSeconds: this.timeoutSeconds },
      (phase, object, raw) => {
        arm();
        callback(phase, object, raw);
      },
      (err) => {
        clearTimeout(timer);
        done(err);
      },
    );
    if (controller.signal.aborted) clearTimeout(timer);
    return controller;
  }
}

/** What an informer's cache holds: the object's identity and resourceVersion, and the bridge's view of it. */
interface Cached<U> extends KubernetesObject {
  readonly view: U;
}

function cachedOf<U>(object: Raw, convert: (object: Raw) => U): Cached<U> {
  const namespace = text(object?.metadata?.namespace);
  const name = text(object?.metadata?.name);
  const resourceVersion = text(object?.metadata?.resourceVersion);
  return {
    metadata: {
      ...(namespace === undefined ? {} : { namespace }),
      ...(name === undefined ? {} : { name }),
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    view: convert(object),
  };
}

/** `watch`, with each object an event adds, modifies or deletes replaced by its Cached form. */
function projectingWatch<U>(watch: Watch, convert: (object: Raw) => U): Watch {
  const projecting: Pick<Watch, "watch"> = {
    watch: (path, queryParams, callback, done) =>
      watch.watch(
        path,
        queryParams,
        (phase, object, raw) =>
          callback(
            phase,
            phase === "ADDED" || phase === "MODIFIED" || phase === "DELETED"
              ? cachedOf(object, convert)
              : object,
            raw,
          ),
        done,
      ),
  };
  // ListWatch calls nothing but `watch`.
  return projecting as Watch;
}

/** A ListWatch kept running: restarted with backoff after every failure, until stopped. */
class SupervisedInformer<T extends KubernetesObject, U> implements WatchedCollection<U> {
  #failures = 0;
  #synced = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  readonly #informer: ListWatch<Cached<U>>;

  constructor(
    private readonly resource: string,
    path: string,
    watch: Watch,
    list: () => Promise<KubernetesListObject<T>>,
    convert: (object: T) => U,
    private readonly listener: WatchListener,
    private readonly options: KubeClientOptions,
    fieldSelector?: string,
  ) {
    const listed = async (): Promise<KubernetesListObject<Cached<U>>> => {
      const result = await list();
      const items = result.items.map((item) => cachedOf(item, convert));
      this.#synced = true;
      if (this.#failures > 0) {
        options.logger.info({ resource, failures: this.#failures }, "the list works again");
      }
      this.#failures = 0;
      return { ...result, items };
    };
    this.#informer = new ListWatch<Cached<U>>(
      path,
      projectingWatch(watch, convert),
      listed,
      false,
      undefined,
      fieldSelector,
    );
    const changed = (): void => listener.changed();
    this.#informer.on("add", changed);
    this.#informer.on("update", changed);
    this.#informer.on("delete", changed);
    this.#informer.on("error", (error: unknown) => this.#failed(error));
  }

  get synced(): boolean {
    return this.#synced;
  }

  list(): readonly U[] {
    return this.#informer.list().map((cached) => cached.view);
  }

  async start(): Promise<void> {
    await this.#informer.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#informer.stop();
  }

  #failed(error: unknown): void {
    // Stopping aborts the watch, which the informer reports as an error.
    if (this.#stopped) return;
    this.#failures += 1;
    const delay = backoffDelay(
      { baseMs: this.options.restartBaseMs, maxMs: this.options.restartMaxMs },
      this.#failures,
    );
    const { status, message } = statusOf(error);
    // Logged on the first failure of a run, then every tenth: a long outage must not flood the log.
    if (this.#failures === 1 || this.#failures % 10 === 0) {
      this.options.logger.warn(
        { resource: this.resource, status, reason: message, failures: this.#failures, retryInMs: delay },
        "a list or watch failed; restarting it",
      );
    }
    this.listener.failed?.(this.resource, error, delay);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (this.#stopped) return;
      this.#informer.start().catch((startError: unknown) => this.#failed(startError));
    }, delay);
    this.#timer.unref();
  }
}

class KubeClient implements KubeApi {
  readonly #core: CoreV1Api;
  readonly #custom: CustomObjectsApi;
  readonly #leases: CoordinationV1Api;
  readonly #watch: Watch;
  readonly #informers: SupervisedInformer<KubernetesObject, unknown>[] = [];

  constructor(
    config: KubeConfig,
    private readonly options: KubeClientOptions,
  ) {
    this.#core = config.makeApiClient(CoreV1Api);
    this.#custom = config.makeApiClient(CustomObjectsApi);
    this.#leases = config.makeApiClient(CoordinationV1Api);
    this.#watch = new BoundedWatch(config, options.watchTimeoutSeconds);
  }

  async #informer<T extends KubernetesObject, U>(
    resource: string,
    path: string,
    list: () => Promise<KubernetesListObject<T>>,
    convert: (object: T) => U,
    listener: WatchListener,
    fieldSelector?: string,
  ): Promise<WatchedCollection<U>> {
    const informer = new SupervisedInformer<T, U>(
      resource,
      path,
      this.#watch,
      list,
      convert,
      listener,
      this.options,
      fieldSelector,
    );
    this.#informers.push(informer as unknown as SupervisedInformer<KubernetesObject, unknown>);
    await informer.start();
    return informer;
  }

  watchPods(nodeName: string, listener: WatchListener): Promise<WatchedCollection<PodInfo>> {
    const fieldSelector = `spec.nodeName=${nodeName}`;
    return this.#informer(
      "pods",
      "/api/v1/pods",
      () => this.#core.listPodForAllNamespaces({ fieldSelector }) as Promise<KubernetesListObject<Raw>>,
      podOf,
      listener,
      fieldSelector,
    );
  }

  #customList(group: string, version: string, plural: string): () => Promise<KubernetesListObject<Raw>> {
    return () =>
      this.#custom.listClusterCustomObject({ group, version, plural }) as Promise<KubernetesListObject<Raw>>;
  }

  watchNetworkAttachmentDefinitions(listener: WatchListener): Promise<WatchedCollection<NadInfo>> {
    return this.#informer(
      "network-attachment-definitions",
      `/apis/${NADS.group}/${NADS.version}/${NADS.plural}`,
      this.#customList(NADS.group, NADS.version, NADS.plural),
      nadOf,
      listener,
    );
  }

  watchIpPools(listener: WatchListener): Promise<WatchedCollection<IpPoolInfo>> {
    return this.#informer(
      "ippools",
      `/apis/${WHEREABOUTS.group}/${WHEREABOUTS.version}/ippools`,
      this.#customList(WHEREABOUTS.group, WHEREABOUTS.version, "ippools"),
      ipPoolOf,
      listener,
    );
  }

  watchOverlappingReservations(
    listener: WatchListener,
  ): Promise<WatchedCollection<OverlappingReservationInfo>> {
    const plural = "overlappingrangeipreservations";
    return this.#informer(
      plural,
      `/apis/${WHEREABOUTS.group}/${WHEREABOUTS.version}/${plural}`,
      this.#customList(WHEREABOUTS.group, WHEREABOUTS.version, plural),
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
    const now = new Date(this.options.clock.now());
    await this.#call(`create Event on Pod ${namespace}/${name}`, () =>
      this.#core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${name}.`, namespace },
          involvedObject: {
            apiVersion: "v1",
            kind: "Pod",
            namespace,
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

  async close(): Promise<void> {
    await Promise.all(this.#informers.splice(0).map((i) => i.stop()));
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
