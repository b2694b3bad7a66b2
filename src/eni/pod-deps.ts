import type { Ec2CallObserver } from "./ec2-api.js";
import { ImdsClient } from "./imds-client.js";
import { LazyEc2Api } from "./lazy-ec2-api.js";
import { NetworkStatusSource } from "./network-status-source.js";
import { OsInterfaceSource } from "./os-interface-source.js";
import { systemClock } from "./process/clock.js";
import type { PodConfig } from "./process/config.js";
import { imdsEndpointOf, interfaceSelection } from "./process/config.js";
import type { Logger } from "./process/logger.js";
import type { ReconcileDeps } from "./reconcile.js";

/** The settings IMDS and the EC2 adapter read: every command that calls AWS has them (pod commands, bridge). */
export type AwsConfig = Pick<
  PodConfig,
  | "imdsEndpoint"
  | "imdsEndpointMode"
  | "imdsTimeoutMs"
  | "region"
  | "ec2Endpoint"
  | "ec2TimeoutMs"
  | "ec2MaxAttempts"
  | "ec2RetryBaseMs"
  | "ec2RetryMaxMs"
>;

/**
 * The IMDS client and the EC2 adapter, from the AWS settings. The EC2 SDK is loaded on the first EC2 call
 * (or at warmUp()), so a run that needs no EC2 call never loads it. `signal` cuts the calls in flight.
 */
export function buildAwsClients(
  config: AwsConfig,
  logger: Logger,
  options: { observer?: Ec2CallObserver; signal?: AbortSignal } = {},
): { readonly imds: ImdsClient; readonly ec2: LazyEc2Api } {
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  const imds = new ImdsClient({
    endpoint: imdsEndpointOf(config),
    requestTimeoutMs: config.imdsTimeoutMs,
    clock: systemClock,
    logger,
    ...signal,
  });
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
  return { imds, ec2 };
}

/**
 * Builds the real adapters for a pod-level command (init, sidecar) from its configuration. The EC2 SDK is
 * loaded only on the first EC2 call, so a pod whose addresses are already in place never loads it.
 */
export function buildPodDeps(
  config: AwsConfig &
    Pick<PodConfig, "interfaces" | "excludeInterfaces" | "addressSource" | "networkStatusFile">,
  logger: Logger,
  options: { observer?: Ec2CallObserver; signal?: AbortSignal } = {},
): ReconcileDeps & { readonly ec2: LazyEc2Api; readonly imds: ImdsClient } {
  const { imds, ec2 } = buildAwsClients(config, logger, options);
  const selection = interfaceSelection(config);
  const interfaces =
    config.addressSource === "network-status"
      ? new NetworkStatusSource(config.networkStatusFile, selection, undefined, logger)
      : new OsInterfaceSource(selection);
  return { imds, ec2, interfaces, clock: systemClock, logger };
}
