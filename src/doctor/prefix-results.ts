/**
 * doctor's prefix-mode checks that ask EC2 or the Kubernetes API: this node's whereabouts slices (read once,
 * named by the other checks), prefix-support and prefix-blocks. The checks' sentences are in
 * checks/prefixes.ts; this module reads what they need.
 */
import type { Ec2Api } from "../eni/ec2-api.js";
import { Ec2Error } from "../eni/errors/ec2-error.js";
import type { EniState, SubnetCidrReservation } from "../eni/types.js";
import { type CheckResult, errorSentence, ok, problem, skipped } from "./check.js";
import {
  prefixBlockChecks,
  prefixSubnetsOf,
  prefixSupportCheck,
  prefixSupportDenied,
} from "./checks/prefixes.js";
import { ec2Fix } from "./ec2-fix.js";
import type { NodeSlice, NodeSliceSource } from "./node-slices.js";

/** This node's whereabouts slices to read (a NodeSlicePool list), or why they cannot be (no Kubernetes API). */
export type NodeSlicesWanted = { readonly source: NodeSliceSource; readonly nodeName: string } | string;

/** This node's slices, or the sentence saying why they were not read. */
export async function nodeSlicesOf(deps: {
  readonly nodeSlices?: NodeSlicesWanted | undefined;
}): Promise<{ slices: readonly NodeSlice[] | undefined; why: string }> {
  const wanted = deps.nodeSlices;
  if (wanted === undefined) return { slices: undefined, why: "not checked: no Kubernetes API." };
  if (typeof wanted === "string") return { slices: undefined, why: wanted };
  const answer = await wanted.source.slicesOf(wanted.nodeName);
  if (answer.kind === "ok") return { slices: answer.slices, why: "" };
  return {
    slices: undefined,
    why: answer.fix === undefined ? answer.why : `${answer.why} Fix: ${answer.fix}.`,
  };
}

/**
 * prefix-support (DescribeInstanceTypes: Nitro or not) and prefix-blocks (per subnet and family in which this
 * node's secondary ENIs hold prefixes: explicit reservations, never prefix ones, and free aligned blocks).
 */
export async function prefixResults(
  deps: {
    readonly ec2: Pick<
      Ec2Api,
      "describeInstanceType" | "describeNetworkInterfaces" | "getSubnetCidrReservations"
    >;
  },
  instanceType: string | undefined,
  noEc2: string | undefined,
  /** Why the ENIs or DescribeNetworkInterfaces cannot be read, if so. */
  noDescribe: string | undefined,
  secondary: readonly EniState[],
  slices: readonly NodeSlice[] | undefined,
): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  if (instanceType === undefined) {
    out.push(skipped("prefix-support", "not checked: the instance type is unknown (see instance)."));
  } else if (noEc2 !== undefined) {
    out.push(skipped("prefix-support", noEc2));
  } else {
    try {
      out.push(prefixSupportCheck(instanceType, await deps.ec2.describeInstanceType(instanceType), slices));
    } catch (error) {
      if (!(error instanceof Ec2Error)) throw error;
      out.push(
        error.kind === "permission"
          ? prefixSupportDenied(instanceType, errorSentence(error))
          : problem("prefix-support", errorSentence(error), { subject: instanceType, fix: ec2Fix(error) }),
      );
    }
  }
  if (noDescribe !== undefined) {
    out.push(skipped("prefix-blocks", noDescribe));
    return out;
  }
  const subnets = prefixSubnetsOf(secondary);
  if (subnets.length === 0) {
    out.push(
      ok("prefix-blocks", "no secondary ENI of this node holds a delegated prefix (per-address mode)."),
    );
    return out;
  }
  const subnetIds = [...new Set(subnets.map((s) => s.subnetId))].sort();
  try {
    const inSubnets = await deps.ec2.describeNetworkInterfaces({ subnetIds });
    const reservations = new Map<string, SubnetCidrReservation[]>();
    for (const subnetId of subnetIds)
      reservations.set(subnetId, await deps.ec2.getSubnetCidrReservations(subnetId));
    out.push(...prefixBlockChecks(subnets, reservations, inSubnets, slices));
  } catch (error) {
    if (!(error instanceof Ec2Error)) throw error;
    out.push(
      error.kind === "permission"
        ? skipped("prefix-blocks", `not checked: ${errorSentence(error)}`, { fix: ec2Fix(error) })
        : problem("prefix-blocks", errorSentence(error), { fix: ec2Fix(error) }),
    );
  }
  return out;
}
