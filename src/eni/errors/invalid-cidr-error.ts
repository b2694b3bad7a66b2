import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/** A text is not a CIDR block (`address/prefix`) in the strict form we accept. */
export class InvalidCidrError extends IpmgrError {
  override name = "InvalidCidrError";
  /** The text as given. */
  readonly value: string;

  /** `expected` says what a valid value looks like, e.g. "a prefix length from 0 to 32". */
  constructor(value: string, expected: string, options?: { cause?: unknown }) {
    super(`${JSON.stringify(value)} is not a valid CIDR block: expected ${expected}`, {
      ...options,
      exitCode: ExitCode.config,
    });
    this.value = value;
  }
}
