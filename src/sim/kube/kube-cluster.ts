import type { Server } from "node:http";
import type { Clock } from "../../eni/process/clock.js";
import { KubeApiError } from "../errors/kube-api-error.js";
import { WorldError } from "../errors/world-error.js";
import { FaultState } from "../fault-state.js";
import { defaultFaults } from "../faults.js";
import type { SimEni } from "../sim-state.js";
import { GivenWrites } from "./given-writes.js";
import { KubeApi } from "./kube-api.js";
import { KubeFaultGate } from "./kube-fault-gate.js";
import type { KubeObject } from "./kube-object.js";
import { createKubeServer } from "./kube-server.js";
import type { SimKubeState } from "./kube-state.js";
import { KubeStore } from "./kube-store.js";
import {
  hostIpOf,
  type KubeWorldContext,
  namespaceObject,
  namespacesOf,
  nodeObject,
  podObject,
  seedObjectsOf,
  worldNodeSchema,
  worldPodSchema,
} from "./kube-world.js";
import { Kubelet } from "./kubelet.js";
import { NodeSliceController } from "./node-slice-controller.js";
import { primaryResource } from "./resources.js";
import { Scheduler } from "./scheduler.js";
import { WatchStreams } from "./watch-stream.js";

export interface KubeClusterOptions {
  readonly clock: Clock;
  readonly log?: ((line: string) => void) | undefined;
  readonly errorLog: (line: string) => void;
  /** A watch client that leaves more than this many bytes unread is cut off. Default 16 MiB. */
  readonly maxWatchBufferBytes?: number | undefined;
  /** The simulator's faults; the `kube*` ones act on this API. Default: none, never changed. */
  readonly faults?: FaultState | undefined;
  /** The ENIs as EC2 holds them now, for the kubelet stand-in. */
  readonly enis: () => readonly SimEni[];
}

/** Watches without timeoutSeconds end after 30 minutes, kube-apiserver's minimum request timeout. */
const defaultWatchTimeoutMs = 30 * 60_000;
const defaultMaxWatchBufferBytes = 16 * 1024 * 1024;

function badInput(message: string): KubeApiError {
  return new KubeApiError(400, "BadRequest", message);
}

/**
 * The simulated cluster: the store, the API semantics over it, the open watches, and the scripted changes
 * the control API makes (pods appearing, changing, being deleted; watches broken; history compacted).
 */
export class KubeCluster {
  readonly store: KubeStore;
  readonly api: KubeApi;
  readonly watches = new WatchStreams();
  readonly #gate: KubeFaultGate;
  readonly #kubelet: Kubelet | undefined;
  readonly #nodeSlices: NodeSliceController | undefined;
  readonly #scheduler: Scheduler | undefined;
  /** Scripted writes in progress, which the kubelet and scheduler stand-ins take as given. */
  readonly #given = new GivenWrites();
  readonly #world: KubeWorldContext;
  readonly #options: KubeClusterOptions;
  readonly #bookmarkIntervalMs: number;

  constructor(world: KubeWorldContext, options: KubeClusterOptions) {
    const k = world.kubernetes;
    this.#world = world;
    this.#options = options;
    this.store = new KubeStore({ historyLimit: k?.eventHistory ?? 1000 });
    this.api = new KubeApi(this.store, options.clock);
    this.#bookmarkIntervalMs = (k?.bookmarkIntervalSeconds ?? 60) * 1000;
    this.#gate = new KubeFaultGate(
      options.faults ?? new FaultState(defaultFaults, options.clock),
      options.clock,
      this.watches,
      options.errorLog,
    );
    this.#kubelet =
      k?.kubelet === false
        ? undefined
        : new Kubelet({
            api: this.api,
            clock: options.clock,
            enis: options.enis,
            subnetCidr: (id) => world.subnets.find((s) => s.id === id)?.cidr,
            errorLog: options.errorLog,
            given: this.#given,
          });
    this.#kubelet?.start();
    this.#nodeSlices =
      k?.nodeSliceController === false
        ? undefined
        : new NodeSliceController({
            api: this.api,
            log: options.log ?? (() => undefined),
            errorLog: options.errorLog,
          });
    this.#nodeSlices?.start();
    this.#scheduler =
      k?.scheduler === false
        ? undefined
        : new Scheduler({
            api: this.api,
            clock: options.clock,
            log: options.log ?? (() => undefined),
            errorLog: options.errorLog,
            given: this.#given,
          });
    this.#scheduler?.start();
    this.#asGiven(() => this.#seed(world));
  }

  /** Runs a scripted write (world file, control API): the kubelet and scheduler stand-ins take its pods as given. */
  #asGiven<T>(write: () => T): T {
    return this.#given.during(write);
  }

  #seed(world: KubeWorldContext): void {
    const seeds = seedObjectsOf(world);
    for (const name of namespacesOf(world, seeds)) this.api.put("namespaces", namespaceObject(name));
    for (const seed of seeds) {
      try {
        this.api.create(seed.resource, seed.object.metadata.namespace ?? "", seed.object, {
          dryRun: false,
          asGiven: true,
        });
      } catch (error) {
        // The world's checks catch what the API would refuse; this names the object if one slips through.
        if (!(error instanceof KubeApiError)) throw error;
        throw new WorldError(undefined, [`${seed.path.join(".")}: ${error.message}`], { cause: error });
      }
    }
  }

  /** The HTTP server of the API; `serverAddress` gives its `host:port` once it listens. */
  createServer(serverAddress: () => string): Server {
    const server = createKubeServer({
      api: this.api,
      watches: this.watches,
      gate: this.#gate,
      watchSettings: {
        clock: this.#options.clock,
        bookmarkIntervalMs: this.#bookmarkIntervalMs,
        defaultTimeoutMs: defaultWatchTimeoutMs,
        maxBufferedBytes: this.#options.maxWatchBufferBytes ?? defaultMaxWatchBufferBytes,
        errorLog: this.#options.errorLog,
      },
      serverAddress,
      log: this.#options.log,
      errorLog: this.#options.errorLog,
    });
    server.once("listening", () => this.#gate.attach(server));
    return server;
  }

  #podFromInput(input: unknown): KubeObject {
    const parsed = worldPodSchema.safeParse(input);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`);
      throw badInput(`invalid pod: ${problems.join("; ")}`);
    }
    const pod = parsed.data;
    if (pod.nodeName !== undefined && this.store.get("nodes", "", pod.nodeName) === undefined) {
      throw badInput(
        `invalid pod: nodeName: unknown node ${pod.nodeName}; the nodes are ${
          this.store
            .list("nodes")
            .map((n) => n.metadata.name)
            .join(", ") || "none"
        }`,
      );
    }
    return podObject(pod, hostIpOf(this.#world, pod.nodeName));
  }

  /** Adds a pod given in world-file form (ADDED); its namespace is created if missing. 409 if it exists. */
  addPod(input: unknown): KubeObject {
    return this.#asGiven(() => this.#addPod(input));
  }

  #addPod(input: unknown): KubeObject {
    const pod = this.#podFromInput(input);
    this.#ensureNamespace(pod.metadata.namespace ?? "default");
    return this.api.create(primaryResource("pods"), pod.metadata.namespace ?? "default", pod, {
      dryRun: false,
      asGiven: true,
    });
  }

  /**
   * Adds several pods at once (one ADDED each, in order), as a Deployment scaled up makes them: all are
   * checked first (form, node, a name given twice, a pod that exists: 409), so either all are added or none.
   */
  addPods(inputs: readonly unknown[]): KubeObject[] {
    return this.#asGiven(() => this.#addPods(inputs));
  }

  #addPods(inputs: readonly unknown[]): KubeObject[] {
    const pods = inputs.map((input) => this.#podFromInput(input));
    const seen = new Set<string>();
    for (const pod of pods) {
      const namespace = pod.metadata.namespace ?? "default";
      const key = `${namespace}/${pod.metadata.name}`;
      if (seen.has(key)) throw badInput(`invalid pods: ${key} is given twice`);
      seen.add(key);
      if (this.store.get("pods", namespace, pod.metadata.name ?? "") !== undefined) {
        throw new KubeApiError(409, "AlreadyExists", `pods "${pod.metadata.name}" already exists`, {
          name: pod.metadata.name ?? "",
          kind: "pods",
        });
      }
    }
    return pods.map((pod) => {
      this.#ensureNamespace(pod.metadata.namespace ?? "default");
      return this.api.create(primaryResource("pods"), pod.metadata.namespace ?? "default", pod, {
        dryRun: false,
        asGiven: true,
      });
    });
  }

  /**
   * Replaces a pod with one in world-file form (MODIFIED). A different uid is a new pod of the same name,
   * as a StatefulSet makes: the old one is deleted (DELETED) and the new one added (ADDED).
   */
  replacePod(namespace: string, name: string, input: unknown): KubeObject {
    return this.#asGiven(() => this.#replacePod(namespace, name, input));
  }

  #replacePod(namespace: string, name: string, input: unknown): KubeObject {
    const pod = this.#podFromInput(input);
    if (pod.metadata.namespace !== namespace || pod.metadata.name !== name) {
      throw badInput(
        `the pod in the body is ${pod.metadata.namespace}/${pod.metadata.name}, not ${namespace}/${name} as in the path`,
      );
    }
    // Throws the API's 404 when there is no such pod.
    const existing = this.api.get(primaryResource("pods"), namespace, name);
    if (pod.metadata.uid !== undefined && pod.metadata.uid !== existing.metadata.uid) {
      this.api.forceDelete("pods", namespace, name);
      return this.api.create(primaryResource("pods"), namespace, pod, { dryRun: false, asGiven: true });
    }
    return this.api.put("pods", pod);
  }

  /** Applies a JSON merge patch to a pod (MODIFIED when it changes anything). */
  patchPod(namespace: string, name: string, patch: unknown): KubeObject {
    return this.#asGiven(() =>
      this.api.patch(primaryResource("pods"), namespace, name, "merge", patch, { dryRun: false }),
    );
  }

  /**
   * Deletes a pod at once (DELETED); with a grace period above 0, marks it terminating instead
   * (deletionTimestamp, MODIFIED), as a graceful delete does until the kubelet is done. Finalizers are ignored.
   */
  deletePod(namespace: string, name: string, gracePeriodSeconds?: number): KubeObject {
    if (gracePeriodSeconds !== undefined && gracePeriodSeconds > 0) {
      return this.#asGiven(() => this.api.markTerminating(namespace, name, gracePeriodSeconds));
    }
    return this.#asGiven(() => this.api.forceDelete("pods", namespace, name));
  }

  /**
   * Adds a node in world-file form (ADDED), as a joining instance's kubelet registers it; the instance must
   * be one of the world's. whereabouts' node-slice controller gives it a slice of every node-sliced network.
   * 409 if a node of that name exists.
   */
  addNode(input: unknown): KubeObject {
    const parsed = worldNodeSchema.safeParse(input);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`);
      throw badInput(`invalid node: ${problems.join("; ")}`);
    }
    if (!this.#world.instances.some((i) => i.id === parsed.data.instance)) {
      throw badInput(
        `invalid node: instance: unknown instance ${parsed.data.instance}; the instances are ${
          this.#world.instances.map((i) => i.id).join(", ") || "none"
        }`,
      );
    }
    return this.api.create(primaryResource("nodes"), "", nodeObject(this.#world, parsed.data), {
      dryRun: false,
      asGiven: true,
    });
  }

  /**
   * Deletes a node at once (DELETED), as a node that leaves the cluster; its pods stay (the pod garbage
   * collector is not modelled). whereabouts' node-slice controller frees its slices.
   */
  deleteNode(name: string): KubeObject {
    return this.api.forceDelete("nodes", "", name);
  }

  #ensureNamespace(namespace: string): void {
    if (!this.api.namespaceExists(namespace)) this.api.put("namespaces", namespaceObject(namespace));
  }

  /**
   * Ends every open watch, as an API server restart or a load balancer's idle timeout does; with `reset`,
   * destroys their connections instead, as a broken network path does. Returns how many there were.
   */
  closeWatches(reset = false): number {
    return reset ? this.watches.resetAll() : this.watches.endAll();
  }

  /** Drops the change history: watches and paged lists from older resourceVersions get 410 Expired. */
  compact(): number {
    return this.store.compact();
  }

  state(): SimKubeState {
    const all = (storage: string): KubeObject[] => this.store.list(storage).map((o) => structuredClone(o));
    return {
      resourceVersion: String(this.store.resourceVersion),
      namespaces: all("namespaces"),
      nodes: all("nodes"),
      pods: all("pods"),
      networkAttachmentDefinitions: all("network-attachment-definitions"),
      ipPools: all("ippools"),
      overlappingRangeIPReservations: all("overlappingrangeipreservations"),
      nodeSlicePools: all("nodeslicepools"),
      leases: all("leases"),
      events: all("events"),
    };
  }

  /** Ends the watches and drops held requests, so that closing the server does not wait on them. */
  close(): void {
    this.#kubelet?.stop();
    this.#nodeSlices?.stop();
    this.#scheduler?.stop();
    this.#gate.close();
    this.watches.endAll();
  }
}
