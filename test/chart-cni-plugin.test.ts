/**
 * The chart's plugin mode (bridge.cniPlugin): the init container that installs the plugin into the node's
 * CNI binary directory, the one that gives the socket's directory to the bridge's user, the socket's hostPath
 * and IPMGR_BRIDGE_CNI_SOCKET; nothing of it by default.
 */
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { CHART } from "../scripts/manifests.mjs";
import { helm, helmUnavailableReason, idOf, type K8sObject, renderChart } from "./helpers/helm.js";
import { renderedTypeFailures } from "./helpers/rendered-types.js";

const ROOT = resolve(import.meta.dirname, "..");
const PLUGIN = "bridge: { cniPlugin: { enabled: true } }\n";
const SOCKET_DIR = "/run/multus-ipmgr/cni";

type Mount = { name: string; mountPath: string; readOnly?: boolean };
type Container = {
  name: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string }[];
  securityContext: Record<string, unknown> & { capabilities: { drop?: string[]; add?: string[] } };
  volumeMounts?: Mount[];
};
type Volume = { name: string; emptyDir?: Record<string, unknown>; hostPath?: { path: string; type: string } };
type PodSpec = { initContainers?: Container[]; containers: Container[]; volumes?: Volume[] };

const podOf = (objects: K8sObject[]): PodSpec => {
  const ds = objects.find((o) => o.kind === "DaemonSet" && o.metadata.name === "multus-ipmgr-bridge");
  if (ds === undefined) throw new Error(`no bridge DaemonSet: ${objects.map(idOf).join(", ")}`);
  return (ds.spec as { template: { spec: PodSpec } }).template.spec;
};
const envOf = (c: Container | undefined): Record<string, string> =>
  Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value ?? ""]));
const named = (containers: Container[] | undefined, name: string): Container => {
  const found = containers?.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
};

const unavailable = helmUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/chart-cni-plugin.test.ts is skipped\n`);

describe.skipIf(unavailable !== undefined)("the chart's plugin mode: bridge.cniPlugin", () => {
  it("renders no init container, no volume and no IPMGR_BRIDGE_CNI_SOCKET by default", () => {
    const pod = podOf(renderChart());
    expect(pod.initContainers).toBeUndefined();
    expect(pod.volumes).toBeUndefined();
    expect(envOf(named(pod.containers, "bridge")).IPMGR_BRIDGE_CNI_SOCKET).toBeUndefined();
  });

  it("installs the plugin with /app/cni/install.sh into the node's /opt/cni/bin, as root with no capability", () => {
    const pod = podOf(renderChart(PLUGIN));
    expect(pod.initContainers?.map((c) => c.name)).toEqual(["install-cni-plugin", "cni-socket-dir"]);
    const install = named(pod.initContainers, "install-cni-plugin");
    expect(install.command).toEqual([
      "sh",
      "/app/cni/install.sh",
      "/app/cni/multus-ipmgr",
      "/host/opt/cni/bin",
    ]);
    expect(install.securityContext).toEqual({
      runAsNonRoot: false,
      runAsUser: 0,
      runAsGroup: 0,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(install.volumeMounts).toEqual([{ name: "cni-bin", mountPath: "/host/opt/cni/bin" }]);
    expect(pod.volumes).toContainEqual({
      name: "cni-bin",
      hostPath: { path: "/opt/cni/bin", type: "Directory" },
    });
  });

  it("gives the socket's directory to the bridge's uid and gid, mode 0700, with CHOWN alone", () => {
    const pod = podOf(renderChart(PLUGIN));
    const dir = named(pod.initContainers, "cni-socket-dir");
    const host = `/host${SOCKET_DIR}`;
    expect(dir.command).toEqual([
      "sh",
      "-c",
      `chown 0:0 ${host} && chmod 0700 ${host} && chown 1000:1000 ${host}`,
    ]);
    expect(dir.securityContext).toMatchObject({
      runAsUser: 0,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"], add: ["CHOWN"] },
    });
    expect(dir.volumeMounts).toEqual([{ name: "cni-socket", mountPath: host }]);
    expect(pod.volumes).toContainEqual({
      name: "cni-socket",
      hostPath: { path: SOCKET_DIR, type: "DirectoryOrCreate" },
    });
    // Another user for the bridge: the directory follows it.
    const other = podOf(
      renderChart(
        `bridge: { cniPlugin: { enabled: true }, securityContext: { runAsNonRoot: true, runAsUser: 2000, runAsGroup: 3000 } }\n`,
      ),
    );
    expect(named(other.initContainers, "cni-socket-dir").command?.[2]).toContain("chown 2000:3000");
  });

  it("gives the bridge IPMGR_BRIDGE_CNI_SOCKET and the directory at the node's path, and no capability", () => {
    const pod = podOf(renderChart(PLUGIN));
    const bridge = named(pod.containers, "bridge");
    expect(envOf(bridge).IPMGR_BRIDGE_CNI_SOCKET).toBe(`${SOCKET_DIR}/cni.sock`);
    expect(bridge.volumeMounts).toEqual([{ name: "cni-socket", mountPath: SOCKET_DIR }]);
    expect(bridge.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      capabilities: { drop: ["ALL"] },
    });
    expect(bridge.securityContext.capabilities.add).toBeUndefined();
  });

  it("takes another CNI binary directory", () => {
    const pod = podOf(renderChart("bridge: { cniPlugin: { enabled: true, binDir: /var/lib/cni/bin } }\n"));
    expect(pod.volumes).toContainEqual({
      name: "cni-bin",
      hostPath: { path: "/var/lib/cni/bin", type: "Directory" },
    });
  });

  it("with attach mode: the socket's mount point is made in the read-only emptyDir before the bridge starts", () => {
    const values = `bridge:
  cniPlugin: { enabled: true }
  attach:
    enabled: true
    clusterName: lab
    networks: [{ name: multus1, deviceIndex: 1, subnet: { tags: { a: b } }, securityGroups: { tags: { a: b } } }]
`;
    const pod = podOf(renderChart(values));
    const dir = named(pod.initContainers, "cni-socket-dir");
    expect(dir.command?.[2]).toMatch(/ && mkdir -p \/run\/multus-ipmgr\/cni$/);
    expect(dir.volumeMounts).toContainEqual({ name: "links-status", mountPath: "/run/multus-ipmgr" });
    expect(named(pod.containers, "bridge").volumeMounts).toEqual([
      { name: "links-status", mountPath: "/run/multus-ipmgr", readOnly: true },
      { name: "cni-socket", mountPath: SOCKET_DIR },
    ]);
    expect(pod.volumes?.map((v) => v.name)).toEqual([
      "links-status",
      "proc-sys-net",
      "systemd-networkd",
      "cni-bin",
      "cni-socket",
    ]);
  });

  it("renders objects valid against the Kubernetes API types", async () => {
    const labelled = renderChart(PLUGIN).map((object) => ({ label: `cniPlugin: ${idOf(object)}`, object }));
    expect(await renderedTypeFailures(ROOT, labelled)).toEqual([]);
  });

  it.each([
    [
      "bridge: { cniPlugin: { enable: true } }",
      "at '/bridge/cniPlugin': additional properties 'enable' not allowed",
    ],
    ["bridge: { cniPlugin: { binDir: opt/cni/bin } }", "at '/bridge/cniPlugin/binDir'"],
  ])("the schema refuses %s, naming the key", (values, key) => {
    const run = helm(["template", "multus-ipmgr", CHART], values);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(key);
  });
});
