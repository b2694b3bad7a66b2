import type { ElasticIpCheck } from "../eni/elastic-ips.js";
import type { ReconcileDeps } from "../eni/reconcile.js";
import { type ReconcileOnceOptions, type ReconcileOnceResult, reconcileOnce } from "../eni/reconcile-once.js";
import type { ElasticIpMapping } from "../eni/types.js";

export interface InitOptions extends ReconcileOnceOptions {
  /**
   * IPMGR_ELASTIC_IPS: once the addresses are held, each mapped one's Elastic IP is associated with it (and
   * confirmed); one that cannot be is an ElasticIpError. Empty or undefined: no Elastic IP call.
   */
  readonly elasticIps?: readonly ElasticIpMapping[];
}

export interface InitResult extends ReconcileOnceResult {
  /** The Elastic IP check, when IPMGR_ELASTIC_IPS maps an address. */
  readonly elasticIps?: ElasticIpCheck;
}

/**
 * `multus-ipmgr init`: one shot (reconcileOnce), then the Elastic IPs. Everything is checked before anything
 * is changed: if any address is refused, nothing is assigned. Returns only when EC2 holds every address and
 * IMDS shows it.
 */
export async function runInit(deps: ReconcileDeps, options: InitOptions): Promise<InitResult> {
  const held = await reconcileOnce(deps, options);
  if (options.elasticIps === undefined || options.elasticIps.length === 0) return held;
  // Loaded only when IPMGR_ELASTIC_IPS is set: most pod starts never parse it.
  const { ensureElasticIps } = await import("./ensure-elastic-ips.js");
  const elasticIps = await ensureElasticIps(deps, held.plan, options, options.elasticIps);
  return { ...held, elasticIps };
}
