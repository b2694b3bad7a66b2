/**
 * Attach mode in-process against the simulator, wired as main.ts wires it (attach-wiring.ts): a world whose
 * node registers tainted with no Multus ENI, and a bridge (Bridge, BridgeLifecycle, the startup taint, the
 * reservations loop with the orphan sweep when reservations are on) built from the settings a pod would get.
 * Without a network namespace, the links agent is a stand-in reading the simulator's IMDS: a network's link
 * is `ready` once IMDS lists an ENI at its device index (so IMDS's lag shows). `stopAttachBridges` in afterEach.
 */

import { parseAttachNetworks } from "../../src/eni/attach-networks.js";
import type { Ec2CallRecord } from "../../src/eni/ec2-api.js";
import type { ImdsClient } from "../../src/eni/imds-client.js";
import { systemClock } from "../../src/eni/process/clock.js";
import { createLogger } from "../../src/eni/process/logger.js";
import { type AttachParts, attachPartsOf } from "../../src/ipam-whereabouts-bridge/attach-wiring.js";
import { Bridge } from "../../src/ipam-whereabouts-bridge/bridge.js";
import { BridgeLifecycle } from "../../src/ipam-whereabouts-bridge/bridge-lifecycle.js";
import { bridgeOptionsOf } from "../../src/ipam-whereabouts-bridge/bridge-options.js";
import { createKubeApi } from "../../src/ipam-whereabouts-bridge/kube/kube-client.js";
import { serializeLinkStatus } from "../../src/ipam-whereabouts-bridge/node/link-status.js";
import { ReservationKeeper } from "../../src/ipam-whereabouts-bridge/reservations/reservation-keeper.js";
import { ReservationsLoop } from "../../src/ipam-whereabouts-bridge/reservations/reservations-loop.js";
import { type BridgeConfig, loadBridgeConfig } from "../../src/ipam-whereabouts-bridge/settings.js";
import { BridgeMetrics } from "../../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { PodEventReporter } from "../../src/ipam-whereabouts-bridge/telemetry/pod-events.js";
import { parseWorld, type SimulatorHandle, type World } from "../../src/sim/index.js";
import { tempKubeconfig } from "./kube-proxy.js";
import { type Json, kubeEndpointOf, NODE_A } from "./kube-worlds.js";
import { ec2ApiFor, imdsFor } from "./sim-fixtures.js";

export const TAINT = "multus-ipmgr.io/enis-not-ready";
export const CLUSTER = "lab";
export const INSTANCE = "i-0a";
export const ZONE = "us-east-1a";

/** A network of the world's subnet-0b0b and sg-0c0c; `eth1` is the NAD's master (the simulator's kubelet maps ethN to device N). */
export function attachNetwork(name: string, deviceIndex: number): Record<string, unknown> {
  return {
    name,
    deviceIndex,
    subnet: { byZone: { [ZONE]: "subnet-0b0b" } },
    securityGroups: { ids: ["sg-0c0c"] },
    mtu: 9001,
  };
}

export interface AttachWorldOptions {
  /** The instance's network namespace (the hot-plug stand-in). */
  readonly netns?: string;
  readonly instanceType?: string;
  readonly ec2ReadLagMs?: number;
  readonly imdsAttachmentLagMs?: number;
  /** Pods in world-file form (taken as given: not scheduled). Default none. */
  readonly pods?: unknown[];
  readonly faults?: Record<string, unknown>;
}

/**
 * us-east-1, VPC vpc-0a0a (198.51.100.0/24); subnet-0a0a 198.51.100.0/25 and subnet-0b0b 198.51.100.128/25
 * (us-east-1a); group sg-0c0c; i-0a (m5.large: 3 ENIs) with its primary ENI only, node NODE_A tainted
 * TAINT:NoSchedule; NAD cnf/multus-ipvlan (ipvlan on eth1, whereabouts 198.51.100.192/27). Documentation ranges.
 */
export function attachWorld(options: AttachWorldOptions = {}): World {
  return parseWorld(attachWorldFile(options));
}

/** attachWorld's world in world-file form (for a simulator run as a process). */
export function attachWorldFile(options: AttachWorldOptions = {}): Record<string, unknown> {
  return {
    region: "us-east-1",
    vpc: { id: "vpc-0a0a", cidr: "198.51.100.0/24" },
    securityGroups: [{ id: "sg-0c0c", name: "multus" }],
    subnets: [
      { id: "subnet-0a0a", cidr: "198.51.100.0/25", availabilityZone: ZONE },
      { id: "subnet-0b0b", cidr: "198.51.100.128/25", availabilityZone: ZONE },
    ],
    instances: [
      {
        id: INSTANCE,
        instanceType: options.instanceType ?? "m5.large",
        ...(options.netns === undefined ? {} : { netns: options.netns }),
        enis: [
          {
            id: "eni-0a0",
            mac: "02:00:00:00:01:00",
            deviceIndex: 0,
            subnet: "subnet-0a0a",
            primaryIpv4: "198.51.100.10",
          },
        ],
      },
    ],
    ...(options.ec2ReadLagMs === undefined ? {} : { ec2ReadLagMs: options.ec2ReadLagMs }),
    ...(options.imdsAttachmentLagMs === undefined
      ? {}
      : { imdsAttachmentLagMs: options.imdsAttachmentLagMs }),
    ...(options.faults === undefined ? {} : { faults: options.faults }),
    kubernetes: {
      namespaces: ["cnf"],
      nodes: [{ instance: INSTANCE, taints: [{ key: TAINT, effect: "NoSchedule" }] }],
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
      pods: options.pods ?? [],
    },
  };
}

/** The environment of the bridge's container for `networks` networks (eth1, eth2, ...). */
export function attachEnv(networks = 1, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_NAME: NODE_A,
    IPMGR_ALLOWED_CIDRS: "198.51.100.192/26",
    IPMGR_BRIDGE_ATTACH: "on",
    IPMGR_BRIDGE_ATTACH_NETWORKS: JSON.stringify(
      Array.from({ length: networks }, (_, i) => attachNetwork(`eth${i + 1}`, i + 1)),
    ),
    IPMGR_CLUSTER_NAME: CLUSTER,
    IPMGR_BRIDGE_RESERVATIONS: "off",
    IPMGR_BRIDGE_ORPHANS: "off",
    IPMGR_BRIDGE_WAVE_WINDOW_MS: "50",
    IPMGR_BRIDGE_RETRY_BASE_MS: "50",
    IPMGR_BRIDGE_RETRY_MAX_MS: "500",
    ...extra,
  };
}

/** The links agent's report as a stand-in writes it: each network ready once IMDS shows its device. */
export function imdsLinkStatus(imds: ImdsClient, config: BridgeConfig): () => Promise<string> {
  const networks = parseAttachNetworks(config.attachNetworks);
  if (!Array.isArray(networks)) throw new Error("the networks do not parse");
  return async () => {
    const byDevice = new Map<number, string>();
    for (const mac of await imds.macs()) byDevice.set(await imds.deviceNumber(mac), mac);
    return serializeLinkStatus({
      version: 1,
      writtenAt: new Date().toISOString(),
      links: networks.map((n) => {
        const mac = byDevice.get(n.deviceIndex);
        return {
          network: n.name,
          deviceIndex: n.deviceIndex,
          networkCardIndex: n.networkCardIndex,
          ...(mac === undefined ? {} : { mac }),
          state: mac === undefined ? "waiting" : "ready",
          detail: mac === undefined ? "no ENI in IMDS yet" : `${n.name}: up`,
        };
      }),
    });
  };
}

export interface AttachBridge {
  readonly config: BridgeConfig;
  readonly lifecycle: BridgeLifecycle;
  readonly bridge: Bridge;
  readonly parts: AttachParts;
  readonly metrics: BridgeMetrics;
  readonly calls: Ec2CallRecord[];
  /** http://127.0.0.1:port */
  readonly base: string;
  /** Stops this bridge now (as a SIGTERM would); idempotent. */
  stop(): Promise<void>;
  metric(series: string): Promise<number | undefined>;
}

const running: { stop: () => Promise<void> }[] = [];

export async function stopAttachBridges(): Promise<void> {
  for (const r of running.splice(0).reverse()) await r.stop();
}

export interface AttachBridgeSetup {
  /** Overrides of attachEnv(). */
  readonly env?: Record<string, string>;
  /** Changes the loaded config (bounds the settings parser enforces, e.g. a grace below 60 s). */
  readonly tweak?: (config: BridgeConfig) => BridgeConfig;
  /** The links agent's report; default imdsLinkStatus. */
  readonly readLinkStatus?: (imds: ImdsClient, config: BridgeConfig) => () => Promise<string | undefined>;
}

/** A bridge on NODE_A with attach mode on, started (HTTP on 127.0.0.1, a free port) and running. */
export async function startAttachBridge(
  sim: SimulatorHandle,
  setup: AttachBridgeSetup = {},
): Promise<AttachBridge> {
  const loaded = loadBridgeConfig([], { ...attachEnv(), ...setup.env });
  const config = setup.tweak?.(loaded) ?? loaded;
  const kubeconfig = await tempKubeconfig(kubeEndpointOf(sim));
  const logger = createLogger("silent");
  const clock = systemClock;
  const kube = createKubeApi({
    kubeconfig: kubeconfig.path,
    clock,
    logger,
    watchTimeoutSeconds: 300,
    requestTimeoutMs: 5_000,
    restartBaseMs: 50,
    restartMaxMs: 200,
    component: "multus-ipmgr-bridge",
    host: config.nodeName,
  });
  const metrics = new BridgeMetrics();
  const calls: Ec2CallRecord[] = [];
  const inflight = new AbortController();
  const ec2 = ec2ApiFor(sim, {
    observer: (record) => {
      calls.push(record);
      metrics.ec2Observer(record);
    },
  });
  const imds = imdsFor(sim, INSTANCE, { clock });
  const events = new PodEventReporter(kube, clock, logger, metrics, {
    repeatIntervalMs: 60_000,
    perSecond: 100,
    burst: 100,
  });
  const parts = attachPartsOf(config, {
    kube,
    imds,
    ec2,
    clock,
    logger,
    metrics,
    events,
    prefixes: undefined,
    readLinkStatus: (setup.readLinkStatus ?? imdsLinkStatus)(imds, config),
  });
  if (parts === undefined) throw new Error("attach mode is off");
  const bridge = new Bridge(
    { kube, imds, ec2, clock, logger, metrics, events, attach: parts.step },
    bridgeOptionsOf(config, 29),
  );
  const keeper =
    config.reservations === "off"
      ? undefined
      : new ReservationKeeper(
          { kube, ec2, clock, logger, metrics },
          {
            mode: config.reservations,
            leaseNamespace: config.leaseNamespace,
            leaseName: config.leaseName,
            leaseDurationMs: config.leaseDurationMs,
            identity: `${config.nodeName}_${running.length}`,
            vpcId: "vpc-0a0a",
          },
        );
  const orphans = keeper === undefined ? undefined : parts.orphans(() => keeper.lease.holds());
  const reservations =
    keeper === undefined
      ? undefined
      : new ReservationsLoop(keeper, bridge, {
          intervalMs: config.reservationIntervalMs,
          clock,
          logger,
          ...(orphans === undefined ? {} : { orphans }),
        });
  const lifecycle = new BridgeLifecycle({
    waves: bridge,
    reservations,
    ...(parts.startupTaint === undefined ? {} : { startupTaint: parts.startupTaint }),
    events,
    kube,
    metrics,
    clock,
    logger,
    inflight,
    http: { host: "127.0.0.1", port: 0 },
  });
  await lifecycle.start();
  const loop = lifecycle.run();
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      await lifecycle.shutdown(5_000);
      await loop;
      kubeconfig.remove();
    })();
    return stopped;
  };
  running.push({ stop });
  return {
    config,
    lifecycle,
    bridge,
    parts,
    metrics,
    calls,
    base: `http://127.0.0.1:${lifecycle.http?.port}`,
    stop,
    metric: async (series) => {
      const line = (await metrics.text()).split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    },
  };
}

/** The node's taints' keys, from the simulator's state. */
export function nodeTaints(sim: SimulatorHandle): string[] {
  type RawNode = { metadata: { name: string }; spec?: { taints?: { key: string }[] } };
  const nodes = (sim.state().kubernetes?.nodes ?? []) as unknown as RawNode[];
  return nodes.find((n) => n.metadata.name === NODE_A)?.spec?.taints?.map((t) => t.key) ?? [];
}

/** The ENIs CreateNetworkInterface made (createdAt set), as the simulator holds them. */
export function madeEnis(sim: SimulatorHandle): ReturnType<SimulatorHandle["state"]>["enis"] {
  return sim.state().enis.filter((e) => e.createdAt !== null && e.createdAt !== undefined);
}

/** The Events on the Node, as `reason message`. */
export function nodeEvents(sim: SimulatorHandle): { reason: string; message: string }[] {
  type RawEvent = { reason: string; message: string; involvedObject: { kind: string; name: string } };
  return ((sim.state().kubernetes?.events ?? []) as unknown as RawEvent[])
    .filter((e) => e.involvedObject.kind === "Node")
    .map((e) => ({ reason: e.reason, message: e.message }));
}

/** A Multus pod through the API (the scheduler and kubelet stand-ins act on it), tolerating nothing. */
export const multusPodSpec = (name: string): Json => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "cnf", annotations: { "k8s.v1.cni.cncf.io/networks": "multus-ipvlan" } },
  spec: { containers: [{ name: "app", image: "registry.example/app:1" }] },
});
