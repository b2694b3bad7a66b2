import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/**
 * How an EC2 failure is treated:
 * `permission` (UnauthorizedOperation), `refused` (any other client error),
 * `unavailable` (throttling, 5xx, network errors still failing after every retry).
 */
export type Ec2ErrorKind = "permission" | "refused" | "unavailable";

/** An EC2 API call failed. Raised only by the EC2 adapter, which translates AWS error codes once. */
export class Ec2Error extends IpmgrError {
  override name = "Ec2Error";
  /** EC2 action, e.g. `AssignPrivateIpAddresses`. */
  readonly operation: string;
  /** EC2 error code, e.g. `UnauthorizedOperation`; `NetworkError` when no response arrived. */
  readonly code: string;
  readonly requestId: string | undefined;
  readonly eniId: string | undefined;
  readonly kind: Ec2ErrorKind;

  constructor(
    fields: {
      operation: string;
      code: string;
      requestId: string | undefined;
      eniId: string | undefined;
      kind: Ec2ErrorKind;
    },
    message: string,
    options?: { cause?: unknown },
  ) {
    const exitCode =
      fields.kind === "permission"
        ? ExitCode.ec2Permission
        : fields.kind === "refused"
          ? ExitCode.ec2Refused
          : ExitCode.ec2Unavailable;
    super(message, { ...options, exitCode });
    this.operation = fields.operation;
    this.code = fields.code;
    this.requestId = fields.requestId;
    this.eniId = fields.eniId;
    this.kind = fields.kind;
  }
}
