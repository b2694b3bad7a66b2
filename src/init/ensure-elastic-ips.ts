import { checkElasticIps, type ElasticIpCheck, elasticIpProblem } from "../eni/elastic-ips.js";
import { ElasticIpError } from "../eni/errors/elastic-ip-error.js";
import type { ReconcileDeps } from "../eni/reconcile.js";
import type { ReconcileOnceOptions } from "../eni/reconcile-once.js";
import type { ElasticIpMapping, Plan } from "../eni/types.js";

/** The one-shot Elastic IP check: every mapped address this pod holds ends with its Elastic IP, or an error. */
export async function ensureElasticIps(
  deps: ReconcileDeps,
  plan: Plan,
  options: Pick<ReconcileOnceOptions, "confirm" | "signal">,
  mappings: readonly ElasticIpMapping[],
): Promise<ElasticIpCheck> {
  const check = await checkElasticIps(deps, {
    mappings,
    held: new Map(plan.placements.map((p) => [p.address, p.eniId])),
    confirm: options.confirm,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const problems = check.plan.decisions.flatMap((d) => elasticIpProblem(d) ?? []);
  const refusals = check.refused.map((r) => r.error);
  if (problems.length > 0 || refusals.length > 0) {
    throw new ElasticIpError(
      [...problems, ...refusals.map((e) => e.message)],
      refusals.length === 0 ? undefined : { cause: refusals[0] },
    );
  }
  deps.logger.info(
    {
      elasticIps: check.plan.decisions.map((d) => ({
        address: d.mapping.address,
        allocationId: d.mapping.allocationId,
        publicIp: d.described?.publicIp,
        state: d.status.kind,
      })),
      associated: check.associated.map((c) => c.allocationId),
      ec2Calls: check.calls,
    },
    check.associated.length > 0 ? "Elastic IPs associated with their addresses" : "Elastic IPs checked",
  );
  return check;
}
