import { KubeApiError } from "../errors/kube-api-error.js";
import type { KubeObject } from "./kube-object.js";
import type { ResourceDef } from "./resources.js";
import {
  type FieldSelector,
  type LabelSelector,
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
  unsupportedField,
} from "./selectors.js";

/** The query of a list or watch, parsed. */
export interface ListQuery {
  /** undefined: every namespace (or a cluster-scoped resource). */
  readonly namespace: string | undefined;
  readonly labelSelector: LabelSelector;
  readonly fieldSelector: FieldSelector;
}

function badRequest(message: string): KubeApiError {
  return new KubeApiError(400, "BadRequest", message);
}

/** Every field selector a resource offers. */
export function selectableFields(resource: ResourceDef): string[] {
  return ["metadata.name", "metadata.namespace", ...Object.keys(resource.fields({ metadata: {} }))];
}

/**
 * Parses `labelSelector` and `fieldSelector` as the API server does. Throws KubeApiError 400 for a syntax
 * error or a field the resource does not offer.
 */
export function parseQuery(
  resource: ResourceDef,
  namespace: string | undefined,
  labelSelector: string,
  fieldSelector: string,
): ListQuery {
  let labels: LabelSelector;
  let fields: FieldSelector;
  try {
    labels = parseLabelSelector(labelSelector);
  } catch (error) {
    if (!(error instanceof SelectorError)) throw error;
    throw badRequest(`couldn't parse the selector string "${labelSelector}": ${error.message}`);
  }
  try {
    fields = parseFieldSelector(fieldSelector);
  } catch (error) {
    if (!(error instanceof SelectorError)) throw error;
    throw badRequest(`invalid field selector ${JSON.stringify(fieldSelector)}: ${error.message}`);
  }
  const unsupported = unsupportedField(fields, selectableFields(resource));
  if (unsupported !== undefined) {
    throw badRequest(
      resource.custom
        ? `"${unsupported}" is not a known field selector: only "metadata.name", "metadata.namespace"`
        : `field label not supported: ${unsupported}`,
    );
  }
  return { namespace, labelSelector: labels, fieldSelector: fields };
}

/** Whether a stored object is in the query's namespace and matches its selectors. */
export function matchesQuery(resource: ResourceDef, query: ListQuery, stored: KubeObject): boolean {
  const { metadata } = stored;
  if (query.namespace !== undefined && resource.namespaced && metadata.namespace !== query.namespace)
    return false;
  if (!matchesLabels(query.labelSelector, metadata.labels)) return false;
  if (query.fieldSelector.length === 0) return true;
  return matchesFields(query.fieldSelector, {
    "metadata.name": metadata.name ?? "",
    "metadata.namespace": metadata.namespace ?? "",
    ...resource.fields(stored),
  });
}
