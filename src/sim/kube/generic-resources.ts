import { def, metadataStrategies, podSpecStrategies, type ResourceDef } from "./resource-def.js";

/**
 * Kinds served as kube-apiserver stores them, with no controller behind them: what `helm install` of
 * charts/multus-ipmgr writes (ConfigMaps and Secrets for its release records; the bridge's RBAC and
 * DaemonSet; the demo's workloads; the Prometheus Operator's objects). A Deployment creates no ReplicaSet
 * and no pod, a Service gets no endpoints, a ServiceAccount no token; the objects are stored, listed,
 * watched, patched and deleted, nothing else.
 */

const workloadStrategies = { ...metadataStrategies, ...podSpecStrategies("spec.template.spec") };

function core(plural: string, kind: string, shortNames: string[] = []): ResourceDef {
  return def({
    group: "",
    version: "v1",
    plural,
    singular: kind.toLowerCase(),
    kind,
    namespaced: true,
    shortNames,
  });
}

function workload(plural: string, kind: string, shortNames: string[]): ResourceDef {
  return def({
    group: "apps",
    version: "v1",
    plural,
    singular: kind.toLowerCase(),
    kind,
    namespaced: true,
    shortNames,
    categories: ["all"],
    patchStrategies: workloadStrategies,
  });
}

function rbac(plural: string, kind: string, namespaced: boolean): ResourceDef {
  return def({
    group: "rbac.authorization.k8s.io",
    version: "v1",
    plural,
    singular: kind.toLowerCase(),
    kind,
    namespaced,
  });
}

function monitoring(plural: string, kind: string, shortNames: string[]): ResourceDef {
  return def({
    group: "monitoring.coreos.com",
    version: "v1",
    plural,
    singular: kind.toLowerCase(),
    kind,
    namespaced: true,
    shortNames,
    categories: ["prometheus-operator"],
    custom: true,
  });
}

/** The generic kinds, in discovery order after the simulator's own. */
export const genericResources: readonly ResourceDef[] = [
  core("configmaps", "ConfigMap", ["cm"]),
  core("secrets", "Secret"),
  core("serviceaccounts", "ServiceAccount", ["sa"]),
  def({
    group: "",
    version: "v1",
    plural: "services",
    singular: "service",
    kind: "Service",
    namespaced: true,
    shortNames: ["svc"],
    categories: ["all"],
    patchStrategies: { ...metadataStrategies, "spec.ports": "port" },
  }),
  workload("daemonsets", "DaemonSet", ["ds"]),
  workload("deployments", "Deployment", ["deploy"]),
  workload("statefulsets", "StatefulSet", ["sts"]),
  rbac("clusterroles", "ClusterRole", false),
  rbac("clusterrolebindings", "ClusterRoleBinding", false),
  rbac("roles", "Role", true),
  rbac("rolebindings", "RoleBinding", true),
  monitoring("servicemonitors", "ServiceMonitor", ["smon"]),
  monitoring("podmonitors", "PodMonitor", ["pmon"]),
  monitoring("prometheusrules", "PrometheusRule", ["promrule"]),
];
