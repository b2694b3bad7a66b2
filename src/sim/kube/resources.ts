import { eventFromEventsV1, eventToEventsV1 } from "./events-conversion.js";
import { genericResources } from "./generic-resources.js";
import { isJsonObject, type JsonObject, type KubeObject } from "./kube-object.js";
import {
  at,
  def,
  metadataStrategies,
  pick,
  podSpecStrategies,
  type ResourceDef,
  str,
} from "./resource-def.js";
import {
  validateCoreEvent,
  validateEventsV1,
  validateLease,
  validatePod,
  validateWhereabouts,
} from "./validation.js";

export type { PatchStrategies, ResourceDef, Verb } from "./resource-def.js";

const podFields = [
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.schedulerName",
  "spec.serviceAccountName",
  "spec.hostNetwork",
  "status.phase",
  "status.podIP",
  "status.nominatedNodeName",
];

const eventFields = [
  "involvedObject.kind",
  "involvedObject.namespace",
  "involvedObject.name",
  "involvedObject.uid",
  "involvedObject.apiVersion",
  "involvedObject.resourceVersion",
  "involvedObject.fieldPath",
  "reason",
  "reportingComponent",
  "source",
  "type",
];

function eventSelectableFields(stored: KubeObject): Record<string, string> {
  const fields = pick(stored, eventFields);
  // `source` selects on the legacy source component, or the reporting controller when that is unset.
  fields.source = str(at(stored, "source.component")) || str(stored.reportingComponent);
  return fields;
}

/** A container's resources.requests or resources.limits, as a map of quantities. */
function quantities(container: unknown, field: "requests" | "limits"): JsonObject {
  const resources = isJsonObject(container) ? container.resources : undefined;
  const map = isJsonObject(resources) ? resources[field] : undefined;
  return isJsonObject(map) ? map : {};
}

/**
 * The pod's QoS class: BestEffort without any cpu or memory request or limit, Guaranteed when every
 * container limits cpu and memory with requests equal to the limits (or unset), Burstable otherwise.
 */
export function qosClassOf(pod: KubeObject): "BestEffort" | "Burstable" | "Guaranteed" {
  const spec = isJsonObject(pod.spec) ? pod.spec : {};
  const containers = [
    ...(Array.isArray(spec.containers) ? spec.containers : []),
    ...(Array.isArray(spec.initContainers) ? spec.initContainers : []),
  ];
  const named = ["cpu", "memory"];
  const any = containers.some((c) =>
    named.some((r) => quantities(c, "requests")[r] !== undefined || quantities(c, "limits")[r] !== undefined),
  );
  if (!any) return "BestEffort";
  const guaranteed = containers.every((c) => {
    const limits = quantities(c, "limits");
    const requests = quantities(c, "requests");
    return named.every(
      (r) =>
        limits[r] !== undefined && (requests[r] === undefined || String(requests[r]) === String(limits[r])),
    );
  });
  return guaranteed ? "Guaranteed" : "Burstable";
}

/** Every resource the simulator serves, in discovery order. */
export const resources: readonly ResourceDef[] = [
  def({
    group: "",
    version: "v1",
    plural: "namespaces",
    singular: "namespace",
    kind: "Namespace",
    namespaced: false,
    shortNames: ["ns"],
    fields: (o) => pick(o, ["status.phase"]),
    prepareForCreate: (namespace) => {
      // kube-apiserver's namespace strategy: the name label, the `kubernetes` finalizer, phase Active.
      const name = namespace.metadata.name ?? "";
      namespace.metadata.labels = { ...namespace.metadata.labels, "kubernetes.io/metadata.name": name };
      namespace.spec = { finalizers: ["kubernetes"] };
      namespace.status = { phase: "Active" };
    },
  }),
  def({
    group: "",
    version: "v1",
    plural: "nodes",
    singular: "node",
    kind: "Node",
    namespaced: false,
    shortNames: ["no"],
    // patch: taints (kubectl taint, attach mode's startup taint) and labels; nodes are made by the world.
    verbs: ["get", "list", "watch", "patch"],
    fields: (o) => ({ "spec.unschedulable": at(o, "spec.unschedulable") === true ? "true" : "false" }),
  }),
  def({
    group: "",
    version: "v1",
    plural: "pods",
    singular: "pod",
    kind: "Pod",
    namespaced: true,
    shortNames: ["po"],
    categories: ["all"],
    returnDeletedObject: true,
    fields: (o) => {
      const fields = pick(o, podFields);
      fields["spec.hostNetwork"] = at(o, "spec.hostNetwork") === true ? "true" : "false";
      return fields;
    },
    validate: validatePod,
    prepareForCreate: (pod) => {
      // kube-apiserver's pod strategy: a new pod's status is only its phase and QoS class.
      pod.status = { phase: "Pending", qosClass: qosClassOf(pod) };
    },
    patchStrategies: {
      ...metadataStrategies,
      ...podSpecStrategies("spec"),
      "status.conditions": "type",
      "status.podIPs": "ip",
    },
  }),
  def({
    group: "",
    version: "v1",
    plural: "events",
    singular: "event",
    kind: "Event",
    namespaced: true,
    shortNames: ["ev"],
    allowCreateOnUpdate: true,
    fields: eventSelectableFields,
    validate: validateCoreEvent,
  }),
  def({
    group: "coordination.k8s.io",
    version: "v1",
    plural: "leases",
    singular: "lease",
    kind: "Lease",
    namespaced: true,
    validate: validateLease,
  }),
  def({
    group: "events.k8s.io",
    version: "v1",
    plural: "events",
    singular: "event",
    kind: "Event",
    namespaced: true,
    shortNames: ["ev"],
    storage: "events",
    allowCreateOnUpdate: true,
    fields: (o) => ({
      ...eventSelectableFields(o),
      ...pick(
        o,
        [
          "involvedObject.kind",
          "involvedObject.namespace",
          "involvedObject.name",
          "involvedObject.uid",
          "involvedObject.apiVersion",
          "involvedObject.resourceVersion",
          "involvedObject.fieldPath",
          "reportingComponent",
        ],
        {
          "involvedObject.kind": "regarding.kind",
          "involvedObject.namespace": "regarding.namespace",
          "involvedObject.name": "regarding.name",
          "involvedObject.uid": "regarding.uid",
          "involvedObject.apiVersion": "regarding.apiVersion",
          "involvedObject.resourceVersion": "regarding.resourceVersion",
          "involvedObject.fieldPath": "regarding.fieldPath",
          reportingComponent: "reportingController",
        },
      ),
    }),
    toView: eventToEventsV1,
    fromView: eventFromEventsV1,
    validate: validateEventsV1,
  }),
  def({
    group: "k8s.cni.cncf.io",
    version: "v1",
    plural: "network-attachment-definitions",
    singular: "network-attachment-definition",
    kind: "NetworkAttachmentDefinition",
    namespaced: true,
    shortNames: ["net-attach-def"],
    custom: true,
    validate: validateWhereabouts.networkAttachmentDefinition,
  }),
  def({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    plural: "ippools",
    singular: "ippool",
    kind: "IPPool",
    namespaced: true,
    custom: true,
    validate: validateWhereabouts.ipPool,
  }),
  def({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    plural: "overlappingrangeipreservations",
    singular: "overlappingrangeipreservation",
    kind: "OverlappingRangeIPReservation",
    namespaced: true,
    custom: true,
    validate: validateWhereabouts.overlappingRangeIpReservation,
  }),
  // whereabouts' CRD (doc/crds/whereabouts.cni.cncf.io_nodeslicepools.yaml) has no status subresource:
  // the node-slice controller writes status.allocations with a plain update, as clients here do.
  def({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    plural: "nodeslicepools",
    singular: "nodeslicepool",
    kind: "NodeSlicePool",
    namespaced: true,
    custom: true,
    validate: validateWhereabouts.nodeSlicePool,
  }),
  ...genericResources,
];

/** `v1` or `group/version`. */
export function apiVersionOf(resource: Pick<ResourceDef, "group" | "version">): string {
  return resource.group === "" ? resource.version : `${resource.group}/${resource.version}`;
}

/** `pods` or `leases.coordination.k8s.io`: how the API server names a resource in messages. */
export function qualifiedName(resource: Pick<ResourceDef, "group" | "plural">): string {
  return resource.group === "" ? resource.plural : `${resource.plural}.${resource.group}`;
}

/** The resource served at group/version/plural, or undefined. */
export function findResource(group: string, version: string, plural: string): ResourceDef | undefined {
  return resources.find((r) => r.group === group && r.version === version && r.plural === plural);
}

/** The resource whose stored objects are served in the core form, by storage name (e.g. `events` -> core Events). */
export function primaryResource(storage: string): ResourceDef {
  const found = resources.find((r) => r.storage === storage);
  if (found === undefined) throw new Error(`no resource stores ${storage}`);
  return found;
}

/** Group versions, in discovery order: `[{group, version, resources}]`. */
export function groupVersions(): { group: string; version: string; resources: ResourceDef[] }[] {
  const out: { group: string; version: string; resources: ResourceDef[] }[] = [];
  for (const r of resources) {
    let entry = out.find((e) => e.group === r.group && e.version === r.version);
    if (entry === undefined) {
      entry = { group: r.group, version: r.version, resources: [] };
      out.push(entry);
    }
    entry.resources.push(r);
  }
  return out;
}
