/**
 * The wave loop's and prefix mode's options, from the bridge's settings: one mapping for the binary
 * (main.ts) and for the fleet benches, which run the Bridge in-process as the binary would.
 */
import type { BridgeOptions } from "./bridge.js";
import type { PrefixModeOptions } from "./prefixes/prefix-mode.js";
import type { PrefixOverlapMode } from "./prefixes/prefix-plan.js";
import type { BridgeConfig } from "./settings.js";

/** `addressesPerEni`: the instance type's limit per ENI (IMDS), undefined when unknown. */
export function bridgeOptionsOf(config: BridgeConfig, addressesPerEni: number | undefined): BridgeOptions {
  return {
    nodeName: config.nodeName,
    allowedCidrs: config.allowedCidrs,
    deviceIndexes: config.deviceIndexes,
    waveWindowMs: config.waveWindowMs,
    releaseGraceMs: config.releaseGraceMs,
    releaseDryRun: config.releaseDryRun,
    resyncIntervalMs: config.resyncIntervalMs,
    retry: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
    recentMemoryMs: config.confirmTimeoutMs,
    addressesPerEni,
    watchSilenceMs: config.watchSilenceMs,
  };
}

/** Prefix mode's options; `overlap` is `config.prefixMode` once it is known not to be `off`. */
export function prefixModeOptionsOf(
  config: BridgeConfig,
  overlap: PrefixOverlapMode,
  addressesPerEni: number | undefined,
): PrefixModeOptions {
  return {
    nodeName: config.nodeName,
    allowedCidrs: config.allowedCidrs,
    overlap,
    releaseGraceMs: config.releaseGraceMs,
    releaseDryRun: config.releaseDryRun,
    recentMemoryMs: config.confirmTimeoutMs,
    addressesPerEni,
    watchSilenceMs: config.watchSilenceMs,
  };
}
