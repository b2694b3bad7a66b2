import type { Refusal } from "../types.js";
import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/**
 * One or more pod addresses may not be assigned (outside the allowed CIDRs or the ENI's subnet, or a primary).
 * `cause` is the EC2 refusal when EC2, not the planner, found the problem (another instance's primary address).
 */
export class AddressNotAllowedError extends IpmgrError {
  override name = "AddressNotAllowedError";
  readonly refusals: readonly Refusal[];

  constructor(refusals: readonly Refusal[], options?: { cause?: unknown }) {
    super(
      refusals.length === 1
        ? (refusals[0]?.detail ?? "address refused")
        : `${refusals.length} addresses refused: ${refusals.map((r) => r.detail).join("; ")}`,
      { ...options, exitCode: ExitCode.addressNotAllowed },
    );
    this.refusals = refusals;
  }
}
