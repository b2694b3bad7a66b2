/**
 * Before a swap unassigns anything: whether another ENI of the subnet (of any instance) holds an address or a
 * prefix inside the prefixes. EC2 would refuse the prefix assign over it (EC2-SEMANTICS.md, "A prefix cannot
 * overlap any address or prefix already assigned in the subnet"), after the pods' singles were unassigned:
 * an unrouted window for nothing. One DescribeNetworkInterfaces per swap, filtered on the subnet; a slice found taken is
 * remembered as refused (prefix-refusal-memory.ts), so the read is not repeated at every wave.
 */
import type { Ec2Api } from "../../eni/ec2-api.js";
import { Ec2Error } from "../../eni/errors/ec2-error.js";
import { cidrContains, cidrsOverlap, tryCanonical } from "../../eni/ip.js";
import type { Logger } from "../../eni/process/logger.js";
import type { Ec2NetworkInterface, EniState, IpFamily } from "../../eni/types.js";
import type { PrefixPlan } from "./prefix-plan.js";

/** What other ENIs hold inside `prefixes`, one phrase each ("address 198.51.100.170 on eni-0b1 (i-0b)"). Pure. */
export function takenInside(
  interfaces: readonly Ec2NetworkInterface[],
  eniId: string,
  family: IpFamily,
  prefixes: readonly string[],
): string[] {
  const out: string[] = [];
  for (const other of [...interfaces].sort((a, b) => (a.eniId < b.eniId ? -1 : a.eniId > b.eniId ? 1 : 0))) {
    if (other.eniId === eniId) continue;
    const owner = `${other.eniId} (${other.instanceId ?? "not attached"})`;
    for (const address of family === 4 ? other.ipv4s : other.ipv6s) {
      const a = tryCanonical(address);
      if (a !== undefined && prefixes.some((p) => cidrContains(p, a))) out.push(`address ${a} on ${owner}`);
    }
    for (const prefix of (family === 4 ? other.ipv4Prefixes : other.ipv6Prefixes) ?? []) {
      if (prefixes.some((p) => cidrsOverlap(p, prefix))) out.push(`prefix ${prefix} on ${owner}`);
    }
  }
  return out;
}

/**
 * IAM: ec2:DescribeNetworkInterfaces. Per slice of `slices`, what other ENIs of the subnet hold inside it;
 * only the slices where something is.
 */
export async function takenInSubnet(
  ec2: Pick<Ec2Api, "describeNetworkInterfaces">,
  subnetId: string,
  eniId: string,
  family: IpFamily,
  slices: readonly string[],
): Promise<Map<string, string[]>> {
  const interfaces = await ec2.describeNetworkInterfaces({ subnetIds: [subnetId] });
  const out = new Map<string, string[]>();
  for (const slice of slices) {
    const taken = takenInside(interfaces, eniId, family, [slice]);
    if (taken.length > 0) out.set(slice, taken);
  }
  return out;
}

/** A slice found taken before its swap, and the sentence saying by what. */
export interface TakenSlice {
  readonly eniId: string;
  readonly slice: string;
  readonly cause: string;
}

/** The check before each swap of a plan; logs once when the subnet cannot be read. */
export class SwapCheck {
  #failureLogged = false;

  constructor(
    private readonly deps: {
      readonly ec2: Pick<Ec2Api, "describeNetworkInterfaces">;
      readonly logger: Logger;
    },
  ) {}

  /**
   * The slices of `plan`'s swaps where another ENI of the subnet holds an address or a prefix. A check that
   * cannot be made lets the swap go ahead, except EC2 unavailable and an abort, which the wave gets.
   */
  async taken(plan: PrefixPlan, enis: readonly EniState[], signal: AbortSignal): Promise<TakenSlice[]> {
    const out: TakenSlice[] = [];
    for (const step of plan.assigns) {
      if (step.kind !== "unassign-addresses") continue;
      const eni = enis.find((e) => e.eniId === step.eniId);
      if (eni === undefined) continue;
      const slices = [
        ...new Set(
          plan.wanted.filter((w) => w.eniId === step.eniId && w.family === step.family).map((w) => w.slice),
        ),
      ];
      let taken: Map<string, string[]>;
      try {
        taken = await takenInSubnet(this.deps.ec2, eni.subnetId, step.eniId, step.family, slices);
      } catch (error) {
        if (signal.aborted || (error instanceof Ec2Error && error.kind === "unavailable")) throw error;
        if (!this.#failureLogged)
          this.deps.logger.warn(
            { err: error, eniId: step.eniId },
            "could not read the subnet's ENIs before a swap; the swap goes ahead, and a slice whose prefix EC2 refuses is not tried again until its backoff ends",
          );
        this.#failureLogged = true;
        continue;
      }
      for (const [slice, what] of taken) {
        out.push({
          eniId: step.eniId,
          slice,
          cause: `the slice ${slice} overlaps ${what.join(", ")} in subnet ${eni.subnetId}, and EC2 refuses a prefix over an address or prefix of another ENI, so the single addresses inside were not unassigned`,
        });
      }
    }
    return out;
  }
}
