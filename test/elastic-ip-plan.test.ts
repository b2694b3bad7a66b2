/**
 * planElasticIps: which AssociateAddress calls make each Elastic IP follow its floating address. Tables of
 * the cases one by one, then properties over random accounts: never a call for an unmapped allocation,
 * never for an address our ENI does not hold, never pulling an Elastic IP off another private address or
 * replacing another Elastic IP on ours, never a disassociation, and nothing left to do once the calls applied.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ElasticIpPlanInput, planElasticIps } from "../src/eni/elastic-ip-plan.js";
import type { Ec2ElasticIp, ElasticIpMapping } from "../src/eni/types.js";

const OURS = "eni-0000000000000a001";
const THEIRS = "eni-0000000000002a001";
const FLOAT = "198.51.100.80";
const WEB = "eipalloc-0123456789abcdef0";
const OTHER = "eipalloc-0fedcba987654321f";

const mapping: ElasticIpMapping = { address: FLOAT, allocationId: WEB };

function eip(allocationId: string, at?: { eniId: string; privateIp: string }): Ec2ElasticIp {
  return {
    allocationId,
    publicIp: allocationId === WEB ? "203.0.113.10" : "203.0.113.11",
    association: at === undefined ? undefined : { associationId: `eipassoc-${allocationId.slice(9)}`, ...at },
  };
}

const held = (eniId?: string): ReadonlyMap<string, string> =>
  new Map(eniId === undefined ? [] : [[FLOAT, eniId]]);

/** Plans as the caller does: the first plan, then with occupants when it asks for them. */
function planWith(input: Omit<ElasticIpPlanInput, "occupants">, occupants: readonly Ec2ElasticIp[] = []) {
  const first = planElasticIps(input);
  if (first.occupantQuery === undefined) return { first, final: first };
  return { first, final: planElasticIps({ ...input, occupants }) };
}

describe("planElasticIps, case by case", () => {
  it.each<
    [string, Omit<ElasticIpPlanInput, "occupants" | "mappings">, Ec2ElasticIp[], string, boolean | undefined]
  >([
    [
      "our ENI holds the address, the Elastic IP is not associated: associate, without AllowReassociation",
      { held: held(OURS), described: [eip(WEB)] },
      [],
      "associate",
      false,
    ],
    [
      "the Elastic IP moved with the address (reassignment): nothing to do, no occupant read",
      { held: held(OURS), described: [eip(WEB, { eniId: OURS, privateIp: FLOAT })] },
      [],
      "in-place",
      undefined,
    ],
    [
      "Describe still shows our address on the other ENI (reads lag): associate with AllowReassociation",
      { held: held(OURS), described: [eip(WEB, { eniId: THEIRS, privateIp: FLOAT })] },
      [],
      "associate",
      true,
    ],
    [
      "...unless the fresher occupant read shows it here already",
      { held: held(OURS), described: [eip(WEB, { eniId: THEIRS, privateIp: FLOAT })] },
      [eip(WEB, { eniId: OURS, privateIp: FLOAT })],
      "in-place",
      undefined,
    ],
    [
      "the standby (our ENI does not hold the address) never touches the active pod's Elastic IP",
      { held: held(undefined), described: [eip(WEB, { eniId: THEIRS, privateIp: FLOAT })] },
      [],
      "not-held",
      undefined,
    ],
    [
      "a mapping for an address we do not carry, Elastic IP unassociated: nothing done",
      { held: held(undefined), described: [eip(WEB)] },
      [],
      "not-held",
      undefined,
    ],
    [
      "an allocation that does not exist: reported, no call",
      { held: held(OURS), described: [] },
      [],
      "missing-allocation",
      undefined,
    ],
    [
      "the Elastic IP points at another private address (someone's choice): left alone",
      { held: held(OURS), described: [eip(WEB, { eniId: THEIRS, privateIp: "198.51.100.99" })] },
      [],
      "elsewhere",
      undefined,
    ],
    [
      "the Elastic IP points at another address of our own ENI: left alone too",
      { held: held(OURS), described: [eip(WEB, { eniId: OURS, privateIp: "198.51.100.81" })] },
      [],
      "elsewhere",
      undefined,
    ],
    [
      "our address already carries an unmapped Elastic IP: never replaced",
      { held: held(OURS), described: [eip(WEB)] },
      [eip(OTHER, { eniId: OURS, privateIp: FLOAT })],
      "occupied",
      undefined,
    ],
  ])("%s", (_, input, occupants, kind, allowReassociation) => {
    const { first, final } = planWith({ mappings: [mapping], ...input }, occupants);
    expect(first.calls).toEqual([]);
    expect(final.decisions.map((d) => d.status.kind)).toEqual([kind]);
    if (allowReassociation === undefined) {
      expect(final.calls).toEqual([]);
    } else {
      expect(first.occupantQuery).toEqual({ eniIds: [OURS], privateIps: [FLOAT] });
      expect(final.calls).toEqual([{ allocationId: WEB, eniId: OURS, privateIp: FLOAT, allowReassociation }]);
    }
  });

  it("ignores an unmapped allocation that Describe returned, and batches the occupant read", () => {
    const second: ElasticIpMapping = { address: "198.51.100.81", allocationId: OTHER };
    const input: ElasticIpPlanInput = {
      mappings: [mapping, second],
      held: new Map([
        [FLOAT, OURS],
        ["198.51.100.81", THEIRS],
      ]),
      described: [eip(WEB), eip(OTHER), eip("eipalloc-0aaaaaaaaaaaaaaaa")],
    };
    const first = planElasticIps(input);
    expect(first.occupantQuery).toEqual({ eniIds: [OURS, THEIRS], privateIps: [FLOAT, "198.51.100.81"] });
    const final = planElasticIps({ ...input, occupants: [] });
    expect(final.calls.map((c) => [c.allocationId, c.eniId, c.privateIp])).toEqual([
      [WEB, OURS, FLOAT],
      [OTHER, THEIRS, "198.51.100.81"],
    ]);
  });
});

// Properties over random accounts: up to 4 mappings, 3 ENIs (2 ours), allocations that may be missing,
// unmapped, associated anywhere.
const ADDRESSES = ["198.51.100.80", "198.51.100.81", "198.51.100.82", "198.51.100.83"];
const ALLOCATIONS = ["eipalloc-00000000", "eipalloc-11111111", "eipalloc-22222222", "eipalloc-33333333"];
const UNMAPPED = ["eipalloc-44444444", "eipalloc-55555555"];
const OUR_ENIS = ["eni-0a", "eni-0b"];
const ENIS = [...OUR_ENIS, "eni-0rival"];

const associationArb = fc.option(
  fc.record({
    associationId: fc.constantFrom("eipassoc-1", "eipassoc-2"),
    eniId: fc.constantFrom(...ENIS),
    privateIp: fc.constantFrom(...ADDRESSES, "198.51.100.99"),
  }),
  { nil: undefined },
);

const accountArb = fc
  .record({
    mapped: fc.subarray([0, 1, 2, 3], { minLength: 1 }),
    heldBy: fc.array(fc.option(fc.constantFrom(...OUR_ENIS), { nil: undefined }), {
      minLength: 4,
      maxLength: 4,
    }),
    exists: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
    associations: fc.array(associationArb, { minLength: 6, maxLength: 6 }),
    extraOccupant: fc.boolean(),
  })
  .map(({ mapped, heldBy, exists, associations, extraOccupant }) => {
    const mappings = mapped.map((i) => ({ address: ADDRESSES[i] ?? "", allocationId: ALLOCATIONS[i] ?? "" }));
    const held = new Map<string, string>();
    heldBy.forEach((eniId, i) => {
      if (eniId !== undefined) held.set(ADDRESSES[i] ?? "", eniId);
    });
    // The account: every allocation that exists, with where it points. One private address carries at most
    // one Elastic IP, as EC2 allows.
    const account: Ec2ElasticIp[] = [];
    const taken = new Set<string>();
    [...ALLOCATIONS, ...UNMAPPED].forEach((allocationId, i) => {
      if (exists[i] !== true && !(extraOccupant && i >= ALLOCATIONS.length)) return;
      let association = associations[i];
      if (association !== undefined) {
        const key = `${association.eniId} ${association.privateIp}`;
        if (taken.has(key)) association = undefined;
        else taken.add(key);
      }
      account.push({ allocationId, publicIp: `203.0.113.${i + 1}`, association });
    });
    return { mappings, held, account };
  });

/** Plans as the caller does, reading Describe and occupants from the account. */
function planFromAccount(a: {
  mappings: ElasticIpMapping[];
  held: Map<string, string>;
  account: Ec2ElasticIp[];
}) {
  const mapped = new Set(a.mappings.map((m) => m.allocationId));
  // Describe by allocation id may return more than asked for; the plan must ignore it.
  const described = a.account.filter((e) => mapped.has(e.allocationId) || e.allocationId === UNMAPPED[0]);
  const input = { mappings: a.mappings, held: a.held, described };
  const first = planElasticIps(input);
  if (first.occupantQuery === undefined) return first;
  const { eniIds, privateIps } = first.occupantQuery;
  const occupants = a.account.filter(
    (e) =>
      e.association !== undefined &&
      eniIds.includes(e.association.eniId) &&
      privateIps.includes(e.association.privateIp),
  );
  return planElasticIps({ ...input, occupants });
}

/** EC2's AssociateAddress on the account: the Elastic IP moves; another one on that address loses it. */
function apply(account: Ec2ElasticIp[], calls: ReturnType<typeof planElasticIps>["calls"]): Ec2ElasticIp[] {
  let out = account;
  for (const call of calls) {
    out = out.map((e) => {
      if (e.allocationId === call.allocationId) {
        return {
          ...e,
          association: { associationId: "eipassoc-new", eniId: call.eniId, privateIp: call.privateIp },
        };
      }
      const a = e.association;
      return a?.eniId === call.eniId && a.privateIp === call.privateIp ? { ...e, association: undefined } : e;
    });
  }
  return out;
}

const RUNS = { numRuns: 500 };

describe("planElasticIps properties", () => {
  it("calls only for mapped allocations that exist, on the address they map, on the ENI of ours that holds it", () => {
    fc.assert(
      fc.property(accountArb, (a) => {
        for (const call of planFromAccount(a).calls) {
          const m = a.mappings.find((x) => x.allocationId === call.allocationId);
          expect(m).toBeDefined();
          expect(call.privateIp).toBe(m?.address);
          expect(a.held.get(call.privateIp)).toBe(call.eniId);
          expect(a.account.some((e) => e.allocationId === call.allocationId)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it("never takes an Elastic IP off another private address, nor another Elastic IP off ours", () => {
    fc.assert(
      fc.property(accountArb, (a) => {
        const { calls } = planFromAccount(a);
        const after = apply(a.account, calls);
        for (const before of a.account) {
          const was = before.association;
          if (was === undefined) continue;
          const now = after.find((e) => e.allocationId === before.allocationId)?.association;
          const isCall = calls.some((c) => c.allocationId === before.allocationId);
          if (!isCall) {
            // An Elastic IP we did not associate keeps its association untouched.
            expect(now).toEqual(was);
          } else {
            // One we moved pointed at its own mapped address (on another ENI: a lagging read) and now points
            // at it on ours, and only with AllowReassociation.
            expect(was.privateIp).toBe(now?.privateIp);
            expect(calls.find((c) => c.allocationId === before.allocationId)?.allowReassociation).toBe(true);
          }
        }
      }),
      RUNS,
    );
  });

  it("associates an unassociated Elastic IP without AllowReassociation: a race makes EC2 refuse, not move", () => {
    fc.assert(
      fc.property(accountArb, (a) => {
        for (const call of planFromAccount(a).calls) {
          const before = a.account.find((e) => e.allocationId === call.allocationId);
          expect(call.allowReassociation).toBe(before?.association !== undefined);
        }
      }),
      RUNS,
    );
  });

  it("is idempotent: once its calls are applied, planning again calls nothing", () => {
    fc.assert(
      fc.property(accountArb, (a) => {
        const account = apply(a.account, planFromAccount(a).calls);
        expect(planFromAccount({ ...a, account }).calls).toEqual([]);
      }),
      RUNS,
    );
  });

  it("leaves every held mapped address in place, or says why not (missing, elsewhere, occupied)", () => {
    fc.assert(
      fc.property(accountArb, (a) => {
        const account = apply(a.account, planFromAccount(a).calls);
        for (const d of planFromAccount({ ...a, account }).decisions) {
          const kind = d.status.kind;
          if (a.held.has(d.mapping.address))
            expect(["in-place", "missing-allocation", "elsewhere", "occupied"]).toContain(kind);
          else expect(kind).toBe("not-held");
        }
      }),
      RUNS,
    );
  });
});
