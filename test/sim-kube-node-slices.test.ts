/**
 * whereabouts' node slices in the simulator: the NodeSlicePool resource served like the other whereabouts
 * kinds, the node-slice controller stand-in that cuts a node-sliced NAD's range into one slice per node (and
 * follows nodes joining and leaving), and the kubelet stand-in giving a pod an address of its node's slice
 * in the per-node IPPool whereabouts names. The slicing and naming are table- and property-tested without
 * I/O; the rest over real HTTP.
 */
import { AssignIpv6AddressesCommand, AssignPrivateIpAddressesCommand } from "@aws-sdk/client-ec2";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger } from "../src/eni/process/logger.js";
import { createKubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-client.js";
import { loadWorldFile, parseWorld, type SimulatorHandle, WorldError } from "../src/sim/index.js";
import { mustParseCidr } from "../src/sim/ip-math.js";
import {
  assignNodes,
  divideRange,
  freeAllocations,
  type NodeSliceAllocation,
  nodeIpPoolName,
  removeUnusedNodes,
  whereaboutsNetworkOf,
} from "../src/sim/kube/node-slices.js";
import { tempKubeconfig } from "./helpers/kube-proxy.js";
import {
  control,
  eventually,
  type Json,
  kube,
  kubeEndpointOf,
  kubeWorld,
  NODE_A,
  NODE_B,
  type OpenWatch,
  openWatch,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { ec2ClientFor } from "./helpers/sim-fixtures.js";

const POOLS = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/nodeslicepools";
const NADS = "/apis/k8s.cni.cncf.io/v1/namespaces/kube-system/network-attachment-definitions";

let sim: SimulatorHandle | undefined;
const watches: OpenWatch[] = [];
let errors: string[] = [];
let logs: string[] = [];

afterEach(async () => {
  for (const w of watches.splice(0)) w.close();
  await sim?.close();
  sim = undefined;
  expect(errors).toEqual([]);
  errors = [];
  logs = [];
});

/** A node-sliced NAD in kube-system (whereabouts' namespace), as whereabouts' e2e test writes one. */
function slicedNad(name: string, ipam: Record<string, unknown>, namespace = "kube-system") {
  return {
    namespace,
    name,
    config: {
      cniVersion: "0.3.1",
      name,
      type: "ipvlan",
      master: "eth1",
      ipam: { type: "whereabouts", network_name: name, ...ipam },
    },
  };
}

const SLICES_V4 = slicedNad("slices", { range: "198.51.100.224/27", node_slice_size: "/28" });
const SLICES_V6 = slicedNad("slices6", { range: "2001:db8:100:2:10::/76", node_slice_size: "/80" });

async function start(kubernetes: Record<string, unknown> = {}): Promise<SimulatorHandle> {
  const base = kubeWorld().kubernetes as unknown as { networkAttachmentDefinitions: unknown[] };
  sim = await startKubeSim(
    kubeWorld({
      networkAttachmentDefinitions: [...base.networkAttachmentDefinitions, SLICES_V4, SLICES_V6],
      ...kubernetes,
    }),
    { errorLog: (line) => errors.push(line), log: (line) => logs.push(line) },
  );
  return sim;
}

function slicePool(s: SimulatorHandle, name: string): Json {
  return s.state().kubernetes?.nodeSlicePools.find((p) => p.metadata.name === name);
}

function allocationsOf(s: SimulatorHandle, name: string): [string, string][] {
  return (slicePool(s, name)?.status.allocations ?? []).map((a: Json) => [a.nodeName, a.sliceRange]);
}

function ipPool(s: SimulatorHandle, name: string): Json {
  return s.state().kubernetes?.ipPools.find((p) => p.metadata.name === name);
}

function podManifest(name: string, networks: string, nodeName: string) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "cnf", annotations: { "k8s.v1.cni.cncf.io/networks": networks } },
    spec: { nodeName, containers: [{ name: "app", image: "registry.example/app:1" }] },
  };
}

async function runPod(s: SimulatorHandle, name: string, networks: string, nodeName: string): Promise<Json> {
  const answer = await kube(s, "POST", "/api/v1/namespaces/cnf/pods", podManifest(name, networks, nodeName));
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  let pod: Json;
  await eventually(async () => {
    pod = (await kube(s, "GET", `/api/v1/namespaces/cnf/pods/${name}`)).body;
    return pod.status?.phase === "Running";
  }, `pod ${name} Running`);
  return JSON.parse(pod.metadata.annotations["k8s.v1.cni.cncf.io/network-status"]).slice(1);
}

async function sandboxFailure(s: SimulatorHandle, name: string, networks: string, nodeName: string) {
  await kube(s, "POST", "/api/v1/namespaces/cnf/pods", podManifest(name, networks, nodeName));
  let events: Json[] = [];
  await eventually(async () => {
    events = (await kube(s, "GET", "/api/v1/namespaces/cnf/events")).body.items;
    return events.some((e: Json) => e.involvedObject.name === name);
  }, `${name}'s FailedCreatePodSandBox`);
  return events.find((e: Json) => e.involvedObject.name === name).message as string;
}

describe("whereabouts' slicing, as the stand-in plays it", () => {
  it.each([
    [
      "/26",
      "198.51.100.0/24",
      ["198.51.100.0/26", "198.51.100.64/26", "198.51.100.128/26", "198.51.100.192/26"],
    ],
    ["26", "198.51.100.0/24", 4],
    ["/24", "198.51.100.0/24", ["198.51.100.0/24"]],
    // whereabouts' DivideRangeBySize answers no slice at all (and no error) for a size that is not a number.
    ["x", "198.51.100.0/24", []],
    ["/23", "198.51.100.0/24", "subnetMaskSize must be greater or equal than netMaskSize"],
    ["/33", "198.51.100.0/24", "slice size /33 is longer than an IPv4 address"],
    ["/80", "2001:db8:100:2:10::/76", 16],
    [
      "/80",
      "2001:db8::/32",
      "2001:db8::/32 holds 281474976710656 slices of /80, more than the 16384 the simulator lists in one NodeSlicePool",
    ],
  ])("cuts %s slices of %s", (sliceSize, range, expected) => {
    const cut = divideRange(mustParseCidr(range), sliceSize);
    if (typeof expected === "number") expect((cut as string[]).length).toBe(expected);
    else if (typeof expected === "string") expect(cut).toContain(expected);
    else expect(cut).toEqual(expected);
  });

  it("cuts IPv6 /80s in address order", () => {
    const cut = divideRange(mustParseCidr("2001:db8:100:2:10::/76"), "/80") as string[];
    expect([cut[0], cut[1], cut[15]]).toEqual([
      "2001:db8:100:2:10::/80",
      "2001:db8:100:2:11::/80",
      "2001:db8:100:2:1f::/80",
    ]);
  });

  it("gives nodes slices as whereabouts does: one each, kept while the node stays, freed when it goes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"), { maxLength: 10 }),
        fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"), { maxLength: 10 }),
        (count, before: string[], after: string[]) => {
          const slices = Array.from({ length: count }, (_, i) => `198.51.100.${i * 16}/28`);
          const sync = (allocations: NodeSliceAllocation[]) =>
            removeUnusedNodes(assignNodes(allocations, after), after);
          const first = assignNodes(freeAllocations(slices), before);
          // whereabouts assigns before it frees, so a node that replaces a leaving one in a full pool gets
          // its slice on the next pass (the next NAD or node event); two passes settle.
          const second = sync(sync(first));
          for (const allocations of [first, second]) {
            expect(allocations.map((a) => a.sliceRange)).toEqual(slices);
            const held = allocations.map((a) => a.nodeName).filter((n) => n !== "");
            expect(new Set(held).size).toBe(held.length);
          }
          // Every node present gets a slice while there are free ones; none that left keeps one.
          const held = new Set(second.map((a) => a.nodeName));
          expect(after.filter((n) => !held.has(n)).length).toBe(Math.max(0, after.length - count));
          for (const a of second) if (a.nodeName !== "") expect(after).toContain(a.nodeName);
          // A node that stays keeps its slice.
          for (const a of first) {
            if (a.nodeName !== "" && after.includes(a.nodeName)) {
              expect(second.find((b) => b.nodeName === a.nodeName)?.sliceRange).toBe(a.sliceRange);
            }
          }
        },
      ),
    );
  });

  it("leaves a node joining a full pool without a slice until a later pass, as whereabouts does", () => {
    const full = [{ nodeName: "a", sliceRange: "198.51.100.0/28" }];
    const once = removeUnusedNodes(assignNodes(full, ["e"]), ["e"]);
    expect(once).toEqual([{ nodeName: "", sliceRange: "198.51.100.0/28" }]);
    expect(assignNodes(once, ["e"])).toEqual([{ nodeName: "e", sliceRange: "198.51.100.0/28" }]);
  });

  it.each([
    ["slices", NODE_A, "198.51.100.224/28", `slices-${NODE_A}-198.51.100.224-28`],
    ["slices6", NODE_A, "2001:db8:100:2:10::/80", `slices6-${NODE_A}-2001-db8-100-2-10---80`],
    ["", "node-1", "198.51.100.240/28", "node-1-198.51.100.240-28"],
  ])(
    "names the per-node IPPool of %j on %s's %s as whereabouts' IPPoolName",
    (network, node, slice, name) => {
      expect(nodeIpPoolName(network, node, slice)).toBe(name);
    },
  );

  it("reads a NAD's config as whereabouts' controller does", () => {
    const config = (c: unknown) => whereaboutsNetworkOf(JSON.stringify(c));
    expect(
      config({
        name: "net",
        type: "macvlan",
        ipam: { type: "whereabouts", range: "198.51.100.230/27", node_slice_size: "28" },
      }),
    ).toEqual({ poolName: "net", networkName: "", range: "198.51.100.224/27", sliceSize: "28" });
    // A plugin list is read from its first plugin, whose own name (not the list's) names the pool.
    expect(
      config({
        name: "list",
        plugins: [
          { type: "ipvlan", ipam: { type: "whereabouts", range: "198.51.100.0/24", network_name: "blue" } },
        ],
      }),
    ).toEqual({ poolName: "blue", networkName: "blue", range: "198.51.100.0/24", sliceSize: "" });
    expect(config({ type: "ipvlan", ipam: { type: "host-local" } })).toBeUndefined();
    expect(whereaboutsNetworkOf("{not json")).toBeUndefined();
  });
});

describe("the NodeSlicePool resource", () => {
  it("is discovered, and the controller's pool has whereabouts' exact shape: one slice per node, free ones with an empty nodeName", async () => {
    const s = await start();
    const group = (await kube(s, "GET", "/apis/whereabouts.cni.cncf.io/v1alpha1")).body;
    expect(group.resources.find((r: Json) => r.kind === "NodeSlicePool")).toEqual({
      name: "nodeslicepools",
      singularName: "nodeslicepool",
      namespaced: true,
      kind: "NodeSlicePool",
      verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    });
    const nad = (await kube(s, "GET", `${NADS}/slices`)).body;
    const pool = (await kube(s, "GET", `${POOLS}/slices`)).body;
    expect(pool).toMatchObject({
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "NodeSlicePool",
      metadata: {
        name: "slices",
        namespace: "kube-system",
        generation: 1,
        ownerReferences: [
          {
            apiVersion: "k8s.cni.cncf.io/v1",
            kind: "NetworkAttachmentDefinition",
            name: "slices",
            uid: nad.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { range: "198.51.100.224/27", sliceSize: "/28" },
      status: {
        allocations: [
          { nodeName: NODE_A, sliceRange: "198.51.100.224/28" },
          { nodeName: NODE_B, sliceRange: "198.51.100.240/28" },
        ],
      },
    });
    const six = (await kube(s, "GET", `${POOLS}/slices6`)).body;
    expect(six.spec).toEqual({ range: "2001:db8:100:2:10::/76", sliceSize: "/80" });
    expect(six.status.allocations.slice(0, 3)).toEqual([
      { nodeName: NODE_A, sliceRange: "2001:db8:100:2:10::/80" },
      { nodeName: NODE_B, sliceRange: "2001:db8:100:2:11::/80" },
      { nodeName: "", sliceRange: "2001:db8:100:2:12::/80" },
    ]);
    expect(six.status.allocations).toHaveLength(16);
    // The plain NAD of the world (cnf/multus-ipvlan, no node_slice_size) has none.
    expect(s.state().kubernetes?.nodeSlicePools.map((p) => p.metadata.name)).toEqual(["slices", "slices6"]);
  });

  it("lists, watches, creates, updates, patches and deletes NodeSlicePools, status in the object (no /status subresource)", async () => {
    const s = await start({ nodeSliceController: false });
    const list = (await kube(s, "GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/nodeslicepools")).body;
    expect(list).toMatchObject({ kind: "NodeSlicePoolList", items: [] });
    const w = await openWatch(s, `${POOLS}?watch=true&resourceVersion=${list.metadata.resourceVersion}`);
    watches.push(w);
    const created = await kube(s, "POST", POOLS, {
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "NodeSlicePool",
      metadata: { name: "hand" },
      spec: { range: "198.51.100.224/27", sliceSize: "/28" },
      status: {
        allocations: [
          { nodeName: NODE_A, sliceRange: "198.51.100.224/28" },
          { nodeName: "", sliceRange: "198.51.100.240/28" },
        ],
      },
    });
    expect(created.status).toBe(201);
    const updated = structuredClone(created.body);
    updated.status.allocations[1].nodeName = NODE_B;
    const put = await kube(s, "PUT", `${POOLS}/hand`, updated);
    expect(put.status).toBe(200);
    // No status subresource: a status change is a change of the object, so generation moves.
    expect(put.body.metadata.generation).toBe(2);
    const patched = await kube(
      s,
      "PATCH",
      `${POOLS}/hand`,
      [{ op: "replace", path: "/status/allocations/0/nodeName", value: "" }],
      "application/json-patch+json",
    );
    expect(patched.body.status.allocations[0]).toEqual({ nodeName: "", sliceRange: "198.51.100.224/28" });
    const merged = await kube(
      s,
      "PATCH",
      `${POOLS}/hand`,
      { spec: { sliceSize: "/29" } },
      "application/merge-patch+json",
    );
    expect(merged.body.spec).toEqual({ range: "198.51.100.224/27", sliceSize: "/29" });
    expect((await kube(s, "GET", `${POOLS}/hand/status`)).status).toBe(404);
    expect((await kube(s, "DELETE", `${POOLS}/hand`)).body).toMatchObject({
      kind: "Status",
      status: "Success",
    });
    const events = await w.until(5);
    expect(events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]);
    expect(events[1]?.object.status.allocations[1].nodeName).toBe(NODE_B);
  });

  it.each([
    [{ spec: { sliceSize: "/28" } }, "spec.range: Required value"],
    [{ spec: { range: "198.51.100.0/24", sliceSize: 28 } }, "spec.sliceSize in body must be of type string"],
    [
      { spec: { range: "198.51.100.0/24", sliceSize: "/28" }, status: {} },
      "status.allocations: Required value",
    ],
    [
      {
        spec: { range: "198.51.100.0/24", sliceSize: "/28" },
        status: { allocations: [{ sliceRange: "198.51.100.0/28" }] },
      },
      "status.allocations[0].nodeName: Required value",
    ],
  ])("refuses %j as the CRD's schema does (422)", async (body, message) => {
    const s = await start({ nodeSliceController: false });
    const answer = await kube(s, "POST", POOLS, { metadata: { name: "bad" }, ...body });
    expect(answer.status).toBe(422);
    expect(answer.body.message).toContain(message);
  });
});

describe("NodeSlicePools in the world file", () => {
  it("seeds one given under objects, checked against the CRD's schema", () => {
    const pool = (spec: Record<string, unknown>) => ({
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "NodeSlicePool",
      metadata: { namespace: "kube-system", name: "given" },
      spec,
    });
    const world = (objects: unknown[]) => {
      const input = JSON.parse(JSON.stringify(kubeWorld())) as { kubernetes: Record<string, unknown> };
      input.kubernetes.objects = objects;
      return () => parseWorld(input);
    };
    expect(world([pool({ range: "198.51.100.224/27", sliceSize: "/28" })])).not.toThrow();
    let problems: readonly string[] = [];
    try {
      world([pool({ sliceSize: "/28" })])();
    } catch (error) {
      expect(error).toBeInstanceOf(WorldError);
      problems = (error as WorldError).problems;
    }
    expect(problems).toEqual(["kubernetes.objects[0]: spec.range: Required value"]);
  });
});

describe("the node-slice controller stand-in", () => {
  it("gives a joining node the first free slice and frees the slice of a node that leaves", async () => {
    const s = await start({ nodes: [{ instance: "i-0a" }] });
    expect(allocationsOf(s, "slices")).toEqual([
      [NODE_A, "198.51.100.224/28"],
      ["", "198.51.100.240/28"],
    ]);
    const rv = (await kube(s, "GET", POOLS)).body.metadata.resourceVersion;
    const w = await openWatch(
      s,
      `${POOLS}?watch=true&resourceVersion=${rv}&fieldSelector=metadata.name%3Dslices`,
    );
    watches.push(w);
    expect((await control(s, "POST", "/kubernetes/nodes", { instance: "i-0b" })).status).toBe(201);
    await w.until(1);
    expect(allocationsOf(s, "slices")).toEqual([
      [NODE_A, "198.51.100.224/28"],
      [NODE_B, "198.51.100.240/28"],
    ]);
    expect((await control(s, "DELETE", `/kubernetes/nodes/${NODE_A}`)).status).toBe(200);
    await w.until(2);
    expect(allocationsOf(s, "slices")).toEqual([
      ["", "198.51.100.224/28"],
      [NODE_B, "198.51.100.240/28"],
    ]);
    expect(w.events.map((e) => e.type)).toEqual(["MODIFIED", "MODIFIED"]);
    expect((await control(s, "POST", "/kubernetes/nodes", { instance: "i-0nope" })).body.error).toBe(
      "invalid node: instance: unknown instance i-0nope; the instances are i-0a, i-0b",
    );
  });

  it("gives nodes that join together their slices in one change of the pool, in name order", async () => {
    const s = await start({ nodes: [], pods: [] });
    expect(allocationsOf(s, "slices")).toEqual([
      ["", "198.51.100.224/28"],
      ["", "198.51.100.240/28"],
    ]);
    const rv = (await kube(s, "GET", POOLS)).body.metadata.resourceVersion;
    const w = await openWatch(
      s,
      `${POOLS}?watch=true&resourceVersion=${rv}&fieldSelector=metadata.name%3Dslices`,
    );
    watches.push(w);
    s.kubernetes?.addNode({ instance: "i-0b" });
    s.kubernetes?.addNode({ instance: "i-0a" });
    await w.until(1);
    // Nodes in name order, whatever order they joined in.
    expect(allocationsOf(s, "slices")).toEqual([
      [NODE_A, "198.51.100.224/28"],
      [NODE_B, "198.51.100.240/28"],
    ]);
    await kube(s, "GET", POOLS);
    expect(w.events.map((e) => e.type)).toEqual(["MODIFIED"]);
  });

  it("re-cuts the pool when the NAD's slice size changes, and deletes it with its NAD", async () => {
    const s = await start();
    const nad = (await kube(s, "GET", `${NADS}/slices`)).body;
    const config = JSON.parse(nad.spec.config);
    config.ipam.node_slice_size = "/29";
    nad.spec.config = JSON.stringify(config);
    expect((await kube(s, "PUT", `${NADS}/slices`, nad)).status).toBe(200);
    await eventually(() => slicePool(s, "slices")?.spec.sliceSize === "/29", "the pool re-cut");
    expect(allocationsOf(s, "slices")).toEqual([
      [NODE_A, "198.51.100.224/29"],
      [NODE_B, "198.51.100.232/29"],
      ["", "198.51.100.240/29"],
      ["", "198.51.100.248/29"],
    ]);
    expect((await kube(s, "DELETE", `${NADS}/slices`)).status).toBe(200);
    await eventually(() => slicePool(s, "slices") === undefined, "the pool deleted with its NAD");
  });

  it("makes no pool for a NAD outside kube-system, nor for two NADs of one network that disagree", async () => {
    const s = await start({
      networkAttachmentDefinitions: [
        slicedNad("elsewhere", { range: "198.51.100.224/27", node_slice_size: "/28" }, "cnf"),
        slicedNad("red", { range: "198.51.100.224/27", node_slice_size: "/28", network_name: "shared" }),
        slicedNad("blue", { range: "198.51.100.224/27", node_slice_size: "/29", network_name: "shared" }),
      ],
    });
    await eventually(() => logs.some((l) => l.includes("IPAM conf mismatch")), "the mismatch logged");
    expect(s.state().kubernetes?.nodeSlicePools).toEqual([]);
    expect(logs.find((l) => l.includes("network-attachment-definition kube-system/red:"))).toBe(
      "whereabouts node-slice controller: network-attachment-definition kube-system/red: found IPAM conf mismatch for network-attachment-definitions with same network name: " +
        "kube-system/red (198.51.100.224/27 in /28 slices) and kube-system/blue (198.51.100.224/27 in /29 slices) both have network_name shared; " +
        "make their range and node_slice_size agree, or give each network its own network_name",
    );
  });
});

describe("the kubelet stand-in in node-slice mode", () => {
  it("gives a pod an address of its node's slice, recorded in whereabouts' per-node IPPool, and releases it with the pod", async () => {
    const s = await start();
    const a = await runPod(s, "upf-1", "kube-system/slices, kube-system/slices6", NODE_A);
    const b = await runPod(s, "upf-2", "kube-system/slices", NODE_B);
    expect(a.map((e: Json) => e.ips)).toEqual([["198.51.100.225"], ["2001:db8:100:2:10::1"]]);
    expect(b[0].ips).toEqual(["198.51.100.241"]);
    const poolA = ipPool(s, `slices-${NODE_A}-198.51.100.224-28`);
    expect(poolA.metadata.namespace).toBe("kube-system");
    expect(poolA.spec).toEqual({
      range: "198.51.100.224/28",
      allocations: {
        "1": { id: expect.stringMatching(/^[0-9a-f]{64}$/), podref: "cnf/upf-1", ifname: "net1" },
      },
    });
    expect(ipPool(s, `slices6-${NODE_A}-2001-db8-100-2-10---80`).spec.allocations["1"]).toMatchObject({
      podref: "cnf/upf-1",
      ifname: "net2",
    });
    expect(ipPool(s, `slices-${NODE_B}-198.51.100.240-28`).spec.allocations["1"].podref).toBe("cnf/upf-2");
    const again = await runPod(s, "upf-3", "kube-system/slices", NODE_A);
    expect(again[0].ips).toEqual(["198.51.100.226"]);
    expect((await kube(s, "DELETE", "/api/v1/namespaces/cnf/pods/upf-1")).status).toBe(200);
    await eventually(
      () => ipPool(s, `slices-${NODE_A}-198.51.100.224-28`).spec.allocations["1"] === undefined,
      "upf-1's address released",
    );
  });

  it("fails the sandbox as whereabouts does for a node without a slice and for a network without a pool", async () => {
    const s = await start({
      networkAttachmentDefinitions: [
        slicedNad("one", { range: "198.51.100.240/28", node_slice_size: "/28" }),
        slicedNad("elsewhere", { range: "198.51.100.224/28", node_slice_size: "/28" }, "cnf"),
      ],
    });
    await eventually(() => slicePool(s, "one") !== undefined, "the pool of one");
    expect(allocationsOf(s, "one")).toEqual([[NODE_A, "198.51.100.240/28"]]);
    expect(await sandboxFailure(s, "upf-1", "kube-system/one", NODE_B)).toContain(
      "error at storage engine: no allocated node slice for node",
    );
    expect(await sandboxFailure(s, "upf-2", "elsewhere", NODE_A)).toContain(
      'error at storage engine: nodeslicepools.whereabouts.cni.cncf.io "elsewhere" not found',
    );
  });
});

describe("examples/world-prefix.yaml, the prefix-mode demo's world", () => {
  const NODE_1 = "ip-192-0-2-10.ec2.internal";
  const NODE_2 = "ip-192-0-2-20.ec2.internal";

  it("slices both families for its node, gives a pod one address of each, and EC2 takes each slice as one prefix", async () => {
    sim = await startKubeSim(await loadWorldFile("examples/world-prefix.yaml"), {
      errorLog: (line) => errors.push(line),
    });
    const s = sim;
    await eventually(() => slicePool(s, "slices-v6") !== undefined, "both pools made");
    expect(allocationsOf(s, "slices-v4")).toEqual([
      [NODE_1, "192.0.2.192/28"],
      ["", "192.0.2.208/28"],
    ]);
    expect(allocationsOf(s, "slices-v6").slice(0, 2)).toEqual([
      [NODE_1, "2001:db8:200:2:10::/80"],
      ["", "2001:db8:200:2:11::/80"],
    ]);
    const nets = await runPod(s, "upf-0", "kube-system/slices-v4, kube-system/slices-v6", NODE_1);
    expect(nets.map((n: Json) => [n.interface, n.ips, n.mac])).toEqual([
      ["net1", ["192.0.2.193"], "02:00:00:00:03:01"],
      ["net2", ["2001:db8:200:2:10::1"], "02:00:00:00:03:01"],
    ]);
    const ec2 = ec2ClientFor(s);
    try {
      const v4 = await ec2.send(
        new AssignPrivateIpAddressesCommand({
          NetworkInterfaceId: "eni-0p1multus",
          Ipv4Prefixes: ["192.0.2.192/28"],
        }),
      );
      expect(v4.AssignedIpv4Prefixes).toEqual([{ Ipv4Prefix: "192.0.2.192/28" }]);
      const v6 = await ec2.send(
        new AssignIpv6AddressesCommand({
          NetworkInterfaceId: "eni-0p1multus",
          Ipv6Prefixes: ["2001:db8:200:2:10::/80"],
        }),
      );
      expect(v6.AssignedIpv6Prefixes).toEqual(["2001:db8:200:2:10::/80"]);
    } finally {
      ec2.destroy();
    }
    expect((await control(s, "POST", "/kubernetes/nodes", { instance: "i-0prefix2" })).status).toBe(201);
    await eventually(() => allocationsOf(s, "slices-v4")[1]?.[0] === NODE_2, "the joining node's slice");
    expect(allocationsOf(s, "slices-v6")[1]).toEqual([NODE_2, "2001:db8:200:2:11::/80"]);
  });

  it("is what the bridge's own Kubernetes adapter reads: the pools' names, ranges, slices and owners, and a node joining", async () => {
    sim = await startKubeSim(await loadWorldFile("examples/world-prefix.yaml"), {
      errorLog: (line) => errors.push(line),
    });
    const s = sim;
    await eventually(() => slicePool(s, "slices-v6") !== undefined, "both pools made");
    const kubeconfig = await tempKubeconfig(kubeEndpointOf(s));
    const api = createKubeApi({
      kubeconfig: kubeconfig.path,
      clock: systemClock,
      logger: createLogger("silent"),
      watchTimeoutSeconds: 300,
      requestTimeoutMs: 5_000,
      restartBaseMs: 50,
      restartMaxMs: 200,
      component: "multus-ipmgr-bridge",
      host: NODE_1,
    });
    try {
      const pools = await api.watchNodeSlicePools({ changed: () => undefined });
      const v4 = pools.list().find((p) => p.name === "slices-v4");
      expect(v4).toEqual({
        namespace: "kube-system",
        name: "slices-v4",
        range: "192.0.2.192/27",
        sliceSize: "/28",
        allocations: [
          { nodeName: NODE_1, sliceRange: "192.0.2.192/28" },
          { nodeName: "", sliceRange: "192.0.2.208/28" },
        ],
        ownerNads: ["slices-v4"],
      });
      s.kubernetes?.addNode({ instance: "i-0prefix2" });
      await eventually(
        () => pools.list().find((p) => p.name === "slices-v6")?.allocations[1]?.nodeName === NODE_2,
        "the joining node's slice in the bridge's cache",
      );
    } finally {
      await api.close();
      kubeconfig.remove();
    }
  });
});
