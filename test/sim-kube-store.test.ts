import { describe, expect, it } from "vitest";
import { KubeApiError } from "../src/sim/errors/kube-api-error.js";
import type { KubeObject } from "../src/sim/kube/kube-object.js";
import { KubeStore } from "../src/sim/kube/kube-store.js";

const pod = (name: string, phase = "Running"): KubeObject => ({
  metadata: { namespace: "ns", name },
  status: { phase },
});

function expired(action: () => unknown): KubeApiError {
  try {
    action();
  } catch (error) {
    if (error instanceof KubeApiError) return error;
    throw error;
  }
  throw new Error("expected 410");
}

describe("the simulated etcd", () => {
  it("stamps one cluster-wide resourceVersion per change, a DELETED one included", () => {
    const store = new KubeStore();
    const seen: string[] = [];
    store.subscribe((e) =>
      seen.push(`${e.type} ${e.storage} ${e.object.metadata.name} ${e.resourceVersion}`),
    );
    expect(store.commit("ADDED", "pods", pod("a")).metadata.resourceVersion).toBe("1");
    store.commit("ADDED", "leases", pod("l"));
    store.commit("MODIFIED", "pods", pod("a", "Failed"));
    expect(store.commit("DELETED", "pods", pod("a")).metadata.resourceVersion).toBe("4");
    expect(seen).toEqual(["ADDED pods a 1", "ADDED leases l 2", "MODIFIED pods a 3", "DELETED pods a 4"]);
    expect(store.list("pods")).toEqual([]);
  });

  it("lists as of an earlier resourceVersion by undoing the later changes", () => {
    const store = new KubeStore();
    store.commit("ADDED", "pods", pod("b"));
    store.commit("ADDED", "pods", pod("a"));
    store.commit("MODIFIED", "pods", pod("a", "Failed"));
    store.commit("DELETED", "pods", pod("b"));
    store.commit("ADDED", "pods", pod("c"));
    const at = (rv: number) =>
      store.list("pods", rv).map((o) => `${o.metadata.name}:${(o.status as { phase: string }).phase}`);
    expect(at(2)).toEqual(["a:Running", "b:Running"]);
    expect(at(3)).toEqual(["a:Failed", "b:Running"]);
    expect(at(5)).toEqual(["a:Failed", "c:Running"]);
  });

  it("keeps a bounded history: resuming from a version it no longer reaches is 410 Expired", () => {
    const store = new KubeStore({ historyLimit: 2 });
    for (const name of ["a", "b", "c", "d"]) store.commit("ADDED", "pods", pod(name));
    expect(store.compactedRevision).toBe(2);
    expect(store.changesSince(2).map((e) => e.resourceVersion)).toEqual([3, 4]);
    const error = expired(() => store.changesSince(1));
    expect([error.code, error.reason, error.message]).toEqual([
      410,
      "Expired",
      "too old resource version: 1 (2)",
    ]);
    expect(expired(() => store.list("pods", 1)).code).toBe(410);
  });

  it("compacts on demand, as etcd's compaction does", () => {
    const store = new KubeStore();
    store.commit("ADDED", "pods", pod("a"));
    store.commit("ADDED", "pods", pod("b"));
    expect(store.compact()).toBe(2);
    expect(store.changesSince(2)).toEqual([]);
    expect(expired(() => store.changesSince(1)).code).toBe(410);
  });
});
