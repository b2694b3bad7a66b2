import { ExitCode } from "../../../eni/errors/exit-codes.js";
import { IpmgrError } from "../../../eni/errors/ipmgr-error.js";

/**
 * A request of the chained CNI plugin the bridge answers with a CNI error: `code` is the CNI error code
 * (cni-result.ts lists them), the message its `msg`, `details` one more sentence (often the cause).
 */
export class CniError extends IpmgrError {
  override name = "CniError";
  readonly code: number;
  readonly details: string;

  constructor(code: number, message: string, details = "", options?: { cause?: unknown }) {
    super(message, { ...options, exitCode: ExitCode.internal });
    this.code = code;
    this.details = details;
  }
}
