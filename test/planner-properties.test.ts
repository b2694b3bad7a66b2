import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anyCidrContains, awsReservedAddresses, canonical, cidrContains, family } from "../src/eni/ip.js";
import { ipv6HolderLookupNeeded, plan } from "../src/eni/planner.js";
import type { EniState, Plan, PlanAction, PlanInput } from "../src/eni/types.js";
import { applyActions, permute, type World, worldArbitrary } from "./helpers/arbitraries.js";

const RUNS = { numRuns: 300 };

function isAssign(action: PlanAction): boolean {
  return action.kind === "assign-ipv4" || action.kind === "assign-ipv6";
}

function isRelease(action: PlanAction): boolean {
  return action.kind === "unassign-ipv4" || (action.kind === "unassign-ipv6" && action.reason === "release");
}

function eniOf(enis: readonly EniState[], eniId: string): EniState | undefined {
  return enis.find((e) => e.eniId === eniId);
}

/**
 * Plans the way the caller does: when no holders were given, look up the holders of the IPv6 addresses the
 * planner asks about (here: in the world's foreign map, as DescribeNetworkInterfaces would) and plan again.
 */
function planAsCaller(world: World): { input: PlanInput; result: Plan } {
  if (world.input.ipv6Holders !== undefined) return { input: world.input, result: plan(world.input) };
  const holders = new Map<string, string>();
  for (const address of ipv6HolderLookupNeeded(world.input)) {
    const holder = world.foreign.get(address);
    if (holder !== undefined) holders.set(address, holder);
  }
  const input: PlanInput = { ...world.input, ipv6Holders: holders };
  return { input, result: plan(input) };
}

function addressesOnInterfaces(input: PlanInput): Set<string> {
  return new Set(input.interfaces.flatMap((i) => i.addresses.map(canonical)));
}

describe("planner properties", () => {
  it("never plans an action on the primary address of any ENI", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        const primaries = new Set(input.enis.map((e) => e.primaryIpv4));
        for (const action of plan(input).actions) {
          for (const address of action.addresses) expect(primaries.has(address)).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it("never plans an action on an address outside the allowed CIDRs", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        for (const action of plan(input).actions) {
          for (const address of action.addresses) {
            expect(anyCidrContains(input.policy.allowedCidrs, address)).toBe(true);
          }
        }
      }),
      RUNS,
    );
  });

  it("assigns only addresses inside the target ENI's subnet and never an AWS-reserved one", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        for (const action of plan(input).actions.filter(isAssign)) {
          const eni = eniOf(input.enis, action.eniId);
          expect(eni).toBeDefined();
          const cidrs = action.kind === "assign-ipv4" ? eni?.subnetIpv4Cidrs : eni?.subnetIpv6Cidrs;
          for (const address of action.addresses) {
            const subnet = (cidrs ?? []).find((c) => cidrContains(c, address));
            expect(subnet).toBeDefined();
            expect(awsReservedAddresses(subnet ?? "")).not.toContain(address);
          }
        }
      }),
      RUNS,
    );
  });

  it("is idempotent: applying the plan and planning again gives no action", () => {
    fc.assert(
      fc.property(worldArbitrary, (world) => {
        const { result: first } = planAsCaller(world);
        const after = applyActions(world.input.enis, world.foreign, first.actions);
        // As the sidecar does: an address released is no longer an unconfirmed assignment.
        const releasedNow = new Set(first.actions.filter(isRelease).flatMap((a) => a.addresses));
        const unconfirmed = [...(world.input.assignedUnconfirmed ?? [])].filter(([a]) => !releasedNow.has(a));
        const { result: again } = planAsCaller({
          input: {
            ...world.input,
            assignedUnconfirmed: new Map(unconfirmed),
            enis: after.enis,
            ...(world.input.ipv6Holders === undefined ? {} : { ipv6Holders: after.foreign }),
          },
          foreign: after.foreign,
        });
        expect(again.actions).toEqual([]);
        expect(again.placements).toEqual(first.placements);
        expect(again.refusals).toEqual(first.refusals);
      }),
      RUNS,
    );
  });

  it("after applying the plan every placement is held by its ENI and by no other", () => {
    fc.assert(
      fc.property(worldArbitrary, (world) => {
        const { result } = planAsCaller(world);
        const after = applyActions(world.input.enis, world.foreign, result.actions);
        for (const p of result.placements) {
          for (const eni of after.enis) {
            const held = (p.family === 4 ? eni.ipv4s : eni.ipv6s).map(canonical).includes(p.address);
            expect(held).toBe(eni.eniId === p.eniId);
          }
        }
      }),
      RUNS,
    );
  });

  it("never assigns and unassigns one address on the same ENI", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        const assigned = new Set<string>();
        const unassigned = new Set<string>();
        for (const action of plan(input).actions) {
          const bucket = isAssign(action) ? assigned : unassigned;
          for (const address of action.addresses) bucket.add(`${action.eniId} ${address}`);
        }
        for (const key of assigned) expect(unassigned.has(key)).toBe(false);
      }),
      RUNS,
    );
  });

  it("assigns each address to at most one ENI, once", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        const assigned = plan(input)
          .actions.filter(isAssign)
          .flatMap((a) => a.addresses);
        expect(new Set(assigned).size).toBe(assigned.length);
      }),
      RUNS,
    );
  });

  it("releases only addresses we saw go, that our ENI still holds (as IMDS shows or as EC2 accepted), that no interface shows, from an ENI behind our interfaces", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        const released = new Set((input.released ?? []).map(canonical));
        const present = addressesOnInterfaces(input);
        const podMacs = new Set(input.interfaces.map((i) => i.mac.toLowerCase()));
        for (const action of plan(input).actions.filter(isRelease)) {
          const eni = eniOf(input.enis, action.eniId);
          expect(podMacs.has(eni?.mac ?? "")).toBe(true);
          for (const address of action.addresses) {
            expect(released.has(address)).toBe(true);
            expect(present.has(address)).toBe(false);
            const shown = [...(eni?.ipv4s ?? []), ...(eni?.ipv6s ?? [])].includes(address);
            expect(shown || input.assignedUnconfirmed?.get(address) === action.eniId).toBe(true);
          }
        }
      }),
      RUNS,
    );
  });

  it("acts only on placed addresses, except releases; a refused-only address is never in an action", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        const result = plan(input);
        const placed = new Set(result.placements.map((p) => p.address));
        for (const action of result.actions.filter((a) => !isRelease(a))) {
          for (const address of action.addresses) expect(placed.has(address)).toBe(true);
        }
        const acted = new Set(result.actions.flatMap((a) => a.addresses));
        for (const refusal of result.refusals) {
          if (!placed.has(refusal.address)) expect(acted.has(refusal.address)).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it("every address seen is placed, refused or skipped; placed addresses have one ENI", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        const result = plan(input);
        const accounted = new Set([
          ...result.placements.map((p) => p.address),
          ...result.refusals.map((r) => r.address),
          ...result.skipped.map((s) => s.address),
        ]);
        for (const address of addressesOnInterfaces(input)) expect(accounted.has(address)).toBe(true);
        const eniFor = new Map<string, string>();
        for (const p of result.placements) {
          expect(eniFor.get(p.address) ?? p.eniId).toBe(p.eniId);
          eniFor.set(p.address, p.eniId);
          expect(p.family).toBe(family(p.address));
        }
        for (const address of result.satisfied) expect(eniFor.has(address)).toBe(true);
      }),
      RUNS,
    );
  });

  it("does not depend on the order of interfaces, ENIs or released addresses", () => {
    fc.assert(
      fc.property(
        worldArbitrary,
        fc.array(fc.integer(), { minLength: 1, maxLength: 8 }),
        ({ input }, keys) => {
          const shuffled: PlanInput = {
            ...input,
            interfaces: permute(input.interfaces, keys),
            enis: permute(input.enis, [...keys].reverse()),
            released: permute(input.released ?? [], keys),
          };
          const a: Plan = plan(input);
          const b: Plan = plan(shuffled);
          expect(b).toEqual(a);
          expect(ipv6HolderLookupNeeded(shuffled)).toEqual(ipv6HolderLookupNeeded(input));
        },
      ),
      RUNS,
    );
  });

  it("asks for holders only of placed IPv6 addresses that none of our ENIs holds", () => {
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        const result = plan(input);
        const placed6 = new Set(result.placements.filter((p) => p.family === 6).map((p) => p.address));
        const ours = new Set(input.enis.flatMap((e) => e.ipv6s.map(canonical)));
        const needed = ipv6HolderLookupNeeded(input);
        for (const address of needed) {
          expect(placed6.has(address)).toBe(true);
          expect(ours.has(address)).toBe(false);
        }
        for (const address of placed6) {
          if (!ours.has(address)) expect(needed).toContain(address);
        }
      }),
      RUNS,
    );
  });

  it("orders actions: IPv4 assigns, moves, IPv6 assigns, then releases", () => {
    const rank = (a: PlanAction): number =>
      a.kind === "assign-ipv4"
        ? 0
        : a.kind === "unassign-ipv6" && a.reason === "move"
          ? 1
          : a.kind === "assign-ipv6"
            ? 2
            : a.kind === "unassign-ipv4"
              ? 3
              : 4;
    fc.assert(
      fc.property(worldArbitrary, ({ input }) => {
        const ranks = plan(input).actions.map(rank);
        expect(ranks).toEqual([...ranks].sort((x, y) => x - y));
      }),
      RUNS,
    );
  });
});
