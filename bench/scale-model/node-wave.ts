/**
 * The seam between the scale model and the bridge: the planner of one node's wave. Given what the node's
 * bridge would see at the start of a wave (its pods' interfaces, its ENIs as IMDS shows them, the releases
 * whose grace has ended, the NADs and this node's NodeSlicePool allocations), it returns the EC2 calls of
 * the wave in order. The model times those calls against the account's buckets; it never decides what to
 * call itself.
 *
 * - `perAddressWave`: the bridge's own logic, unchanged: the core planner (src/eni/planner.ts `plan`) and
 *   the wave planner (src/ipam-whereabouts-bridge/waves/wave-plan.ts `planWave`), as Bridge.#wave calls them.
 * - `prefixModeWave`: prefix mode's wave as the bridge runs it: first the prefix steps of
 *   src/ipam-whereabouts-bridge/prefixes/prefix-plan.ts (`planPrefixes`, `prefixSteps`, overlap `defer`, the
 *   default), then the address plan above on the ENIs as they are once those steps succeeded (a step that
 *   fails past its retries fails the wave whole, so the address plan only ever runs after all of them).
 */
import { plan } from "../../src/eni/planner.js";
import type { EniState, IpFamily, PlanAction, PodInterface } from "../../src/eni/types.js";
import type { NadInfo, NodeSlicePoolInfo } from "../../src/ipam-whereabouts-bridge/kube/kube-api.js";
import {
  type PrefixStep,
  planPrefixes,
  prefixSteps,
} from "../../src/ipam-whereabouts-bridge/prefixes/prefix-plan.js";
import type { Release } from "../../src/ipam-whereabouts-bridge/state/desired-state.js";
import { planWave } from "../../src/ipam-whereabouts-bridge/waves/wave-plan.js";
import type { ModelEc2Action } from "./token-bucket.js";

export interface NodeWaveInput {
  readonly nodeName: string;
  readonly interfaces: readonly PodInterface[];
  readonly enis: readonly EniState[];
  readonly multusEniIds: ReadonlySet<string>;
  /** Addresses per ENI and family for the instance type, the primary included. */
  readonly addressesPerEni: number;
  readonly allowedCidrs: readonly string[];
  /** Releases whose grace has ended (the bridge's desired-state rule, kept by the model). */
  readonly releases: readonly Release[];
  readonly nads: readonly NadInfo[];
  /** The NodeSlicePools (this node's allocations are what counts). */
  readonly slicePools: readonly NodeSlicePoolInfo[];
  /** The node's interfaces, name -> MAC: where a NAD's `master` is looked up. */
  readonly hostMacs: ReadonlyMap<string, string>;
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

function modelActionOf(step: PrefixStep): ModelAction {
  switch (step.kind) {
    case "release-prefixes":
      return { kind: "unassign-prefixes", family: step.family, eniId: step.eniId, prefixes: step.prefixes };
    case "unassign-addresses":
      return step.family === 4
        ? { kind: "unassign-ipv4", eniId: step.eniId, addresses: step.addresses }
        : { kind: "unassign-ipv6", eniId: step.eniId, addresses: step.addresses, reason: "release" };
    case "assign-prefixes":
      return { kind: "assign-prefixes", family: step.family, eniId: step.eniId, prefixes: step.prefixes };
  }
}

/** The ENIs once `steps` succeeded. */
function afterSteps(enis: readonly EniState[], steps: readonly PrefixStep[]): EniState[] {
  return enis.map((eni) => {
    let ipv4s = [...eni.ipv4s];
    let ipv6s = [...eni.ipv6s];
    let ipv4Prefixes = [...(eni.ipv4Prefixes ?? [])];
    let ipv6Prefixes = [...(eni.ipv6Prefixes ?? [])];
    for (const step of steps.filter((s) => s.eniId === eni.eniId)) {
      const four = step.family === 4;
      if (step.kind === "unassign-addresses") {
        const gone = new Set(step.addresses);
        if (four) ipv4s = ipv4s.filter((a) => !gone.has(a));
        else ipv6s = ipv6s.filter((a) => !gone.has(a));
      } else if (step.kind === "release-prefixes") {
        const gone = new Set(step.prefixes);
        if (four) ipv4Prefixes = ipv4Prefixes.filter((p) => !gone.has(p));
        else ipv6Prefixes = ipv6Prefixes.filter((p) => !gone.has(p));
      } else if (four) ipv4Prefixes = [...new Set([...ipv4Prefixes, ...step.prefixes])];
      else ipv6Prefixes = [...new Set([...ipv6Prefixes, ...step.prefixes])];
    }
    return { ...eni, ipv4s, ipv6s, ipv4Prefixes, ipv6Prefixes };
  });
}

export const prefixModeWave: NodeWavePlanner = {
  name: "prefix",
  description:
    "the bridge's prefix plan (src/ipam-whereabouts-bridge/prefixes/prefix-plan.ts, overlap defer), then the address plan as above, unchanged",
  plan(input) {
    const prefixes = planPrefixes({
      nodeName: input.nodeName,
      nads: input.nads,
      slicePools: input.slicePools,
      enis: input.enis,
      multusEniIds: input.multusEniIds,
      hostMacs: input.hostMacs,
      allowedCidrs: input.allowedCidrs,
      carried: new Set(input.interfaces.flatMap((i) => i.addresses)),
      addressesPerEni: input.addressesPerEni,
      overlap: "defer",
      // No slice changes owner in the model, so no prefix is ever released: time and grace do not matter.
      now: 0,
      releaseGraceMs: 0,
      unusedSince: new Map(),
    });
    if (prefixes.refusals.length > 0) {
      throw new Error(
        `scale model: the prefix plan refused the model's slices: ${prefixes.refusals[0]?.detail}`,
      );
    }
    const steps = prefixSteps(prefixes, prefixes.releases);
    const addresses = perAddressWave.plan({ ...input, enis: afterSteps(input.enis, steps) });
    return { actions: [...steps.map(modelActionOf), ...addresses.actions], eniFull: addresses.eniFull };
  },
};
