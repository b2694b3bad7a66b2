/**
 * Worlds with a `kubernetes` section and helpers to talk to the simulator's Kubernetes API: raw HTTP (for
 * the protocol's details), the real @kubernetes/client-node, and a reader of watch streams.
 */
import { KubeConfig } from "@kubernetes/client-node";
import {
  parseWorld,
  type SimulatorHandle,
  type SimulatorOptions,
  startSimulator,
  type World,
} from "../../src/sim/index.js";

/** JSON as the server sent it; the assertions check its shape. */
// biome-ignore lint/suspicious/noExplicitAny: JSON from the server, checked by the tests' assertions.
export type Json = any;

export const NODE_A = "ip-198-51-100-10.ec2.internal";
export const NODE_B = "ip-198-51-100-20.ec2.internal";
export const MAC_A = "02:00:00:00:01:01";
export const MAC_B = "02:00:00:00:02:01";
/** Node A's second Multus ENI (eni-0a2, device 2), with `aws.secondMultusEni`. */
export const MAC_A2 = "02:00:00:00:01:02";

/** A pod in world-file form on `nodeName`, with a Multus network-status entry carrying `ips` on `mac`. */
export function multusPod(
  name: string,
  nodeName: string,
  ips: string[],
  mac: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    namespace: "cnf",
    name,
    nodeName,
    labels: { app: "upf" },
    networkStatus: [
      { name: "aws-cni", interface: "eth0", ips: ["198.51.100.30"], default: true },
      { name: "cnf/multus-ipvlan", interface: "net1", ips, mac },
    ],
    ...extra,
  };
}

/**
 * Two m5.large nodes (i-0a as NODE_A, i-0b as NODE_B) with a Multus ENI each in subnet-multus
 * (198.51.100.128/25, 2001:db8:100:2::/64), a NAD cnf/multus-ipvlan over 198.51.100.192/27, its IPPool,
 * and the pods given (default: upf-0 on NODE_A holding 198.51.100.193). Documentation ranges only.
 * `aws.nitro: false` makes i-0a an m4.large, a Xen type that refuses prefixes (the simulator ties Nitro to the type).
 */
export function kubeWorld(
  kubernetes: Record<string, unknown> = {},
  aws: { ipv4AddressesPerEni?: number; secondMultusEni?: boolean; nitro?: boolean } = {},
): World {
  const eni = (id: string, mac: string, deviceIndex: number, subnet: string, primaryIpv4: string) => ({
    id,
    mac,
    deviceIndex,
    subnet,
    primaryIpv4,
    ...(deviceIndex > 0 ? { tags: { "node.k8s.amazonaws.com/no_manage": "true" } } : {}),
  });
  return parseWorld({
    region: "us-east-1",
    vpc: { id: "vpc-0kube", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:100::/56" },
    subnets: [
      { id: "subnet-0nodes", cidr: "198.51.100.0/25", availabilityZone: "us-east-1a" },
      {
        id: "subnet-0multus",
        cidr: "198.51.100.128/25",
        ipv6Cidr: "2001:db8:100:2::/64",
        availabilityZone: "us-east-1a",
      },
    ],
    instances: [
      {
        id: "i-0a",
        ...(aws.ipv4AddressesPerEni === undefined ? {} : { ipv4AddressesPerEni: aws.ipv4AddressesPerEni }),
        ...(aws.nitro === false ? { instanceType: "m4.large" } : {}),
        enis: [
          eni("eni-0a0", "02:00:00:00:01:00", 0, "subnet-0nodes", "198.51.100.10"),
          eni("eni-0a1", MAC_A, 1, "subnet-0multus", "198.51.100.140"),
          ...(aws.secondMultusEni === true
            ? [eni("eni-0a2", MAC_A2, 2, "subnet-0multus", "198.51.100.141")]
            : []),
        ],
      },
      {
        id: "i-0b",
        enis: [
          eni("eni-0b0", "02:00:00:00:02:00", 0, "subnet-0nodes", "198.51.100.20"),
          eni("eni-0b1", MAC_B, 1, "subnet-0multus", "198.51.100.150"),
        ],
      },
    ],
    kubernetes: {
      namespaces: ["cnf"],
      nodes: [{ instance: "i-0a" }, { instance: "i-0b" }],
      networkAttachmentDefinitions: [
        {
          namespace: "cnf",
          name: "multus-ipvlan",
          config: {
            cniVersion: "0.3.1",
            type: "ipvlan",
            master: "eth1",
            ipam: { type: "whereabouts", range: "198.51.100.192/27" },
          },
        },
      ],
      ipPools: [
        {
          range: "198.51.100.192/27",
          allocations: { "1": { id: "c0ffee", podref: "cnf/upf-0", ifname: "net1" } },
        },
      ],
      pods: [multusPod("upf-0", NODE_A, ["198.51.100.193"], MAC_A)],
      ...kubernetes,
    },
  });
}

/** Starts the simulator on a kube world. */
export function startKubeSim(
  world: World = kubeWorld(),
  options: SimulatorOptions = {},
): Promise<SimulatorHandle> {
  return startSimulator(world, options);
}

export function kubeEndpointOf(sim: SimulatorHandle): string {
  if (sim.kubernetesEndpoint === undefined) throw new Error("the simulator serves no Kubernetes API");
  return sim.kubernetesEndpoint;
}

/**
 * A client-node KubeConfig on the simulator's API as the kubeconfig it writes: a dummy token, and
 * skipTLSVerify, without which client-node 1.x refuses a plain-HTTP server.
 */
export function kubeConfigFor(sim: SimulatorHandle): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "sim", server: kubeEndpointOf(sim), skipTLSVerify: true }],
    users: [{ name: "sim", token: "any-token" }],
    contexts: [{ name: "sim", cluster: "sim", user: "sim", namespace: "default" }],
    currentContext: "sim",
  });
  return kc;
}

/** One HTTP request to the simulated API server; the JSON body parsed (undefined when empty). */
export async function kube(
  sim: SimulatorHandle,
  method: string,
  path: string,
  body?: unknown,
  contentType = "application/json",
): Promise<{ status: number; body: Json; headers: Headers }> {
  const response = await fetch(`${kubeEndpointOf(sim)}${path}`, {
    method,
    headers: {
      authorization: "Bearer any-token",
      ...(body === undefined ? {} : { "content-type": contentType }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === "" ? undefined : JSON.parse(text),
    headers: response.headers,
  };
}

export interface WatchEvent {
  type: string;
  object: Json;
}

/** An open watch: every event so far in `events`, `ended` once the server ends the stream. */
export interface OpenWatch {
  readonly status: number;
  readonly headers: Headers;
  readonly events: WatchEvent[];
  /** Raw chunks as they arrived, to check the framing. */
  readonly chunks: string[];
  readonly ended: Promise<void>;
  /** Resolves once `count` events have arrived (throws after 10 s). */
  until(count: number): Promise<WatchEvent[]>;
  close(): void;
}

/** Opens `GET path` (a watch) and reads its newline-delimited events as they come. */
export async function openWatch(sim: SimulatorHandle, path: string): Promise<OpenWatch> {
  const controller = new AbortController();
  const response = await fetch(`${kubeEndpointOf(sim)}${path}`, { signal: controller.signal });
  const events: WatchEvent[] = [];
  const chunks: string[] = [];
  const waiters: (() => void)[] = [];
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  const ended = (async () => {
    let buffer = "";
    try {
      for (;;) {
        const { done, value } = (await reader?.read()) ?? { done: true, value: undefined };
        if (done) return;
        const text = decoder.decode(value, { stream: true });
        chunks.push(text);
        buffer += text;
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          events.push(JSON.parse(buffer.slice(0, newline)) as WatchEvent);
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf("\n");
        }
        for (const wake of waiters.splice(0)) wake();
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    } finally {
      for (const wake of waiters.splice(0)) wake();
    }
  })();
  let finished = false;
  const endedFlag = ended.then(() => {
    finished = true;
  });
  return {
    status: response.status,
    headers: response.headers,
    events,
    chunks,
    ended: endedFlag,
    async until(count) {
      const deadline = Date.now() + 10_000;
      while (events.length < count) {
        if (finished)
          throw new Error(
            `the watch ended after ${events.length} events, ${count} expected: ${JSON.stringify(events.map((e) => e.type))}`,
          );
        if (Date.now() > deadline)
          throw new Error(
            `only ${events.length} of ${count} watch events arrived: ${JSON.stringify(events.map((e) => e.type))}`,
          );
        await Promise.race([
          new Promise<void>((r) => waiters.push(r)),
          new Promise((r) => setTimeout(r, 100)),
        ]);
      }
      return events.slice(0, count);
    },
    close() {
      controller.abort();
    },
  };
}

/** Polls `check` every 20 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** POST/PUT/PATCH/DELETE on the control API. */
export async function control(
  sim: SimulatorHandle,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${sim.controlEndpoint}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
}
