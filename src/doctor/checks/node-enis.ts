/**
 * The node's Multus ENIs, seen from its network namespace (doctor --profile node): which secondary ENIs they
 * are, and whether there is one at all. Pure.
 */
import type { Ec2NetworkInterface, EniState } from "../../eni/types.js";
import { type CheckResult, listText, ok, problem } from "../check.js";
import { NO_MANAGE_TAG } from "./eni-tags.js";

/**
 * The Multus ENIs among the secondary ENIs: those tagged no_manage (when EC2 could say) and those in a subnet
 * an allowed CIDR lies in. The VPC CNI's own secondary ENIs are in neither, and are left alone.
 */
export function multusEnisOf(
  secondary: readonly EniState[],
  described: readonly Ec2NetworkInterface[] | undefined,
  planned: readonly { subnet: { subnetId: string } }[],
): EniState[] {
  const tagged = new Set(
    (described ?? []).filter((e) => e.tags[NO_MANAGE_TAG] === "true").map((e) => e.eniId),
  );
  const inPlan = new Set(planned.map((r) => r.subnet.subnetId));
  return secondary.filter((e) => tagged.has(e.eniId) || inPlan.has(e.subnetId));
}

/** Whether the node has a Multus ENI, naming them, or its secondary ENIs and the fix. */
export function multusEniCheck(multus: readonly EniState[], secondary: readonly EniState[]): CheckResult {
  if (multus.length === 0) {
    const others =
      secondary.length === 0
        ? "it has no secondary ENI"
        : `its secondary ENIs (${listText(secondary.map((e) => e.eniId))}) are neither tagged ${NO_MANAGE_TAG}=true nor in a subnet of IPMGR_ALLOWED_CIDRS`;
    return problem(
      "multus-eni",
      `this node has no Multus ENI: ${others}, so the bridge has nowhere to put its pods' addresses.`,
      {
        fix: "attach a Multus ENI in the pod ranges' subnet, tagged no_manage (docs/install-eks.md, Node prerequisites), or keep the bridge and its test off this node (bridge.nodeSelector)",
      },
    );
  }
  return ok(
    "multus-eni",
    `${listText(multus.map((e) => `${e.eniId} (device ${e.deviceIndex}, ${e.subnetId})`))}.`,
  );
}
