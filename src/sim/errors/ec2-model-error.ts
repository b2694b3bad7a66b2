import { Ec2ApiError } from "./ec2-api-error.js";

/**
 * A request the EC2 model refuses under one of EC2's rules (unknown ENI, address in use, over the limit, ...):
 * `code` is EC2's error code. Always a client error (HTTP 400); the responders let it through to the server,
 * which renders it as any other Ec2ApiError.
 */
export class Ec2ModelError extends Ec2ApiError {
  override name = "Ec2ModelError";

  constructor(code: string, message: string) {
    super(code, message, 400);
  }
}
