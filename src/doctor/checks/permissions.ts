import type { PermissionVerdict } from "../../eni/ec2-api.js";
import { type CheckResult, listText, ok, problem, skipped, warn } from "../check.js";

/** The calls init and the sidecar make that EC2 cannot probe: none of them takes DryRun. */
export const UNPROBEABLE_ACTIONS: readonly string[] = [
  "ec2:AssignPrivateIpAddresses",
  "ec2:UnassignPrivateIpAddresses",
  "ec2:AssignIpv6Addresses",
  "ec2:UnassignIpv6Addresses",
];

const GRANT = "grant it to the pod's IRSA or EKS Pod Identity role (or the node role, if the pod uses that)";

/** ec2:DescribeNetworkInterfaces, which init and the sidecar need. */
export function describePermissionCheck(verdict: PermissionVerdict): CheckResult {
  const subject = "ec2:DescribeNetworkInterfaces";
  if (verdict.allowed) {
    return ok("permission", "allowed (probed with DryRun).", { subject });
  }
  return problem(
    "permission",
    `denied (probed with DryRun): init needs it to move IPv6 addresses and to explain refused assignments, the sidecar in every drift episode. EC2 said: ${verdict.refusal.message}`,
    { subject, fix: GRANT },
  );
}

/** ec2:GetSubnetCidrReservations on each Multus subnet: doctor's own need (and the bridge's), not init's. */
export function reservationPermissionCheck(verdicts: ReadonlyMap<string, PermissionVerdict>): CheckResult {
  const subject = "ec2:GetSubnetCidrReservations";
  const denied = [...verdicts].filter(([, v]) => !v.allowed).map(([subnet]) => subnet);
  const allowed = [...verdicts].filter(([, v]) => v.allowed).map(([subnet]) => subnet);
  if (denied.length === 0) {
    return ok("permission", `allowed on ${listText(allowed)} (probed with DryRun).`, { subject });
  }
  return warn(
    "permission",
    `denied on ${listText(denied)} (probed with DryRun): init and the sidecar do not need it, but doctor cannot check the subnet CIDR reservations over your pod ranges without it.`,
    {
      subject,
      fix: `${GRANT}, or check the reservations yourself: aws ec2 get-subnet-cidr-reservations --subnet-id ${denied[0]}`,
    },
  );
}

/**
 * The actions no DryRun can probe: said plainly, never reported as fine. With no `fix`: nothing is known to be
 * wrong, and a healthy run's report has no fix line; the detail says how to check them without doctor.
 */
export function unprobeablePermissionCheck(): CheckResult {
  return skipped(
    "permission",
    `${listText(UNPROBEABLE_ACTIONS)} cannot be checked: EC2 offers no DryRun for them, and doctor changes nothing. ` +
      "A missing one makes init and the sidecar exit 4 naming it; aws iam simulate-principal-policy " +
      `--policy-source-arn <role ARN> --action-names ${UNPROBEABLE_ACTIONS.join(" ")} evaluates the role's policy without calling EC2.`,
    { subject: "assign/unassign" },
  );
}

/** The bridge's four assign/unassign actions: no DryRun exists for them, and doctor changes nothing. */
export function bridgeUnprobeableCheck(): CheckResult {
  return skipped(
    "permission",
    `${listText(UNPROBEABLE_ACTIONS)} cannot be checked: EC2 offers no DryRun for them, and doctor changes nothing. ` +
      "A missing one fails the bridge's assignments on this node, each refusal logged and posted as an AddressesNotAssigned Event naming the action; aws iam " +
      `simulate-principal-policy --policy-source-arn <role ARN> --action-names ${UNPROBEABLE_ACTIONS.join(" ")} ` +
      "evaluates the role's policy without calling EC2.",
    { subject: "assign/unassign" },
  );
}
