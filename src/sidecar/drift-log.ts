/** What drift episodes report, logged and counted: each conflict and each drift once per episode. */
import type { EpisodeEvent } from "../eni/drift-episodes.js";
import type { Logger } from "../eni/process/logger.js";
import type { Placement } from "../eni/types.js";
import type { SidecarMetrics } from "./metrics.js";

/** Logs `event`; `placement` is where the address belongs here, when the last view knew it. */
export function logEpisodeEvent(
  event: EpisodeEvent,
  placement: Placement | undefined,
  logger: Logger,
  metrics: SidecarMetrics,
): void {
  const { episode } = event;
  const where = placement === undefined ? "" : ` on ${placement.interfaceName} here (ENI ${placement.eniId})`;
  switch (event.kind) {
    case "conflict":
      metrics.conflict();
      logger.warn(
        {
          address: episode.address,
          interface: placement?.interfaceName,
          ourEniId: placement?.eniId,
          otherEniId: episode.rival,
        },
        `conflict: ${episode.address} is configured${where} but ENI ${episode.rival} holds it; another pod ` +
          "claims the same address (split brain?). Taking it back with backoff, at once if it is let go; " +
          "logged once per episode.",
      );
      break;
    case "drift":
      logger.warn(
        { address: episode.address, interface: placement?.interfaceName, ourEniId: placement?.eniId },
        `drift: ${episode.address} is configured${where} but no ENI holds it any more; assigning it again ` +
          "at once. Logged once per episode.",
      );
      break;
    case "over":
      logger.info(
        {
          address: episode.address,
          repairs: episode.repairs,
          moves: episode.moves,
          otherEniId: episode.rival,
        },
        event.reason === "quiet"
          ? "drift episode over: our ENI has held the address undisturbed"
          : "drift episode over: the address is no longer configured here",
      );
      break;
  }
}
