import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/**
 * One or more Elastic IPs of IPMGR_ELASTIC_IPS cannot follow their addresses: each problem is a sentence
 * naming the allocation, the address and the fix (see elasticIpProblem). `cause` is EC2's refusal, if any.
 */
export class ElasticIpError extends IpmgrError {
  override name = "ElasticIpError";
  readonly problems: readonly string[];

  constructor(problems: readonly string[], options?: { cause?: unknown }) {
    super(
      problems.length === 1
        ? (problems[0] ?? "an Elastic IP cannot follow its address")
        : `${problems.length} Elastic IPs cannot follow their addresses: ${problems.join("; ")}`,
      { ...options, exitCode: ExitCode.elasticIp },
    );
    this.problems = problems;
  }
}
