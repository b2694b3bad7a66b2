import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../../eni/process/clock.js";
import { KubeApiError } from "../errors/kube-api-error.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { bigIntToAddress, mustParseCidr } from "../ip-math.js";
import type { SimEni } from "../sim-state.js";
import { GivenWrites } from "./given-writes.js";
import type { KubeApi } from "./kube-api.js";
import { isJsonObject, type JsonObject, type KubeObject, kubeTime } from "./kube-object.js";
import type { StoreEvent } from "./kube-store.js";
import { NETWORK_STATUS_ANNOTATION } from "./kube-world.js";
import { NETWORKS_ANNOTATION, type NetworkSelection, parseNetworks } from "./multus-networks.js";
import { primaryResource } from "./resources.js";
import { allocateAddresses, releaseAddresses, type WhereaboutsAllocation } from "./whereabouts-records.js";

export interface KubeletDeps {
  readonly api: KubeApi;
  readonly clock: Clock;
  /** The ENIs as EC2 holds them now: a node's interfaces, and the addresses a pod IP must not take. */
  readonly enis: () => readonly SimEni[];
  /** A subnet's IPv4 CIDR, by id. */
  readonly subnetCidr: (subnetId: string) => string | undefined;
  readonly errorLog: (line: string) => void;
  /** Scripted writes in progress: their pods are taken as given. Default: none ever. */
  readonly given?: GivenWrites;
}

/** The name Multus' default network has in the network-status on EKS. */
const clusterNetworkName = "aws-cni";

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function objectAt(object: JsonObject, field: string): JsonObject {
  const value = object[field];
  return isJsonObject(value) ? value : {};
}

/** A locally administered MAC derived from `seed`, for plugins that make their own (macvlan, bridge, ...). */
function generatedMac(seed: string): string {
  const bytes = createHash("sha256").update(seed).digest().subarray(0, 6);
  bytes[0] = ((bytes[0] as number) & 0xfc) | 0x02;
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(":");
}

/**
 * The kubelet of every node, with Multus and whereabouts behind it, for pods created through the API: a
 * pod bound to a node (spec.nodeName) and still Pending gets a pod IP from its node's subnet, the addresses
 * of its Multus networks (whereabouts: the lowest free address of the range, recorded in the IPPool and an
 * OverlappingRangeIPReservation), Multus' network-status annotation, then status Running. When such a pod
 * is deleted, whereabouts' records of it are removed, as its CNI DEL does. Pods the world file and the
 * control API write are taken as given. Work is done after the change that asks for it, never inside a
 * store listener, so watches see the pod Pending first.
 */
export class Kubelet {
  readonly #deps: KubeletDeps;
  /** Pods started, given up on, or written as given, by uid, with their whereabouts records. */
  readonly #started = new Map<string, WhereaboutsAllocation[]>();
  readonly #writes: GivenWrites;
  #unsubscribe: () => void = () => undefined;

  constructor(deps: KubeletDeps) {
    this.#deps = deps;
    this.#writes = deps.given ?? new GivenWrites();
  }

  start(): void {
    this.#unsubscribe = this.#deps.api.store.subscribe((event) => this.#onChange(event));
  }

  stop(): void {
    this.#unsubscribe();
  }

  #onChange(event: StoreEvent): void {
    if (event.storage !== "pods") return;
    const uid = event.object.metadata.uid ?? "";
    if (event.type === "DELETED") {
      const allocations = this.#started.get(uid);
      this.#started.delete(uid);
      if (allocations !== undefined && allocations.length > 0) {
        const podRef = `${event.object.metadata.namespace}/${event.object.metadata.name}`;
        this.#later(() => releaseAddresses(this.#deps.api, podRef, allocations));
      }
      return;
    }
    if (this.#started.has(uid)) return;
    // A pod the world file or the control API wrote stays as given, even when an API client changes it later.
    if (this.#writes.active) {
      this.#started.set(uid, []);
      return;
    }
    if (!this.#wantsStart(event.object)) return;
    this.#started.set(uid, []);
    const { namespace = "", name = "" } = event.object.metadata;
    this.#later(() => this.#startPod(namespace, name, uid));
  }

  #wantsStart(pod: KubeObject): boolean {
    const spec = objectAt(pod, "spec");
    const status = objectAt(pod, "status");
    return (
      str(spec.nodeName) !== undefined &&
      (status.phase === undefined || status.phase === "Pending") &&
      status.podIP === undefined &&
      pod.metadata.deletionTimestamp === undefined
    );
  }

  #later(work: () => void): void {
    queueMicrotask(() => {
      try {
        work();
      } catch (error) {
        this.#deps.errorLog(`kubelet stand-in failed: ${(error as Error).stack ?? String(error)}`);
      }
    });
  }

  #startPod(namespace: string, name: string, uid: string): void {
    const { api } = this.#deps;
    const pods = primaryResource("pods");
    const pod = api.store.get("pods", namespace, name);
    if (pod === undefined || pod.metadata.uid !== uid || !this.#wantsStart(pod)) return;
    const nodeName = str(objectAt(pod, "spec").nodeName) as string;
    const node = api.store.get("nodes", "", nodeName);
    // No such node: no kubelet to run the pod, which stays Pending, as in a cluster.
    if (node === undefined) return;
    const instanceId = str(objectAt(node, "spec").providerID)?.split("/").at(-1);
    const enis = this.#deps.enis().filter((e) => e.instanceId === instanceId);
    const hostIP = enis.find((e) => e.deviceIndex === 0)?.primaryIpv4 ?? undefined;
    const hostNetwork = objectAt(pod, "spec").hostNetwork === true;
    const podIP = hostNetwork ? hostIP : this.#freePodIp(enis);
    const containerId = randomBytes(32).toString("hex");
    let networkStatus: JsonObject[] | undefined;
    if (!hostNetwork) {
      try {
        networkStatus = this.#attach(pod, enis, containerId, podIP);
      } catch (error) {
        if (!(error instanceof SandboxError || error instanceof KubeApiError)) throw error;
        this.#failedSandbox(pod, nodeName, error.message);
        return;
      }
    }
    let current = pod;
    if (networkStatus !== undefined) {
      // Multus writes the annotation (indented by four spaces) before the kubelet reports the pod running.
      const annotated = structuredClone(current);
      annotated.metadata.annotations = {
        ...annotated.metadata.annotations,
        [NETWORK_STATUS_ANNOTATION]: JSON.stringify(networkStatus, null, 4),
      };
      current = api.update(pods, namespace, name, annotated, { dryRun: false });
    }
    const now = kubeTime(this.#deps.clock.now());
    const running = structuredClone(current);
    const spec = objectAt(running, "spec");
    const containers = Array.isArray(spec.containers) ? spec.containers.filter(isJsonObject) : [];
    const condition = (type: string) => ({
      type,
      status: "True",
      lastProbeTime: null,
      lastTransitionTime: now,
    });
    running.status = {
      ...objectAt(running, "status"),
      phase: "Running",
      conditions: [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
      ].map(condition),
      ...(hostIP === undefined ? {} : { hostIP, hostIPs: [{ ip: hostIP }] }),
      ...(podIP === undefined ? {} : { podIP, podIPs: [{ ip: podIP }] }),
      startTime: now,
      containerStatuses: containers.map((c) => ({
        name: c.name,
        image: c.image,
        imageID: "",
        containerID: `containerd://${randomBytes(32).toString("hex")}`,
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: now } },
      })),
    };
    api.update(pods, namespace, name, running, { dryRun: false });
  }

  /** The lowest address of the node's subnet that no ENI and no pod holds (AWS' reserved ones skipped). */
  #freePodIp(enis: readonly SimEni[]): string | undefined {
    const primary = enis.find((e) => e.deviceIndex === 0);
    const text = primary === undefined ? undefined : this.#deps.subnetCidr(primary.subnetId);
    if (text === undefined) return undefined;
    const cidr = mustParseCidr(text);
    const used = new Set(this.#deps.enis().flatMap((e) => e.ipv4s));
    for (const pod of this.#deps.api.store.list("pods")) {
      const status = objectAt(pod, "status");
      if (typeof status.podIP === "string") used.add(status.podIP);
    }
    for (let value = cidr.base + 4n; value < cidr.base + cidr.size - 1n; value++) {
      const ip = bigIntToAddress(value, cidr.family);
      if (!used.has(ip)) return ip;
    }
    return undefined;
  }

  /** Multus' work: each network of the annotation attached (whereabouts allocating), as network-status entries. */
  #attach(
    pod: KubeObject,
    enis: readonly SimEni[],
    containerId: string,
    podIP: string | undefined,
  ): JsonObject[] {
    const namespace = pod.metadata.namespace ?? "default";
    const annotation = pod.metadata.annotations?.[NETWORKS_ANNOTATION];
    let selections: NetworkSelection[] = [];
    try {
      selections = annotation === undefined ? [] : parseNetworks(annotation, namespace);
    } catch (error) {
      throw new SandboxError((error as Error).message);
    }
    const entries: JsonObject[] = [
      {
        name: clusterNetworkName,
        interface: "eth0",
        ...(podIP === undefined ? {} : { ips: [podIP] }),
        mac: enis.find((e) => e.deviceIndex === 0)?.mac ?? generatedMac(`${pod.metadata.uid}/eth0`),
        default: true,
        dns: {},
      },
    ];
    const allocations = this.#started.get(pod.metadata.uid ?? "") ?? [];
    for (const selection of selections) {
      const { config, netName } = this.#networkConfig(selection);
      const ipam = objectAt(config, "ipam");
      let ips: string[] = [];
      if (ipam.type === "whereabouts") {
        ips = allocateAddresses(
          this.#deps.api,
          ipam,
          { nodeName: str(objectAt(pod, "spec").nodeName) ?? "", netName },
          `${namespace}/${pod.metadata.name}`,
          selection.interface,
          containerId,
          allocations,
        );
      } else if (ipam.type === "static" && Array.isArray(ipam.addresses)) {
        ips = ipam.addresses.flatMap((a) => {
          const address = isJsonObject(a) ? str(a.address) : undefined;
          return address === undefined ? [] : [address.split("/")[0] as string];
        });
      }
      const master = str(config.master);
      // ipvlan shares its master's MAC; ethN is the ENI of device index N (no master: the default route's, eth0).
      const device = /^eth(\d+)$/.exec(master ?? "eth0");
      const masterMac =
        device === null ? undefined : enis.find((e) => e.deviceIndex === Number(device[1]))?.mac;
      const mac =
        selection.mac ??
        (config.type === "ipvlan" && masterMac !== undefined
          ? masterMac
          : generatedMac(`${pod.metadata.uid}/${selection.interface}`));
      entries.push({
        name: `${selection.namespace}/${selection.name}`,
        interface: selection.interface,
        ...(ips.length === 0 ? {} : { ips }),
        mac,
        dns: {},
      });
    }
    return entries;
  }

  /** The CNI config of a NAD (the plugin with an `ipam`, in a plugin list) and the network's `name`. */
  #networkConfig(selection: NetworkSelection): { config: JsonObject; netName: string } {
    const nad = this.#deps.api.store.get(
      "network-attachment-definitions",
      selection.namespace,
      selection.name,
    );
    const where = `network-attachment-definition ${selection.namespace}/${selection.name}`;
    if (nad === undefined) {
      throw new SandboxError(
        `cannot find a network-attachment-definition (${selection.name}) in namespace (${selection.namespace}): ` +
          `network-attachment-definitions.k8s.cni.cncf.io "${selection.name}" not found`,
      );
    }
    const text = objectAt(nad, "spec").config;
    let config: unknown;
    try {
      config = JSON.parse(typeof text === "string" ? text : "");
    } catch (error) {
      throw new SandboxError(`${where}: its config is not JSON: ${(error as Error).message}`);
    }
    if (!isJsonObject(config)) throw new SandboxError(`${where}: its config is not a JSON object`);
    // libcni hands each plugin of a list the list's name.
    const netName = str(config.name) ?? "";
    if (Array.isArray(config.plugins)) {
      const plugin = config.plugins.filter(isJsonObject).find((p) => isJsonObject(p.ipam));
      return { config: plugin ?? {}, netName };
    }
    return { config, netName };
  }

  /** The kubelet's Warning Event when the sandbox's network cannot be set up; the pod stays Pending. */
  #failedSandbox(pod: KubeObject, nodeName: string, reason: string): void {
    const { api } = this.#deps;
    const namespace = pod.metadata.namespace ?? "default";
    const now = kubeTime(this.#deps.clock.now());
    api.create(
      primaryResource("events"),
      namespace,
      {
        metadata: { generateName: `${pod.metadata.name}.` },
        involvedObject: {
          kind: "Pod",
          namespace,
          name: pod.metadata.name,
          uid: pod.metadata.uid,
          apiVersion: "v1",
          resourceVersion: pod.metadata.resourceVersion,
        },
        reason: "FailedCreatePodSandBox",
        message: `Failed to create pod sandbox: plugin type="multus" failed (add): ${reason}`,
        source: { component: "kubelet", host: nodeName },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        type: "Warning",
        reportingComponent: "kubelet",
        reportingInstance: nodeName,
      },
      { dryRun: false },
    );
  }
}
