import { ExitCode } from "../exit-codes.js";
import type { Refusal } from "../types.js";
import { IpmgrError } from "./ipmgr-error.js";

/** One or more pod addresses may not be assigned (outside the allowed CIDRs or the ENI's subnet, or a primary). */
export class AddressNotAllowedError extends IpmgrError {
  override name = "AddressNotAllowedError";
  readonly refusals: readonly Refusal[];

  constructor(refusals: readonly Refusal[]) {
    super(
      refusals.length === 1
        ? (refusals[0]?.detail ?? "address refused")
        : `${refusals.length} addresses refused: ${refusals.map((r) => r.detail).join("; ")}`,
      { exitCode: ExitCode.addressNotAllowed },
    );
    this.refusals = refusals;
  }
}
