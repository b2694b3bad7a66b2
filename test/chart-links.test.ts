/**
 * The chart's attach mode (bridge.attach): the links container beside the bridge, the only one with a
 * capability, the status file's emptyDir shared read-only with the bridge, the networks given alike to both.
 */
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { CHART } from "../scripts/manifests.mjs";
import { helm, helmUnavailableReason, idOf, type K8sObject, renderChart } from "./helpers/helm.js";
import { renderedTypeFailures } from "./helpers/rendered-types.js";

const ROOT = resolve(import.meta.dirname, "..");

const ATTACH = `
bridge:
  attach:
    enabled: true
    clusterName: lab
    networks:
      - name: multus1
        deviceIndex: 1
        subnet: { byZone: { us-east-1a: subnet-0123 } }
        securityGroups: { ids: [sg-0123] }
        mtu: 8900
      - name: multus2
        deviceIndex: 1
        networkCardIndex: 1
        subnet: { tags: { multus: "2" } }
        securityGroups: { tags: { multus: "2" } }
`;

type Mount = { name: string; mountPath: string; readOnly?: boolean };
type Container = {
  name: string;
  args: string[];
  env?: { name: string; value?: string }[];
  securityContext: Record<string, unknown> & { capabilities: { drop?: string[]; add?: string[] } };
  volumeMounts?: Mount[];
};
type Volume = { name: string; emptyDir?: Record<string, unknown>; hostPath?: { path: string; type: string } };
type PodSpec = { containers: Container[]; volumes?: Volume[] };

const podOf = (objects: K8sObject[]): PodSpec => {
  const ds = objects.find((o) => o.kind === "DaemonSet" && o.metadata.name === "multus-ipmgr-bridge");
  if (ds === undefined) throw new Error(`no bridge DaemonSet: ${objects.map(idOf).join(", ")}`);
  return (ds.spec as { template: { spec: PodSpec } }).template.spec;
};
const envOf = (c: Container | undefined): Record<string, string> =>
  Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value ?? ""]));
const container = (pod: PodSpec, name: string): Container => {
  const found = pod.containers.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
};

const unavailable = helmUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/chart-links.test.ts is skipped\n`);

describe.skipIf(unavailable !== undefined)("the chart's attach mode: the links container", () => {
  it("renders no links container, no volume and no attach variable by default", () => {
    const pod = podOf(renderChart());
    expect(pod.containers.map((c) => c.name)).toEqual(["bridge"]);
    expect(pod.volumes).toBeUndefined();
    expect(Object.keys(envOf(container(pod, "bridge"))).filter((n) => /ATTACH|CLUSTER|LINK/.test(n))).toEqual(
      [],
    );
  });

  it("adds `links` with NET_ADMIN alone, every other capability dropped; the bridge keeps none", () => {
    const pod = podOf(renderChart(ATTACH));
    expect(pod.containers.map((c) => [c.name, c.args])).toEqual([
      ["bridge", ["bridge"]],
      ["links", ["links"]],
    ]);
    expect(container(pod, "links").securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"], add: ["NET_ADMIN"] },
    });
    expect(container(pod, "links").securityContext).not.toHaveProperty("privileged");
    expect(container(pod, "bridge").securityContext).toMatchObject({
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(container(pod, "bridge").securityContext.capabilities.add).toBeUndefined();
  });

  it("gives both containers the same networks, the bridge attach mode and the cluster's name", () => {
    const pod = podOf(renderChart(ATTACH));
    const bridge = envOf(container(pod, "bridge"));
    const links = envOf(container(pod, "links"));
    expect(bridge.IPMGR_BRIDGE_ATTACH_NETWORKS).toBe(links.IPMGR_BRIDGE_ATTACH_NETWORKS);
    expect(JSON.parse(bridge.IPMGR_BRIDGE_ATTACH_NETWORKS ?? "")).toEqual([
      {
        name: "multus1",
        deviceIndex: 1,
        subnet: { byZone: { "us-east-1a": "subnet-0123" } },
        securityGroups: { ids: ["sg-0123"] },
        mtu: 8900,
      },
      {
        name: "multus2",
        deviceIndex: 1,
        networkCardIndex: 1,
        subnet: { tags: { multus: "2" } },
        securityGroups: { tags: { multus: "2" } },
      },
    ]);
    expect(bridge).toMatchObject({ IPMGR_BRIDGE_ATTACH: "on", IPMGR_CLUSTER_NAME: "lab" });
    expect(links).toMatchObject({
      IPMGR_LINKS_INTERVAL_MS: "2000",
      IPMGR_LINKS_NETWORKD_DIR: "/run/systemd/network",
      IPMGR_LINKS_PROC_SYS: "/host/proc/sys",
    });
  });

  it("shares the status file's emptyDir, read-only for the bridge; mounts networkd's directory and /proc/sys/net for links only", () => {
    const pod = podOf(renderChart(ATTACH));
    expect(container(pod, "bridge").volumeMounts).toEqual([
      { name: "links-status", mountPath: "/run/multus-ipmgr", readOnly: true },
    ]);
    expect(container(pod, "links").volumeMounts).toEqual([
      { name: "links-status", mountPath: "/run/multus-ipmgr" },
      { name: "proc-sys-net", mountPath: "/host/proc/sys/net" },
      { name: "systemd-networkd", mountPath: "/run/systemd/network" },
    ]);
    expect(pod.volumes).toEqual([
      { name: "links-status", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
      { name: "proc-sys-net", hostPath: { path: "/proc/sys/net", type: "Directory" } },
      { name: "systemd-networkd", hostPath: { path: "/run/systemd/network", type: "DirectoryOrCreate" } },
    ]);
  });

  it("mounts no networkd directory when networkdDir is empty, and tells the agent so", () => {
    const pod = podOf(renderChart(`${ATTACH}    networkdDir: ""\n`));
    expect(pod.volumes?.map((v) => v.name)).toEqual(["links-status", "proc-sys-net"]);
    expect(envOf(container(pod, "links")).IPMGR_LINKS_NETWORKD_DIR).toBe("");
  });

  it("renders objects valid against the Kubernetes API types", async () => {
    const labelled = renderChart(ATTACH).map((object) => ({ label: `attach: ${idOf(object)}`, object }));
    expect(await renderedTypeFailures(ROOT, labelled)).toEqual([]);
  });

  it.each([
    ["bridge: { attach: { enabled: true, clusterName: lab } }", "bridge.attach.networks is empty"],
    [
      "bridge: { attach: { enabled: true, networks: [{ name: m, deviceIndex: 1, subnet: { tags: { a: b } }, securityGroups: { tags: { a: b } } }] } }",
      "bridge.attach.clusterName is empty",
    ],
  ])("refuses %s with a sentence", (values, named) => {
    const run = helm(["template", "multus-ipmgr", CHART], values);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(named);
  });

  it.each([
    [
      "bridge: { attach: { enable: true } }",
      "at '/bridge/attach': additional properties 'enable' not allowed",
    ],
    [
      "bridge: { attach: { networks: [{ name: m, deviceIndx: 1, subnet: { tags: { a: b } }, securityGroups: { tags: { a: b } } }] } }",
      "additional properties 'deviceIndx' not allowed",
    ],
    [
      "bridge: { attach: { networks: [{ name: m, deviceIndex: 1, subnet: { byZone: { z: subnet-1 }, tags: { a: b } }, securityGroups: { ids: [sg-1] } }] } }",
      "at '/bridge/attach/networks/0/subnet'",
    ],
  ])("the schema refuses %s, naming the key", (values, named) => {
    const run = helm(["template", "multus-ipmgr", CHART], values);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(named);
  });
});
