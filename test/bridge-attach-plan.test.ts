import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AttachNetwork } from "../src/eni/attach-networks.js";
import type { Ec2EniAttachment, Ec2NetworkInterface } from "../src/eni/types.js";
import {
  type AttachAction,
  type AttachPlanInput,
  type NetworkPlan,
  planAttach,
} from "../src/ipam-whereabouts-bridge/attach/attach-plan.js";
import { type AttachTarget, TargetRefusal } from "../src/ipam-whereabouts-bridge/attach/attach-targets.js";

const INSTANCE = "i-0a1";
const CLUSTER = "prod";
const ZONE = "us-west-2a";
const TARGET: AttachTarget = { subnetId: "subnet-0a", securityGroupIds: ["sg-0a"] };

function network(overrides: Partial<AttachNetwork> = {}): AttachNetwork {
  return {
    name: "multus1",
    deviceIndex: 1,
    networkCardIndex: 0,
    subnet: { byZone: { [ZONE]: "subnet-0a" } },
    securityGroups: { ids: ["sg-0a"] },
    mtu: 9001,
    sourceDestCheck: false,
    ...overrides,
  };
}

const ourTags = (net: string, instance = INSTANCE) => ({
  "node.k8s.amazonaws.com/no_manage": "true",
  "multus-ipmgr.io/cluster": CLUSTER,
  "multus-ipmgr.io/instance-id": instance,
  "multus-ipmgr.io/network": net,
});

function eni(
  eniId: string,
  tags: Record<string, string>,
  at?: Partial<Ec2EniAttachment> & { deviceIndex: number },
  extra: Partial<Ec2NetworkInterface> = {},
): Ec2NetworkInterface {
  return {
    eniId,
    mac: `02:00:00:00:00:${eniId.slice(-2)}`,
    subnetId: "subnet-0a",
    vpcId: "vpc-0a",
    instanceId: at === undefined ? undefined : INSTANCE,
    deviceIndex: at?.deviceIndex,
    primaryIpv4: undefined,
    ipv4s: [],
    ipv6s: [],
    tags,
    status: at === undefined ? "available" : "in-use",
    sourceDestCheck: false,
    ...(at === undefined
      ? {}
      : {
          attachment: {
            attachmentId: `eni-attach-${eniId.slice(-2)}`,
            instanceId: INSTANCE,
            networkCardIndex: 0,
            status: "attached",
            deleteOnTermination: true,
            ...at,
          },
        }),
    ...extra,
  };
}

const PRIMARY = eni("eni-00", {}, { deviceIndex: 0 });

function input(overrides: Partial<AttachPlanInput> = {}): AttachPlanInput {
  const networks = overrides.networks ?? [network()];
  return {
    clusterName: CLUSTER,
    instance: { instanceId: INSTANCE, availabilityZone: ZONE, vpcId: "vpc-0a" },
    networks,
    instanceEnis: [PRIMARY],
    availableEnis: [],
    targets: new Map(networks.map((n) => [n.name, TARGET])),
    ...overrides,
  };
}

const kinds = (plans: readonly NetworkPlan[]) => plans.map((p) => p.actions.map((a) => a.kind));

describe("planAttach", () => {
  it("a free slot: create and attach, with the tags and the description", () => {
    expect(planAttach(input())).toEqual([
      {
        network: network(),
        slot: { networkCardIndex: 0, deviceIndex: 1 },
        actions: [
          {
            kind: "create-and-attach",
            subnetId: "subnet-0a",
            securityGroupIds: ["sg-0a"],
            description: "multus-ipmgr prod i-0a1 multus1",
            tags: ourTags("multus1"),
          },
        ],
      },
    ]);
  });

  const cases: [string, Partial<AttachPlanInput>, string[][]][] = [
    [
      "our ENI attached and set: nothing",
      { instanceEnis: [PRIMARY, eni("eni-01", ourTags("multus1"), { deviceIndex: 1 })] },
      [["none"]],
    ],
    [
      "our ENI attached with DeleteOnTermination false: set it",
      {
        instanceEnis: [
          PRIMARY,
          eni("eni-01", ourTags("multus1"), { deviceIndex: 1, deleteOnTermination: false }),
        ],
      },
      [["none", "set-delete-on-termination"]],
    ],
    [
      "our ENI attached with SourceDestCheck on where the network wants it off: set it",
      {
        instanceEnis: [
          PRIMARY,
          eni("eni-01", ourTags("multus1"), { deviceIndex: 1 }, { sourceDestCheck: true }),
        ],
      },
      [["none", "set-source-dest-check"]],
    ],
    [
      "an ENI not ours at the slot: none, never touched, even with DeleteOnTermination false",
      {
        instanceEnis: [
          PRIMARY,
          eni("eni-01", {}, { deviceIndex: 1, deleteOnTermination: false }, { sourceDestCheck: true }),
        ],
      },
      [["none"]],
    ],
    [
      "our ENI attaching at the slot: wait",
      { instanceEnis: [PRIMARY, eni("eni-01", ourTags("multus1"), { deviceIndex: 1, status: "attaching" })] },
      [["wait"]],
    ],
    [
      "an ENI of ours for this instance and network, available: attach it again",
      { availableEnis: [eni("eni-05", ourTags("multus1"))] },
      [["reattach"]],
    ],
    [
      "an available ENI of ours for another network: not taken, a new one made",
      { availableEnis: [eni("eni-05", ourTags("multus2"))] },
      [["create-and-attach"]],
    ],
    [
      "an available ENI of ours for another instance: not taken",
      { availableEnis: [eni("eni-05", ourTags("multus1", "i-0other"))] },
      [["create-and-attach"]],
    ],
    [
      "an available ENI of ours in another subnet than the network's now: not taken",
      { availableEnis: [eni("eni-05", ourTags("multus1"), undefined, { subnetId: "subnet-0old" })] },
      [["create-and-attach"]],
    ],
    [
      "an available ENI of another cluster carrying our other tags: not taken",
      { availableEnis: [eni("eni-05", { ...ourTags("multus1"), "multus-ipmgr.io/cluster": "staging" })] },
      [["create-and-attach"]],
    ],
    [
      "the detached attachment of an ENI does not hold the slot",
      { instanceEnis: [PRIMARY, eni("eni-01", {}, { deviceIndex: 1, status: "detached" })] },
      [["create-and-attach"]],
    ],
  ];
  it.each(cases)("%s", (_name, overrides, expected) => {
    expect(kinds(planAttach(input(overrides)))).toEqual(expected);
  });

  it("reports an ENI at the slot that is not ours, naming it and the fix", () => {
    const [plan] = planAttach(input({ instanceEnis: [PRIMARY, eni("eni-01", {}, { deviceIndex: 1 })] }));
    expect(plan?.actions[0]).toMatchObject({
      kind: "none",
      foreign:
        "network multus1: ENI eni-01 at card 0 device 1 is not made by multus-ipmgr for cluster prod (no multus-ipmgr.io/cluster=prod tag); it is left alone. Give the network a free device index, or detach that ENI yourself",
    });
  });

  it("reports an ENI of ours made for another network at the slot, and leaves it alone", () => {
    const [plan] = planAttach(
      input({
        instanceEnis: [
          PRIMARY,
          eni("eni-01", ourTags("multus9"), { deviceIndex: 1, deleteOnTermination: false }),
        ],
      }),
    );
    expect(plan?.actions).toHaveLength(1);
    expect(plan?.actions[0]).toMatchObject({
      kind: "none",
      foreign:
        "network multus1: ENI eni-01 at card 0 device 1 is made by this cluster for network multus9 of instance i-0a1; it is left alone. Give the network a free device index, or detach that ENI yourself",
    });
  });

  const refusals: [string, Partial<AttachPlanInput>, string][] = [
    [
      "over the type's ENIs",
      {
        instance: {
          instanceId: INSTANCE,
          availabilityZone: ZONE,
          vpcId: "vpc-0a",
          type: { instanceType: "t3.small", maxNetworkInterfaces: 1 },
        },
      },
      "network multus1: instance type t3.small takes 1 ENIs and 1 are attached (the VPC CNI's counted, and the networks before this one); lower the VPC CNI's MAX_ENI or WARM_ENI_TARGET, or use a larger type",
    ],
    [
      "a card the type does not have",
      {
        networks: [network({ networkCardIndex: 1 })],
        instance: {
          instanceId: INSTANCE,
          availabilityZone: ZONE,
          vpcId: "vpc-0a",
          type: {
            instanceType: "m5.large",
            maxNetworkInterfaces: 3,
            networkCards: [{ index: 0, maxNetworkInterfaces: 3 }],
          },
        },
      },
      "network multus1: instance type m5.large has network cards 0, not 1; give a networkCardIndex it has (0 unless it has several)",
    ],
    [
      "a device index beyond the card's ENIs",
      {
        networks: [network({ deviceIndex: 3 })],
        instance: {
          instanceId: INSTANCE,
          availabilityZone: ZONE,
          vpcId: "vpc-0a",
          type: {
            instanceType: "m5.large",
            maxNetworkInterfaces: 3,
            networkCards: [{ index: 0, maxNetworkInterfaces: 3 }],
          },
        },
      },
      "network multus1: instance type m5.large takes 3 ENIs on network card 0 (device indexes 0 to 2), not device 3; give a lower deviceIndex",
    ],
    [
      "a full card",
      {
        instanceEnis: [PRIMARY, eni("eni-02", {}, { deviceIndex: 2 })],
        instance: {
          instanceId: INSTANCE,
          availabilityZone: ZONE,
          vpcId: "vpc-0a",
          type: {
            instanceType: "c6in.32xlarge",
            maxNetworkInterfaces: 4,
            networkCards: [
              { index: 0, maxNetworkInterfaces: 2 },
              { index: 1, maxNetworkInterfaces: 2 },
            ],
          },
        },
      },
      "network multus1: instance type c6in.32xlarge takes 2 ENIs on network card 0 and 2 are attached there (the VPC CNI's counted); lower the VPC CNI's MAX_ENI or WARM_ENI_TARGET, use another card, or a larger type",
    ],
    [
      "a subnet of another zone",
      { targets: new Map([["multus1", { ...TARGET, availabilityZone: "us-west-2b" }]]) },
      "network multus1: subnet subnet-0a is in us-west-2b, the node in us-west-2a; an ENI attaches only to an instance of its subnet's zone: give a subnet of us-west-2a",
    ],
    [
      "no usable target",
      { targets: new Map([["multus1", new TargetRefusal("subnet-tags", "network multus1: several")]]) },
      "network multus1: several",
    ],
  ];
  it.each(refusals)("refused before any call: %s", (_name, overrides, detail) => {
    const [plan] = planAttach(input(overrides));
    expect(plan?.actions).toEqual([expect.objectContaining({ kind: "refuse", detail })]);
  });

  it("gives room in (card, device) order: the second network over the limit is refused, the first made", () => {
    const networks = [network({ name: "b", deviceIndex: 2 }), network({ name: "a", deviceIndex: 1 })];
    const plans = planAttach(
      input({
        networks,
        instance: {
          instanceId: INSTANCE,
          availabilityZone: ZONE,
          vpcId: "vpc-0a",
          type: { instanceType: "t3.small", maxNetworkInterfaces: 2 },
        },
      }),
    );
    expect(plans.map((p) => [p.network.name, p.actions[0]?.kind])).toEqual([
      ["b", "refuse"],
      ["a", "create-and-attach"],
    ]);
  });

  it("two networks and one available ENI of ours for each: each takes its own", () => {
    const networks = [network({ name: "a", deviceIndex: 1 }), network({ name: "b", deviceIndex: 2 })];
    const plans = planAttach(
      input({ networks, availableEnis: [eni("eni-0b", ourTags("b")), eni("eni-0a", ourTags("a"))] }),
    );
    expect(plans.map((p) => p.actions[0]?.kind === "reattach" && p.actions[0].eni.eniId)).toEqual([
      "eni-0a",
      "eni-0b",
    ]);
  });
});

// Properties over generated worlds: networks on free or occupied slots, ENIs of ours and of others attached
// or available, limits, targets usable or not.
const SLOTS = [0, 1].flatMap((card) => [1, 2, 3, 4].map((device) => ({ card, device })));
const arbEni = fc.record({
  slot: fc.integer({ min: 0, max: SLOTS.length - 1 }),
  owner: fc.constantFrom("ours", "foreign", "other-cluster", "other-network"),
  status: fc.constantFrom("attached", "attached", "attaching", "detaching"),
  deleteOnTermination: fc.boolean(),
  sourceDestCheck: fc.boolean(),
});
const arbWorld = fc.record({
  networks: fc.uniqueArray(fc.integer({ min: 0, max: SLOTS.length - 1 }), { minLength: 1, maxLength: 5 }),
  attached: fc.uniqueArray(arbEni, { selector: (e) => e.slot, maxLength: 5 }),
  available: fc.array(
    fc.record({
      network: fc.integer({ min: 0, max: 7 }),
      owner: fc.constantFrom("ours", "other-instance", "foreign"),
    }),
    { maxLength: 4 },
  ),
  sourceDestCheck: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
  refusedTarget: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
  maxEnis: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
  cardMax: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
});

type World = typeof arbWorld extends fc.Arbitrary<infer T> ? T : never;

function worldInput(w: World): AttachPlanInput {
  const networks = w.networks.map((slotIndex) => {
    const slot = SLOTS[slotIndex] as { card: number; device: number };
    return network({
      name: `net${slotIndex}`,
      deviceIndex: slot.device,
      networkCardIndex: slot.card,
      sourceDestCheck: w.sourceDestCheck[slotIndex] ?? false,
    });
  });
  const tagsOf = (owner: string, slotIndex: number): Record<string, string> =>
    owner === "ours"
      ? ourTags(`net${slotIndex}`)
      : owner === "other-network"
        ? ourTags(`net${(slotIndex + 1) % 8}`)
        : owner === "other-cluster"
          ? { ...ourTags(`net${slotIndex}`), "multus-ipmgr.io/cluster": "staging" }
          : owner === "other-instance"
            ? ourTags(`net${slotIndex}`, "i-0other")
            : {};
  const attached = w.attached.map((a, i) => {
    const slot = SLOTS[a.slot] as { card: number; device: number };
    return eni(
      `eni-a${i}`,
      tagsOf(a.owner, a.slot),
      {
        deviceIndex: slot.device,
        networkCardIndex: slot.card,
        status: a.status,
        deleteOnTermination: a.deleteOnTermination,
      },
      { sourceDestCheck: a.sourceDestCheck },
    );
  });
  const available = w.available.map((a, i) => eni(`eni-v${i}`, tagsOf(a.owner, a.network)));
  const cards =
    w.cardMax === undefined
      ? undefined
      : [
          { index: 0, maxNetworkInterfaces: w.cardMax },
          { index: 1, maxNetworkInterfaces: w.cardMax },
        ];
  return input({
    networks,
    instanceEnis: [PRIMARY, ...attached],
    availableEnis: available,
    targets: new Map(
      networks.map((n, i) => [
        n.name,
        w.refusedTarget[i] ? new TargetRefusal("subnet-tags", `network ${n.name}: none`) : TARGET,
      ]),
    ),
    instance: {
      instanceId: INSTANCE,
      availabilityZone: ZONE,
      vpcId: "vpc-0a",
      type: {
        instanceType: "m6i.large",
        ...(w.maxEnis === undefined ? {} : { maxNetworkInterfaces: w.maxEnis }),
        ...(cards === undefined ? {} : { networkCards: cards }),
      },
    },
  });
}

/** The ENIs an action calls EC2 on. */
function touched(action: AttachAction): string[] {
  switch (action.kind) {
    case "reattach":
      return [action.eni.eniId];
    case "set-delete-on-termination":
    case "set-source-dest-check":
      return [action.eniId];
    default:
      return [];
  }
}

/** The world after the plan's calls all succeeded, as EC2 would show it. */
function applied(before: AttachPlanInput, plans: readonly NetworkPlan[]): AttachPlanInput {
  let instanceEnis = [...before.instanceEnis];
  let availableEnis = [...before.availableEnis];
  let made = 0;
  const update = (id: string, change: (e: Ec2NetworkInterface) => Ec2NetworkInterface) => {
    instanceEnis = instanceEnis.map((e) => (e.eniId === id ? change(e) : e));
  };
  for (const plan of plans) {
    const net = plan.network;
    const attach = (e: Ec2NetworkInterface): Ec2NetworkInterface => ({
      ...e,
      status: "in-use",
      instanceId: INSTANCE,
      deviceIndex: net.deviceIndex,
      sourceDestCheck: net.sourceDestCheck,
      attachment: {
        attachmentId: `eni-attach-new-${e.eniId}`,
        instanceId: INSTANCE,
        deviceIndex: net.deviceIndex,
        networkCardIndex: net.networkCardIndex,
        status: "attached",
        deleteOnTermination: true,
      },
    });
    for (const action of plan.actions) {
      if (action.kind === "reattach") {
        availableEnis = availableEnis.filter((e) => e.eniId !== action.eni.eniId);
        instanceEnis.push(attach(action.eni));
      } else if (action.kind === "create-and-attach") {
        made += 1;
        instanceEnis.push(attach(eni(`eni-new${made}`, action.tags, undefined, { sourceDestCheck: true })));
      } else if (action.kind === "set-delete-on-termination") {
        update(action.eniId, (e) => ({
          ...e,
          attachment: { ...(e.attachment as Ec2EniAttachment), deleteOnTermination: true },
        }));
      } else if (action.kind === "set-source-dest-check") {
        update(action.eniId, (e) => ({ ...e, sourceDestCheck: action.sourceDestCheck }));
      }
    }
  }
  return { ...before, instanceEnis, availableEnis };
}

describe("planAttach properties", () => {
  it("never calls EC2 on an ENI without this cluster's tag, nor on one made for another network or instance", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const world = worldInput(w);
        const all = [...world.instanceEnis, ...world.availableEnis];
        for (const plan of planAttach(world))
          for (const action of plan.actions)
            for (const id of touched(action)) {
              const target = all.find((e) => e.eniId === id);
              expect(target?.tags).toMatchObject({
                "multus-ipmgr.io/cluster": CLUSTER,
                "multus-ipmgr.io/instance-id": INSTANCE,
                "multus-ipmgr.io/network": plan.network.name,
              });
            }
      }),
    );
  });

  it("never two ENIs made or attached for one slot, never one ENI attached twice, nothing at an occupied slot", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const world = worldInput(w);
        const plans = planAttach(world);
        const slots = new Set<string>();
        const reattached = new Set<string>();
        for (const plan of plans) {
          const making = plan.actions.filter((a) => a.kind === "create-and-attach" || a.kind === "reattach");
          expect(making.length).toBeLessThanOrEqual(1);
          if (making.length === 0) continue;
          const key = `${plan.slot.networkCardIndex}/${plan.slot.deviceIndex}`;
          expect(slots.has(key)).toBe(false);
          slots.add(key);
          expect(
            world.instanceEnis.some(
              (e) =>
                e.attachment?.status !== "detached" &&
                e.attachment?.deviceIndex === plan.slot.deviceIndex &&
                e.attachment.networkCardIndex === plan.slot.networkCardIndex,
            ),
          ).toBe(false);
          const [action] = making;
          if (action?.kind === "reattach") {
            expect(reattached.has(action.eni.eniId)).toBe(false);
            reattached.add(action.eni.eniId);
          }
        }
      }),
    );
  });

  it("never more ENIs than the type takes, in all and per card", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const world = worldInput(w);
        const after = applied(world, planAttach(world));
        const live = after.instanceEnis.filter((e) => e.attachment?.status !== "detached");
        const max = world.instance.type?.maxNetworkInterfaces;
        const added = live.length - world.instanceEnis.length;
        if (max !== undefined && added > 0) expect(live.length).toBeLessThanOrEqual(max);
        for (const card of world.instance.type?.networkCards ?? []) {
          const before = world.instanceEnis.filter(
            (e) => e.attachment?.networkCardIndex === card.index,
          ).length;
          const now = live.filter((e) => e.attachment?.networkCardIndex === card.index).length;
          if (now > before) expect(now).toBeLessThanOrEqual(card.maxNetworkInterfaces);
        }
      }),
    );
  });

  it("the plan of the world after its calls is nothing left to do (only none, wait and the same refusals)", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const world = worldInput(w);
        const first = planAttach(world);
        const second = planAttach(applied(world, first));
        for (const [i, plan] of second.entries()) {
          const kindsNow = plan.actions.map((a) => a.kind);
          expect(kindsNow.every((k) => k === "none" || k === "wait" || k === "refuse")).toBe(true);
          if (kindsNow[0] === "refuse") expect(plan.actions).toEqual(first[i]?.actions);
        }
      }),
    );
  });

  it("does not depend on the order of the ENI lists", () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const world = worldInput(w);
        const reversed = {
          ...world,
          instanceEnis: [...world.instanceEnis].reverse(),
          availableEnis: [...world.availableEnis].reverse(),
        };
        expect(planAttach(reversed)).toEqual(planAttach(world));
      }),
    );
  });
});
