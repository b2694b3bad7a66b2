import { ExitCode } from "../../../eni/errors/exit-codes.js";
import { IpmgrError } from "../../../eni/errors/ipmgr-error.js";

/**
 * A Kubernetes API call failed. Raised only by the Kubernetes adapter (kube-client.ts), which reads the
 * status once. `status` is the HTTP status (403 Forbidden: RBAC), undefined when no answer came.
 */
export class KubeError extends IpmgrError {
  override name = "KubeError";
  /** What was asked, e.g. `create Lease kube-system/multus-ipmgr-reservations`. */
  readonly operation: string;
  readonly status: number | undefined;
  /** The Status object's reason, e.g. `Forbidden`, `Conflict`, `NotFound`. */
  readonly reason: string | undefined;

  constructor(
    fields: { operation: string; status: number | undefined; reason: string | undefined },
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, { ...options, exitCode: ExitCode.kubernetes });
    this.operation = fields.operation;
    this.status = fields.status;
    this.reason = fields.reason;
  }
}
