/**
 * The EC2 reads doctor needs, probed with DryRun before they are made, in both profiles (the pod's and the
 * node's): `ec2:DescribeNetworkInterfaces`, and `ec2:GetSubnetCidrReservations` on each subnet. Also where
 * the two run each check: `attempt` (an error becomes that check's problem) and `blocked`.
 */
import type { Ec2Api, PermissionVerdict } from "../eni/ec2-api.js";
import { Ec2Error } from "../eni/errors/ec2-error.js";
import { IpmgrError } from "../eni/errors/ipmgr-error.js";
import { type CheckResult, errorSentence, problem, skipped } from "./check.js";
import { describePermissionCheck, reservationPermissionCheck } from "./checks/permissions.js";
import { ec2Fix } from "./ec2-fix.js";
import type { InstanceIdentity } from "./identity.js";

/** The reason a check that needs IMDS is skipped when IMDS issued no token. */
export const SEE_IMDS = "not checked: IMDS issued no token (see imds).";

/** Runs `fn`; an IpmgrError it throws (IMDS, EC2, a file) becomes a problem of check `name`, anything else propagates. */
export async function attempt<T>(
  name: string,
  add: (r: CheckResult) => void,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await fn();
  } catch (error) {
    if (!(error instanceof IpmgrError)) throw error;
    add(
      problem(name, errorSentence(error), {
        fix: error instanceof Ec2Error ? ec2Fix(error) : "fix what the sentence names, then run doctor again",
      }),
    );
    return undefined;
  }
}

/** The first reason a check cannot run, if any: the earliest unmet need wins. */
export function blocked(...reasons: (string | undefined)[]): string | undefined {
  return reasons.find((r) => r !== undefined);
}

export interface ReadPermissions {
  /** Why EC2 was not asked (no region, or another region than the instance's); undefined when it was. */
  readonly noRegion: string | undefined;
  /** DescribeNetworkInterfaces' verdict; undefined when EC2 was not asked or could not answer. */
  readonly describe: PermissionVerdict | undefined;
  /** Subnet ID -> GetSubnetCidrReservations' verdict there. */
  readonly reservationVerdicts: Map<string, PermissionVerdict>;
}

/**
 * The `permission` rows: the two reads probed in `region` (AWS_REGION, else the instance's), then `unprobeable`,
 * the row for the actions EC2 cannot probe with DryRun (which differ by profile).
 */
export async function probeReadPermissions(
  ec2: Pick<Ec2Api, "probePermission">,
  region: string | undefined,
  identity: InstanceIdentity | undefined,
  subnetIds: Iterable<string>,
  unprobeable: () => CheckResult,
  add: (...r: CheckResult[]) => void,
): Promise<ReadPermissions> {
  const noRegion =
    region === undefined
      ? `${SEE_IMDS.slice(0, -1)}, and AWS_REGION is not set.`
      : identity !== undefined && region !== identity.region
        ? "not checked: AWS_REGION is not this instance's region (see instance)."
        : undefined;
  const reservationVerdicts = new Map<string, PermissionVerdict>();
  if (noRegion !== undefined) {
    add(skipped("permission", noRegion));
    return { noRegion, describe: undefined, reservationVerdicts };
  }
  const describe = await attempt("ec2", add, () =>
    ec2.probePermission({ action: "DescribeNetworkInterfaces" }),
  );
  if (describe !== undefined) {
    add(describePermissionCheck(describe));
    for (const subnetId of new Set(subnetIds)) {
      const verdict = await attempt("ec2", add, () =>
        ec2.probePermission({ action: "GetSubnetCidrReservations", subnetId }),
      );
      if (verdict !== undefined) reservationVerdicts.set(subnetId, verdict);
    }
    if (reservationVerdicts.size > 0) add(reservationPermissionCheck(reservationVerdicts));
    add(unprobeable());
  }
  return { noRegion, describe, reservationVerdicts };
}
