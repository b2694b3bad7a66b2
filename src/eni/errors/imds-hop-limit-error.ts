import { ImdsError } from "./imds-error.js";

/**
 * The IMDSv2 token PUT got no answer in time. From a pod outside the host network this is almost always
 * the instance's HttpPutResponseHopLimit of 1: the answer is dropped one hop too early.
 */
export class ImdsHopLimitError extends ImdsError {
  override name = "ImdsHopLimitError";
  readonly endpoint: string;
  readonly timeoutMs: number;

  constructor(endpoint: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(
      "/latest/api/token",
      undefined,
      `IMDSv2 token request to ${endpoint} got no answer within ${timeoutMs} ms. From a pod this usually means the ` +
        "instance metadata hop limit is 1; set HttpPutResponseHopLimit to 2 on the node's launch template " +
        "(aws ec2 modify-instance-metadata-options --instance-id <id> --http-put-response-hop-limit 2), " +
        "or run this container with hostNetwork: true.",
      options,
    );
    this.endpoint = endpoint;
    this.timeoutMs = timeoutMs;
  }
}
