/**
 * Whether the sidecar's address events work here: starts `ip -o monitor address` exactly as the sidecar
 * does (through the same IpMonitor), waits until it has stayed up for a moment, and stops it.
 */

import { IpMonitor } from "../eni/address-events.js";
import { AddressEventsUnavailableError } from "../eni/errors/address-events-unavailable-error.js";
import type { Clock } from "../eni/process/clock.js";
import type { Logger } from "../eni/process/logger.js";

export type IpCommandResult =
  | { readonly ok: true; readonly command: string }
  | { readonly ok: false; readonly command: string; readonly reason: string };

export interface IpCommandProbe {
  probe(): Promise<IpCommandResult>;
}

/** Longer than the sidecar's 100 ms warm-up: doctor can afford to be surer. */
const WARMUP_MS = 300;

export class IpMonitorProbe implements IpCommandProbe {
  readonly #options: { clock: Clock; logger: Logger; command?: readonly string[] };

  /** `command`: default `ip -o monitor address`, the sidecar's. */
  constructor(options: { clock: Clock; logger: Logger; command?: readonly string[] }) {
    this.#options = options;
  }

  async probe(): Promise<IpCommandResult> {
    const monitor = new IpMonitor({ ...this.#options, warmupMs: WARMUP_MS });
    try {
      await monitor.start();
    } catch (error) {
      if (!(error instanceof AddressEventsUnavailableError)) throw error;
      return { ok: false, command: error.command, reason: error.reason };
    }
    await monitor.stop();
    return { ok: true, command: monitor.commandLine };
  }
}
