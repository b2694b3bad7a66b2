import type { Ec2NetworkInterface, Plan, RefusalReason } from "../../eni/types.js";
import { type CheckResult, listText, ok, problem } from "../check.js";

const REFUSAL_FIX: Readonly<Record<RefusalReason, string>> = {
  "outside-allowed-cidrs":
    "if it is a pod address, add its range to IPMGR_ALLOWED_CIDRS; otherwise fix the IPAM range of the NetworkAttachmentDefinition",
  "outside-eni-subnet":
    "make the IPAM range lie inside the subnet of the ENI that is the NetworkAttachmentDefinition's master, without the five addresses AWS reserves",
  "eni-primary-address":
    "take the address out of the IPAM range (whereabouts: exclude) and out of IPMGR_ALLOWED_CIDRS",
  "address-conflict":
    "give each Multus interface addresses of its own: one address can be held by one ENI only",
  "inside-prefix":
    "take the address out of the IPAM range, or use the master whose ENI holds the prefix: a prefix is never split",
  "floating-in-prefix":
    "give floating addresses a range without node_slice_size, or take them out of the node-sliced range",
  "unknown-mac": "see eni-match",
  "eni-full": "free addresses on the ENI or use a larger instance type; see the capacity check",
};

/**
 * What the planner makes of the pod's addresses: refusals (init would exit 6), and addresses that should be
 * held by their ENI but are not. `holders`: where EC2 says the missing addresses are, when it could be read.
 */
export function addressChecks(
  plan: Plan,
  holders: ReadonlyMap<string, Ec2NetworkInterface> | undefined,
): CheckResult[] {
  const results: CheckResult[] = [];
  // An unknown MAC is the eni-match check's finding; repeating it per address adds nothing.
  for (const refusal of plan.refusals.filter((r) => r.reason !== "unknown-mac")) {
    results.push(
      problem(
        "addresses",
        `${refusal.detail.replace(/\.$/, "")}; init and the sidecar refuse it and exit 6.`,
        {
          subject: refusal.address,
          fix: REFUSAL_FIX[refusal.reason],
        },
      ),
    );
  }
  const satisfied = new Set(plan.satisfied);
  const missing = plan.placements.filter((p) => !satisfied.has(p.address));
  for (const placement of missing) {
    const holder = holders?.get(placement.address);
    const where =
      holders === undefined
        ? " (EC2 could not be asked who holds it)"
        : holder === undefined
          ? ", and no ENI holds it"
          : `, but ${holder.eniId}${holder.instanceId === undefined ? "" : ` of ${holder.instanceId}`} does: another pod claims it, or it was never released there`;
    results.push(
      problem(
        "addresses",
        `${placement.address} on ${placement.interfaceName} is not held by ${placement.eniId}${where}; traffic for it does not reach this pod.`,
        {
          subject: placement.address,
          fix:
            "a running sidecar assigns it again by itself (its /readyz says when); with init alone, restart the pod " +
            "so that init runs again",
        },
      ),
    );
  }
  const held = plan.placements.filter((p) => satisfied.has(p.address));
  if (held.length > 0) {
    const text = held.map((p) => `${p.address} (${p.interfaceName}, ${p.eniId})`);
    results.push(ok("addresses", `held by their ENIs: ${listText(text)}.`));
  }
  if (results.length === 0) {
    results.push(ok("addresses", "no pod address to manage (link-local addresses are skipped)."));
  }
  return results;
}
