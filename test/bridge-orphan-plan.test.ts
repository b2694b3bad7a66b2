/**
 * Attach mode's orphan decision (src/ipam-whereabouts-bridge/attach/orphan-plan.ts): which of this cluster's
 * ENIs are due for deletion, from one DescribeNetworkInterfaces answer, the first-seen times and the clock.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ATTACH_TAGS } from "../src/eni/attach-networks.js";
import type { Ec2NetworkInterface } from "../src/eni/types.js";
import { isOrphanCandidate, orphanPlan } from "../src/ipam-whereabouts-bridge/attach/orphan-plan.js";

const CLUSTER = "prod-a";
const GRACE_MS = 600_000;
const NOW = 1_700_000_000_000;
const OPTIONS = { clusterName: CLUSTER, graceMs: GRACE_MS };

/** An ENI as EC2 answers it; `status: undefined` leaves the field out (a reader that did not learn it). */
function eni(
  id: string,
  fields: Omit<Partial<Ec2NetworkInterface>, "status"> & { status?: string | undefined } = {},
): Ec2NetworkInterface {
  const { status, ...rest } = { status: "available", ...fields };
  return {
    eniId: id,
    mac: "02:00:00:00:00:01",
    subnetId: "subnet-0a",
    vpcId: "vpc-0a",
    instanceId: undefined,
    deviceIndex: undefined,
    primaryIpv4: "192.0.2.10",
    ipv4s: ["192.0.2.10"],
    ipv6s: [],
    tags: { [ATTACH_TAGS.cluster]: CLUSTER, [ATTACH_TAGS.noManage]: "true" },
    ...rest,
    ...(status === undefined ? {} : { status }),
  };
}

const attachment = {
  attachmentId: "eni-attach-1",
  instanceId: "i-0a",
  deviceIndex: 1,
  networkCardIndex: 0,
  status: "attached",
  deleteOnTermination: true,
};

describe("isOrphanCandidate", () => {
  it.each<[string, Ec2NetworkInterface, string, boolean]>([
    ["an available ENI with the cluster's tag", eni("eni-1"), CLUSTER, true],
    [
      "an ENI without the cluster tag",
      eni("eni-1", { tags: { [ATTACH_TAGS.noManage]: "true" } }),
      CLUSTER,
      false,
    ],
    [
      "an ENI of another cluster",
      eni("eni-1", { tags: { [ATTACH_TAGS.cluster]: "prod-b" } }),
      CLUSTER,
      false,
    ],
    [
      "a tag value differing in case only",
      eni("eni-1", { tags: { [ATTACH_TAGS.cluster]: "Prod-A" } }),
      CLUSTER,
      false,
    ],
    ["an ENI in use", eni("eni-1", { status: "in-use" }), CLUSTER, false],
    ["an ENI attaching", eni("eni-1", { status: "attaching" }), CLUSTER, false],
    ["an ENI whose status the answer omits", eni("eni-1", { status: undefined }), CLUSTER, false],
    ["an available ENI that still shows an attachment", eni("eni-1", { attachment }), CLUSTER, false],
    [
      "any ENI when the cluster name is empty",
      eni("eni-1", { tags: { [ATTACH_TAGS.cluster]: "" } }),
      "",
      false,
    ],
  ])("%s: %s", (_name, candidate, cluster, expected) => {
    expect(isOrphanCandidate(candidate, cluster)).toBe(expected);
  });
});

describe("orphanPlan", () => {
  it.each<
    [
      string,
      Ec2NetworkInterface[],
      [string, number][],
      { waiting: string[]; due: string[]; seen: [string, number][] },
    ]
  >([
    [
      "a first sighting waits, its clock starting now",
      [eni("eni-1")],
      [],
      { waiting: ["eni-1"], due: [], seen: [["eni-1", NOW]] },
    ],
    [
      "one seen a moment less than the grace ago waits",
      [eni("eni-1")],
      [["eni-1", NOW - GRACE_MS + 1]],
      { waiting: ["eni-1"], due: [], seen: [["eni-1", NOW - GRACE_MS + 1]] },
    ],
    [
      "one seen exactly the grace ago is due",
      [eni("eni-1")],
      [["eni-1", NOW - GRACE_MS]],
      { waiting: [], due: ["eni-1"], seen: [["eni-1", NOW - GRACE_MS]] },
    ],
    [
      "an untagged ENI is never due, however long it was seen",
      [eni("eni-1", { tags: {} })],
      [["eni-1", 0]],
      { waiting: [], due: [], seen: [] },
    ],
    [
      "one attached since is forgotten",
      [eni("eni-1", { status: "in-use", attachment })],
      [["eni-1", 0]],
      { waiting: [], due: [], seen: [] },
    ],
    [
      "one absent from the answer is forgotten",
      [eni("eni-2")],
      [["eni-1", 0]],
      { waiting: ["eni-2"], due: [], seen: [["eni-2", NOW]] },
    ],
    [
      "a first-seen time in the future (a clock set back) counts from now",
      [eni("eni-1")],
      [["eni-1", NOW + 5_000]],
      { waiting: ["eni-1"], due: [], seen: [["eni-1", NOW]] },
    ],
    [
      "an ENI listed twice counts once",
      [eni("eni-1"), eni("eni-1")],
      [["eni-1", 0]],
      { waiting: [], due: ["eni-1"], seen: [["eni-1", 0]] },
    ],
  ])("%s", (_name, enis, firstSeen, expected) => {
    const plan = orphanPlan(enis, new Map(firstSeen), NOW, OPTIONS);
    expect({ waiting: plan.waiting, due: plan.due.map((e) => e.eniId), seen: [...plan.seen] }).toEqual(
      expected,
    );
  });

  const arbitraryEni = fc
    .record({
      id: fc.integer({ min: 0, max: 7 }).map((n) => `eni-${n}`),
      cluster: fc.constantFrom(CLUSTER, "prod-b", "", undefined),
      status: fc.constantFrom("available", "in-use", "attaching", "detaching", undefined),
      attached: fc.boolean(),
    })
    .map(({ id, cluster, status, attached }) =>
      eni(id, {
        tags: cluster === undefined ? {} : { [ATTACH_TAGS.cluster]: cluster },
        status,
        ...(attached ? { attachment } : {}),
      }),
    );
  const arbitraryFirstSeen = fc
    .array(
      fc.tuple(
        fc.integer({ min: 0, max: 7 }).map((n) => `eni-${n}`),
        fc.integer({ min: NOW - 2 * GRACE_MS, max: NOW }),
      ),
    )
    .map((pairs) => new Map(pairs));
  const arbitraryGrace = fc.integer({ min: 0, max: 2 * GRACE_MS });

  it("never makes due an ENI that EC2's answer does not show available, unattached and tagged with the cluster", () => {
    fc.assert(
      fc.property(fc.array(arbitraryEni), arbitraryFirstSeen, arbitraryGrace, (enis, firstSeen, graceMs) => {
        const plan = orphanPlan(enis, firstSeen, NOW, { clusterName: CLUSTER, graceMs });
        for (const due of plan.due) {
          expect(due.tags[ATTACH_TAGS.cluster]).toBe(CLUSTER);
          expect(due.status).toBe("available");
          expect(due.attachment).toBeUndefined();
          expect(enis).toContain(due);
        }
      }),
    );
  });

  it("makes nothing due before the grace has passed since its first sighting", () => {
    fc.assert(
      fc.property(fc.array(arbitraryEni), arbitraryFirstSeen, arbitraryGrace, (enis, firstSeen, graceMs) => {
        const plan = orphanPlan(enis, firstSeen, NOW, { clusterName: CLUSTER, graceMs });
        for (const due of plan.due)
          expect(NOW - (plan.seen.get(due.eniId) ?? NOW)).toBeGreaterThanOrEqual(graceMs);
        if (graceMs > 0)
          expect(orphanPlan(enis, new Map(), NOW, { clusterName: CLUSTER, graceMs }).due).toEqual([]);
      }),
    );
  });

  it("splits the candidates into waiting and due, and is the same when applied to its own first-seen times", () => {
    fc.assert(
      fc.property(fc.array(arbitraryEni), arbitraryFirstSeen, arbitraryGrace, (enis, firstSeen, graceMs) => {
        const options = { clusterName: CLUSTER, graceMs };
        const plan = orphanPlan(enis, firstSeen, NOW, options);
        const candidates = new Set(enis.filter((e) => isOrphanCandidate(e, CLUSTER)).map((e) => e.eniId));
        expect(new Set(plan.seen.keys())).toEqual(candidates);
        expect(new Set([...plan.waiting, ...plan.due.map((e) => e.eniId)])).toEqual(candidates);
        expect(plan.waiting.length + plan.due.length).toBe(candidates.size);
        const again = orphanPlan(enis, plan.seen, NOW, options);
        expect([...again.seen]).toEqual([...plan.seen]);
        expect(again.due).toEqual(plan.due);
      }),
    );
  });

  it("keeps an ENI due later once it is due, while EC2 still shows it available", () => {
    fc.assert(
      fc.property(
        fc.array(arbitraryEni),
        arbitraryFirstSeen,
        fc.integer({ min: 0, max: GRACE_MS }),
        (enis, firstSeen, later) => {
          const plan = orphanPlan(enis, firstSeen, NOW, OPTIONS);
          const next = orphanPlan(enis, plan.seen, NOW + later, OPTIONS);
          for (const due of plan.due) expect(next.due).toContain(due);
        },
      ),
    );
  });
});
