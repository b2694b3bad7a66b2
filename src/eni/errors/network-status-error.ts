import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/** What to do when the annotation cannot be read at all: mount it, or read the interfaces instead. */
export const MOUNT_ANNOTATIONS_FIX =
  "mount the pod's annotations with the downward API (fieldPath: metadata.annotations), " +
  "or set IPMGR_ADDRESS_SOURCE=interfaces";

/**
 * The network-status annotation (or a file holding it) cannot be used: unreadable, not as Multus writes
 * it, or not about this pod. `source` is the file; the message is one sentence: the file, the problem and
 * the fix.
 */
export class NetworkStatusError extends IpmgrError {
  override name = "NetworkStatusError";
  readonly source: string;

  constructor(source: string, problem: string, fix = MOUNT_ANNOTATIONS_FIX, options?: { cause?: unknown }) {
    super(`${source}: ${problem}; ${fix}`, { ...options, exitCode: ExitCode.config });
    this.source = source;
  }
}
