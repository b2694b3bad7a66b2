import { IpMonitor, type IpMonitorOptions } from "../eni/address-events.js";
import { AddressEventsUnavailableError } from "../eni/errors/address-events-unavailable-error.js";
import { ConfigError } from "../eni/errors/config-error.js";

/**
 * IPMGR_ADDRESS_EVENTS: `auto` uses `ip monitor` when it works and polls otherwise, `ip-monitor` requires
 * it, `poll` never starts it.
 */
export type AddressEventsMode = "auto" | "ip-monitor" | "poll";

export interface StartAddressEventsOptions extends IpMonitorOptions {
  readonly mode: AddressEventsMode;
  /**
   * Whether addresses are read from the pod's interfaces. Events only say that an interface changed, so
   * with another address source (the network-status file) there is nothing for them to do.
   */
  readonly watchesInterfaces: boolean;
  /** For the startup log line: the poll period without events, in ms (IPMGR_POLL_INTERVAL_MS). */
  readonly pollIntervalMs: number;
  /** For the startup log line: the safety-net poll period with events, in ms (IPMGR_EVENTS_FALLBACK_POLL_MS). */
  readonly fallbackPollMs: number;
}

const VARIABLE = "IPMGR_ADDRESS_EVENTS";

/**
 * Starts the address event source the mode asks for and logs, once, how addresses are watched. Returns
 * undefined when the watcher is to poll only. Throws ConfigError when `ip-monitor` is required and cannot
 * run, or makes no sense with the configured address source.
 */
export async function startAddressEvents(options: StartAddressEventsOptions): Promise<IpMonitor | undefined> {
  const { mode, logger } = options;
  const polling = (reason: string | undefined): undefined => {
    const fields = { addressEvents: "poll", pollIntervalMs: options.pollIntervalMs };
    const message = `watching pod addresses by polling every ${options.pollIntervalMs} ms`;
    if (reason === undefined) logger.info(fields, message);
    else logger.warn({ ...fields, reason }, `${message}: ${reason}`);
    return undefined;
  };
  if (!options.watchesInterfaces) {
    if (mode === "ip-monitor") {
      throw new ConfigError(
        VARIABLE,
        mode,
        "interface events need IPMGR_ADDRESS_SOURCE=interfaces; with the network-status file set IPMGR_ADDRESS_EVENTS=auto or poll",
      );
    }
    return polling(undefined);
  }
  if (mode === "poll") return polling(undefined);
  const monitor = new IpMonitor(options);
  try {
    await monitor.start();
  } catch (error) {
    if (!(error instanceof AddressEventsUnavailableError)) throw error;
    if (mode === "ip-monitor") {
      throw new ConfigError(
        VARIABLE,
        mode,
        `cannot run "${error.command}" (${error.reason}). Install iproute2 in the image, or set ${VARIABLE}=auto to poll when it is missing`,
        { cause: error },
      );
    }
    return polling(`${error.message}; install iproute2 in the image for event-driven detection`);
  }
  logger.info(
    {
      addressEvents: "ip-monitor",
      monitorCommand: monitor.commandLine,
      fallbackPollMs: options.fallbackPollMs,
    },
    `watching pod addresses through "${monitor.commandLine}" events, with a safety-net poll every ${options.fallbackPollMs} ms`,
  );
  return monitor;
}
