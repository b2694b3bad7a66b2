/**
 * The sidecar's address watcher: pure snapshot diffs (tables), coalescing, `released` bookkeeping, and the
 * wake-up path from an address event source.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { AddressEvents } from "../src/eni/address-events.js";
import { backoffDelay } from "../src/eni/backoff.js";
import type { InterfaceSource } from "../src/eni/interface-source.js";
import type { PodInterface } from "../src/eni/types.js";
import { diffSnapshots, nextReleased, snapshotKey } from "../src/sidecar/address-diff.js";
import { type AddressChange, AddressWatcher } from "../src/sidecar/address-watcher.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { flush, ManualClock } from "./helpers/manual-clock.js";

const MAC = "02:00:00:00:0a:01";
const net1 = (...addresses: string[]): PodInterface => ({ name: "net1", mac: MAC, addresses });
const net2 = (...addresses: string[]): PodInterface => ({ name: "net2", mac: MAC, addresses });
const silent = pino({ level: "silent" });

describe("diffSnapshots", () => {
  const cases: {
    name: string;
    before: PodInterface[];
    after: PodInterface[];
    added: string[];
    removed: string[];
    changed: boolean;
  }[] = [
    { name: "nothing to nothing", before: [], after: [], added: [], removed: [], changed: false },
    {
      name: "same addresses in another order are no change",
      before: [net1("198.51.100.70", "198.51.100.71")],
      after: [net1("198.51.100.71", "198.51.100.70")],
      added: [],
      removed: [],
      changed: false,
    },
    {
      name: "an added floating address",
      before: [net1("198.51.100.70")],
      after: [net1("198.51.100.70", "198.51.100.80")],
      added: ["198.51.100.80"],
      removed: [],
      changed: true,
    },
    {
      name: "a removed floating address",
      before: [net1("198.51.100.70", "2001:db8:100:1::180")],
      after: [net1("198.51.100.70")],
      added: [],
      removed: ["2001:db8:100:1::180"],
      changed: true,
    },
    {
      name: "an address moving from net1 to net2 is a change but neither added nor removed",
      before: [net1("198.51.100.80"), net2("198.51.100.70")],
      after: [net1(), net2("198.51.100.70", "198.51.100.80")],
      added: [],
      removed: [],
      changed: true,
    },
    {
      name: "a MAC change alone is a change",
      before: [net1("198.51.100.70")],
      after: [{ name: "net1", mac: "02:00:00:00:0a:02", addresses: ["198.51.100.70"] }],
      added: [],
      removed: [],
      changed: true,
    },
    {
      name: "an interface disappearing removes its addresses",
      before: [net1("198.51.100.70"), net2("198.51.100.200")],
      after: [net1("198.51.100.70")],
      added: [],
      removed: ["198.51.100.200"],
      changed: true,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const diff = diffSnapshots(c.before, c.after);
      expect(diff).toEqual({ added: c.added, removed: c.removed, changed: c.changed });
    });
  }

  it("gives equal keys to snapshots that differ only in order", () => {
    expect(snapshotKey([net1("a", "b"), net2("c")])).toBe(snapshotKey([net2("c"), net1("b", "a")]));
  });
});

describe("nextReleased", () => {
  it("adds removed addresses and drops those that came back", () => {
    const diff = { added: ["198.51.100.81"], removed: ["198.51.100.80"], changed: true };
    const released = nextReleased(
      new Set(["198.51.100.81", "198.51.100.82"]),
      diff,
      new Set(["198.51.100.81"]),
    );
    expect([...released].sort()).toEqual(["198.51.100.80", "198.51.100.82"]);
  });
});

/** Returns the scripted snapshots in order, then the last one forever. */
class ScriptedSource implements InterfaceSource {
  reads = 0;
  constructor(
    private readonly script: PodInterface[][],
    private readonly onRead: (n: number) => void = () => undefined,
  ) {}

  async read(): Promise<PodInterface[]> {
    const snapshot = this.script[Math.min(this.reads, this.script.length - 1)] ?? [];
    this.reads++;
    this.onRead(this.reads);
    return snapshot;
  }
}

/** Every read shows one more address: a change that never settles. */
class EndlessSource implements InterfaceSource {
  reads = 0;
  async read(): Promise<PodInterface[]> {
    this.reads++;
    return [net1(`198.51.100.${64 + this.reads}`)];
  }
}

function watcher(source: InterfaceSource, clock: FakeClock): AddressWatcher {
  return new AddressWatcher({
    source,
    clock,
    logger: silent,
    pollIntervalMs: 50,
    settleMs: 5,
    maxCoalesceMs: 50,
  });
}

describe("AddressWatcher", () => {
  it("reports a burst of two additions as one change, once two reads agree", async () => {
    const clock = new FakeClock();
    const base = [net1("198.51.100.70")];
    const source = new ScriptedSource([
      base,
      [net1("198.51.100.70", "198.51.100.80")],
      [net1("198.51.100.70", "198.51.100.80", "198.51.100.81")],
      [net1("198.51.100.70", "198.51.100.80", "198.51.100.81")],
    ]);
    const w = watcher(source, clock);
    await w.readInitial();
    const started = clock.now();
    const change = await w.pollNow();
    expect(change?.diff.added).toEqual(["198.51.100.80", "198.51.100.81"]);
    expect(change?.detectedAt).toBe(started);
    expect(source.reads).toBe(4);
    expect(clock.sleeps).toEqual([5, 5]);
    expect(await w.pollNow()).toBeUndefined();
  });

  it("caps the settling so that a change that never stops is still reported", async () => {
    const clock = new FakeClock();
    const source = new EndlessSource();
    const w = watcher(source, clock);
    await w.readInitial();
    const change = await w.pollNow();
    expect(change).toBeDefined();
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBe(50);
    expect(source.reads).toBe(1 + 1 + 10);
  });

  it("reports nothing for an address added and removed within one burst", async () => {
    const clock = new FakeClock();
    const base = [net1("198.51.100.70")];
    const source = new ScriptedSource([base, [net1("198.51.100.70", "198.51.100.80")], base, base]);
    const w = watcher(source, clock);
    await w.readInitial();
    expect(await w.pollNow()).toBeUndefined();
    expect(w.released().size).toBe(0);
  });

  it("tracks released addresses until acknowledged, and forgets one that came back", async () => {
    const clock = new FakeClock();
    const both = [net1("198.51.100.70", "198.51.100.80")];
    const one = [net1("198.51.100.70")];
    const source = new ScriptedSource([both, one, one, both, both, one, one]);
    const w = watcher(source, clock);
    await w.readInitial();

    await w.pollNow();
    const first = w.released();
    expect([...first.keys()]).toEqual(["198.51.100.80"]);

    await w.pollNow(); // failback: the address is wanted again
    expect(w.released().size).toBe(0);

    await w.pollNow(); // gone again: a new release, which the old token must not acknowledge
    w.acknowledgeReleased(first);
    expect([...w.released().keys()]).toEqual(["198.51.100.80"]);
    w.acknowledgeReleased(w.released());
    expect(w.released().size).toBe(0);
  });

  it("counts a read through its source as its own: an address another reader saw and that left before the next poll is released", async () => {
    // The reconcile loop's drift check read 198.51.100.80 (and assigned it) between two of the watcher's
    // polls; it was gone again before the next one, which alone would never have seen it.
    const clock = new ManualClock();
    let now = [net1("198.51.100.70")];
    const w = new AddressWatcher({ source: { read: async () => now }, clock, logger: silent });
    const changes: AddressChange[] = [];
    await w.start((change) => changes.push(change));

    now = [net1("198.51.100.70", "198.51.100.80")];
    expect(await w.source.read()).toEqual(now);
    expect(changes.map((c) => c.diff.added)).toEqual([["198.51.100.80"]]);
    expect(w.released().size).toBe(0);

    now = [net1("198.51.100.70")];
    await w.source.read();
    expect(changes.map((c) => c.diff.removed)).toEqual([[], ["198.51.100.80"]]);
    expect([...w.released().keys()]).toEqual(["198.51.100.80"]);
    await w.stop();
  });

  it("reports a change read through its source while a poll lets it settle from the moment the poll saw it", async () => {
    const clock = new ManualClock();
    let now = [net1("198.51.100.70")];
    const w = new AddressWatcher({ source: { read: async () => now }, clock, logger: silent, settleMs: 5 });
    const changes: AddressChange[] = [];
    await w.start((change) => changes.push(change));
    now = [net1("198.51.100.70", "198.51.100.80")];
    const seenAt = clock.now();
    const poll = w.pollNow(); // sees the change, then sleeps the settle time
    await flush();
    await clock.advance(3);
    await w.source.read();
    expect(changes.map((c) => [c.diff.added, c.detectedAt])).toEqual([[["198.51.100.80"], seenAt]]);
    await clock.advance(5);
    expect(await poll).toBeUndefined();
    expect(changes).toHaveLength(1);
    await w.stop();
  });

  it("does not report a poll's read that began before a read through its source that was reported", async () => {
    const clock = new ManualClock();
    const pending: ((snapshot: PodInterface[]) => void)[] = [];
    const w = new AddressWatcher({
      source: { read: () => new Promise((resolve) => pending.push(resolve)) },
      clock,
      logger: silent,
      settleMs: 0,
      maxCoalesceMs: 0,
    });
    const changes: AddressChange[] = [];
    const started = w.start((change) => changes.push(change));
    pending.shift()?.([net1("198.51.100.70")]); // start()'s own first read
    await started;

    const poll = w.pollNow(); // reads the old state, and is slow to answer
    const through = w.source.read(); // reads the new state, answered first
    const [slow, fast] = [pending.shift(), pending.shift()];
    fast?.([net1("198.51.100.70", "198.51.100.80")]);
    await through;
    slow?.([net1("198.51.100.70")]);
    expect(await poll).toBeUndefined();
    expect(changes.map((c) => c.diff.added)).toEqual([["198.51.100.80"]]);
    expect(w.snapshot()).toEqual([net1("198.51.100.70", "198.51.100.80")]);
    expect(w.released().size).toBe(0);
    await w.stop();
  });

  it("polls on its own until stopped and hands each change to the listener", async () => {
    const clock = new FakeClock();
    const changes: AddressChange[] = [];
    let w: AddressWatcher | undefined;
    let stopping: Promise<void> | undefined;
    const source = new ScriptedSource(
      [[], [], [net1("198.51.100.80")], [net1("198.51.100.80")], [net1("198.51.100.80")]],
      (n) => {
        if (n === 6) stopping = w?.stop();
      },
    );
    w = watcher(source, clock);
    await w.start((change) => changes.push(change));
    while (stopping === undefined) await new Promise((r) => setImmediate(r));
    await stopping;
    expect(changes.map((c) => c.diff.added)).toEqual([["198.51.100.80"]]);
    expect(w.lastPollAt).toBe(clock.now());
  });

  it("skips the full read while the fingerprint is unchanged", async () => {
    const clock = new FakeClock();
    let fingerprint = "one";
    const source = new ScriptedSource([[net1("198.51.100.70")], [net1("198.51.100.70", "198.51.100.80")]]);
    const w = new AddressWatcher({ source, clock, logger: silent, fingerprint: () => fingerprint });
    await w.readInitial();
    expect(await w.pollNow()).toBeUndefined();
    expect(await w.pollNow()).toBeUndefined();
    expect(source.reads).toBe(1);
    fingerprint = "two";
    expect((await w.pollNow())?.diff.added).toEqual(["198.51.100.80"]);
    expect(await w.pollNow()).toBeUndefined();
    expect(source.reads).toBe(3);
  });

  it("fingerprints os.networkInterfaces() output, changing with any address", async () => {
    const { osInterfacesFingerprint } = await import("../src/sidecar/os-fingerprint.js");
    const entry = {
      address: "198.51.100.70",
      netmask: "255.255.255.128",
      family: "IPv4" as const,
      mac: MAC,
      internal: false,
      cidr: null,
    };
    let addresses = [entry];
    const fp = osInterfacesFingerprint(() => ({ net1: addresses }));
    const before = fp();
    expect(fp()).toBe(before);
    addresses = [entry, { ...entry, address: "198.51.100.80" }];
    expect(fp()).not.toBe(before);
  });

  it("keeps polling after a failed read", async () => {
    const clock = new FakeClock();
    let reads = 0;
    let w: AddressWatcher | undefined;
    let stopping: Promise<void> | undefined;
    const changes: AddressChange[] = [];
    const source: InterfaceSource = {
      read: async () => {
        reads++;
        if (reads === 2) throw new Error("getifaddrs failed");
        if (reads === 5) stopping = w?.stop();
        return reads >= 3 ? [net1("198.51.100.80")] : [];
      },
    };
    w = watcher(source, clock);
    await w.start((change) => changes.push(change));
    while (stopping === undefined) await new Promise((r) => setImmediate(r));
    await stopping;
    expect(changes).toHaveLength(1);
  });
});

describe("backoffDelay", () => {
  it("doubles from the base to the cap and only ever adds jitter", () => {
    const policy = { baseMs: 1000, maxMs: 60_000 };
    expect([1, 2, 3, 4, 7, 8, 30].map((n) => backoffDelay(policy, n, () => 0))).toEqual([
      1000, 2000, 4000, 8000, 60_000, 60_000, 60_000,
    ]);
    expect(backoffDelay(policy, 1, () => 0.999)).toBeLessThanOrEqual(1250);
    expect(backoffDelay(policy, 10, () => 0.5)).toBe(67_500);
  });
});

/** An event source the test drives: emit() is one event, setLive() flips liveness (and notifies). */
class ScriptedEvents implements AddressEvents {
  live: boolean;
  stopped = false;
  #listener: (() => void) | undefined;

  constructor(live: boolean) {
    this.live = live;
  }

  subscribe(listener: () => void): void {
    this.#listener = listener;
  }

  emit(): void {
    this.#listener?.();
  }

  setLive(live: boolean): void {
    this.live = live;
    this.#listener?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }
}

describe("AddressWatcher woken by address events", () => {
  const base = [net1("198.51.100.70")];
  const moved = [net1("198.51.100.70", "198.51.100.80")];
  const options = { logger: silent, pollIntervalMs: 50, eventsFallbackPollMs: 1000, settleMs: 5 };

  it("reads at once on an event instead of waiting for the fallback poll", async () => {
    const clock = new ManualClock();
    const events = new ScriptedEvents(true);
    const source = new ScriptedSource([base, moved]);
    const w = new AddressWatcher({ ...options, source, clock, events });
    const changes: AddressChange[] = [];
    const startedAt = clock.now();
    await w.start((change) => changes.push(change));
    await flush();
    expect(clock.sleeps).toEqual([1000]);
    expect(w.pollIntervalMs).toBe(1000);

    events.emit();
    await flush();
    await clock.advance(5); // the settle read
    expect(changes.map((c) => c.diff.added)).toEqual([["198.51.100.80"]]);
    expect(changes[0]?.detectedAt).toBe(startedAt);
    expect(clock.sleeps).toEqual([1000, 5, 1000]);
    await w.stop();
    expect(events.stopped).toBe(true);
  });

  it("still finds a change at the fallback poll when no event came", async () => {
    const clock = new ManualClock();
    const source = new ScriptedSource([base, moved]);
    const w = new AddressWatcher({ ...options, source, clock, events: new ScriptedEvents(true) });
    const changes: AddressChange[] = [];
    await w.start((change) => changes.push(change));
    await clock.advance(999);
    expect(source.reads).toBe(1);
    await clock.advance(1);
    await clock.advance(5);
    expect(changes.map((c) => c.diff.added)).toEqual([["198.51.100.80"]]);
    await w.stop();
  });

  it("polls at the normal interval while the events are not live, and reads at once when they flip", async () => {
    const clock = new ManualClock();
    const events = new ScriptedEvents(false);
    const source = new ScriptedSource([base]);
    const w = new AddressWatcher({ ...options, source, clock, events });
    await w.start(() => undefined);
    await flush();
    expect(w.pollIntervalMs).toBe(50);
    await clock.advance(50);
    expect(source.reads).toBe(2);

    events.setLive(true); // the monitor runs (again): read once, then relax to the fallback period
    await flush();
    expect(source.reads).toBe(3);
    events.setLive(false); // it died: read at once, since events may have been lost, then poll fast
    await flush();
    expect(source.reads).toBe(4);
    expect(clock.sleeps).toEqual([50, 50, 1000, 50]);
    await w.stop();
  });

  it("reads again when an event arrives during a read", async () => {
    const clock = new ManualClock();
    const events = new ScriptedEvents(true);
    const source = new ScriptedSource([base], (n) => {
      if (n === 2) events.emit();
    });
    const w = new AddressWatcher({ ...options, source, clock, events });
    await w.start(() => undefined);
    events.emit();
    await flush();
    expect(source.reads).toBe(3);
    expect(clock.sleeps).toEqual([1000, 1000]);
    await w.stop();
  });

  it("counts an event that races the first read, and reads again before sleeping", async () => {
    const clock = new ManualClock();
    const events = new ScriptedEvents(true);
    const source = new ScriptedSource([base], (n) => {
      if (n === 1) events.emit();
    });
    const w = new AddressWatcher({ ...options, source, clock, events });
    await w.start(() => undefined);
    await flush();
    expect(source.reads).toBe(2);
    expect(clock.sleeps).toEqual([1000]);
    await w.stop();
  });
});
