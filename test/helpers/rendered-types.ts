/**
 * Rendered Kubernetes objects against the Kubernetes API types: kubernetes-models' validate() (types,
 * required fields, enums) for the built-in kinds, and its TypeScript models for every kind (a misspelt field
 * at any depth fails, named; see manifest-types.ts). CRD kinds (NADs, the Prometheus Operator's) are checked
 * by their small models in manifest-types.ts only.
 */
import { checkManifestTypes } from "./manifest-types.js";

/** API groups of the CRDs kubernetes-models does not ship. */
const CRD_GROUPS = new Set(["k8s.cni.cncf.io/v1", "monitoring.coreos.com/v1"]);

export interface LabelledObject {
  readonly label: string;
  readonly object: Record<string, unknown> & { apiVersion: string; kind: string };
}

/** The failures, one line each, named by each object's label; empty when every object fits its type. */
export async function renderedTypeFailures(
  root: string,
  objects: readonly LabelledObject[],
): Promise<string[]> {
  const failures: string[] = [];
  for (const { label, object } of objects.filter((o) => !CRD_GROUPS.has(o.object.apiVersion))) {
    const module = (await import(
      /* @vite-ignore */ `kubernetes-models/${object.apiVersion}/${object.kind}`
    )) as Record<string, new (data: unknown) => { validate(): void }>;
    const Model = module[object.kind];
    if (Model === undefined) {
      failures.push(`${label}: kubernetes-models has no ${object.apiVersion} ${object.kind}`);
      continue;
    }
    try {
      new Model(object).validate();
    } catch (error) {
      failures.push(`${label}: ${(error as Error).message}`);
    }
  }
  for (const p of checkManifestTypes(root, objects)) failures.push(`${p.document} ${p.path}: ${p.message}`);
  return failures;
}
