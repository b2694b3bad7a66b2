/**
 * fast-check arbitraries for planner worlds, and a tiny pure model of EC2 that applies a plan's actions.
 * Worlds are small on purpose: few subnets and few candidate addresses, so that shared subnets, duplicates,
 * primaries, reserved addresses and moves between ENIs come up in almost every run.
 */
import fc from "fast-check";
import ipaddr from "ipaddr.js";
import type { EniState, PlanAction, PlanInput, PodInterface } from "../../src/eni/types.js";

/** Four /26 subnets in 198.51.100.0/24 and four /64 subnets in 2001:db8::/48; ENIs pick by index. */
export const SUBNETS_V4 = ["198.51.100.0/26", "198.51.100.64/26", "198.51.100.128/26", "198.51.100.192/26"];
export const SUBNETS_V6 = ["2001:db8::/64", "2001:db8:0:1::/64", "2001:db8:0:2::/64", "2001:db8:0:3::/64"];

/** Candidate allowed CIDRs: covering, narrower, and one that covers nothing of ours. */
export const ALLOWED_CANDIDATES = [
  "198.51.100.0/25",
  "198.51.100.128/25",
  "198.51.100.64/26",
  "2001:db8::/48",
  "2001:db8:0:1::/64",
  "203.0.113.0/24",
];

const V4_BASES = [0, 64, 128, 192];
/** Offsets inside a /26: the AWS-reserved first four and last, and a few ordinary ones. */
const V4_OFFSETS = [0, 1, 3, 5, 6, 7, 63];
/** Low 64 bits inside a /64: the AWS-reserved first four and last, and a few ordinary ones. */
const V6_LOWS = ["0:0:0:0", "0:0:0:1", "0:0:0:5", "0:0:0:6", "0:0:0:a", "ffff:ffff:ffff:ffff"];

const UNIVERSE_V4 = V4_BASES.flatMap((base) => V4_OFFSETS.map((offset) => `198.51.100.${base + offset}`));
const UNIVERSE_V6 = [0, 1, 2, 3].flatMap((g) =>
  V6_LOWS.map((low) => ipaddr.IPv6.parse(`2001:db8:0:${g}:${low}`).toRFC5952String()),
);
/** Addresses that are never ours: other ranges, outside every ENI subnet, and not unicast. */
const STRANGERS = [
  "203.0.113.5",
  "192.0.2.9",
  "2001:db8:1::5",
  "2001:db8:0:9::5",
  "169.254.1.1",
  "fe80::1",
  "::ffff:198.51.100.5",
  "224.0.0.5",
  "ff02::1",
  "::",
];

export const FOREIGN_ENIS = ["eni-foreign-1", "eni-foreign-2"];

function macOf(index: number): string {
  return `0a:00:00:00:00:${(index + 1).toString(16).padStart(2, "0")}`;
}

function v4Subnet(address: string): number {
  const last = Number(address.split(".")[3]);
  return Math.floor(last / 64);
}

function v6Subnet(address: string): number {
  const index = UNIVERSE_V6.indexOf(address);
  return index < 0 ? -1 : Math.floor(index / V6_LOWS.length);
}

/** A world: a planner input plus the holders of IPv6 addresses outside this instance. */
export interface World {
  readonly input: PlanInput;
  /** IPv6 address -> foreign ENI id. */
  readonly foreign: ReadonlyMap<string, string>;
}

interface EniSpec {
  readonly subnet: number;
  readonly hasIpv6: boolean;
  readonly primarySlot: number;
}

const eniSpec = fc.record({
  // Mostly subnet 1, so that ENIs often share a subnet (the case where only the MAC can decide).
  subnet: fc.oneof({ arbitrary: fc.constant(1), weight: 2 }, { arbitrary: fc.nat({ max: 3 }), weight: 3 }),
  hasIpv6: fc.boolean(),
  primarySlot: fc.nat({ max: 12 }),
});

/** Spells an IPv6 address expanded (2001:db8:0:0:0:0:0:5) and uppercases, to check canonicalisation. */
function respell(address: string, how: number): string {
  if (!address.includes(":") || address.includes(".")) return address;
  const full = ipaddr.IPv6.parse(address).toNormalizedString();
  return how === 1 ? full : how === 2 ? address.toUpperCase() : address;
}

export const worldArbitrary: fc.Arbitrary<World> = fc
  .array(eniSpec, { minLength: 1, maxLength: 4 })
  .chain((specs: EniSpec[]) => {
    // Offsets 8.. with a distinct remainder per ENI: unique even when ENIs share a subnet.
    const primaries = specs.map(
      (spec, k) => `198.51.100.${(V4_BASES[spec.subnet] ?? 0) + 8 + k + 4 * spec.primarySlot}`,
    );
    const v4Pool = [...UNIVERSE_V4, ...primaries];
    const v6Pool = UNIVERSE_V6;
    const everything = [...v4Pool, ...v6Pool, ...STRANGERS];
    const holderOf = (address: string, pick: number): number | undefined => {
      // Only an ENI whose subnet contains the address can hold it, as in EC2.
      const isV6 = address.includes(":");
      const subnet = isV6 ? v6Subnet(address) : v4Subnet(address);
      const able = specs
        .map((spec, k) => ({ spec, k }))
        .filter(({ spec }) => spec.subnet === subnet && (!isV6 || spec.hasIpv6))
        .map(({ k }) => k);
      return able.length === 0 || pick >= able.length ? undefined : able[pick];
    };
    // Most addresses of an interface come from its own ENI's subnet, so that most worlds plan some actions.
    const homeOf = (k: number): string[] => {
      const spec = specs[k];
      if (spec === undefined) return everything;
      const base = V4_BASES[spec.subnet] ?? 0;
      const v6 = spec.hasIpv6 ? UNIVERSE_V6.filter((a) => v6Subnet(a) === spec.subnet).slice(2, 5) : [];
      return [`198.51.100.${base + 5}`, `198.51.100.${base + 6}`, `198.51.100.${base + 7}`, ...v6];
    };
    const interfaceArb = fc.nat({ max: specs.length }).chain((eni) =>
      fc.record({
        eni: fc.constant(eni), // specs.length stands for an unknown MAC
        upper: fc.boolean(),
        addresses: fc.array(
          fc.tuple(
            fc.oneof(
              { arbitrary: fc.constantFrom(...homeOf(eni)), weight: 3 },
              { arbitrary: fc.constantFrom(...everything), weight: 2 },
            ),
            fc.nat({ max: 2 }),
          ),
          { maxLength: 6 },
        ),
      }),
    );
    return fc
      .record({
        holdPick4: fc.array(fc.nat({ max: 3 }), { minLength: v4Pool.length, maxLength: v4Pool.length }),
        holdPick6: fc.array(fc.nat({ max: 3 }), { minLength: v6Pool.length, maxLength: v6Pool.length }),
        foreignPick: fc.array(fc.nat({ max: 3 }), { minLength: v6Pool.length, maxLength: v6Pool.length }),
        interfaces: fc.array(interfaceArb, { maxLength: 4 }),
        allowed: fc.oneof(
          { arbitrary: fc.constant(["198.51.100.0/24", "2001:db8::/48"]), weight: 2 },
          { arbitrary: fc.subarray(ALLOWED_CANDIDATES), weight: 3 },
        ),
        released: fc.subarray([...v4Pool, ...v6Pool, "169.254.1.1", "203.0.113.5"], { maxLength: 8 }),
        // Assignments EC2 accepted that IMDS does not show yet; specs.length stands for a foreign ENI.
        unconfirmed: fc.array(
          fc.tuple(fc.constantFrom(...v4Pool, ...v6Pool), fc.nat({ max: specs.length })),
          {
            maxLength: 4,
          },
        ),
        giveHolders: fc.boolean(),
      })
      .map((r): World => {
        const held4 = specs.map((): string[] => []);
        const held6 = specs.map((): string[] => []);
        v4Pool.forEach((address, i) => {
          const k = primaries.includes(address)
            ? primaries.indexOf(address)
            : holderOf(address, r.holdPick4[i] ?? 9);
          if (k !== undefined) held4[k]?.push(address);
        });
        const foreign = new Map<string, string>();
        v6Pool.forEach((address, i) => {
          const k = holderOf(address, r.holdPick6[i] ?? 9);
          if (k !== undefined) held6[k]?.push(address);
          else if ((r.foreignPick[i] ?? 0) < FOREIGN_ENIS.length) {
            foreign.set(address, FOREIGN_ENIS[r.foreignPick[i] ?? 0] ?? "eni-foreign-1");
          }
        });
        const enis: EniState[] = specs.map((spec, k) => ({
          eniId: `eni-${k}${spec.subnet}`,
          mac: macOf(k),
          deviceIndex: k,
          subnetId: `subnet-${spec.subnet}`,
          subnetIpv4Cidrs: [SUBNETS_V4[spec.subnet] ?? "198.51.100.0/26"],
          subnetIpv6Cidrs: spec.hasIpv6 ? [SUBNETS_V6[spec.subnet] ?? "2001:db8::/64"] : [],
          primaryIpv4: primaries[k],
          ipv4s: held4[k] ?? [],
          ipv6s: held6[k] ?? [],
        }));
        const interfaces: PodInterface[] = r.interfaces.map((spec, i) => {
          const mac = spec.eni < specs.length ? macOf(spec.eni) : "0a:ff:00:00:00:01";
          return {
            name: `net${i + 1}`,
            mac: spec.upper ? mac.toUpperCase() : mac,
            addresses: spec.addresses.map(([address, how]) => respell(address, how)),
          };
        });
        const input: PlanInput = {
          interfaces,
          enis,
          policy: { allowedCidrs: r.allowed },
          released: r.released,
          ...(r.giveHolders ? { ipv6Holders: foreign } : {}),
          ...(r.unconfirmed.length === 0
            ? {}
            : {
                assignedUnconfirmed: new Map(
                  r.unconfirmed.map(([address, k]) => [address, enis[k]?.eniId ?? "eni-foreign-1"]),
                ),
              }),
        };
        return { input, foreign };
      });
  });

/** A permutation of a list, driven by the given keys. */
export function permute<T>(items: readonly T[], keys: readonly number[]): T[] {
  return items
    .map((item, i) => ({ item, key: keys[i % Math.max(keys.length, 1)] ?? 0, i }))
    .sort((a, b) => a.key - b.key || a.i - b.i)
    .map(({ item }) => item);
}

/**
 * Applies actions as EC2 would, strictly: IPv4 assigns move the address (AllowReassignment); an IPv6 assign
 * fails while another ENI (ours or foreign) still holds the address; unassigning a primary fails; an unknown
 * ENI id fails. Returns the new ENI states and foreign holders.
 */
export function applyActions(
  enis: readonly EniState[],
  foreign: ReadonlyMap<string, string>,
  actions: readonly PlanAction[],
): { enis: EniState[]; foreign: Map<string, string> } {
  const state = enis.map((eni) => ({ ...eni, ipv4s: [...eni.ipv4s], ipv6s: [...eni.ipv6s] }));
  const outside = new Map(foreign);
  const find = (eniId: string) => {
    const eni = state.find((e) => e.eniId === eniId);
    if (eni === undefined) throw new Error(`InvalidNetworkInterfaceID.NotFound: ${eniId}`);
    return eni;
  };
  for (const action of actions) {
    switch (action.kind) {
      case "assign-ipv4": {
        const target = find(action.eniId);
        for (const address of action.addresses) {
          for (const eni of state) {
            if (eni !== target && eni.ipv4s.includes(address)) {
              if (eni.primaryIpv4 === address) throw new Error(`cannot reassign primary ${address}`);
              eni.ipv4s = eni.ipv4s.filter((a) => a !== address);
            }
          }
          if (!target.ipv4s.includes(address)) target.ipv4s.push(address);
        }
        break;
      }
      case "unassign-ipv4": {
        const eni = find(action.eniId);
        for (const address of action.addresses) {
          if (eni.primaryIpv4 === address) throw new Error(`cannot unassign primary ${address}`);
          eni.ipv4s = eni.ipv4s.filter((a) => a !== address);
        }
        break;
      }
      case "assign-ipv6": {
        const target = find(action.eniId);
        for (const address of action.addresses) {
          const elsewhere = state.find((e) => e !== target && e.ipv6s.includes(address));
          if (elsewhere !== undefined || outside.has(address)) {
            throw new Error(`${address} is still held by ${elsewhere?.eniId ?? outside.get(address)}`);
          }
          if (!target.ipv6s.includes(address)) target.ipv6s.push(address);
        }
        break;
      }
      case "unassign-ipv6": {
        for (const address of action.addresses) {
          if (outside.get(address) === action.eniId) {
            outside.delete(address);
            continue;
          }
          const eni = find(action.eniId);
          eni.ipv6s = eni.ipv6s.filter((a) => a !== address);
        }
        break;
      }
    }
  }
  return { enis: state, foreign: outside };
}
