/**
 * LeaseRenewer on a manual clock, against an in-memory Lease store standing in for the API server (the
 * Lease's rules that matter here: read, create, replace with a resourceVersion check). The same against
 * the simulator's API server: test/bridge-reservations.test.ts.
 */
import { describe, expect, it } from "vitest";
import { KubeConflictError } from "../src/ipam-whereabouts-bridge/kube/errors/kube-conflict-error.js";
import type { KubeApi, LeaseInfo } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { LeaseRenewer } from "../src/ipam-whereabouts-bridge/reservations/lease-renewer.js";
import { silentLogger } from "./helpers/loggers.js";
import { flush, ManualClock } from "./helpers/manual-clock.js";

class LeaseStore {
  lease: LeaseInfo | undefined;
  updates = 0;
  down = false;
  #version = 0;

  api(): KubeApi {
    const unused = () => {
      throw new Error("not used by LeaseRenewer");
    };
    const check = () => {
      if (this.down) throw new Error("connect ECONNREFUSED");
    };
    return {
      getLease: async () => {
        check();
        return this.lease;
      },
      createLease: async (lease) => {
        check();
        if (this.lease !== undefined)
          throw new KubeConflictError(
            { operation: "create Lease", status: 409, reason: "AlreadyExists" },
            "exists",
          );
        this.lease = { ...lease, resourceVersion: String(++this.#version) };
        return this.lease;
      },
      updateLease: async (lease) => {
        check();
        if (lease.resourceVersion !== this.lease?.resourceVersion)
          throw new KubeConflictError(
            { operation: "update Lease", status: 409, reason: "Conflict" },
            "stale",
          );
        this.updates += 1;
        this.lease = { ...lease, resourceVersion: String(++this.#version) };
        return this.lease;
      },
      watchPods: unused,
      watchNetworkAttachmentDefinitions: unused,
      watchIpPools: unused,
      watchOverlappingReservations: unused,
      watchNodeSlicePools: unused,
      podUid: unused,
      createEvent: unused,
      getNodeTaints: unused,
      setNodeTaint: unused,
      close: unused,
    };
  }
}

function renewer(store: LeaseStore, clock: ManualClock, identity = "bridge-a"): LeaseRenewer {
  return new LeaseRenewer(
    { kube: store.api(), clock, logger: silentLogger() },
    { namespace: "kube-system", name: "multus-ipmgr-reservations", durationMs: 60_000, identity },
  );
}

describe("LeaseRenewer", () => {
  it("renews every sixth of the Lease's duration on the injected clock, and only a Lease it holds", async () => {
    const store = new LeaseStore();
    const clock = new ManualClock();
    const a = renewer(store, clock);
    const stop = new AbortController();
    const running = a.run(stop.signal);
    await clock.advance(30_000);
    // Not taken yet: the timer only keeps a Lease it holds.
    expect(store.lease).toBeUndefined();
    expect(await a.renew()).toBe(true);
    for (let i = 0; i < 6; i++) await clock.advance(10_000);
    expect(store.updates).toBeGreaterThanOrEqual(5);
    expect(store.lease?.renewTime?.getTime()).toBeGreaterThanOrEqual(clock.now() - 10_000);
    expect(a.holds()).toBe(true);
    stop.abort();
    await running;
  });

  it("holds the Lease while the API is unreachable only until two thirds of its duration after the last renewal", async () => {
    const store = new LeaseStore();
    const clock = new ManualClock();
    const a = renewer(store, clock);
    const stop = new AbortController();
    const running = a.run(stop.signal);
    expect(await a.renew()).toBe(true);
    store.down = true;
    await clock.advance(39_999);
    expect(a.holds()).toBe(true);
    await clock.advance(1);
    expect(a.holds()).toBe(false);
    // Back before anyone else took it: the next renewal holds it again.
    store.down = false;
    await clock.advance(10_000);
    await flush();
    expect(a.holds()).toBe(true);
    stop.abort();
    await running;
  });

  it("lets go at the first renewal that finds another holder, and does not take a Lease another renewed", async () => {
    const store = new LeaseStore();
    const clock = new ManualClock();
    const a = renewer(store, clock);
    const b = renewer(store, clock, "bridge-b");
    expect(await a.renew()).toBe(true);
    expect(await b.renew()).toBe(false);
    // Someone else takes it over (their clock said it had expired).
    if (store.lease !== undefined)
      store.lease = { ...store.lease, holderIdentity: "bridge-z", renewTime: new Date(clock.now()) };
    expect(a.holds()).toBe(true);
    expect(await a.renew()).toBe(false);
    expect(a.holds()).toBe(false);
    // Two renewals of one process at once are one request, not a race with itself.
    await clock.advance(60_000);
    const [x, y] = await Promise.all([a.renew(), a.renew()]);
    expect([x, y]).toEqual([true, true]);
    expect(store.lease?.holderIdentity).toBe("bridge-a");
  });
});
