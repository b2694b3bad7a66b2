/**
 * Whether this node's instance type takes delegated prefixes, asked once (DescribeInstanceTypes, as doctor's
 * prefix-support check does): EC2 delegates prefixes to Nitro instances only, so on another type prefix mode
 * refuses every slice before any call instead of learning it from a refused assign.
 */
import type { Ec2Api } from "../../eni/ec2-api.js";
import { Ec2Error } from "../../eni/errors/ec2-error.js";
import type { Logger } from "../../eni/process/logger.js";

/** The instance type and the hypervisor EC2 names for it, when that is not `nitro`. */
export interface NonNitro {
  readonly instanceType: string;
  readonly hypervisor: string;
}

export class InstancePrefixSupport {
  #known = false;
  #nonNitro: NonNitro | undefined;

  /** `instanceType` from IMDS; undefined: never asked, nothing known. */
  constructor(
    private readonly deps: { readonly ec2: Pick<Ec2Api, "describeInstanceType">; readonly logger: Logger },
    private readonly instanceType: string | undefined,
  ) {}

  /**
   * Set when the type is known not to be Nitro. Asks EC2 until it answers (EC2 unavailable: again at the next
   * wave); a refusal (the action denied) is logged, and the type counts as not known to refuse prefixes.
   */
  async nonNitro(signal: AbortSignal): Promise<NonNitro | undefined> {
    const instanceType = this.instanceType;
    if (this.#known || instanceType === undefined) return this.#nonNitro;
    try {
      const described = await this.deps.ec2.describeInstanceType(instanceType);
      this.#known = true;
      // Bare metal types name no hypervisor (doctor's prefix-support check): not known to refuse.
      if (described?.hypervisor !== undefined && described.hypervisor !== "nitro")
        this.#nonNitro = { instanceType, hypervisor: described.hypervisor };
    } catch (error) {
      if (signal.aborted) throw error;
      if (!(error instanceof Ec2Error && error.kind === "unavailable")) this.#known = true;
      this.deps.logger.warn(
        { err: error, instanceType },
        "could not tell from DescribeInstanceTypes whether the instance type takes delegated prefixes (Nitro); a slice whose prefix EC2 refuses is not tried again until its backoff ends",
      );
    }
    return this.#nonNitro;
  }
}
