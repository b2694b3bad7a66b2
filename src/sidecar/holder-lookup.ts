/**
 * Who holds the addresses taken off our ENI: one EC2 read per family. A read that fails leaves the holders
 * unknown, which drift episodes pace as rivals; the failure is logged once until a read works again.
 */
import type { Holder } from "../eni/drift-episodes.js";
import { family } from "../eni/ip.js";
import { describeError } from "../eni/loop-schedule.js";
import type { ReconcileDeps } from "../eni/reconcile.js";

export class HolderLookup {
  readonly #deps: Pick<ReconcileDeps, "ec2" | "logger">;
  #failureKey: string | undefined;

  constructor(deps: Pick<ReconcileDeps, "ec2" | "logger">) {
    this.#deps = deps;
  }

  /**
   * Who holds each address: another ENI's id, null for none, absent when the read failed
   * (EC2 DescribeNetworkInterfaces, filtered by address).
   */
  async holdersOf(addresses: readonly string[]): Promise<Map<string, Holder>> {
    const result = new Map<string, Holder>();
    if (addresses.length === 0) return result;
    const { ec2, logger } = this.#deps;
    const v4 = addresses.filter((a) => family(a) === 4);
    const v6 = addresses.filter((a) => family(a) === 6);
    try {
      const enis = [
        ...(v4.length === 0 ? [] : await ec2.describeNetworkInterfaces({ ipv4Addresses: v4 })),
        ...(v6.length === 0 ? [] : await ec2.describeNetworkInterfaces({ ipv6Addresses: v6 })),
      ];
      for (const address of addresses) {
        const holder = enis.find((e) => e.ipv4s.includes(address) || e.ipv6s.includes(address));
        result.set(address, holder?.eniId ?? null);
      }
    } catch (error) {
      // Unknown holders are paced as rivals; the repair itself goes ahead when its backoff has passed.
      const key = describeError(error);
      if (key !== this.#failureKey) {
        this.#failureKey = key;
        logger.warn(
          { err: error, addresses },
          "could not look up which ENI holds the addresses taken off our ENI; repairing them with backoff",
        );
      }
      return result;
    }
    this.#failureKey = undefined;
    return result;
  }
}
