import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/** IMDS answered with an unexpected status, or could not be reached. */
export class ImdsError extends IpmgrError {
  override name = "ImdsError";
  readonly path: string;
  /** HTTP status, or undefined when no response arrived. */
  readonly status: number | undefined;

  constructor(path: string, status: number | undefined, message: string, options?: { cause?: unknown }) {
    super(message, { ...options, exitCode: ExitCode.imds });
    this.path = path;
    this.status = status;
  }
}
