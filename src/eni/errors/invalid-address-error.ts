import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/** A text is not an IP address in the strict form we accept. */
export class InvalidAddressError extends IpmgrError {
  override name = "InvalidAddressError";
  /** The text as given. */
  readonly value: string;

  /** `expected` says what a valid value looks like, e.g. "an IPv4 address in four decimal octets". */
  constructor(value: string, expected: string, options?: { cause?: unknown }) {
    super(`${JSON.stringify(value)} is not a valid IP address: expected ${expected}`, {
      ...options,
      exitCode: ExitCode.config,
    });
    this.value = value;
  }
}
