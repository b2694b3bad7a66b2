import type { Server } from "node:http";
import { type Clock, systemClock } from "../eni/process/clock.js";
import { CallLog, type SimCall } from "./call-log.js";
import { createControlServer } from "./control/control-server.js";
import { createEc2Server } from "./ec2/ec2-server.js";
import { TokenBuckets } from "./ec2/token-bucket.js";
import { FaultState } from "./fault-state.js";
import { defaultFaults, type Faults, mergeFaults } from "./faults.js";
import { Hotplug } from "./hotplug.js";
import { closeServer, listen, urlOf } from "./http-util.js";
import { createImdsServer } from "./imds/imds-server.js";
import { KubeCluster } from "./kube/kube-cluster.js";
import type { KubeObject } from "./kube/kube-object.js";
import type { SimKubeState } from "./kube/kube-state.js";
import type { SimState } from "./sim-state.js";
import { StateStore } from "./state-store.js";
import { initialStateOf, topologyOf } from "./topology.js";
import type { World } from "./world.js";

export interface SimulatorOptions {
  /** Address every server listens on. Default `127.0.0.1`. */
  host?: string;
  /** Port of the EC2 Query API. Default 0 (an ephemeral port). */
  ec2Port?: number;
  /** Port of the JSON control API. Default 0 (an ephemeral port). */
  controlPort?: number;
  /** Port of the Kubernetes API, served when the world has a `kubernetes` section. Default 0 (an ephemeral port). */
  kubePort?: number;
  /** A watch client that leaves more than this many bytes unread is cut off. Default 16 MiB. */
  kubeWatchBufferBytes?: number;
  /**
   * IMDS port of the first instance; the Nth instance (world order, from 0) listens on base + N.
   * Default 0: each instance gets an ephemeral port.
   */
  imdsPortBase?: number;
  /** Time source for token TTLs, throttling refill, stale reads, latency and call times. Default system clock. */
  clock?: Clock;
  /** Called with one line per EC2 and IMDS request (e.g. to stderr for --verbose). Default none. */
  log?: (line: string) => void;
  /**
   * Called with one line per request the simulator failed to answer (its own bug, with the stack).
   * Default: stderr, as `multus-ipmgr sim: <line>`. Tests that provoke one capture it here.
   */
  errorLog?: (line: string) => void;
}

export interface SimulatorHandle {
  /** e.g. `http://127.0.0.1:41234`: give it to an SDK as the EC2 endpoint. */
  readonly ec2Endpoint: string;
  readonly controlEndpoint: string;
  /** instance id -> IMDS endpoint, each instance on its own port. */
  readonly imdsEndpoints: Record<string, string>;
  /** e.g. `http://127.0.0.1:41235`: the Kubernetes API, when the world has a `kubernetes` section. */
  readonly kubernetesEndpoint: string | undefined;
  /** Scripted changes to the Kubernetes objects (the control API's /kubernetes routes); undefined without one. */
  readonly kubernetes: KubeControl | undefined;
  /** The current state (same JSON as GET /state). */
  state(): SimState;
  /** Every EC2 call so far (same JSON as GET /calls). */
  calls(): SimCall[];
  clearCalls(): void;
  /** Merges into the current faults (same as PUT /faults; lists are replaced). */
  setFaults(faults: Partial<Faults>): void;
  /** Closes every server and drops open connections, hung IMDS token requests included. */
  close(): Promise<void>;
}

/** What a scenario does to the simulated cluster, beside what any client does through the API. */
export interface KubeControl {
  /** Adds a pod in world-file form (ADDED). */
  addPod(pod: unknown): KubeObject;
  /** Replaces a pod with one in world-file form (MODIFIED; a different uid is a delete and an add). */
  replacePod(namespace: string, name: string, pod: unknown): KubeObject;
  /** JSON merge patch on the Pod object. */
  patchPod(namespace: string, name: string, patch: unknown): KubeObject;
  /** Deletes at once, or with a grace period above 0 only marks it terminating (deletionTimestamp). */
  deletePod(namespace: string, name: string, gracePeriodSeconds?: number): KubeObject;
  /** Adds a node in world-file form (`{instance, name?, labels?, annotations?}`; ADDED). */
  addNode(node: unknown): KubeObject;
  /** Deletes a node at once (DELETED); its pods stay. */
  deleteNode(name: string): KubeObject;
  /** Ends every open watch from the server side (with `reset`, destroys their connections); returns how many. */
  closeWatches(reset?: boolean): number;
  /** Drops the change history (older resourceVersions get 410 Gone); returns the compacted revision. */
  compact(): number;
  state(): SimKubeState;
}

/** Starts the EC2, control and IMDS servers for `world`, and the Kubernetes API if it has a `kubernetes` section. */
export async function startSimulator(world: World, options: SimulatorOptions = {}): Promise<SimulatorHandle> {
  const host = options.host ?? "127.0.0.1";
  const clock = options.clock ?? systemClock;
  let counter = 0;
  const nextId = (prefix: string): string => {
    counter += 1;
    return `${prefix}-${counter.toString(16).padStart(17, "0")}`;
  };
  const topology = topologyOf(world);
  const store = new StateStore(initialStateOf(world, nextId), clock);
  const faults = new FaultState(mergeFaults(defaultFaults, (world.faults ?? {}) as Partial<Faults>), clock);
  const calls = new CallLog();
  const errorLog =
    options.errorLog ?? ((line: string) => process.stderr.write(`multus-ipmgr sim: ${line}\n`));
  const hotplug = new Hotplug(topology, errorLog);
  const kube =
    world.kubernetes === undefined
      ? undefined
      : new KubeCluster(world, {
          clock,
          log: options.log,
          errorLog,
          maxWatchBufferBytes: options.kubeWatchBufferBytes,
          faults,
          enis: () => store.current().enis,
        });
  const state = (): SimState => ({
    ...structuredClone(store.current()),
    ...(kube === undefined ? {} : { kubernetes: kube.state() }),
  });

  const servers: Server[] = [];
  const start = async (server: Server, port: number): Promise<string> => {
    servers.push(server);
    return urlOf(host, await listen(server, host, port));
  };
  const closeAll = async (): Promise<void> => {
    // Watches first: their streams would otherwise hold the Kubernetes server open.
    kube?.close();
    await Promise.all(servers.map(closeServer));
    await hotplug.settled();
  };
  try {
    const ec2Endpoint = await start(
      createEc2Server({
        topology,
        store,
        faults,
        calls,
        buckets: new TokenBuckets(clock),
        clock,
        nextId,
        attachments: hotplug.heard,
        log: options.log,
        errorLog,
      }),
      options.ec2Port ?? 0,
    );
    const controlEndpoint = await start(
      createControlServer({ state, calls, faults, kube }),
      options.controlPort ?? 0,
    );
    let kubernetesEndpoint: string | undefined;
    if (kube !== undefined) {
      let address = "";
      kubernetesEndpoint = await start(
        kube.createServer(() => address),
        options.kubePort ?? 0,
      );
      address = new URL(kubernetesEndpoint).host;
    }
    const imdsEndpoints: Record<string, string> = {};
    let index = 0;
    for (const instance of topology.instances.values()) {
      const base = options.imdsPortBase ?? 0;
      imdsEndpoints[instance.id] = await start(
        createImdsServer({ instance, topology, store, faults, clock, log: options.log, errorLog }),
        base === 0 ? 0 : base + index,
      );
      index += 1;
    }
    return {
      ec2Endpoint,
      controlEndpoint,
      imdsEndpoints,
      kubernetesEndpoint,
      kubernetes: kube,
      state,
      calls: () => calls.list(),
      clearCalls: () => calls.clear(),
      setFaults: (patch) => faults.set(patch),
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
