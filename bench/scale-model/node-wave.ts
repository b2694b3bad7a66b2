/**
 * The seam between the scale model and the bridge: the planner of one node's wave. Given what the node's
 * bridge would see at the start of a wave (its pods' interfaces, its ENIs as IMDS shows them, the releases
 * whose grace has ended, the node's whereabouts slices), it returns the EC2 calls of the wave in order.
 * The model times those calls against the account's buckets; it never decides what to call itself.
 *
 * - `perAddressWave`: the bridge's own logic, unchanged: the core planner (src/eni/planner.ts `plan`) and
 *   the wave planner (src/ipam-whereabouts-bridge/wave-plan.ts `planWave`), as Bridge.#wave calls them.
 * - `prefixStandInWave`: until the bridge's prefix planner lands, the smallest honest stand-in: one assign
 *   per Multus ENI and family carrying the node's slice split into delegated prefixes (/28, /80), none once
 *   the ENI holds them. What it leaves out (releasing single addresses inside a new prefix, slices that do
 *   not split) does not occur in the model's world.
 */
import { addressOfValue, cidrBounds, DELEGATED_PREFIX_LENGTH } from "../../src/eni/ip.js";
import { plan } from "../../src/eni/planner.js";
import type { EniState, IpFamily, PlanAction, PodInterface } from "../../src/eni/types.js";
import type { Release } from "../../src/ipam-whereabouts-bridge/desired-state.js";
import { planWave } from "../../src/ipam-whereabouts-bridge/wave-plan.js";
import type { ModelEc2Action } from "./token-bucket.js";

/** A node's whereabouts slice of one network (NodeSlicePool `status.allocations[].sliceRange`) and its ENI. */
export interface NodeSlice {
  readonly cidr: string;
  /** The Multus ENI behind the network's master on this node. */
  readonly eniId: string;
}

export interface NodeWaveInput {
  readonly interfaces: readonly PodInterface[];
  readonly enis: readonly EniState[];
  readonly multusEniIds: ReadonlySet<string>;
  /** Addresses per ENI and family for the instance type, the primary included. */
  readonly addressesPerEni: number;
  readonly allowedCidrs: readonly string[];
  /** Releases whose grace has ended (the bridge's desired-state rule, kept by the model). */
  readonly releases: readonly Release[];
  readonly slices: readonly NodeSlice[];
}

/** A prefix call: `Ipv4Prefix.N` / `Ipv6Prefix.N` on the assign or unassign action of the family. */
export interface PrefixAction {
  readonly kind: "assign-prefixes" | "unassign-prefixes";
  readonly family: IpFamily;
  readonly eniId: string;
  readonly prefixes: readonly string[];
}

export type ModelAction = PlanAction | PrefixAction;

export interface NodeWavePlan {
  /** In execution order; the model sends them one after the other, as the bridge does. */
  readonly actions: readonly ModelAction[];
  /** Addresses were refused for room (`eni-full`): the bridge runs the next wave at once if this one changed the ENIs. */
  readonly eniFull: boolean;
}

export interface NodeWavePlanner {
  readonly name: string;
  /** Printed beside the figures: what planned the waves. */
  readonly description: string;
  plan(input: NodeWaveInput): NodeWavePlan;
}

/** The EC2 action (and so the bucket) of a call. */
export function ec2ActionOf(action: ModelAction): ModelEc2Action {
  switch (action.kind) {
    case "assign-ipv4":
      return "AssignPrivateIpAddresses";
    case "unassign-ipv4":
      return "UnassignPrivateIpAddresses";
    case "assign-ipv6":
      return "AssignIpv6Addresses";
    case "unassign-ipv6":
      return "UnassignIpv6Addresses";
    case "assign-prefixes":
      return action.family === 4 ? "AssignPrivateIpAddresses" : "AssignIpv6Addresses";
    case "unassign-prefixes":
      return action.family === 4 ? "UnassignPrivateIpAddresses" : "UnassignIpv6Addresses";
  }
}

export const perAddressWave: NodeWavePlanner = {
  name: "per-address",
  description: "the bridge's core planner and wave planner (src/eni/planner.ts, wave-plan.ts), unchanged",
  plan(input) {
    // IPv4 only in the model: the IPv6 holder look-up of planFor (a Describe before the plan) never applies.
    if (input.interfaces.some((i) => i.addresses.some((a) => a.includes(":")))) {
      throw new Error("scale model: per-address waves are modelled for IPv4 only (no IPv6 holder look-ups)");
    }
    const planned = plan({
      interfaces: input.interfaces,
      enis: input.enis,
      policy: { allowedCidrs: input.allowedCidrs },
    });
    const wave = planWave({
      plan: planned,
      releases: input.releases,
      enis: input.enis,
      multusEniIds: input.multusEniIds,
      addressesPerEni: input.addressesPerEni,
    });
    return { actions: wave.actions, eniFull: wave.refusals.some((r) => r.reason === "eni-full") };
  },
};

/** The delegated prefixes (/28, /80) that make up a slice, in order. @throws Error when it does not split. */
export function delegatedPrefixesOf(slice: string): string[] {
  const { family, first, last } = cidrBounds(slice);
  const bits = family === 4 ? 32 : 128;
  const size = 1n << BigInt(bits - DELEGATED_PREFIX_LENGTH[family]);
  if ((last - first + 1n) % size !== 0n || first % size !== 0n) {
    throw new Error(
      `scale model: slice ${slice} does not split into /${DELEGATED_PREFIX_LENGTH[family]} prefixes`,
    );
  }
  const out: string[] = [];
  for (let start = first; start <= last; start += size) {
    out.push(`${addressOfValue(family, start)}/${DELEGATED_PREFIX_LENGTH[family]}`);
  }
  return out;
}

export const prefixStandInWave: NodeWavePlanner = {
  name: "prefix (stand-in)",
  description:
    "STAND-IN for the bridge's prefix planner (not landed): one assign per Multus ENI and family with the node's slices as prefixes",
  plan(input) {
    const wanted = new Map<string, { eniId: string; family: IpFamily; prefixes: string[] }>();
    for (const slice of input.slices) {
      const eni = input.enis.find((e) => e.eniId === slice.eniId);
      if (eni === undefined || !input.multusEniIds.has(eni.eniId)) continue;
      const { family } = cidrBounds(slice.cidr);
      const held = new Set(family === 4 ? (eni.ipv4Prefixes ?? []) : (eni.ipv6Prefixes ?? []));
      const missing = delegatedPrefixesOf(slice.cidr).filter((p) => !held.has(p));
      if (missing.length === 0) continue;
      const key = `${family} ${eni.eniId}`;
      const entry = wanted.get(key) ?? { eniId: eni.eniId, family, prefixes: [] };
      entry.prefixes.push(...missing);
      wanted.set(key, entry);
    }
    const actions: PrefixAction[] = [...wanted.values()]
      .sort((a, b) => a.family - b.family || (a.eniId < b.eniId ? -1 : a.eniId > b.eniId ? 1 : 0))
      .map((w) => ({ kind: "assign-prefixes", family: w.family, eniId: w.eniId, prefixes: w.prefixes }));
    return { actions, eniFull: false };
  },
};
