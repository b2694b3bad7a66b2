import { systemClock } from "./clock.js";
import type { PodConfig } from "./config.js";
import { imdsEndpointOf, interfaceSelection } from "./config.js";
import type { Ec2CallObserver } from "./ec2-api.js";
import { ImdsClient } from "./imds-client.js";
import { LazyEc2Api } from "./lazy-ec2-api.js";
import type { Logger } from "./logger.js";
import { NetworkStatusSource } from "./network-status-source.js";
import { OsInterfaceSource } from "./os-interface-source.js";
import type { ReconcileDeps } from "./reconcile.js";

/**
 * Builds the real adapters for a pod-level command (init, sidecar) from its configuration. The EC2 SDK is
 * loaded only on the first EC2 call, so a pod whose addresses are already in place never loads it.
 */
export function buildPodDeps(
  config: PodConfig,
  logger: Logger,
  options: { observer?: Ec2CallObserver; signal?: AbortSignal } = {},
): ReconcileDeps & { readonly ec2: LazyEc2Api; readonly imds: ImdsClient } {
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  const imds = new ImdsClient({
    endpoint: imdsEndpointOf(config),
    requestTimeoutMs: config.imdsTimeoutMs,
    clock: systemClock,
    logger,
    ...signal,
  });
  const selection = interfaceSelection(config);
  const interfaces =
    config.addressSource === "network-status"
      ? new NetworkStatusSource(config.networkStatusFile, selection)
      : new OsInterfaceSource(selection);
  const ec2 = new LazyEc2Api(async () => {
    const region = config.region ?? (await imds.region());
    const { createEc2Api } = await import("./ec2-client.js");
    return createEc2Api({
      region,
      ...(config.ec2Endpoint === undefined ? {} : { endpoint: config.ec2Endpoint }),
      requestTimeoutMs: config.ec2TimeoutMs,
      retry: {
        maxAttempts: config.ec2MaxAttempts,
        baseDelayMs: config.ec2RetryBaseMs,
        maxDelayMs: config.ec2RetryMaxMs,
      },
      logger,
      ...(options.observer === undefined ? {} : { observer: options.observer }),
      ...signal,
    });
  });
  return { imds, ec2, interfaces, clock: systemClock, logger };
}
