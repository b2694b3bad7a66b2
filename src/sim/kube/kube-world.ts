import { z } from "zod";
import { ipName, resourceName } from "../aws-names.js";
import { addressFamily, canonicalAddress } from "../ip-math.js";
import { isJsonObject, type JsonObject, type KubeObject } from "./kube-object.js";
import { findResource, type ResourceDef, resources } from "./resources.js";
import { metadataProblems, nameProblems } from "./validation.js";

/** The annotation Multus writes on every pod it attaches. */
export const NETWORK_STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status";

/** Namespaces every cluster has. */
export const builtinNamespaces = ["default", "kube-node-lease", "kube-public", "kube-system"] as const;

const stringMap = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));
const freeObject = z.record(z.string(), z.unknown());

/** One entry of Multus' network-status annotation; fields beyond these (mtu, gateway, device-info) pass through. */
const networkStatusEntry = z.looseObject({
  name: z.string().min(1),
  interface: z.string().optional(),
  ips: z.array(z.string()).optional(),
  mac: z.string().optional(),
  default: z.boolean().optional(),
  dns: freeObject.optional(),
});

/** A pod in the world file (and in the control API's POST/PUT /kubernetes/pods). */
export const worldPodSchema = z.strictObject({
  namespace: z.string().min(1).default("default"),
  name: z.string().min(1),
  /** Default: a random UUID. */
  uid: z.string().min(1).optional(),
  /** A node of `kubernetes.nodes`; unset for a pending pod. */
  nodeName: z.string().min(1).optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  /** Written as the `k8s.v1.cni.cncf.io/network-status` annotation, as Multus writes it. */
  networkStatus: z.array(networkStatusEntry).optional(),
  phase: z.enum(["Pending", "Running", "Succeeded", "Failed", "Unknown"]).default("Running"),
  /** Default: the first address of the network-status entry marked default. */
  podIP: z.string().optional(),
  /** Merged over the defaults (one container `app`, restartPolicy Always, ...). */
  spec: freeObject.optional(),
  /** Merged over the defaults (phase, hostIP, podIP(s), Ready condition, container statuses). */
  status: freeObject.optional(),
});

export type WorldPod = z.output<typeof worldPodSchema>;

/** A node in the world file (and in the control API's POST /kubernetes/nodes). */
export const worldNodeSchema = z.strictObject({
  /** Default: the instance's private DNS name, as EKS names nodes (ip-198-51-100-10.ec2.internal). */
  name: z.string().min(1).optional(),
  instance: z.string().min(1),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  /** `spec.taints` the node registers with (kubelet's --register-with-taints), e.g. a startup taint. */
  taints: z
    .array(
      z.strictObject({
        key: z.string().min(1),
        value: z.string().optional(),
        effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        /** RFC 3339, as the node controller sets on NoExecute taints. */
        timeAdded: z.string().optional(),
      }),
    )
    .optional(),
  /** `spec.unschedulable`: cordoned. */
  unschedulable: z.boolean().optional(),
});

export type WorldNode = z.output<typeof worldNodeSchema>;

const allocation = z.strictObject({
  id: z.string().min(1),
  podref: z.string().min(1),
  ifname: z.string().optional(),
});

export const kubernetesSchema = z.strictObject({
  /** Namespaces beside the built-in ones; those of the objects below are added too. */
  namespaces: z.array(z.string().min(1)).default([]),
  /** How many changes are kept to resume watches; older resourceVersions get 410 Gone. Default 1000. */
  eventHistory: z.number().int().min(1).max(1_000_000).default(1000),
  /** Interval of BOOKMARK events on watches that allow them, in seconds. Default 60. */
  bookmarkIntervalSeconds: z.number().positive().default(60),
  /**
   * Plays the kubelet (and Multus and whereabouts) for pods created through the API on a node: they become
   * Running with a pod IP and their Multus networks' addresses. Default true.
   */
  kubelet: z.boolean().default(true),
  /**
   * Plays kube-scheduler's filters for pods created through the API without a node: bound to a node that is
   * not cordoned, matches their nodeSelector and whose NoSchedule/NoExecute taints they tolerate; else
   * Pending, PodScheduled=False (Unschedulable), tried again when a node changes. Default true.
   */
  scheduler: z.boolean().default(true),
  /**
   * Plays whereabouts' node-slice controller: a NAD in kube-system whose whereabouts IPAM has
   * `node_slice_size` gets a NodeSlicePool with a slice for every node. Default true.
   */
  nodeSliceController: z.boolean().default(true),
  nodes: z.array(worldNodeSchema).default([]),
  pods: z.array(worldPodSchema).default([]),
  networkAttachmentDefinitions: z
    .array(
      z.strictObject({
        namespace: z.string().min(1).default("default"),
        name: z.string().min(1),
        /** The CNI configuration: a JSON string, or an object written as one. */
        config: z.union([z.string(), freeObject]),
        labels: stringMap.optional(),
        annotations: stringMap.optional(),
      }),
    )
    .default([]),
  ipPools: z
    .array(
      z.strictObject({
        /** whereabouts' default namespace. */
        namespace: z.string().min(1).default("kube-system"),
        /** Default: the range with `:` and `/` as `-` (198.51.100.192-27), as whereabouts names pools. */
        name: z.string().min(1).optional(),
        range: z.string().min(1),
        /** Decimal offset from the range's first address -> the allocation. */
        allocations: z.record(z.string(), allocation).default({}),
      }),
    )
    .default([]),
  overlappingRangeIPReservations: z
    .array(
      z.strictObject({
        namespace: z.string().min(1).default("kube-system"),
        /** Default: the address, as whereabouts names them (`:` as `-`). */
        name: z.string().min(1).optional(),
        ip: z.string().min(1),
        containerid: z.string().min(1),
        podref: z.string().min(1),
        ifname: z.string().optional(),
      }),
    )
    .default([]),
  /** Any other objects of the served kinds, as manifests (apiVersion, kind, metadata, ...). */
  objects: z.array(freeObject).default([]),
});

export type KubernetesWorld = z.output<typeof kubernetesSchema>;

/** What the Kubernetes objects need from the rest of the world. */
export interface KubeWorldContext {
  readonly region: string;
  readonly subnets: readonly {
    readonly id: string;
    readonly availabilityZone: string;
    /** IPv4 CIDR: the kubelet stand-in's pod IPs come from the node's subnet. */
    readonly cidr: string;
  }[];
  readonly instances: readonly {
    readonly id: string;
    readonly instanceType: string;
    readonly architecture?: string | undefined;
    readonly enis: readonly {
      readonly deviceIndex: number;
      readonly subnet: string;
      readonly primaryIpv4?: string | undefined;
    }[];
  }[];
  readonly kubernetes?: KubernetesWorld | undefined;
}

/** One object to create at start, with where it came from in the world file. */
export interface SeedObject {
  readonly resource: ResourceDef;
  readonly object: KubeObject;
  readonly path: (string | number)[];
}

function primaryIpv4Of(instance: KubeWorldContext["instances"][number]): string | undefined {
  return instance.enis.find((e) => e.deviceIndex === 0)?.primaryIpv4;
}

/** The node name EKS gives an instance: its IP-based private DNS name. */
export function defaultNodeName(world: KubeWorldContext, instanceId: string): string {
  const instance = world.instances.find((i) => i.id === instanceId);
  const ip = instance === undefined ? undefined : primaryIpv4Of(instance);
  return ip === undefined ? resourceName(instanceId, world.region) : ipName(ip, world.region);
}

/** whereabouts' name for an address's reservation: `:` as `-`, a leading or trailing `:` padded with 0. */
export function reservationName(ip: string): string {
  let text = canonicalAddress(ip) ?? ip;
  if (text.endsWith(":")) text += "0";
  else if (text.startsWith(":")) text = `0${text}`;
  return text.replaceAll(":", "-");
}

/** A world-file node as the Node object the API serves. */
export function nodeObject(world: KubeWorldContext, node: WorldNode): KubeObject {
  const instance = world.instances.find((i) => i.id === node.instance);
  const name = node.name ?? defaultNodeName(world, node.instance);
  const primary = instance?.enis.find((e) => e.deviceIndex === 0);
  const zone = world.subnets.find((s) => s.id === primary?.subnet)?.availabilityZone ?? `${world.region}a`;
  const arch = instance?.architecture === "arm64" ? "arm64" : "amd64";
  const ip = primary?.primaryIpv4;
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "node.kubernetes.io/instance-type": instance?.instanceType ?? "",
        "topology.kubernetes.io/region": world.region,
        "topology.kubernetes.io/zone": zone,
        ...node.labels,
      },
      ...(node.annotations === undefined ? {} : { annotations: node.annotations }),
    },
    spec: {
      providerID: `aws:///${zone}/${node.instance}`,
      ...(node.taints === undefined ? {} : { taints: node.taints }),
      ...(node.unschedulable === undefined ? {} : { unschedulable: node.unschedulable }),
    },
    status: {
      addresses: [
        ...(ip === undefined ? [] : [{ type: "InternalIP", address: ip }]),
        { type: "InternalDNS", address: name },
        { type: "Hostname", address: name },
      ],
      conditions: [
        { type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status" },
      ],
      nodeInfo: {
        architecture: arch,
        operatingSystem: "linux",
        osImage: "Amazon Linux 2023",
        kubeletVersion: "v1.31.0",
        containerRuntimeVersion: "containerd://1.7.22",
      },
    },
  };
}

/** A world-file pod as the Pod object the API serves. */
export function podObject(pod: WorldPod, hostIP?: string): KubeObject {
  const annotations: Record<string, string> = { ...pod.annotations };
  let defaultIps: string[] = [];
  if (pod.networkStatus !== undefined) {
    // Multus writes the list indented by four spaces.
    annotations[NETWORK_STATUS_ANNOTATION] = JSON.stringify(pod.networkStatus, null, 4);
    defaultIps = pod.networkStatus.find((e) => e.default === true)?.ips ?? [];
  }
  const podIP = pod.podIP ?? defaultIps[0];
  const podIPs = pod.podIP !== undefined ? [pod.podIP] : defaultIps;
  const running = pod.phase === "Running";
  const spec: JsonObject = {
    containers: [{ name: "app", image: "registry.example/app:1" }],
    restartPolicy: "Always",
    schedulerName: "default-scheduler",
    serviceAccountName: "default",
    terminationGracePeriodSeconds: 30,
    ...(pod.nodeName === undefined ? {} : { nodeName: pod.nodeName }),
    ...pod.spec,
  };
  const containers = Array.isArray(spec.containers) ? spec.containers.filter(isJsonObject) : [];
  const status: JsonObject = {
    phase: pod.phase,
    ...(hostIP === undefined || pod.nodeName === undefined ? {} : { hostIP }),
    ...(podIP === undefined ? {} : { podIP, podIPs: podIPs.map((ip) => ({ ip })) }),
    conditions: [{ type: "Ready", status: running ? "True" : "False" }],
    containerStatuses: containers.map((c) => ({
      name: c.name,
      image: c.image,
      ready: running,
      restartCount: 0,
    })),
    ...pod.status,
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: pod.namespace,
      name: pod.name,
      ...(pod.uid === undefined ? {} : { uid: pod.uid }),
      ...(pod.labels === undefined ? {} : { labels: pod.labels }),
      ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
    },
    spec,
    status,
  };
}

/** The InternalIP of a world node, by node name. */
export function hostIpOf(world: KubeWorldContext, nodeName: string | undefined): string | undefined {
  const node = world.kubernetes?.nodes.find(
    (n) => (n.name ?? defaultNodeName(world, n.instance)) === nodeName,
  );
  const instance = world.instances.find((i) => i.id === node?.instance);
  return instance === undefined ? undefined : primaryIpv4Of(instance);
}

/** The served resource of a manifest's apiVersion and kind (its primary API for Events), or undefined. */
export function resourceOfManifest(raw: JsonObject): ResourceDef | undefined {
  const apiVersion = typeof raw.apiVersion === "string" ? raw.apiVersion : "";
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  return resources.find((r) => r.group === group && r.version === version && r.kind === raw.kind);
}

function must(group: string, version: string, plural: string): ResourceDef {
  const found = findResource(group, version, plural);
  if (found === undefined) throw new Error(`internal: ${plural} is not served`);
  return found;
}

/**
 * The objects the world's `kubernetes` section starts with, in creation order: namespaces, nodes,
 * NetworkAttachmentDefinitions, IPPools, reservations, pods, then the raw objects.
 */
export function seedObjectsOf(world: KubeWorldContext): SeedObject[] {
  const k = world.kubernetes;
  if (k === undefined) return [];
  const seeds: SeedObject[] = [];
  const pods = must("", "v1", "pods");
  for (const [i, node] of k.nodes.entries()) {
    seeds.push({
      resource: must("", "v1", "nodes"),
      object: nodeObject(world, node),
      path: ["kubernetes", "nodes", i],
    });
  }
  for (const [i, nad] of k.networkAttachmentDefinitions.entries()) {
    seeds.push({
      resource: must("k8s.cni.cncf.io", "v1", "network-attachment-definitions"),
      object: {
        apiVersion: "k8s.cni.cncf.io/v1",
        kind: "NetworkAttachmentDefinition",
        metadata: {
          namespace: nad.namespace,
          name: nad.name,
          ...(nad.labels === undefined ? {} : { labels: nad.labels }),
          ...(nad.annotations === undefined ? {} : { annotations: nad.annotations }),
        },
        spec: { config: typeof nad.config === "string" ? nad.config : JSON.stringify(nad.config) },
      },
      path: ["kubernetes", "networkAttachmentDefinitions", i],
    });
  }
  for (const [i, pool] of k.ipPools.entries()) {
    seeds.push({
      resource: must("whereabouts.cni.cncf.io", "v1alpha1", "ippools"),
      object: {
        apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
        kind: "IPPool",
        metadata: {
          namespace: pool.namespace,
          name: pool.name ?? pool.range.replaceAll(":", "-").replaceAll("/", "-"),
        },
        spec: { range: pool.range, allocations: pool.allocations },
      },
      path: ["kubernetes", "ipPools", i],
    });
  }
  for (const [i, r] of k.overlappingRangeIPReservations.entries()) {
    seeds.push({
      resource: must("whereabouts.cni.cncf.io", "v1alpha1", "overlappingrangeipreservations"),
      object: {
        apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
        kind: "OverlappingRangeIPReservation",
        metadata: { namespace: r.namespace, name: r.name ?? reservationName(r.ip) },
        spec: {
          containerid: r.containerid,
          podref: r.podref,
          ...(r.ifname === undefined ? {} : { ifname: r.ifname }),
        },
      },
      path: ["kubernetes", "overlappingRangeIPReservations", i],
    });
  }
  for (const [i, pod] of k.pods.entries()) {
    seeds.push({
      resource: pods,
      object: podObject(pod, hostIpOf(world, pod.nodeName)),
      path: ["kubernetes", "pods", i],
    });
  }
  for (const [i, raw] of k.objects.entries()) {
    const resource = resourceOfManifest(raw);
    if (resource === undefined) continue;
    const metadata = isJsonObject(raw.metadata) ? raw.metadata : {};
    seeds.push({
      resource,
      object: {
        ...raw,
        metadata: {
          ...metadata,
          ...(resource.namespaced ? { namespace: metadata.namespace ?? "default" } : {}),
        },
      } as KubeObject,
      path: ["kubernetes", "objects", i],
    });
  }
  return seeds;
}

/** Every namespace the world's objects need: the built-in ones, the listed ones, and those objects use. */
export function namespacesOf(world: KubeWorldContext, seeds: readonly SeedObject[]): string[] {
  const names = new Set<string>([...builtinNamespaces, ...(world.kubernetes?.namespaces ?? [])]);
  for (const seed of seeds)
    if (seed.resource.namespaced) names.add(seed.object.metadata.namespace ?? "default");
  return [...names];
}

/** The Namespace object of `name`. */
export function namespaceObject(name: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, labels: { "kubernetes.io/metadata.name": name } },
    spec: { finalizers: ["kubernetes"] },
    status: { phase: "Active" },
  };
}

function validCidrRange(text: string): boolean {
  const [address, prefix, ...rest] = text.split("/");
  const first = address?.split("-")[0] ?? "";
  const family = addressFamily(first);
  if (rest.length > 0 || family === undefined || prefix === undefined || !/^\d+$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

/** Cross-field rules of the `kubernetes` section; each problem has its path. */
export function checkKubernetes(
  world: KubeWorldContext,
  problem: (path: (string | number)[], message: string) => void,
): void {
  const k = world.kubernetes;
  if (k === undefined) return;
  const nodeNames = new Set<string>();
  const instances = new Set(world.instances.map((i) => i.id));
  k.nodes.forEach((node, i) => {
    if (!instances.has(node.instance)) {
      problem(
        ["kubernetes", "nodes", i, "instance"],
        `unknown instance ${node.instance}: list it under instances`,
      );
      return;
    }
    const name = node.name ?? defaultNodeName(world, node.instance);
    if (nodeNames.has(name)) problem(["kubernetes", "nodes", i, "name"], `duplicate node name ${name}`);
    nodeNames.add(name);
  });
  const uids = new Set<string>();
  k.pods.forEach((pod, i) => {
    if (pod.nodeName !== undefined && !nodeNames.has(pod.nodeName)) {
      problem(
        ["kubernetes", "pods", i, "nodeName"],
        `unknown node ${pod.nodeName}: list it under kubernetes.nodes (the nodes are ${[...nodeNames].join(", ") || "none"})`,
      );
    }
    if (pod.networkStatus !== undefined && pod.annotations?.[NETWORK_STATUS_ANNOTATION] !== undefined) {
      problem(
        ["kubernetes", "pods", i, "networkStatus"],
        `set networkStatus or the ${NETWORK_STATUS_ANNOTATION} annotation, not both`,
      );
    }
    if (pod.uid !== undefined) {
      if (uids.has(pod.uid)) problem(["kubernetes", "pods", i, "uid"], `duplicate uid ${pod.uid}`);
      uids.add(pod.uid);
    }
  });
  k.ipPools.forEach((pool, i) => {
    if (!validCidrRange(pool.range)) {
      problem(
        ["kubernetes", "ipPools", i, "range"],
        `must be a CIDR such as 198.51.100.192/27, got ${JSON.stringify(pool.range)}`,
      );
    }
    for (const offset of Object.keys(pool.allocations)) {
      if (!/^\d+$/.test(offset)) {
        problem(
          ["kubernetes", "ipPools", i, "allocations", offset],
          "must be a decimal offset from the range's first address, such as 5",
        );
      }
    }
  });
  k.overlappingRangeIPReservations.forEach((r, i) => {
    if (addressFamily(r.ip) === undefined) {
      problem(
        ["kubernetes", "overlappingRangeIPReservations", i, "ip"],
        `must be an IP address, got ${JSON.stringify(r.ip)}`,
      );
    }
  });
  k.namespaces.forEach((name, i) => {
    for (const cause of nameProblems(name, "Namespace"))
      problem(["kubernetes", "namespaces", i], cause.message);
  });
  k.objects.forEach((raw, i) => {
    if (resourceOfManifest(raw) === undefined) {
      problem(
        ["kubernetes", "objects", i],
        `${String(raw.kind ?? "(no kind)")} of ${String(raw.apiVersion ?? "(no apiVersion)")} is not a kind the simulator ` +
          `serves: ${resources.map((r) => `${r.kind} (${r.group === "" ? r.version : `${r.group}/${r.version}`})`).join(", ")}`,
      );
    }
  });
  const keys = new Set<string>();
  for (const seed of seedObjectsOf(world)) {
    const { metadata } = seed.object;
    const name = typeof metadata.name === "string" ? metadata.name : "";
    const key = `${seed.resource.storage}/${metadata.namespace ?? ""}/${name}`;
    if (keys.has(key))
      problem(
        seed.path,
        `duplicate ${seed.resource.kind} ${metadata.namespace === undefined ? "" : `${metadata.namespace}/`}${name}`,
      );
    keys.add(key);
    const causes = [
      ...nameProblems(name, seed.resource.kind),
      ...metadataProblems(seed.object),
      ...seed.resource.validate(seed.resource.toView(seed.object)),
    ];
    for (const cause of causes) problem(seed.path, `${cause.field ?? ""}: ${cause.message}`);
  }
}
