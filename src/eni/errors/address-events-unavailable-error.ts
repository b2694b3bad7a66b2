import { IpmgrError } from "./ipmgr-error.js";

/**
 * The address event source could not be started: `ip` is missing (ENOENT), or `ip monitor` exited at once
 * (a build without netlink monitoring, a seccomp profile that refuses netlink sockets). `command` is the
 * command line we ran; `reason` what went wrong, e.g. "spawn ip ENOENT" or "exited with code 1: ...".
 */
export class AddressEventsUnavailableError extends IpmgrError {
  override name = "AddressEventsUnavailableError";
  readonly command: string;
  readonly reason: string;

  constructor(command: string, reason: string, options?: { cause?: unknown }) {
    super(`cannot watch address events with "${command}": ${reason}`, options);
    this.command = command;
    this.reason = reason;
  }
}
