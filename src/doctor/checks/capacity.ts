import { addressesPerEniOf, KNOWN_FAMILIES } from "../../eni/instance-limits.js";
import type { IpFamily, Plan } from "../../eni/types.js";
import { type CheckResult, ok, problem, skipped, warn } from "../check.js";
import { eniLabel, type MultusEni } from "../multus-enis.js";

/**
 * Per Multus ENI and family: the addresses it holds, plus the pod's addresses it does not hold yet, against
 * the instance type's per-ENI limit (primary counted). Full after this pod: warned, because a floating address
 * taken over from another node, or the next pod, is then refused with PrivateIpAddressLimitExceeded.
 */
export function capacityChecks(
  instanceType: string,
  multus: readonly MultusEni[],
  plan: Plan,
): CheckResult[] {
  const limit = addressesPerEniOf(instanceType);
  if (limit === undefined) {
    return [
      skipped(
        "capacity",
        `instance type ${instanceType} is not in doctor's table of addresses per ENI (families ${KNOWN_FAMILIES.join(
          ", ",
        )}): not checked.`,
        {
          fix: `look it up: aws ec2 describe-instance-types --instance-types ${instanceType} --query 'InstanceTypes[].NetworkInfo.Ipv4AddressesPerInterface'`,
        },
      ),
    ];
  }
  const satisfied = new Set(plan.satisfied);
  return multus.map((m) => {
    const subject = m.eni.eniId;
    const toAdd = (fam: IpFamily): number =>
      plan.placements.filter((p) => p.eniId === m.eni.eniId && p.family === fam && !satisfied.has(p.address))
        .length;
    const rows = ([4, 6] as const).map((fam) => {
      const held = fam === 4 ? m.eni.ipv4s.length : m.eni.ipv6s.length;
      const adding = toAdd(fam);
      return { fam, held, adding, after: held + adding };
    });
    const text = rows
      .filter((r) => r.fam === 4 || r.after > 0)
      .map(
        (r) =>
          `IPv${r.fam} ${r.held} of ${limit}${r.fam === 4 ? " (primary included)" : ""}` +
          (r.adding > 0 ? `, ${r.adding} more for this pod` : ""),
      )
      .join("; ");
    const head = `${eniLabel(m)} on ${instanceType} (${limit} addresses per ENI per family): ${text}`;
    const over = rows.filter((r) => r.after > limit);
    if (over.length > 0) {
      return problem(
        "capacity",
        `${head}. That is more than the ENI can hold: EC2 refuses with PrivateIpAddressLimitExceeded and init exits 5.`,
        {
          subject,
          fix:
            `list what ${m.eni.eniId} holds (aws ec2 describe-network-interfaces --network-interface-ids ${m.eni.eniId}) ` +
            "and unassign addresses no pod uses any more (aws ec2 unassign-private-ip-addresses / unassign-ipv6-addresses), " +
            "or spread the pods over more nodes or a larger instance type",
        },
      );
    }
    const full = rows.filter((r) => r.after === limit);
    if (full.length > 0) {
      return warn(
        "capacity",
        `${head}. Then it is full: the next pod on it, or a floating address taken over from another node, is refused (PrivateIpAddressLimitExceeded).`,
        {
          subject,
          fix: "unassign addresses no pod uses any more, or plan for fewer pod addresses per ENI on this instance type",
        },
      );
    }
    const room = rows
      .filter((r) => r.fam === 4 || r.after > 0)
      .map((r) => `${limit - r.after} more IPv${r.fam}`)
      .join(" and ");
    return ok("capacity", `${head}; room for ${room}.`, { subject });
  });
}
