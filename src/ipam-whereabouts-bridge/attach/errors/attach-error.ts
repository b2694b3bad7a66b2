import type { Ec2Error } from "../../../eni/errors/ec2-error.js";
import { IpmgrError } from "../../../eni/errors/ipmgr-error.js";

/** The call of attach mode's sequence that failed. */
export type AttachStep = "create" | "attach" | "delete-on-termination" | "source-dest-check";

/**
 * A network's ENI could not be made or attached. The message names the network, the slot, the ENI, EC2's
 * sentence, what was done about it (the ENI deleted, or left to be attached again) and when it is tried
 * again; `cause` is the Ec2Error. Attach mode reports it (log, the AttachReport) and retries with backoff: it
 * is returned, not thrown, so one network's failure never stops the others.
 */
export class AttachError extends IpmgrError {
  override name = "AttachError";
  readonly network: string;
  readonly step: AttachStep;
  readonly eniId: string | undefined;
  /** EC2's error code, e.g. `AttachmentLimitExceeded`. */
  readonly code: string;

  constructor(
    fields: { network: string; step: AttachStep; eniId: string | undefined; cause: Ec2Error },
    message: string,
  ) {
    super(message, { cause: fields.cause, exitCode: fields.cause.exitCode });
    this.network = fields.network;
    this.step = fields.step;
    this.eniId = fields.eniId;
    this.code = fields.cause.code;
  }
}
