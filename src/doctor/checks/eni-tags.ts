import type { Ec2NetworkInterface } from "../../eni/types.js";
import { type CheckResult, ok, problem } from "../check.js";
import { eniLabel, type MultusEni } from "../multus-enis.js";

export const NO_MANAGE_TAG = "node.k8s.amazonaws.com/no_manage";

/** Each Multus ENI must carry no_manage=true, or the VPC CNI puts its own pod addresses on it. */
export function eniTagChecks(
  multus: readonly MultusEni[],
  described: readonly Ec2NetworkInterface[],
): CheckResult[] {
  const byId = new Map(described.map((e) => [e.eniId, e]));
  return multus.map((m) => {
    const subject = m.eni.eniId;
    const found = byId.get(m.eni.eniId);
    if (found === undefined) {
      return problem(
        "eni-tag",
        `EC2 DescribeNetworkInterfaces does not know ${eniLabel(m)}, which IMDS lists.`,
        {
          subject,
          fix: "the ENI was just attached or detached: run doctor again in a minute",
        },
      );
    }
    const value = found.tags[NO_MANAGE_TAG];
    if (value === "true") return ok("eni-tag", `${eniLabel(m)} carries ${NO_MANAGE_TAG}=true.`, { subject });
    const has =
      value === undefined
        ? `lacks the tag ${NO_MANAGE_TAG}=true`
        : `is tagged ${NO_MANAGE_TAG}=${value}, not ${NO_MANAGE_TAG}=true`;
    return problem(
      "eni-tag",
      `${eniLabel(m)} ${has}: the VPC CNI treats it as its own and may put its pods' addresses on it, next to your Multus range.`,
      {
        subject,
        fix: `aws ec2 create-tags --resources ${m.eni.eniId} --tags Key=${NO_MANAGE_TAG},Value=true (and tag Multus ENIs when they are created, in the launch template or the script that attaches them)`,
      },
    );
  });
}
