import { type CheckResult, ok, problem } from "../check.js";
import type { InstanceIdentity } from "../identity.js";
import type { ImdsProbeResult } from "../imds-probe.js";

export interface ImdsContext {
  readonly endpoint: string;
  readonly timeoutMs: number;
  /** This instance's id when something other than IMDS told us (the probe's IMDSv1 GET, EC2 by MAC). */
  readonly instanceId: string | undefined;
}

const PROVIDER_ID_HINT =
  "the node's instance id ends its providerID: kubectl get node <node> -o jsonpath='{.spec.providerID}'";

/** The IMDS token check: the hop limit, a disabled endpoint, a blocked path. */
export function imdsCheck(result: ImdsProbeResult, context: ImdsContext): CheckResult {
  const { endpoint, timeoutMs } = context;
  const id = context.instanceId ?? "<instance-id>";
  const idHint = context.instanceId === undefined ? ` (${PROVIDER_ID_HINT})` : "";
  switch (result.kind) {
    case "ok":
      return ok("imds", `IMDSv2 at ${endpoint} issued a token in ${result.durationMs} ms.`);
    case "token-timeout": {
      const get =
        result.getStatus === 401
          ? "a GET without a token was answered at once (HTTP 401: tokens are required)"
          : result.getStatus === 200
            ? "a GET without a token was answered at once (HTTP 200: IMDSv1 is still allowed on this instance)"
            : `a GET without a token was answered at once (HTTP ${result.getStatus})`;
      return problem(
        "imds",
        `the IMDSv2 token request (PUT ${endpoint}/latest/api/token) got no answer within ${timeoutMs} ms, but ${get}: ` +
          "IMDS is reachable and only the token's answer is lost. The instance's metadata hop limit " +
          "(HttpPutResponseHopLimit) is 1, and a pod outside the host network is one hop further away, so init " +
          "and the sidecar exit 3.",
        {
          fix:
            `aws ec2 modify-instance-metadata-options --instance-id ${id} --http-put-response-hop-limit 2 ` +
            `--http-tokens required${idHint}; for nodes to come, set MetadataOptions.HttpPutResponseHopLimit ` +
            "to 2 in the node group's launch template",
        },
      );
    }
    case "status":
      if (result.status === 403) {
        return problem(
          "imds",
          `IMDS at ${endpoint} answered 403 to the token request: the instance metadata endpoint is disabled on this instance.`,
          {
            fix: `aws ec2 modify-instance-metadata-options --instance-id ${id} --http-endpoint enabled --http-put-response-hop-limit 2 --http-tokens required${idHint}`,
          },
        );
      }
      return problem("imds", `IMDS at ${endpoint} answered HTTP ${result.status} to the token request.`, {
        fix: "check that AWS_EC2_METADATA_SERVICE_ENDPOINT (if set) names the instance metadata service",
      });
    case "no-answer":
      return problem(
        "imds",
        `IMDS at ${endpoint} answered neither the token request nor a GET within ${timeoutMs} ms: the path to it is blocked or very slow.`,
        {
          fix:
            "look for a NetworkPolicy or firewall rule that drops pod traffic to 169.254.169.254/32 (fd00:ec2::254 on " +
            "IPv6-only nodes, with AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6); if IMDS is only slow, raise IPMGR_IMDS_TIMEOUT_MS",
        },
      );
    case "unreachable":
      return problem("imds", `cannot reach IMDS at ${endpoint} (${result.code}).`, {
        fix:
          "run on an EC2 instance; on IPv6-only nodes set AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6; elsewhere " +
          "(a test) set AWS_EC2_METADATA_SERVICE_ENDPOINT to a metadata endpoint",
      });
  }
}

/** Who and where this instance is, and whether AWS_REGION agrees. */
export function instanceCheck(identity: InstanceIdentity, configuredRegion: string | undefined): CheckResult {
  const who =
    `${identity.instanceId} (${identity.instanceType}) in ${identity.availabilityZone}, region ${identity.region}, ` +
    `account ${identity.accountId}`;
  if (configuredRegion !== undefined && configuredRegion !== identity.region) {
    return problem(
      "instance",
      `${who}, but AWS_REGION is ${configuredRegion}: EC2 calls go to ${configuredRegion}, where this instance's ENIs do not exist.`,
      { fix: `set AWS_REGION to ${identity.region}, or unset it (the region is then read from IMDS)` },
    );
  }
  return ok("instance", `${who}.`);
}

/**
 * The token check from the node's own network namespace (doctor --profile node): the hop limit cannot be the
 * cause there, since the node is where the answer's hop count starts; the other findings are the pod's.
 */
export function nodeImdsCheck(result: ImdsProbeResult, context: ImdsContext): CheckResult {
  if (result.kind !== "token-timeout") return imdsCheck(result, context);
  return problem(
    "imds",
    `the IMDSv2 token request (PUT ${context.endpoint}/latest/api/token) got no answer within ${context.timeoutMs} ms, ` +
      `but a GET without a token was answered at once (HTTP ${result.getStatus}). From the node's own network ` +
      "namespace the hop limit is not the cause (1 is enough here): something on the node drops the PUT or its answer.",
    {
      fix:
        "look for a firewall rule on the node (iptables-save or nft list ruleset) that matches 169.254.169.254 or " +
        "PUT requests; if IMDS is only slow, raise IPMGR_IMDS_TIMEOUT_MS",
    },
  );
}
