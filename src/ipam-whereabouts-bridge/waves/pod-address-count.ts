/**
 * How many addresses of the managed pods are held by their ENI, and which are not: what /readyz counts.
 * Every address of every managed pod counts, not only those a wave planned (a pod that appeared after the
 * last wave counts as unheld until a wave holds its address), except the addresses the bridge never holds:
 * those it refuses by policy (outside IPMGR_ALLOWED_CIDRS, outside the ENI's subnet, on an ENI that is no
 * Multus ENI, a MAC of no ENI) and those in conflict (two pods claim them). Pure.
 */
import { coveringPrefix } from "../../eni/ip.js";
import type { EniState, PodInterface } from "../../eni/types.js";
import type { BridgeRefusalReason } from "./wave-plan.js";

/** Refusals that say the address is not the bridge's to hold: they do not make the bridge unready. */
export const POLICY_REFUSALS: ReadonlySet<BridgeRefusalReason> = new Set([
  "outside-allowed-cidrs",
  "outside-eni-subnet",
  "unknown-mac",
  "not-multus-eni",
]);

/** What the ENIs hold after a wave. */
export interface HeldAddresses {
  /** The ENIs as the wave read them (their delegated prefixes hold every address inside). */
  readonly enis: readonly EniState[];
  /** `eniId address` of every address an ENI holds after the wave. */
  readonly keys: ReadonlySet<string>;
  /** The addresses the bridge does not hold by policy or conflict. */
  readonly excused: ReadonlySet<string>;
}

export interface AddressCount {
  readonly wanted: number;
  readonly held: number;
  /** `address (namespace/pod/interface)` of each address not held, in the interfaces' order. */
  readonly unheld: readonly string[];
}

/** Counts the interfaces' addresses held by the ENI with the interface's MAC. */
export function countPodAddresses(interfaces: readonly PodInterface[], held: HeldAddresses): AddressCount {
  const eniByMac = new Map(held.enis.map((e) => [e.mac.toLowerCase(), e]));
  let wanted = 0;
  let count = 0;
  const unheld: string[] = [];
  for (const i of interfaces) {
    const eni = eniByMac.get(i.mac.toLowerCase());
    for (const address of i.addresses) {
      if (held.excused.has(address)) continue;
      wanted += 1;
      const prefixes = [...(eni?.ipv4Prefixes ?? []), ...(eni?.ipv6Prefixes ?? [])];
      if (
        eni !== undefined &&
        (held.keys.has(`${eni.eniId} ${address}`) || coveringPrefix(prefixes, address) !== undefined)
      )
        count += 1;
      else unheld.push(`${address} (${i.name})`);
    }
  }
  return { wanted, held: count, unheld };
}
