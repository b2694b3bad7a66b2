import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/** A bounded wait ran out. `what` names the wait, e.g. "pod addresses on net1". */
export class TimeoutError extends IpmgrError {
  override name = "TimeoutError";
  readonly what: string;
  readonly timeoutMs: number;

  constructor(what: string, timeoutMs: number, hint: string, options?: { cause?: unknown }) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}. ${hint}`, {
      ...options,
      exitCode: ExitCode.timeout,
    });
    this.what = what;
    this.timeoutMs = timeoutMs;
  }
}
