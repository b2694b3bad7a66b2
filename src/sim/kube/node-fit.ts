import { isJsonObject, type KubeObject } from "./kube-object.js";

/** A node's `spec.taints` entry. */
export interface Taint {
  readonly key: string;
  readonly value?: string | undefined;
  readonly effect: string;
}

/** A pod's `spec.tolerations` entry. */
export interface Toleration {
  readonly key?: string | undefined;
  readonly operator?: string | undefined;
  readonly value?: string | undefined;
  readonly effect?: string | undefined;
}

/** The taint kube-controller-manager puts on a cordoned node; tolerating it lets a pod on (NodeUnschedulable). */
const unschedulableTaint: Taint = { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" };

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/**
 * Kubernetes' `Toleration.ToleratesTaint` (k8s.io/api/core/v1/toleration.go): an empty effect matches every
 * effect, an empty key every key; `Exists` matches any value, `Equal` (or no operator) the same value only, an
 * empty value equal to none.
 */
export function tolerates(toleration: Toleration, taint: Taint): boolean {
  if ((toleration.effect ?? "") !== "" && toleration.effect !== taint.effect) return false;
  if ((toleration.key ?? "") !== "" && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? "") {
    case "":
    case "Equal":
      return (toleration.value ?? "") === (taint.value ?? "");
    case "Exists":
      return true;
    default:
      return false;
  }
}

export function taintsOf(node: KubeObject): Taint[] {
  const spec = isJsonObject(node.spec) ? node.spec : {};
  if (!Array.isArray(spec.taints)) return [];
  return spec.taints.filter(isJsonObject).map((t) => ({
    key: text(t.key) ?? "",
    value: text(t.value),
    effect: text(t.effect) ?? "",
  }));
}

export function tolerationsOf(pod: KubeObject): Toleration[] {
  const spec = isJsonObject(pod.spec) ? pod.spec : {};
  if (!Array.isArray(spec.tolerations)) return [];
  return spec.tolerations.filter(isJsonObject).map((t) => ({
    key: text(t.key),
    operator: text(t.operator),
    value: text(t.value),
    effect: text(t.effect),
  }));
}

/**
 * Why `node` cannot take `pod`, in kube-scheduler's words for its filters (NodeUnschedulable, NodeAffinity's
 * nodeSelector, TaintToleration), or undefined when it can. Only NoSchedule and NoExecute taints keep a pod
 * off; PreferNoSchedule is a score, not a filter.
 */
export function unfitReason(pod: KubeObject, node: KubeObject): string | undefined {
  const spec = isJsonObject(node.spec) ? node.spec : {};
  const tolerations = tolerationsOf(pod);
  const tolerated = (taint: Taint) => tolerations.some((t) => tolerates(t, taint));
  if (spec.unschedulable === true && !tolerated(unschedulableTaint)) return "node(s) were unschedulable";
  const podSpec = isJsonObject(pod.spec) ? pod.spec : {};
  const selector = isJsonObject(podSpec.nodeSelector) ? podSpec.nodeSelector : {};
  const labels = node.metadata.labels ?? {};
  if (Object.entries(selector).some(([k, v]) => labels[k] !== v)) {
    return "node(s) didn't match Pod's node affinity/selector";
  }
  const blocking = taintsOf(node).find(
    (t) => (t.effect === "NoSchedule" || t.effect === "NoExecute") && !tolerated(t),
  );
  if (blocking !== undefined)
    return `node(s) had untolerated taint {${blocking.key}: ${blocking.value ?? ""}}`;
  return undefined;
}

/**
 * The node for `pod` (the first that fits, in name order), or kube-scheduler's message when none does:
 * `0/2 nodes are available: 2 node(s) had untolerated taint {k: v}. preemption: ...`.
 */
export function pickNode(
  pod: KubeObject,
  nodes: readonly KubeObject[],
): { node: string } | { unschedulable: string } {
  const sorted = [...nodes].sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  const reasons = new Map<string, number>();
  for (const node of sorted) {
    const reason = unfitReason(pod, node);
    if (reason === undefined) return { node: node.metadata.name ?? "" };
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  }
  const counted = [...reasons].map(([reason, n]) => `${n} ${reason}`).sort();
  const total = nodes.length;
  return {
    unschedulable:
      `0/${total} nodes are available${counted.length === 0 ? "" : `: ${counted.join(", ")}`}. ` +
      `preemption: 0/${total} nodes are available: ${total} Preemption is not helpful for scheduling.`,
  };
}
