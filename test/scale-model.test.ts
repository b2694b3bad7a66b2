import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ModelAccount } from "../bench/scale-model/account.js";
import { isMutating, nodeAttachCalls } from "../bench/scale-model/attach-calls.js";
import { attachJoin, perNode } from "../bench/scale-model/attach-join.js";
import { EventQueue } from "../bench/scale-model/event-queue.js";
import { ModelAttachNode } from "../bench/scale-model/model-attach-node.js";
import { ModelBridge } from "../bench/scale-model/model-bridge.js";
import { ModelNode, sliceOctetOf } from "../bench/scale-model/model-node.js";
import { perAddressWave, prefixModeWave } from "../bench/scale-model/node-wave.js";
import { DOCUMENTED_BUCKETS, TokenBucket } from "../bench/scale-model/token-bucket.js";

describe("scale model: EventQueue", () => {
  it("runs events in time order, ties in the order they were scheduled", () => {
    const queue = new EventQueue();
    const order: string[] = [];
    queue.at(30, () => order.push("c"));
    queue.at(10, () => order.push("a1"));
    queue.at(20, () => order.push("b"));
    queue.at(10, () => order.push("a2"));
    expect(queue.run()).toBe(30);
    expect(order).toEqual(["a1", "a2", "b", "c"]);
    expect(queue.ran).toBe(4);
    expect(queue.size).toBe(0);
  });

  it("moves the clock to each event, and runs what an event schedules", () => {
    const queue = new EventQueue();
    const seen: number[] = [];
    queue.at(100, () => {
      seen.push(queue.now);
      queue.after(50, () => seen.push(queue.now));
      queue.after(0, () => seen.push(queue.now));
    });
    queue.run();
    expect(seen).toEqual([100, 100, 150]);
  });

  it("runs an event scheduled in the past at the current time, never earlier", () => {
    const queue = new EventQueue();
    const seen: number[] = [];
    queue.at(40, () => queue.at(5, () => seen.push(queue.now)));
    queue.run();
    expect(seen).toEqual([40]);
  });

  it("stops before an event past the limit, and resumes from there", () => {
    const queue = new EventQueue();
    const seen: number[] = [];
    for (const t of [10, 20, 30]) queue.at(t, () => seen.push(t));
    expect(queue.run(25)).toBe(20);
    expect(seen).toEqual([10, 20]);
    expect(queue.size).toBe(1);
    queue.run();
    expect(seen).toEqual([10, 20, 30]);
  });

  it("stops after the event that makes done() true", () => {
    const queue = new EventQueue();
    let count = 0;
    for (let t = 1; t <= 5; t++) queue.at(t, () => count++);
    queue.run(Number.POSITIVE_INFINITY, () => count === 2);
    expect(count).toBe(2);
    expect(queue.now).toBe(2);
  });

  it("refuses a time that is not a finite number", () => {
    const queue = new EventQueue();
    expect(() => queue.at(Number.NaN, () => undefined)).toThrow(
      "event time NaN is not a finite number of ms",
    );
    expect(() => queue.after(Number.POSITIVE_INFINITY, () => undefined)).toThrow(RangeError);
  });

  it("property: any schedule runs sorted by time, then by scheduling order", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 200 }), (times) => {
        const queue = new EventQueue();
        const ran: { at: number; index: number }[] = [];
        times.forEach((at, index) => {
          queue.at(at, () => ran.push({ at: queue.now, index }));
        });
        queue.run();
        const expected = times
          .map((at, index) => ({ at, index }))
          .sort((a, b) => a.at - b.at || a.index - b.index);
        expect(ran).toEqual(expected);
      }),
    );
  });
});

describe("scale model: TokenBucket", () => {
  const spec = { name: "test", capacity: 3, refillPerSecond: 5 };

  it("starts full: capacity requests at once are taken, the next is throttled", () => {
    const bucket = new TokenBucket(spec);
    expect([1, 2, 3, 4].map(() => bucket.take(0))).toEqual([true, true, true, false]);
  });

  it("refills at its rate: one token each 200 ms at 5 a second, fractions accrue", () => {
    const bucket = new TokenBucket(spec);
    for (let i = 0; i < 3; i++) bucket.take(0);
    expect(bucket.take(100)).toBe(false);
    expect(bucket.tokens(100)).toBeCloseTo(0.5);
    expect(bucket.take(200)).toBe(true);
    expect(bucket.take(200)).toBe(false);
    expect(bucket.take(400)).toBe(true);
  });

  it("holds no more than its capacity however long it rests", () => {
    const bucket = new TokenBucket(spec);
    bucket.take(0);
    expect(bucket.tokens(3_600_000)).toBe(3);
    expect([1, 2, 3, 4].map(() => bucket.take(3_600_000))).toEqual([true, true, true, false]);
  });

  it("counts a request stamped before the last one at the last one's time", () => {
    const bucket = new TokenBucket(spec);
    for (let i = 0; i < 3; i++) bucket.take(1_000);
    expect(bucket.take(500)).toBe(false);
  });

  it("has the documented sizes: AssignPrivateIpAddresses 100 a burst and 5 a second", () => {
    const bucket = new TokenBucket(DOCUMENTED_BUCKETS.AssignPrivateIpAddresses);
    let taken = 0;
    // One request every 10 ms for 60 s: the burst, then 5 a second.
    for (let t = 0; t < 60_000; t += 10) if (bucket.take(t)) taken++;
    expect(taken).toBe(100 + 299);
  });

  it("property: requests taken by time T never exceed capacity + rate x T; spaced requests are all taken", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 1, maxLength: 300 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 100 }),
        (raw, refillPerSecond, capacity) => {
          const times = [...raw].sort((a, b) => a - b);
          const bucket = new TokenBucket({ name: "p", capacity, refillPerSecond });
          let taken = 0;
          for (const t of times) {
            if (bucket.take(t)) taken++;
            expect(taken).toBeLessThanOrEqual(capacity + Math.floor((t / 1000) * refillPerSecond + 1e-9));
          }
          const spaced = new TokenBucket({ name: "s", capacity, refillPerSecond });
          const gap = 1000 / refillPerSecond;
          for (let i = 0; i < 50; i++) expect(spaced.take(i * gap)).toBe(true);
        },
      ),
    );
  });
});

describe("scale model: the bridge's planners on the model's node", () => {
  const GRACE = 300_000;
  const fullNode = () => {
    const node = new ModelNode(110, 30);
    for (let slot = 0; slot < 110; slot++) node.startPod(slot, sliceOctetOf(slot));
    return node;
  };

  it("per-address mode: a node whose ENIs hold nothing plans one assign per Multus ENI, 27 or 28 addresses each", () => {
    const plan = perAddressWave.plan(fullNode().waveInput(0, GRACE).input());
    expect(plan.actions.map((a) => [a.kind, a.eniId, "addresses" in a ? a.addresses.length : 0])).toEqual([
      ["assign-ipv4", "eni-1", 28],
      ["assign-ipv4", "eni-2", 28],
      ["assign-ipv4", "eni-3", 27],
      ["assign-ipv4", "eni-4", 27],
    ]);
    expect(plan.eniFull).toBe(false);
  });

  it("prefix mode: the same node plans its two /28 prefixes on each Multus ENI, and no address", () => {
    const plan = prefixModeWave.plan(fullNode().waveInput(0, GRACE).input());
    expect(plan.actions).toEqual(
      [1, 2, 3, 4].map((k) => ({
        kind: "assign-prefixes",
        family: 4,
        eniId: `eni-${k}`,
        prefixes: [`198.51.100.${32 * k}/28`, `198.51.100.${32 * k + 16}/28`],
      })),
    );
  });

  it("either mode: a node that holds what it needs plans no call", () => {
    for (const [planner, mode] of [
      [perAddressWave, "addresses"],
      [prefixModeWave, "prefixes"],
    ] as const) {
      const node = fullNode();
      node.holdAll(mode);
      expect(node.converged).toBe(true);
      expect(planner.plan(node.waveInput(0, GRACE).input()).actions).toEqual([]);
    }
  });

  it("the wave loop: one node's pods routed with one accepted call per ENI, nothing throttled", () => {
    const settings = {
      waveWindowMs: 200,
      resyncIntervalMs: 60_000,
      releaseGraceMs: GRACE,
      retry: { baseMs: 1_000, maxMs: 5_000 },
      ec2: { maxAttempts: 8, baseDelayMs: 200, maxDelayMs: 5_000 },
      callLatencyMs: 100,
    };
    const queue = new EventQueue();
    const account = new ModelAccount();
    const node = new ModelNode(110, 30);
    const bridge = new ModelBridge(
      {
        queue,
        account,
        node,
        planWave: (n, now) => {
          const view = n.waveInput(now, GRACE);
          return { plan: perAddressWave.plan(view.input()), nextReleaseAt: view.nextReleaseAt };
        },
        random: () => 0.5,
        onChange: () => undefined,
      },
      settings,
    );
    for (let slot = 0; slot < 110; slot++) node.startPod(slot, sliceOctetOf(slot));
    bridge.start();
    queue.run(10 * 60_000);
    expect(node.converged).toBe(true);
    expect(account.total()).toEqual({ accepted: 4, throttled: 0 });
    expect(bridge.failedWaves).toBe(0);
  });
});

describe("scale model: attach mode's calls for a new node", () => {
  const ATTACH_SETTINGS = {
    ec2: { maxAttempts: 8, baseDelayMs: 200, maxDelayMs: 5_000 },
    waveRetry: { baseMs: 1_000, maxMs: 5_000 },
    callLatencyMs: 100,
  };
  const perEni = (eni: number, sourceDestCheck: boolean) =>
    [
      "CreateNetworkInterface",
      "AttachNetworkInterface",
      "ModifyNetworkInterfaceAttribute",
      ...(sourceDestCheck ? ["ModifyNetworkInterfaceAttribute"] : []),
    ].map((action) => [action, eni]);
  const reads = [
    ["DescribeInstanceTypes", undefined],
    ...Array(2).fill(["DescribeNetworkInterfaces", undefined]),
  ];

  it("slices after the attach: the reads, each ENI's create, attach, DeleteOnTermination and SourceDestCheck, then one prefix assign per ENI from the bridge's prefix planner", () => {
    const calls = nodeAttachCalls({ networks: 4, sourceDestCheckDiffers: true, prefixes: "after-attach" });
    expect(calls.map((c) => [c.action, c.eni])).toEqual([
      ...reads,
      ...[1, 2, 3, 4].flatMap((eni) => perEni(eni, true)),
      ...[1, 2, 3, 4].map((eni) => ["AssignPrivateIpAddresses", eni]),
    ]);
    expect(calls.filter((c) => c.action === "AssignPrivateIpAddresses").map((c) => c.what)).toEqual(
      [1, 2, 3, 4].map((k) => `eni-${k} prefixes 198.51.100.${32 * k}/28 198.51.100.${32 * k + 16}/28`),
    );
    expect(perNode(calls)).toEqual({ mutatingPerEni: 5, reads: 3 });
  });

  it("slices carried by CreateNetworkInterface: no assign, one call fewer per ENI", () => {
    const calls = nodeAttachCalls({ networks: 4, sourceDestCheckDiffers: true, prefixes: "at-create" });
    expect(calls.map((c) => [c.action, c.eni])).toEqual([
      ...reads,
      ...[1, 2, 3, 4].flatMap((eni) => perEni(eni, true)),
    ]);
    expect(calls[3]?.what).toBe("create ENI 1 with the slice's prefixes");
    expect(perNode(calls)).toEqual({ mutatingPerEni: 4, reads: 3 });
  });

  it("SourceDestCheck at EC2's default: no second ModifyNetworkInterfaceAttribute", () => {
    const calls = nodeAttachCalls({ networks: 2, sourceDestCheckDiffers: false, prefixes: "at-create" });
    expect(calls.map((c) => [c.action, c.eni])).toEqual([...reads, ...perEni(1, false), ...perEni(2, false)]);
  });

  it("counts Describe* as reads and every other action as mutating", () => {
    expect(isMutating("DescribeNetworkInterfaces")).toBe(false);
    expect(isMutating("DescribeInstanceTypes")).toBe(false);
    expect(isMutating("CreateNetworkInterface")).toBe(true);
    expect(isMutating("ModifyNetworkInterfaceAttribute")).toBe(true);
  });

  it("one node alone: every call accepted once, one after the other", () => {
    const calls = nodeAttachCalls({ networks: 4, sourceDestCheckDiffers: true, prefixes: "after-attach" });
    const queue = new EventQueue();
    const account = new ModelAccount();
    let done = 0;
    const node = new ModelAttachNode(
      calls,
      { queue, account, random: () => 0.5, onDone: () => done++ },
      ATTACH_SETTINGS,
    );
    node.start();
    queue.run();
    expect(done).toBe(1);
    expect(account.total()).toEqual({ accepted: calls.length, throttled: 0 });
    expect(node.doneAt).toBe(calls.length * 100);
    expect(node.heldBack).toBe(0);
  });

  it("many nodes at once: throttled, held back and read again, yet each mutating call accepted exactly once", () => {
    const calls = nodeAttachCalls({ networks: 4, sourceDestCheckDiffers: true, prefixes: "after-attach" });
    const nodes = 60;
    let seed = 1;
    const run = attachJoin(
      {
        nodes,
        bootSpreadMs: 10,
        capMs: 6 * 3_600_000,
        settings: ATTACH_SETTINGS,
        random: () => {
          seed = (seed * 48_271) % 2_147_483_647;
          return seed / 2_147_483_647;
        },
      },
      "after-attach",
    );
    expect(run.done).toBe(nodes);
    expect(run.throttled).toBeGreaterThan(0);
    expect(run.byAction.get("ModifyNetworkInterfaceAttribute")).toBe(nodes * 8);
    for (const action of [
      "CreateNetworkInterface",
      "AttachNetworkInterface",
      "AssignPrivateIpAddresses",
    ] as const)
      expect(run.byAction.get(action)).toBe(nodes * 4);
    // Reads: at least the sequence's; more when a held-back pass read the instance's ENIs again.
    expect(run.byAction.get("DescribeNetworkInterfaces")).toBeGreaterThanOrEqual(nodes * 2);
    expect(run.byAction.get("DescribeInstanceTypes")).toBe(nodes);
    // ModifyNetworkInterfaceAttribute's bucket (50, then 5 a second) carries 2 calls per ENI: it sets the time.
    const modifies = nodes * 8;
    expect(run.seconds).toBeGreaterThanOrEqual((modifies - 50) / 5);
    expect(calls).toHaveLength(3 + 4 * 5);
  });
});
