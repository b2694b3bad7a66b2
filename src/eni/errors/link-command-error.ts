import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/** A command the links agent ran on the node's links (iproute2's `ip`) failed, or its output was not understood. */
export class LinkCommandError extends IpmgrError {
  override name = "LinkCommandError";
  /** The command and its arguments, e.g. ["ip", "link", "set", "dev", "ens6", "name", "multus1"]. */
  readonly command: readonly string[];
  /** What the command wrote on stderr, trimmed; empty when it could not start. */
  readonly stderr: string;

  constructor(command: readonly string[], stderr: string, message: string, options?: { cause?: unknown }) {
    super(message, { ...options, exitCode: ExitCode.internal });
    this.command = command;
    this.stderr = stderr;
  }
}
