import { isJsonObject, type JsonObject, type KubeObject } from "./kube-object.js";
import type { ResourceDef } from "./resources.js";

/**
 * Server-side printing: kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints the
 * columns the server sends. These are kube-apiserver's columns for the simulator's resources (the common
 * ones; CRDs show Name and Age as a CRD without printer columns does).
 */

interface Column {
  readonly name: string;
  readonly type: "string" | "integer" | "date";
  readonly format?: string;
  readonly priority?: number;
  readonly description: string;
  readonly cell: (object: KubeObject, now: number) => unknown;
}

/** Whether the Accept header asks for a Table. */
export function wantsTable(accept: string): boolean {
  return accept.split(",").some((part) => /;\s*as=Table/.test(part) && /;\s*g=meta\.k8s\.io/.test(part));
}

function at(object: unknown, path: string): unknown {
  let value = object;
  for (const part of path.split(".")) value = isJsonObject(value) ? value[part] : undefined;
  return value;
}

/** kubectl's short durations: 45s, 5m, 3h, 2d, ... */
export function age(timestamp: unknown, now: number): string {
  if (typeof timestamp !== "string") return "<unknown>";
  const seconds = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return `${minutes}m${seconds % 60 === 0 ? "" : `${seconds % 60}s`}`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

const nameColumn: Column = {
  name: "Name",
  type: "string",
  format: "name",
  description: "Name must be unique within a namespace.",
  cell: (o) => o.metadata.name ?? "",
};

const ageColumn: Column = {
  name: "Age",
  type: "string",
  description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
  cell: (o, now) => age(o.metadata.creationTimestamp, now),
};

function podStatus(pod: KubeObject): string {
  if (pod.metadata.deletionTimestamp !== undefined) return "Terminating";
  return String(at(pod, "status.reason") ?? at(pod, "status.phase") ?? "Pending");
}

function containerCounts(pod: KubeObject): { ready: number; total: number; restarts: number } {
  const containers = at(pod, "spec.containers");
  const statuses = at(pod, "status.containerStatuses");
  const list = Array.isArray(statuses) ? statuses.filter(isJsonObject) : [];
  return {
    total: Array.isArray(containers) ? containers.length : 0,
    ready: list.filter((s) => s.ready === true).length,
    restarts: list.reduce((sum, s) => sum + (typeof s.restartCount === "number" ? s.restartCount : 0), 0),
  };
}

const columns: Readonly<Record<string, readonly Column[]>> = {
  pods: [
    nameColumn,
    {
      name: "Ready",
      type: "string",
      description: "The aggregate readiness state of this pod for accepting traffic.",
      cell: (o) => {
        const c = containerCounts(o);
        return `${c.ready}/${c.total}`;
      },
    },
    {
      name: "Status",
      type: "string",
      description: "The aggregate status of the containers in this pod.",
      cell: podStatus,
    },
    {
      name: "Restarts",
      type: "string",
      description: "The number of times the containers in this pod have been restarted.",
      cell: (o) => String(containerCounts(o).restarts),
    },
    ageColumn,
    {
      name: "IP",
      type: "string",
      priority: 1,
      description: "IP address allocated to the pod.",
      cell: (o) => at(o, "status.podIP") ?? "<none>",
    },
    {
      name: "Node",
      type: "string",
      priority: 1,
      description: "Name of the Node this pod is assigned to.",
      cell: (o) => at(o, "spec.nodeName") ?? "<none>",
    },
  ],
  nodes: [
    nameColumn,
    {
      name: "Status",
      type: "string",
      description: "The status of the node",
      cell: (o) => {
        const conditions = at(o, "status.conditions");
        const ready = Array.isArray(conditions)
          ? conditions.find((c) => isJsonObject(c) && c.type === "Ready")
          : undefined;
        return isJsonObject(ready) && ready.status === "True" ? "Ready" : "NotReady";
      },
    },
    { name: "Roles", type: "string", description: "The roles of the node", cell: () => "<none>" },
    ageColumn,
    {
      name: "Version",
      type: "string",
      description: "Kubelet Version reported by the node.",
      cell: (o) => at(o, "status.nodeInfo.kubeletVersion") ?? "",
    },
    {
      name: "Internal-IP",
      type: "string",
      priority: 1,
      description: "List of internal IPs for the node.",
      cell: (o) => {
        const addresses = at(o, "status.addresses");
        const internal = Array.isArray(addresses)
          ? addresses.find((a) => isJsonObject(a) && a.type === "InternalIP")
          : undefined;
        return isJsonObject(internal) ? internal.address : "<none>";
      },
    },
  ],
  namespaces: [
    nameColumn,
    {
      name: "Status",
      type: "string",
      description: "The status of the namespace",
      cell: (o) => at(o, "status.phase") ?? "",
    },
    ageColumn,
  ],
  leases: [
    nameColumn,
    {
      name: "Holder",
      type: "string",
      description: "The holder of the lease.",
      cell: (o) => at(o, "spec.holderIdentity") ?? "",
    },
    ageColumn,
  ],
  events: [
    {
      name: "Last Seen",
      type: "string",
      description: "Time when last event occurred",
      // kube-apiserver's printer: lastTimestamp, else firstTimestamp, else eventTime; none is <unknown>.
      cell: (o, now) =>
        age(
          o.lastTimestamp ??
            o.deprecatedLastTimestamp ??
            o.firstTimestamp ??
            o.deprecatedFirstTimestamp ??
            o.eventTime,
          now,
        ),
    },
    { name: "Type", type: "string", description: "Type of this event", cell: (o) => o.type ?? "" },
    {
      name: "Reason",
      type: "string",
      description: "Reason why this event was generated",
      cell: (o) => o.reason ?? "",
    },
    {
      name: "Object",
      type: "string",
      description: "The object that this event is about",
      cell: (o) => {
        const ref = (o.involvedObject ?? o.regarding) as JsonObject | undefined;
        return isJsonObject(ref) ? `${String(ref.kind ?? "").toLowerCase()}/${String(ref.name ?? "")}` : "";
      },
    },
    {
      name: "Message",
      type: "string",
      description: "A human-readable description of the status of this operation.",
      cell: (o) => o.message ?? o.note ?? "",
    },
  ],
};

function columnsOf(resource: ResourceDef): readonly Column[] {
  return columns[resource.storage] ?? [nameColumn, ageColumn];
}

/** A meta.k8s.io/v1 Table of `objects`; each row carries the object's metadata (or the whole object). */
export function tableOf(
  resource: ResourceDef,
  objects: readonly KubeObject[],
  metadata: JsonObject,
  now: number,
  options: { includeObject: string; headers: boolean },
): JsonObject {
  const cols = columnsOf(resource);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata,
    ...(options.headers
      ? {
          columnDefinitions: cols.map((c) => ({
            name: c.name,
            type: c.type,
            format: c.format ?? "",
            description: c.description,
            priority: c.priority ?? 0,
          })),
        }
      : { columnDefinitions: null }),
    rows: objects.map((o) => ({
      cells: cols.map((c) => c.cell(o, now)),
      object:
        options.includeObject === "Object"
          ? o
          : options.includeObject === "None"
            ? null
            : { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata },
    })),
  };
}
