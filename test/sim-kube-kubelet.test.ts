/**
 * The simulator's kubelet stand-in (with Multus and whereabouts behind it): a pod created through the API
 * on a node becomes Running with a pod IP, its Multus networks' addresses from whereabouts, recorded in the
 * IPPool and a reservation as whereabouts records them, and released when the pod goes. Over real HTTP;
 * the whereabouts range reading and the networks annotation are table-tested without I/O.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SimulatorHandle } from "../src/sim/index.js";
import { parseNetworks } from "../src/sim/kube/multus-networks.js";
import {
  ipPoolName,
  lowestFree,
  reservationNameOf,
  whereaboutsRanges,
} from "../src/sim/kube/whereabouts-ipam.js";
import {
  control,
  eventually,
  type Json,
  kube,
  kubeWorld,
  MAC_A,
  multusPod,
  NODE_A,
  type OpenWatch,
  openWatch,
  startKubeSim,
} from "./helpers/kube-worlds.js";

let sim: SimulatorHandle | undefined;
const watches: OpenWatch[] = [];
/** The stand-in's own failures (errorLog): none is expected. */
let errors: string[] = [];

afterEach(async () => {
  for (const w of watches.splice(0)) w.close();
  await sim?.close();
  sim = undefined;
  expect(errors).toEqual([]);
  errors = [];
});

async function start(kubernetes: Record<string, unknown> = {}): Promise<SimulatorHandle> {
  sim = await startKubeSim(kubeWorld(kubernetes), { errorLog: (line) => errors.push(line) });
  return sim;
}

/** A pod manifest as kubectl would send it, on `nodeName`, asking for `networks`. */
function podManifest(name: string, networks: string | undefined, nodeName: string | undefined = NODE_A) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "cnf",
      ...(networks === undefined ? {} : { annotations: { "k8s.v1.cni.cncf.io/networks": networks } }),
    },
    spec: {
      ...(nodeName === undefined ? {} : { nodeName }),
      containers: [{ name: "app", image: "registry.example/app:1" }],
    },
  };
}

async function create(s: SimulatorHandle, manifest: unknown): Promise<Json> {
  const answer = await kube(s, "POST", "/api/v1/namespaces/cnf/pods", manifest);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body;
}

async function running(s: SimulatorHandle, name: string): Promise<Json> {
  let pod: Json;
  await eventually(async () => {
    pod = (await kube(s, "GET", `/api/v1/namespaces/cnf/pods/${name}`)).body;
    return pod.status?.phase === "Running";
  }, `pod ${name} Running`);
  return pod;
}

function pool(s: SimulatorHandle, name = "198.51.100.192-27"): Json {
  return s.state().kubernetes?.ipPools.find((p) => p.metadata.name === name);
}

function reservationNames(s: SimulatorHandle): string[] {
  return (s.state().kubernetes?.overlappingRangeIPReservations ?? []).map((r) => r.metadata.name as string);
}

describe("the kubelet stand-in", () => {
  it("runs a pod created on a node: Pending first, then Multus' network-status with whereabouts' next free address, then Running with a pod IP", async () => {
    const s = await start();
    const rv = (await kube(s, "GET", "/api/v1/namespaces/cnf/pods")).body.metadata.resourceVersion;
    const w = await openWatch(s, `/api/v1/namespaces/cnf/pods?watch=true&resourceVersion=${rv}`);
    watches.push(w);
    const created = await create(s, podManifest("upf-1", "multus-ipvlan"));
    expect(created.status).toEqual({ phase: "Pending", qosClass: "BestEffort" });
    const events = await w.until(3);
    expect(events.map((e) => [e.type, e.object.status.phase])).toEqual([
      ["ADDED", "Pending"],
      ["MODIFIED", "Pending"],
      ["MODIFIED", "Running"],
    ]);
    expect(events[0]?.object.metadata.annotations["k8s.v1.cni.cncf.io/network-status"]).toBeUndefined();
    const pod = await running(s, "upf-1");
    // The node's subnet (198.51.100.0/25): past AWS' reserved addresses, none an ENI or another pod holds.
    expect(pod.status).toMatchObject({
      phase: "Running",
      hostIP: "198.51.100.10",
      podIP: "198.51.100.4",
      podIPs: [{ ip: "198.51.100.4" }],
      qosClass: "BestEffort",
      containerStatuses: [{ name: "app", ready: true, started: true, restartCount: 0 }],
    });
    expect(pod.status.conditions.find((c: Json) => c.type === "Ready")).toMatchObject({ status: "True" });
    const status = JSON.parse(pod.metadata.annotations["k8s.v1.cni.cncf.io/network-status"]);
    // ipvlan on eth1 shares the MAC of the node's device 1 ENI; .193 (offset 1) is upf-0's, so .194.
    expect(status).toEqual([
      {
        name: "aws-cni",
        interface: "eth0",
        ips: ["198.51.100.4"],
        mac: "02:00:00:00:01:00",
        default: true,
        dns: {},
      },
      { name: "cnf/multus-ipvlan", interface: "net1", ips: ["198.51.100.194"], mac: MAC_A, dns: {} },
    ]);
    const allocations = pool(s).spec.allocations;
    expect(allocations["1"]).toEqual({ id: "c0ffee", podref: "cnf/upf-0", ifname: "net1" });
    expect(allocations["2"]).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{64}$/),
      podref: "cnf/upf-1",
      ifname: "net1",
    });
    const reservation = s
      .state()
      .kubernetes?.overlappingRangeIPReservations.find((r) => r.metadata.name === "198.51.100.194");
    expect(reservation).toMatchObject({
      metadata: { namespace: "kube-system" },
      spec: { containerid: allocations["2"].id, podref: "cnf/upf-1", ifname: "net1" },
    });
  });

  it("gives each pod its own addresses, and whereabouts' records go with the pod when it is deleted", async () => {
    const s = await start();
    await create(s, podManifest("upf-1", "multus-ipvlan"));
    await create(s, podManifest("upf-2", "cnf/multus-ipvlan@net5"));
    const one = await running(s, "upf-1");
    const two = await running(s, "upf-2");
    expect([one.status.podIP, two.status.podIP]).toEqual(["198.51.100.4", "198.51.100.5"]);
    const net = (pod: Json) => JSON.parse(pod.metadata.annotations["k8s.v1.cni.cncf.io/network-status"])[1];
    expect(net(one)).toMatchObject({ interface: "net1", ips: ["198.51.100.194"] });
    expect(net(two)).toMatchObject({ interface: "net5", ips: ["198.51.100.195"] });
    expect(Object.keys(pool(s).spec.allocations)).toEqual(["1", "2", "3"]);
    expect((await kube(s, "DELETE", "/api/v1/namespaces/cnf/pods/upf-1")).status).toBe(200);
    await eventually(() => pool(s).spec.allocations["2"] === undefined, "upf-1's allocation released");
    expect(Object.keys(pool(s).spec.allocations)).toEqual(["1", "3"]);
    expect(reservationNames(s)).toEqual(["198.51.100.195"]);
  });

  it("creates the IPPool of a range that has none, named as whereabouts names it (network_name, IPv6 too)", async () => {
    const s = await start({
      networkAttachmentDefinitions: [
        {
          namespace: "cnf",
          name: "dual",
          config: {
            type: "macvlan",
            master: "eth1",
            ipam: {
              type: "whereabouts",
              network_name: "blue",
              ipRanges: [
                { range: "198.51.100.230/28", range_start: "198.51.100.228", exclude: ["198.51.100.228/31"] },
                { range: "2001:db8:100:2::/120" },
              ],
            },
          },
        },
      ],
    });
    await create(s, podManifest("upf-1", "dual"));
    const pod = await running(s, "upf-1");
    const entry = JSON.parse(pod.metadata.annotations["k8s.v1.cni.cncf.io/network-status"])[1];
    expect(entry.ips).toEqual(["198.51.100.230", "2001:db8:100:2::1"]);
    // macvlan makes its own MAC: locally administered, not the ENI's.
    expect(entry.mac).toMatch(/^[0-9a-f][26ae](:[0-9a-f]{2}){5}$/);
    expect(pool(s, "blue-198.51.100.224-28").spec).toEqual({
      range: "198.51.100.224/28",
      allocations: { "6": { id: expect.any(String), podref: "cnf/upf-1", ifname: "net1" } },
    });
    expect(pool(s, "blue-2001-db8-100-2---120").spec.allocations).toHaveProperty("1");
    expect(reservationNames(s)).toEqual(["blue-198.51.100.230", "blue-2001-db8-100-2--1"]);
  });

  it("leaves a pod Pending with a FailedCreatePodSandBox Warning when its network cannot be attached", async () => {
    const s = await start();
    const created = await create(s, podManifest("upf-1", "missing-net"));
    let events: Json[] = [];
    await eventually(async () => {
      events = (await kube(s, "GET", "/api/v1/namespaces/cnf/events")).body.items;
      return events.length > 0;
    }, "the kubelet's Event");
    expect(events[0]).toMatchObject({
      type: "Warning",
      reason: "FailedCreatePodSandBox",
      involvedObject: { kind: "Pod", name: "upf-1", uid: created.metadata.uid },
      source: { component: "kubelet", host: NODE_A },
    });
    expect(events[0].message).toContain(
      'network-attachment-definitions.k8s.cni.cncf.io "missing-net" not found',
    );
    expect((await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-1")).body.status.phase).toBe("Pending");
  });

  it("does not run a pod without a node, nor any pod when the world sets kubelet: false", async () => {
    const s = await start({ kubelet: false });
    await create(s, podManifest("upf-1", "multus-ipvlan"));
    await create(s, podManifest("upf-2", undefined, undefined));
    // A later write by the API (the kubelet's would come after the create) shows it still Pending.
    await kube(
      s,
      "PATCH",
      "/api/v1/namespaces/cnf/pods/upf-1",
      { metadata: { labels: { a: "b" } } },
      "application/merge-patch+json",
    );
    const pods = s.state().kubernetes?.pods ?? [];
    expect(pods.map((p) => [p.metadata.name, (p.status as Json).phase])).toEqual([
      ["upf-0", "Running"],
      ["upf-1", "Pending"],
      ["upf-2", "Pending"],
    ]);
    expect(Object.keys(pool(s).spec.allocations)).toEqual(["1"]);
  });

  it("takes the control API's pods as given, Pending ones too, even when an API client changes them later", async () => {
    const s = await start();
    await control(
      s,
      "POST",
      "/kubernetes/pods",
      multusPod("upf-1", NODE_A, [], MAC_A, { phase: "Pending", networkStatus: undefined }),
    );
    await kube(
      s,
      "PATCH",
      "/api/v1/namespaces/cnf/pods/upf-1",
      { metadata: { labels: { a: "b" } } },
      "application/merge-patch+json",
    );
    await create(s, podManifest("upf-2", undefined));
    await running(s, "upf-2");
    expect((await kube(s, "GET", "/api/v1/namespaces/cnf/pods/upf-1")).body.status.phase).toBe("Pending");
  });
});

describe("whereabouts' ranges, as the stand-in reads them", () => {
  const first = (ipam: Record<string, unknown>, taken: string[] = []) =>
    whereaboutsRanges(ipam).map((r) => lowestFree(r, new Set(), (ip) => taken.includes(ip))?.ip ?? "full");

  it.each([
    ["a range with host bits is masked", { range: "198.51.100.230/24" }, ["198.51.100.1"]],
    ["the network address is never handed out", { range: "198.51.100.192/27" }, ["198.51.100.193"]],
    ["range_start", { range: "198.51.100.192/27", range_start: "198.51.100.200" }, ["198.51.100.200"]],
    ["the first-last/prefix form", { range: "198.51.100.200-198.51.100.201/27" }, ["198.51.100.200"]],
    ["a bare IP in exclude", { range: "198.51.100.192/27", exclude: ["198.51.100.193"] }, ["198.51.100.194"]],
    ["a CIDR in exclude", { range: "198.51.100.192/27", exclude: ["198.51.100.192/29"] }, ["198.51.100.200"]],
    ["IPv6", { range: "2001:db8::/64" }, ["2001:db8::1"]],
    ["a full range", { range: "198.51.100.192/30", range_end: "198.51.100.193" }, ["full"]],
    [
      "range and ipRanges",
      { range: "198.51.100.0/24", ipRanges: [{ range: "2001:db8::/120" }] },
      ["198.51.100.1", "2001:db8::1"],
    ],
  ])("%s", (_name, ipam, expected) => {
    expect(first({ type: "whereabouts", ...ipam }, expected[0] === "full" ? ["198.51.100.193"] : [])).toEqual(
      expected,
    );
  });

  it("never hands out the broadcast address, and skips a reserved one", () => {
    const [range] = whereaboutsRanges({ range: "198.51.100.192/30" });
    expect(range === undefined ? [] : [lowestFree(range, new Set(["1"]), () => false)]).toEqual([
      { ip: "198.51.100.194", offset: "2" },
    ]);
    expect(range === undefined ? [] : [lowestFree(range, new Set(["1", "2"]), () => false)]).toEqual([
      undefined,
    ]);
  });

  it("names pools and reservations as whereabouts does", () => {
    const [plain] = whereaboutsRanges({ range: "2001:db8:100:2::100/120" });
    const [named] = whereaboutsRanges({ range: "198.51.100.192/27", network_name: "blue" });
    expect(plain === undefined ? "" : ipPoolName(plain)).toBe("2001-db8-100-2--100-120");
    expect(plain === undefined ? "" : reservationNameOf(plain, "2001:db8:100:2::")).toBe("2001-db8-100-2--0");
    expect(named === undefined ? "" : ipPoolName(named)).toBe("blue-198.51.100.192-27");
    expect(named === undefined ? "" : reservationNameOf(named, "198.51.100.193")).toBe("blue-198.51.100.193");
  });

  it.each([
    [{}, "the whereabouts IPAM config has no range and no ipRanges"],
    [
      { range: "198.51.100.999/27" },
      'the whereabouts IPAM config\'s range "198.51.100.999/27" is not a CIDR',
    ],
    [
      { range: "198.51.100.0/24", range_start: "2001:db8::1" },
      'range_start "2001:db8::1" is not an IPv4 address',
    ],
  ])("refuses %j", (ipam, message) => {
    expect(() => whereaboutsRanges(ipam)).toThrow(message);
  });
});

describe("Multus' networks annotation", () => {
  it.each([
    [
      "a, b",
      [
        ["cnf", "a", "net1"],
        ["cnf", "b", "net2"],
      ],
    ],
    ["other/a@eth9", [["other", "a", "eth9"]]],
    [
      '[{"name":"a","interface":"net7"},{"name":"b","namespace":"x"}]',
      [
        ["cnf", "a", "net7"],
        ["x", "b", "net2"],
      ],
    ],
    ["", []],
  ])("reads %j", (annotation, expected) => {
    expect(parseNetworks(annotation, "cnf").map((n) => [n.namespace, n.name, n.interface])).toEqual(expected);
  });

  it("refuses what Multus refuses", () => {
    expect(() => parseNetworks("[{", "cnf")).toThrow("k8s.v1.cni.cncf.io/networks is not valid JSON");
    expect(() => parseNetworks("a/b/c", "cnf")).toThrow('entry "a/b/c" is not [namespace/]name[@interface]');
  });
});
