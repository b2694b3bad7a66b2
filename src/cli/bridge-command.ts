import type { CommandMain } from "./run-command.js";

/** Loads `bridge`: for the whole CLI's table (dispatch.ts) and the bridge's own bundle (start-bridge.ts). */
export async function loadBridge(): Promise<CommandMain> {
  // The bridge is long-running too, and as idle between waves: the same trade as the sidecar's.
  (await import("../eni/process/v8-footprint.js")).useSmallFootprint();
  return (await import("../ipam-whereabouts-bridge/main.js")).main;
}
