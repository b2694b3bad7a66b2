import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/** A pod interface's MAC matches no ENI attached to this instance. */
export class EniNotFoundError extends IpmgrError {
  override name = "EniNotFoundError";
  readonly interfaceName: string;
  readonly mac: string;
  readonly knownMacs: readonly string[];

  constructor(interfaceName: string, mac: string, knownMacs: readonly string[]) {
    super(
      `interface ${interfaceName} has MAC ${mac}, which matches no ENI of this instance ` +
        `(instance ENIs: ${knownMacs.join(", ") || "none"}). With ipvlan the pod interface carries its parent ENI's ` +
        "MAC: check the NetworkAttachmentDefinition's master, or exclude the interface with IPMGR_EXCLUDE_INTERFACES.",
      { exitCode: ExitCode.eniNotFound },
    );
    this.interfaceName = interfaceName;
    this.mac = mac;
    this.knownMacs = knownMacs;
  }
}
