/**
 * An EC2 error the simulator answers with: `code` and `message` go into the `<Errors>` envelope, `status`
 * is the HTTP status (400 client errors, 403 UnauthorizedOperation, 412 DryRunOperation, 5xx server side).
 */
export class Ec2ApiError extends Error {
  override name = "Ec2ApiError";
  readonly code: string;
  readonly status: number;

  constructor(code: string, message: string, status = 400) {
    super(message);
    this.code = code;
    this.status = status;
  }
}
