/**
 * Attach mode's parts, built from the bridge's settings for main.ts (and the tests that run the bridge
 * in-process as the binary would): the attach step of the wave loop, the startup taint's controller beside it,
 * and the orphan sweep the reservations Lease holder runs. The rooms know nothing of each other: what one
 * reads of another is a function given here.
 */

import { AttachNetworksProblem, parseAttachNetworks } from "../eni/attach-networks.js";
import type { Ec2Api } from "../eni/ec2-api.js";
import { ConfigError } from "../eni/errors/config-error.js";
import type { Imds } from "../eni/imds.js";
import type { ImdsClient } from "../eni/imds-client.js";
import type { Clock } from "../eni/process/clock.js";
import type { Logger } from "../eni/process/logger.js";
import { AttachMode } from "./attach/attach-mode.js";
import { AttachStep } from "./attach/attach-step.js";
import { readAttachFacts } from "./attach/instance-facts.js";
import { OrphanSweeper } from "./attach/orphan-sweep.js";
import type { KubeApi } from "./kube/kube-api.js";
import type { PrefixMode } from "./prefixes/prefix-mode.js";
import type { BridgeConfig } from "./settings.js";
import { StartupTaintController } from "./startup-taint/startup-taint-controller.js";
import { LINK_STATUS_STALE_MS, LINKS_AGENT_INTERVAL_MS } from "./startup-taint/taint-decision.js";
import type { BridgeMetrics } from "./telemetry/metrics.js";
import type { PodEventReporter } from "./telemetry/pod-events.js";

export interface AttachWiringDeps {
  readonly kube: KubeApi;
  readonly imds: Pick<ImdsClient, "get"> & Pick<Imds, "instanceId" | "macs" | "vpcId">;
  readonly ec2: Ec2Api;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: BridgeMetrics;
  readonly events: PodEventReporter;
  /** Prefix mode, whose slices the startup taint waits for; undefined when off. */
  readonly prefixes: Pick<PrefixMode, "slicesHeld"> | undefined;
  /** The links agent's status file's text (tests); default: read IPMGR_BRIDGE_LINK_STATUS_FILE. */
  readonly readLinkStatus?: () => Promise<string | undefined>;
}

export interface AttachParts {
  /** The wave loop's attach step (BridgeDeps.attach). */
  readonly step: AttachStep;
  /** The startup taint's loop, beside the waves; undefined when IPMGR_BRIDGE_STARTUP_TAINT is empty. */
  readonly startupTaint: StartupTaintController | undefined;
  /**
   * The orphan sweep for the reservations loop, given the Lease's `holds`; undefined when
   * IPMGR_BRIDGE_ORPHANS=off.
   */
  orphans(holds: () => boolean): OrphanSweeper | undefined;
}

/** Attach mode's parts; undefined when IPMGR_BRIDGE_ATTACH=off. */
export function attachPartsOf(config: BridgeConfig, deps: AttachWiringDeps): AttachParts | undefined {
  if (config.attach !== "on") return undefined;
  const { kube, imds, ec2, clock, logger, metrics, events, prefixes } = deps;
  const networks = parseAttachNetworks(config.attachNetworks);
  if (networks instanceof AttachNetworksProblem)
    throw new ConfigError("IPMGR_BRIDGE_ATTACH_NETWORKS", config.attachNetworks, networks.problem);
  const attach = new AttachMode({ ec2, clock, logger }, { clusterName: config.clusterName, networks });
  let startupTaint: StartupTaintController | undefined;
  const step = new AttachStep(
    {
      attach,
      facts: () => readAttachFacts(imds, ec2, logger),
      clock,
      metrics,
      events,
      onPass: () => startupTaint?.wake(),
    },
    { nodeName: config.nodeName, resyncIntervalMs: config.resyncIntervalMs },
  );
  if (config.startupTaint !== "") {
    startupTaint = new StartupTaintController(
      {
        kube,
        events,
        metrics,
        logger,
        clock,
        networks: () =>
          step.report?.networks.map((n) => ({ network: n.network, attached: n.attached, mac: n.mac })),
        slicesHeld: () => prefixes?.slicesHeld,
        ...(deps.readLinkStatus === undefined ? {} : { readLinkStatus: deps.readLinkStatus }),
      },
      {
        nodeName: config.nodeName,
        taintKey: config.startupTaint,
        linkStatusFile: config.linkStatusFile,
        // The links agent's default interval: the chart's bridge.attach.linksIntervalMs (docs/attach-mode.md).
        staleAfterMs: LINK_STATUS_STALE_MS,
        intervalMs: LINKS_AGENT_INTERVAL_MS,
        retry: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
      },
    );
  }
  return {
    step,
    startupTaint,
    orphans: (holds) => {
      if (config.orphans === "off") return undefined;
      return new OrphanSweeper(
        { ec2, holds, logger, metrics },
        { mode: config.orphans, clusterName: config.clusterName, graceMs: config.orphanGraceMs },
      );
    },
  };
}

/** The warning when attach mode's orphans cannot be swept: the sweep is the reservations Lease holder's. */
export function warnNoOrphanSweep(config: BridgeConfig, logger: Logger): void {
  if (config.attach === "on" && config.orphans !== "off" && config.reservations === "off") {
    logger.warn(
      { orphans: config.orphans },
      "IPMGR_BRIDGE_ORPHANS is on but IPMGR_BRIDGE_RESERVATIONS=off: no bridge holds the Lease, so no orphaned ENI is swept; set IPMGR_BRIDGE_RESERVATIONS=report (or create), or IPMGR_BRIDGE_ORPHANS=off",
    );
  }
}
