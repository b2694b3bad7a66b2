/**
 * The chart's part of attach mode's startup taint: the bridge tolerates the taint and is told its key, and
 * with bridge.startupTaint.restrictToOwnNode a ValidatingAdmissionPolicy lets the bridge's ServiceAccount
 * change only that taint, on its own node. Rendered with `helm template`; the policy's CEL is checked as text
 * (no API server here evaluates it, nor does the simulator).
 */
import { describe, expect, it } from "vitest";
import { helmUnavailableReason, type K8sObject, renderChart } from "./helpers/helm.js";

const unavailable = helmUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/chart-startup-taint.test.ts is skipped\n`);

const KEY = "multus-ipmgr.io/enis-not-ready";

interface PodSpec {
  tolerations?: Record<string, string>[];
  containers: { name: string; env: { name: string; value?: string }[] }[];
}

function bridgePod(objects: K8sObject[]): PodSpec {
  const daemonSet = objects.find((o) => o.kind === "DaemonSet" && o.metadata.name.endsWith("bridge"));
  if (daemonSet === undefined) throw new Error("the chart rendered no bridge DaemonSet");
  return (daemonSet.spec as { template: { spec: PodSpec } }).template.spec;
}

const envOf = (pod: PodSpec) =>
  Object.fromEntries(
    (pod.containers.find((c) => c.name === "bridge")?.env ?? []).map((e) => [e.name, e.value]),
  );

const policies = (objects: K8sObject[]) =>
  objects
    .filter((o) => o.kind.startsWith("ValidatingAdmissionPolicy"))
    .map((o) => `${o.kind} ${o.metadata.name}`);

describe.skipIf(unavailable !== undefined)("the chart's startup taint", () => {
  it("without attach mode: no policy, no taint setting, the tolerations as given", () => {
    const objects = renderChart();
    expect(policies(objects)).toEqual([]);
    expect(bridgePod(objects).tolerations).toEqual([{ operator: "Exists" }]);
    expect(envOf(bridgePod(objects)).IPMGR_BRIDGE_STARTUP_TAINT).toBeUndefined();
  });

  it("in attach mode: the bridge tolerates the taint (narrowed tolerations too) and is told its key", () => {
    const objects = renderChart(
      "bridge: { attach: { enabled: true, clusterName: lab, networks: [{ name: multus1, deviceIndex: 1, subnet: { tags: { multus: net1 } }, securityGroups: { tags: { multus: net1 } } }] }, tolerations: [{ key: dedicated, operator: Equal, value: cnf, effect: NoSchedule }] }",
    );
    expect(bridgePod(objects).tolerations).toEqual([
      { key: "dedicated", operator: "Equal", value: "cnf", effect: "NoSchedule" },
      { key: KEY, operator: "Exists", effect: "NoSchedule" },
    ]);
    expect(envOf(bridgePod(objects)).IPMGR_BRIDGE_STARTUP_TAINT).toBe(KEY);
    const none = renderChart(
      "bridge: { attach: { enabled: true, clusterName: lab, networks: [{ name: multus1, deviceIndex: 1, subnet: { tags: { multus: net1 } }, securityGroups: { tags: { multus: net1 } } }] }, tolerations: [] }",
    );
    expect(bridgePod(none).tolerations).toEqual([{ key: KEY, operator: "Exists", effect: "NoSchedule" }]);
  });

  it("in attach mode: a policy bound with Deny, for the bridge's ServiceAccount's node updates only", () => {
    const objects = renderChart(
      "bridge: { attach: { enabled: true, clusterName: lab, networks: [{ name: multus1, deviceIndex: 1, subnet: { tags: { multus: net1 } }, securityGroups: { tags: { multus: net1 } } }] } }",
    );
    expect(policies(objects)).toEqual([
      "ValidatingAdmissionPolicy multus-ipmgr-bridge-startup-taint",
      "ValidatingAdmissionPolicyBinding multus-ipmgr-bridge-startup-taint",
    ]);
    const policy = objects.find((o) => o.kind === "ValidatingAdmissionPolicy") as K8sObject;
    const binding = objects.find((o) => o.kind === "ValidatingAdmissionPolicyBinding") as K8sObject;
    expect(policy.apiVersion).toBe("admissionregistration.k8s.io/v1");
    expect(binding.spec).toEqual({ policyName: policy.metadata.name, validationActions: ["Deny"] });
    const spec = policy.spec as {
      failurePolicy: string;
      matchConstraints: unknown;
      matchConditions: { expression: string }[];
      variables: { name: string; expression: string }[];
      validations: { expression: string; messageExpression: string; reason: string }[];
    };
    expect(spec.failurePolicy).toBe("Fail");
    expect(spec.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: [""], apiVersions: ["*"], operations: ["UPDATE"], resources: ["nodes"] }],
    });
    expect(spec.matchConditions.map((c) => c.expression)).toEqual([
      'request.userInfo.username == "system:serviceaccount:kube-system:multus-ipmgr-bridge"',
    ]);
    const variables = Object.fromEntries(spec.variables.map((v) => [v.name, v.expression]));
    expect(variables.key).toBe(`"${KEY}"`);
    expect(variables.ownNode).toContain(
      'request.userInfo.extra["authentication.kubernetes.io/node-name"][0]',
    );
    expect(variables.otherTaints).toBe(
      "has(object.spec.taints) ? object.spec.taints.filter(t, t.key != variables.key) : []",
    );
    const checks = spec.validations.map((v) => v.expression);
    expect(checks[0]).toBe('variables.ownNode != "" && object.metadata.name == variables.ownNode');
    expect(checks[1]).toBe("variables.otherTaints == variables.oldOtherTaints");
    for (const field of ["podCIDR", "podCIDRs", "providerID", "unschedulable", "configSource", "externalID"])
      expect(checks[2]).toContain(`object.spec.${field} == oldObject.spec.${field}`);
    expect(checks[2]).not.toContain("taints");
    expect(checks[3]).toContain("object.metadata.labels == oldObject.metadata.labels");
    expect(checks[3]).toContain("object.metadata.annotations == oldObject.metadata.annotations");
    expect(spec.validations.map((v) => v.reason)).toEqual([
      "Forbidden",
      "Forbidden",
      "Forbidden",
      "Forbidden",
    ]);
  });

  it("another key reaches the toleration, the setting and the policy; restrictToOwnNode: false renders no policy", () => {
    const objects = renderChart(
      "bridge: { attach: { enabled: true, clusterName: lab, networks: [{ name: multus1, deviceIndex: 1, subnet: { tags: { multus: net1 } }, securityGroups: { tags: { multus: net1 } } }] }, startupTaint: { key: startup-taint.cluster-autoscaler.kubernetes.io/multus-enis } }",
      ["--namespace", "multus-system"],
    );
    const key = "startup-taint.cluster-autoscaler.kubernetes.io/multus-enis";
    expect(envOf(bridgePod(objects)).IPMGR_BRIDGE_STARTUP_TAINT).toBe(key);
    expect(bridgePod(objects).tolerations).toContainEqual({ key, operator: "Exists", effect: "NoSchedule" });
    const policy = objects.find((o) => o.kind === "ValidatingAdmissionPolicy");
    expect(JSON.stringify(policy?.spec)).toContain(`\\"${key}\\"`);
    expect(JSON.stringify(policy?.spec)).toContain("system:serviceaccount:multus-system:multus-ipmgr-bridge");
    expect(
      policies(
        renderChart(
          "bridge: { attach: { enabled: true, clusterName: lab, networks: [{ name: multus1, deviceIndex: 1, subnet: { tags: { multus: net1 } }, securityGroups: { tags: { multus: net1 } } }] }, startupTaint: { restrictToOwnNode: false } }",
        ),
      ),
    ).toEqual([]);
  });

  it("refuses a key Kubernetes would refuse, naming it", () => {
    expect(() => renderChart("bridge: { startupTaint: { key: 'not a key' } }")).toThrow(/startupTaint\/key/);
  });
});
