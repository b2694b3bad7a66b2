/**
 * One node's bridge of a simulated fleet, in-process, with the adapters `multus-ipmgr bridge` builds (its
 * own IMDS endpoint, its own Kubernetes client, the shared EC2 endpoint) and the binary's settings read
 * from `env` by loadBridgeConfig: what bridge-fleet.ts and bridge-fleet-prefix.ts both start, 50 times.
 */
import type { Ec2CallRecord } from "../src/eni/ec2-api.js";
import { createEc2Api } from "../src/eni/ec2-client.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import { systemClock } from "../src/eni/process/clock.js";
import type { Logger } from "../src/eni/process/logger.js";
import { Bridge } from "../src/ipam-whereabouts-bridge/bridge.js";
import { bridgeOptionsOf, prefixModeOptionsOf } from "../src/ipam-whereabouts-bridge/bridge-options.js";
import { createKubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-client.js";
import { PrefixMode } from "../src/ipam-whereabouts-bridge/prefixes/prefix-mode.js";
import { loadBridgeConfig } from "../src/ipam-whereabouts-bridge/settings.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { PodEventReporter } from "../src/ipam-whereabouts-bridge/telemetry/pod-events.js";
import type { SimReady } from "../test/helpers/sim-process.js";

/** One EC2 call of a fleet's bridge, with the time its answer reached the bridge (Date.now()). */
export interface FleetCall extends Ec2CallRecord {
  readonly answeredAt: number;
}

export interface FleetBridgeOptions {
  readonly sim: SimReady;
  readonly kubeconfig: string;
  readonly logger: Logger;
  readonly nodeName: string;
  readonly instance: string;
  /** The bridge's environment (NODE_NAME is added). */
  readonly env: Readonly<Record<string, string>>;
  readonly addressesPerEni: number;
  /** Every EC2 call the bridge makes is pushed here as its answer (or last failure) arrives. */
  readonly calls: FleetCall[];
  /**
   * Prefix mode (IPMGR_BRIDGE_PREFIX_MODE in `env`): the MAC of the node's eth1, its Multus ENI. In-process,
   * the bench host's interfaces are not the node's.
   */
  readonly eth1Mac?: string;
}

export interface FleetBridge {
  readonly bridge: Bridge;
  /** Flushes its Events and closes its watches (after its run loop has ended). */
  close(): Promise<void>;
}

/** Builds and starts (its watches listed) one node's bridge; the caller runs it. */
export async function startFleetBridge(o: FleetBridgeOptions): Promise<FleetBridge> {
  const { sim, logger } = o;
  const config = loadBridgeConfig([], { ...o.env, NODE_NAME: o.nodeName });
  const metrics = new BridgeMetrics();
  const kube = createKubeApi({
    kubeconfig: o.kubeconfig,
    clock: systemClock,
    logger,
    watchTimeoutSeconds: 300,
    requestTimeoutMs: 10_000,
    restartBaseMs: 500,
    restartMaxMs: 30_000,
    component: "multus-ipmgr-bridge",
    host: o.nodeName,
  });
  const imds = new ImdsClient({
    endpoint: sim.imds[o.instance] ?? "",
    requestTimeoutMs: config.imdsTimeoutMs,
    clock: systemClock,
    logger,
  });
  const ec2 = createEc2Api({
    region: "us-east-1",
    endpoint: sim.ec2,
    credentials: { accessKeyId: "sim", secretAccessKey: "sim" },
    requestTimeoutMs: config.ec2TimeoutMs,
    retry: {
      maxAttempts: config.ec2MaxAttempts,
      baseDelayMs: config.ec2RetryBaseMs,
      maxDelayMs: config.ec2RetryMaxMs,
    },
    logger,
    observer: (record) => {
      o.calls.push({ ...record, answeredAt: Date.now() });
      metrics.ec2Observer(record);
    },
  });
  const events = new PodEventReporter(kube, systemClock, logger, metrics, {
    repeatIntervalMs: config.eventIntervalMs,
    perSecond: 5,
    burst: 25,
  });
  let prefixes: PrefixMode | undefined;
  if (config.prefixMode !== "off") {
    const eth1Mac = o.eth1Mac;
    if (eth1Mac === undefined) throw new Error("bench: prefix mode needs the node's eth1 MAC");
    prefixes = new PrefixMode(
      { kube, ec2, clock: systemClock, logger, metrics, events },
      {
        ...prefixModeOptionsOf(config, config.prefixMode, o.addressesPerEni),
        hostMacs: () => new Map([["eth1", eth1Mac]]),
      },
    );
  }
  const bridge = new Bridge(
    {
      kube,
      imds,
      ec2,
      clock: systemClock,
      logger,
      metrics,
      events,
      ...(prefixes === undefined ? {} : { prefixes }),
    },
    bridgeOptionsOf(config, o.addressesPerEni),
  );
  await bridge.start();
  return {
    bridge,
    close: async () => {
      await events.flush();
      await kube.close();
    },
  };
}
