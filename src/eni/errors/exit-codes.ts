/**
 * Process exit codes, one per failure class. Documented in docs/troubleshooting.md ("Exit codes"); keep the two in step.
 * Beside the error classes, each of which names its code, so that the errors import nothing from the process
 * plumbing (src/eni/process/), which imports them.
 */
export const ExitCode = {
  ok: 0,
  /** A bug or an error we did not classify; the log has the stack. */
  internal: 1,
  /** Bad or missing configuration (environment variable, flag, world file). */
  config: 2,
  /** IMDS unreachable, disabled, or the token PUT timed out (hop limit). */
  imds: 3,
  /** EC2 refused for a missing IAM permission (UnauthorizedOperation). */
  ec2Permission: 4,
  /** EC2 refused the request (limits, subnet, parameters). */
  ec2Refused: 5,
  /** An address is outside the allowed CIDRs or the ENI's subnet, or is an ENI's primary address. */
  addressNotAllowed: 6,
  /** A pod interface's MAC matches no ENI of this instance. */
  eniNotFound: 7,
  /** A bounded wait ran out: addresses never appeared, or EC2/IMDS never confirmed. */
  timeout: 8,
  /** EC2 kept failing with throttling, 5xx or network errors after every retry. */
  ec2Unavailable: 9,
  /** `doctor` only: at least one check found a problem (the report says which, and the fix). */
  doctorProblem: 10,
  /**
   * An Elastic IP of IPMGR_ELASTIC_IPS cannot follow its address: the allocation does not exist, it points at
   * another private address, or the address carries another Elastic IP.
   */
  elasticIp: 11,
  /** `bridge` only: the Kubernetes API refused (RBAC, an unknown resource) or could not be reached at start. */
  kubernetes: 12,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];
