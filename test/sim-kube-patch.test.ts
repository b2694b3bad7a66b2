import { describe, expect, it } from "vitest";
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from "../src/sim/kube/patch.js";
import { findResource } from "../src/sim/kube/resources.js";

const podStrategies = findResource("", "v1", "pods")?.patchStrategies ?? {};

describe("JSON merge patch (RFC 7386)", () => {
  it.each([
    [{ a: 1, b: { c: 2, d: 3 } }, { b: { c: null, e: 4 } }, { a: 1, b: { d: 3, e: 4 } }],
    [{ list: [1, 2] }, { list: [3] }, { list: [3] }],
    [{ a: 1 }, { a: null }, {}],
    [{ a: { b: 1 } }, { a: "x" }, { a: "x" }],
  ])("%j patched with %j is %j", (target, patch, expected) => {
    expect(mergePatch(target, patch)).toEqual(expected);
  });
});

describe("strategic merge patch, with the Pod's patch metadata", () => {
  const pod = {
    metadata: { labels: { a: "1" }, finalizers: ["x"] },
    spec: {
      containers: [
        { name: "app", image: "app:1", env: [{ name: "A", value: "1" }] },
        { name: "side", image: "side:1" },
      ],
      tolerations: [{ key: "t1" }],
    },
  };

  it("merges containers by name, env by name, and keeps the others", () => {
    const out = strategicMergePatch(
      pod,
      { spec: { containers: [{ name: "app", image: "app:2", env: [{ name: "B", value: "2" }] }] } },
      podStrategies,
    ) as typeof pod;
    expect(out.spec.containers).toEqual([
      {
        name: "app",
        image: "app:2",
        env: [
          { name: "A", value: "1" },
          { name: "B", value: "2" },
        ],
      },
      { name: "side", image: "side:1" },
    ]);
  });

  it("replaces lists without a merge key, and unions finalizers", () => {
    const out = strategicMergePatch(
      pod,
      { metadata: { finalizers: ["y"] }, spec: { tolerations: [{ key: "t2" }] } },
      podStrategies,
    ) as typeof pod;
    expect(out.spec.tolerations).toEqual([{ key: "t2" }]);
    expect(out.metadata.finalizers).toEqual(["x", "y"]);
  });

  it("deletes a list element with $patch: delete, and a field with null", () => {
    const out = strategicMergePatch(
      pod,
      { metadata: { labels: { a: null } }, spec: { containers: [{ name: "side", $patch: "delete" }] } },
      podStrategies,
    ) as typeof pod;
    expect(out.spec.containers.map((c) => c.name)).toEqual(["app"]);
    expect(out.metadata.labels).toEqual({});
  });

  it("orders by $setElementOrder and removes by $deleteFromPrimitiveList", () => {
    const out = strategicMergePatch(
      pod,
      {
        metadata: { "$deleteFromPrimitiveList/finalizers": ["x"] },
        spec: { "$setElementOrder/containers": [{ name: "side" }, { name: "app" }] },
      },
      podStrategies,
    ) as typeof pod;
    expect(out.spec.containers.map((c) => c.name)).toEqual(["side", "app"]);
    expect(out.metadata.finalizers).toEqual([]);
  });

  it("replaces a map with $patch: replace", () => {
    const out = strategicMergePatch(
      pod,
      { metadata: { labels: { $patch: "replace", b: "2" } } },
      podStrategies,
    ) as typeof pod;
    expect(out.metadata.labels).toEqual({ b: "2" });
  });

  it("refuses a list element without its merge key", () => {
    expect(() => strategicMergePatch(pod, { spec: { containers: [{ image: "x" }] } }, podStrategies)).toThrow(
      "does not contain declared merge key: name",
    );
  });
});

describe("JSON patch (RFC 6902)", () => {
  const doc = { metadata: { labels: { a: "1" } }, list: [1, 2, 3] };

  it("adds, replaces, removes, moves, copies and tests", () => {
    expect(
      jsonPatch(doc, [
        { op: "test", path: "/metadata/labels/a", value: "1" },
        { op: "add", path: "/metadata/labels/b", value: "2" },
        { op: "replace", path: "/list/0", value: 9 },
        { op: "remove", path: "/list/1" },
        { op: "add", path: "/list/-", value: 4 },
        { op: "copy", from: "/metadata/labels/a", path: "/copied" },
        { op: "move", from: "/metadata/labels/b", path: "/moved" },
      ]),
    ).toEqual({ metadata: { labels: { a: "1" } }, list: [9, 3, 4], copied: "1", moved: "2" });
    expect(doc.list).toEqual([1, 2, 3]);
  });

  it.each([
    [[{ op: "test", path: "/list/0", value: 7 }], "testing value /list/0 failed"],
    [[{ op: "remove", path: "/nope" }], "Unable to remove nonexistent key: nope"],
    [[{ op: "replace", path: "/nope", value: 1 }], "doc is missing key"],
    [[{ op: "frob", path: "/a" }], "Unexpected kind: frob"],
  ])("refuses %j", (operations, message) => {
    expect(() => jsonPatch(doc, operations)).toThrow(PatchError);
    expect(() => jsonPatch(doc, operations)).toThrow(message);
  });
});
