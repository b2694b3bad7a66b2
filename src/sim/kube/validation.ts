import type { StatusCause } from "../errors/kube-api-error.js";
import { isJsonObject, type JsonObject, type KubeObject } from "./kube-object.js";
import { labelKeyProblem, labelValueProblem } from "./selectors.js";

/** Field problems of one object, worded as kube-apiserver's field errors. */

export function required(field: string): StatusCause {
  return { reason: "FieldValueRequired", message: "Required value", field };
}

export function invalid(field: string, value: unknown, detail: string): StatusCause {
  return {
    reason: "FieldValueInvalid",
    message: `Invalid value: ${JSON.stringify(value)}: ${detail}`,
    field,
  };
}

function typeProblem(field: string, value: unknown, type: string): StatusCause {
  const actual = Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
  return {
    reason: "FieldValueTypeInvalid",
    message: `Invalid value: "${actual}": ${field} in body must be of type ${type}: "${actual}"`,
    field,
  };
}

const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Problems of metadata.name: a DNS-1123 subdomain, or a DNS-1123 label for namespaces. */
export function nameProblems(name: string, kind: string): StatusCause[] {
  if (kind === "Namespace") {
    if (name.length > 63 || !label.test(name)) {
      return [
        invalid(
          "metadata.name",
          name,
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
      ];
    }
    return [];
  }
  if (name.length > 253 || !subdomain.test(name)) {
    return [
      invalid(
        "metadata.name",
        name,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      ),
    ];
  }
  return [];
}

/** Problems of labels and annotation keys. */
export function metadataProblems(object: KubeObject): StatusCause[] {
  const problems: StatusCause[] = [];
  for (const [key, value] of Object.entries(object.metadata.labels ?? {})) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem !== undefined) problems.push(invalid("metadata.labels", key, keyProblem));
    const valueProblem = labelValueProblem(value);
    if (valueProblem !== undefined) problems.push(invalid("metadata.labels", value, valueProblem));
  }
  for (const key of Object.keys(object.metadata.annotations ?? {})) {
    const problem = labelKeyProblem(key);
    if (problem !== undefined) problems.push(invalid("metadata.annotations", key, problem));
  }
  return problems;
}

export function validatePod(pod: KubeObject): StatusCause[] {
  const spec = pod.spec;
  if (!isJsonObject(spec)) return [required("spec.containers")];
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) return [required("spec.containers")];
  const problems: StatusCause[] = [];
  containers.forEach((container, i) => {
    const c = isJsonObject(container) ? container : {};
    if (typeof c.name !== "string" || c.name === "") problems.push(required(`spec.containers[${i}].name`));
    if (typeof c.image !== "string" || c.image === "") problems.push(required(`spec.containers[${i}].image`));
  });
  if (spec.nodeName !== undefined && typeof spec.nodeName !== "string") {
    problems.push(typeProblem("spec.nodeName", spec.nodeName, "string"));
  }
  return problems;
}

/** core/v1 Events keep the legacy rules: the involved object's namespace, when set, is the Event's. */
export function validateCoreEvent(event: KubeObject): StatusCause[] {
  const involved = event.involvedObject;
  if (!isJsonObject(involved)) return [required("involvedObject")];
  const namespace = involved.namespace;
  if (typeof namespace === "string" && namespace !== "" && namespace !== event.metadata.namespace) {
    return [invalid("involvedObject.namespace", namespace, "does not match event.namespace")];
  }
  return [];
}

/** events.k8s.io/v1 requires the fields of the new Event API. */
export function validateEventsV1(event: KubeObject): StatusCause[] {
  const problems: StatusCause[] = [];
  if (typeof event.eventTime !== "string" || event.eventTime === "") problems.push(required("eventTime"));
  for (const [field, max] of [
    ["reportingController", 253],
    ["reportingInstance", 128],
    ["action", 128],
    ["reason", 128],
  ] as const) {
    const value = event[field];
    if (typeof value !== "string" || value === "") problems.push(required(field));
    else if (value.length > max) problems.push(invalid(field, value, `can have at most ${max} characters`));
  }
  if (typeof event.note === "string" && Buffer.byteLength(event.note) > 1024) {
    problems.push(invalid("note", event.note, "can have at most 1024 bytes"));
  }
  if (event.type !== "Normal" && event.type !== "Warning") {
    problems.push({
      reason: "FieldValueNotSupported",
      message: `Unsupported value: ${JSON.stringify(event.type ?? "")}: supported values: "Normal", "Warning"`,
      field: "type",
    });
  }
  if (!isJsonObject(event.regarding)) problems.push(required("regarding"));
  return problems;
}

export function validateLease(lease: KubeObject): StatusCause[] {
  const spec = lease.spec;
  if (spec === undefined) return [];
  if (!isJsonObject(spec)) return [typeProblem("spec", spec, "object")];
  const problems: StatusCause[] = [];
  for (const field of ["holderIdentity", "acquireTime", "renewTime"] as const) {
    if (spec[field] !== undefined && spec[field] !== null && typeof spec[field] !== "string") {
      problems.push(typeProblem(`spec.${field}`, spec[field], "string"));
    }
  }
  const duration = spec.leaseDurationSeconds;
  if (duration !== undefined && duration !== null) {
    if (!Number.isInteger(duration))
      problems.push(typeProblem("spec.leaseDurationSeconds", duration, "integer"));
    else if ((duration as number) <= 0) {
      problems.push(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"));
    }
  }
  const transitions = spec.leaseTransitions;
  if (
    transitions !== undefined &&
    transitions !== null &&
    !(Number.isInteger(transitions) && (transitions as number) >= 0)
  ) {
    problems.push(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"));
  }
  return problems;
}

function specOf(object: KubeObject): JsonObject | StatusCause {
  const spec = object.spec;
  if (!isJsonObject(spec)) return spec === undefined ? required("spec") : typeProblem("spec", spec, "object");
  return spec;
}

/** The OpenAPI schemas of the Multus and whereabouts CRDs, reduced to the fields they require and type. */
export const validateWhereabouts = {
  networkAttachmentDefinition(nad: KubeObject): StatusCause[] {
    const spec = nad.spec;
    if (spec === undefined) return [];
    if (!isJsonObject(spec)) return [typeProblem("spec", spec, "object")];
    if (spec.config !== undefined && typeof spec.config !== "string") {
      return [typeProblem("spec.config", spec.config, "string")];
    }
    return [];
  },
  ipPool(pool: KubeObject): StatusCause[] {
    const spec = specOf(pool);
    if (!isJsonObject(spec)) return [spec as StatusCause];
    const problems: StatusCause[] = [];
    if (typeof spec.range !== "string") {
      problems.push(
        spec.range === undefined ? required("spec.range") : typeProblem("spec.range", spec.range, "string"),
      );
    }
    if (spec.allocations === undefined) problems.push(required("spec.allocations"));
    else if (!isJsonObject(spec.allocations)) {
      problems.push(typeProblem("spec.allocations", spec.allocations, "object"));
    } else {
      for (const [offset, allocation] of Object.entries(spec.allocations)) {
        const field = `spec.allocations.${offset}`;
        if (!isJsonObject(allocation)) problems.push(typeProblem(field, allocation, "object"));
        else if (typeof allocation.id !== "string") problems.push(required(`${field}.id`));
      }
    }
    return problems;
  },
  overlappingRangeIpReservation(reservation: KubeObject): StatusCause[] {
    const spec = specOf(reservation);
    if (!isJsonObject(spec)) return [spec as StatusCause];
    return typeof spec.podref === "string" ? [] : [required("spec.podref")];
  },
  /** spec.range and spec.sliceSize required; status, when set, requires allocations of {nodeName, sliceRange}. */
  nodeSlicePool(pool: KubeObject): StatusCause[] {
    const problems: StatusCause[] = [];
    const spec = pool.spec;
    if (spec !== undefined && !isJsonObject(spec)) problems.push(typeProblem("spec", spec, "object"));
    if (isJsonObject(spec)) {
      for (const field of ["range", "sliceSize"] as const) {
        const value = spec[field];
        if (value === undefined) problems.push(required(`spec.${field}`));
        else if (typeof value !== "string") problems.push(typeProblem(`spec.${field}`, value, "string"));
      }
    }
    const status = pool.status;
    if (status === undefined) return problems;
    if (!isJsonObject(status)) return [...problems, typeProblem("status", status, "object")];
    const allocations = status.allocations;
    if (allocations === undefined) return [...problems, required("status.allocations")];
    if (!Array.isArray(allocations)) {
      return [...problems, typeProblem("status.allocations", allocations, "array")];
    }
    allocations.forEach((allocation, i) => {
      const field = `status.allocations[${i}]`;
      if (!isJsonObject(allocation)) {
        problems.push(typeProblem(field, allocation, "object"));
        return;
      }
      for (const key of ["nodeName", "sliceRange"] as const) {
        const value = allocation[key];
        if (value === undefined) problems.push(required(`${field}.${key}`));
        else if (typeof value !== "string") problems.push(typeProblem(`${field}.${key}`, value, "string"));
      }
    });
    return problems;
  },
};

/** `Pod "x" is invalid: spec.containers: Required value`, several causes in brackets, as the API server words it. */
export function invalidMessage(kind: string, name: string, causes: readonly StatusCause[]): string {
  const parts = causes.map((c) => (c.field === undefined ? c.message : `${c.field}: ${c.message}`));
  return `${kind} "${name}" is invalid: ${parts.length === 1 ? parts[0] : `[${parts.join(", ")}]`}`;
}
