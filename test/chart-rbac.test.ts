/**
 * The bridge's RBAC from its code: the grants its Kubernetes adapter's calls need (helpers/bridge-rbac.ts
 * reads them from src/ipam-whereabouts-bridge/kube/kube-client.ts, as test/iam-policy.test.ts reads the EC2
 * actions) are exactly what the chart's ClusterRole and lease Role grant, and what KubeApi's doc comments say.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { bridgeKubeGrants, grantLine } from "./helpers/bridge-rbac.js";
import { helmUnavailableReason, type K8sObject, renderChart } from "./helpers/helm.js";

const ROOT = resolve(import.meta.dirname, "..");

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** `group/resource verb`, one line per verb, sorted; ` [names]` appended when the rule names objects. */
const grantsOf = (role: K8sObject | undefined, withNames: boolean): string[] =>
  ((role?.rules ?? []) as Rule[])
    .flatMap((r) =>
      r.apiGroups.flatMap((g) =>
        r.resources.flatMap((res) =>
          r.verbs.map(
            (v) => `${g}/${res} ${v}${withNames && r.resourceNames ? ` [${r.resourceNames.join(",")}]` : ""}`,
          ),
        ),
      ),
    )
    .sort();

const unavailable = helmUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/chart-rbac.test.ts is skipped\n`);

describe("the bridge's Kubernetes calls, read from kube-client.ts", () => {
  it("are the watches' list and watch, and the typed calls' verbs", () => {
    expect(bridgeKubeGrants(ROOT).map(grantLine)).toEqual([
      "/events create",
      "/nodes get",
      "/nodes patch",
      "/pods get",
      "/pods list",
      "/pods watch",
      "coordination.k8s.io/leases create",
      "coordination.k8s.io/leases get",
      "coordination.k8s.io/leases update",
      "k8s.cni.cncf.io/network-attachment-definitions list",
      "k8s.cni.cncf.io/network-attachment-definitions watch",
      "whereabouts.cni.cncf.io/ippools list",
      "whereabouts.cni.cncf.io/ippools watch",
      "whereabouts.cni.cncf.io/nodeslicepools list",
      "whereabouts.cni.cncf.io/nodeslicepools watch",
      "whereabouts.cni.cncf.io/overlappingrangeipreservations list",
      "whereabouts.cni.cncf.io/overlappingrangeipreservations watch",
    ]);
  });

  it("agree with KubeApi's doc comments, which name each method's RBAC verbs and resource", () => {
    const source = readFileSync(join(ROOT, "src/ipam-whereabouts-bridge/kube/kube-api.ts"), "utf8");
    const noted = new Set<string>();
    for (const m of source.matchAll(/RBAC: ([a-z-]+)(?: \(([a-z0-9.]+)\))? ([a-z, ]+?)[.(]/g)) {
      const [, resource = "", group, verbs = ""] = m;
      const g = group === "core" ? "" : (group ?? (resource === "leases" ? "coordination.k8s.io" : ""));
      for (const verb of verbs.split(/,\s*/).map((v) => v.trim()))
        if (/^(get|list|watch|create|update|patch|delete)$/.test(verb)) noted.add(`${g}/${resource} ${verb}`);
    }
    expect([...noted].sort()).toEqual(bridgeKubeGrants(ROOT).map(grantLine));
  });
});

describe.skipIf(unavailable !== undefined)("the chart's RBAC for the bridge", () => {
  const objects = renderChart();
  const clusterRole = objects.find((o) => o.kind === "ClusterRole");
  const role = objects.find((o) => o.kind === "Role");

  it("the ClusterRole grants exactly the calls', the Lease's aside, and nodes' (the startup taint) only in attach mode", () => {
    expect(grantsOf(clusterRole, true)).toEqual(
      bridgeKubeGrants(ROOT)
        .filter((g) => g.resource !== "leases" && g.resource !== "nodes")
        .map(grantLine),
    );
    const attach = renderChart(
      "bridge: { attach: { enabled: true, clusterName: lab, networks: [{ name: multus1, deviceIndex: 1, subnet: { tags: { multus: net1 } }, securityGroups: { tags: { multus: net1 } } }] } }",
    ).find((o) => o.kind === "ClusterRole");
    expect(grantsOf(attach, true)).toEqual(
      bridgeKubeGrants(ROOT)
        .filter((g) => g.resource !== "leases")
        .map(grantLine),
    );
  });

  it("the Role grants the Lease's calls, get and update on the Lease's name only, in the release's namespace", () => {
    expect(role?.metadata.namespace).toBe("kube-system");
    expect(grantsOf(role, false)).toEqual(
      bridgeKubeGrants(ROOT)
        .filter((g) => g.resource === "leases")
        .map(grantLine),
    );
    expect(grantsOf(role, true)).toEqual([
      "coordination.k8s.io/leases create",
      "coordination.k8s.io/leases get [multus-ipmgr-reservations]",
      "coordination.k8s.io/leases update [multus-ipmgr-reservations]",
    ]);
  });

  it("another release namespace and Lease name move the Role and the bridge's settings together", () => {
    const moved = renderChart("bridge: { leaseName: ipmgr-lease }", ["--namespace", "multus-system"]);
    const movedRole = moved.find((o) => o.kind === "Role");
    expect(movedRole?.metadata.namespace).toBe("multus-system");
    expect(grantsOf(movedRole, true)).toContain("coordination.k8s.io/leases update [ipmgr-lease]");
    const daemonSet = moved.find((o) => o.kind === "DaemonSet");
    const pod = (
      daemonSet?.spec as { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } }
    )?.template.spec;
    const env = Object.fromEntries((pod?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect({ ns: env.IPMGR_BRIDGE_LEASE_NAMESPACE, name: env.IPMGR_BRIDGE_LEASE_NAME }).toEqual({
      ns: "multus-system",
      name: "ipmgr-lease",
    });
  });
});
