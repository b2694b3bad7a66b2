/**
 * Who whereabouts says holds each address, by network: IPPool allocations first, then
 * OverlappingRangeIPReservations. Pure.
 *
 * Two whereabouts networks over one range (a NAD with `network_name`, one without) keep separate IPPools
 * and may hand the same address to a pod in each, so an owner counts only for a pod of its own network.
 * whereabouts names a network's IPPool `<network_name>-<range>` (the unnamed network's just `<range>`; with
 * node slices a node name comes before the range): where NADs of several networks have a range over the
 * pool's block, the name tells which network the pool is. A reservation's network is read from its name
 * (reservation-names.ts). An owner whose network cannot be told counts for every network.
 */
import { addressAtOffset, canonicalCidr, cidrsOverlap } from "../../eni/ip.js";
import type { IpPoolInfo, OverlappingReservationInfo } from "../kube/kube-api.js";
import { readingsOfReservation } from "./overlapping-range-names.js";
import type { WhereaboutsRange } from "./whereabouts-ranges.js";

export interface Owner {
  /** `namespace/name` of the pod whereabouts gives the address to. */
  readonly podref: string;
  /** The object that says so: `IPPool ns/name` or `OverlappingRangeIPReservation ns/name`. */
  readonly source: string;
  /** The whereabouts network ("" for the unnamed one); undefined when it cannot be told (any network). */
  readonly network: string | undefined;
}

/** The owners of each address, in the order whereabouts' objects were read (pools, then reservations). */
export class WhereaboutsOwners {
  readonly #byAddress: ReadonlyMap<string, readonly Owner[]>;

  constructor(byAddress: ReadonlyMap<string, readonly Owner[]>) {
    this.#byAddress = byAddress;
  }

  /**
   * The owners of `address` in one of `networks` (and those whose network is unknown); every owner when
   * `networks` is undefined (the claimant's network cannot be told).
   */
  of(address: string, networks?: ReadonlySet<string>): readonly Owner[] {
    const all = this.#byAddress.get(address) ?? [];
    if (networks === undefined) return all;
    return all.filter((o) => o.network === undefined || networks.has(o.network));
  }

  /** Every address some pod is given, with its first owner. */
  entries(): [string, Owner][] {
    return [...this.#byAddress].flatMap(([address, owners]) =>
      owners[0] === undefined ? [] : [[address, owners[0]] as [string, Owner]],
    );
  }
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const keyOf = (o: { namespace: string; name: string }): string => `${o.namespace}/${o.name}`;

/**
 * The network of an IPPool over `cidr`: undefined when at most one network has a range over it (nothing to
 * tell apart) or its name fits none; else the longest `network_name` its name starts with (`<name>-`), or
 * the unnamed network.
 */
function poolNetwork(
  pool: IpPoolInfo,
  cidr: string,
  ranges: readonly WhereaboutsRange[],
): string | undefined {
  const networks = [...new Set(ranges.filter((r) => cidrsOverlap(r.cidr, cidr)).map((r) => r.networkName))];
  if (networks.length < 2) return undefined;
  const named = networks.filter((n) => n !== "").sort((a, b) => b.length - a.length || byString(a, b));
  const match = named.find((n) => pool.name.startsWith(`${n}-`));
  if (match !== undefined) return match;
  return networks.includes("") ? "" : undefined;
}

/**
 * The owners whereabouts records. `problem` is told of each IPPool entry that cannot be read (a range that
 * is no CIDR, an allocation key that is no offset inside it); the rest still count.
 */
export function whereaboutsOwners(
  pools: readonly IpPoolInfo[],
  reservations: readonly OverlappingReservationInfo[],
  ranges: readonly WhereaboutsRange[],
  problem: (pool: IpPoolInfo, message: string) => void,
): WhereaboutsOwners {
  const owners = new Map<string, Owner[]>();
  const add = (address: string, owner: Owner): void => {
    owners.set(address, [...(owners.get(address) ?? []), owner]);
  };
  for (const pool of [...pools].sort((a, b) => byString(keyOf(a), keyOf(b)))) {
    let cidr: string;
    try {
      cidr = canonicalCidr(pool.range);
    } catch {
      problem(pool, `IPPool ${keyOf(pool)}: spec.range ${JSON.stringify(pool.range)} is not a CIDR`);
      continue;
    }
    const network = poolNetwork(pool, cidr, ranges);
    for (const [offset, allocation] of Object.entries(pool.allocations).sort(([a], [b]) => byString(a, b))) {
      if (allocation.podref === undefined || allocation.podref === "") continue;
      let address: string;
      try {
        if (!/^\d+$/.test(offset)) throw new RangeError(offset);
        address = addressAtOffset(cidr, BigInt(offset));
      } catch {
        problem(
          pool,
          `IPPool ${keyOf(pool)}: allocation ${JSON.stringify(offset)} is not an offset inside ${cidr}; whereabouts keys allocations by the decimal offset of the address in spec.range: remove or fix the entry`,
        );
        continue;
      }
      add(address, { podref: allocation.podref, source: `IPPool ${keyOf(pool)}`, network });
    }
  }
  for (const reservation of [...reservations].sort((a, b) => byString(keyOf(a), keyOf(b)))) {
    if (reservation.podref === undefined || reservation.podref === "") continue;
    const readings = readingsOfReservation(reservation.name, ranges);
    // A name read more than one way (no NAD decides) stands for each reading, in whichever network.
    const addresses = new Set(readings.map((r) => r.address));
    for (const address of addresses) {
      const networks = readings.filter((r) => r.address === address).map((r) => r.networkName);
      add(address, {
        podref: reservation.podref,
        source: `OverlappingRangeIPReservation ${keyOf(reservation)}`,
        network: networks.length === 1 && readings.length === 1 ? networks[0] : undefined,
      });
    }
  }
  return new WhereaboutsOwners(owners);
}
