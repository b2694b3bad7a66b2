import { apiVersionOf, groupVersions, type ResourceDef } from "./resources.js";

/**
 * Just enough OpenAPI v3 for kubectl: `kubectl apply` (and create, replace) first asks /openapi/v3 whether
 * the server validates fields itself (a `fieldValidation` query parameter on the kind's PATCH operation).
 * When it does, kubectl sends fieldValidation=Strict and skips its own schema validation, which would need
 * every schema. The documents carry no schemas: the simulator validates what it models (names, labels, the
 * fields its kinds require) and accepts unknown fields whatever fieldValidation says.
 */

function pathOf(gvPath: string, resource: ResourceDef): string {
  return resource.namespaced
    ? `/${gvPath}/namespaces/{namespace}/${resource.plural}/{name}`
    : `/${gvPath}/${resource.plural}/{name}`;
}

function gvPathOf(group: string, version: string): string {
  return group === "" ? `api/${version}` : `apis/${group}/${version}`;
}

/** A stable tag for a document, so clients that cache by it refetch after an upgrade. */
function hashOf(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash.toString(16).padStart(8, "0").toUpperCase();
}

function documentFor(group: string, version: string): object | undefined {
  const gv = groupVersions().find((g) => g.group === group && g.version === version);
  if (gv === undefined) return undefined;
  const gvPath = gvPathOf(group, version);
  const paths: Record<string, object> = {};
  for (const resource of gv.resources) {
    if (!resource.verbs.includes("patch")) continue;
    // Strategic merge patch is left out on purpose: kubectl would then compute it from schemas we do not
    // serve; without it, kubectl uses its built-in types' patch metadata (or a JSON merge patch for CRDs).
    const content = {
      "application/json-patch+json": { schema: { type: "object" } },
      "application/merge-patch+json": { schema: { type: "object" } },
    };
    paths[pathOf(gvPath, resource)] = {
      patch: {
        operationId: `patch${resource.kind}`,
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": { group, version, kind: resource.kind },
        parameters: [
          { name: "dryRun", in: "query", schema: { type: "string" } },
          { name: "fieldManager", in: "query", schema: { type: "string" } },
          { name: "fieldValidation", in: "query", schema: { type: "string" } },
        ],
        requestBody: { content },
        responses: { "200": { description: "OK" } },
      },
    };
  }
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: `${apiVersionOf(gv)} (multus-ipmgr sim)` },
    paths,
    components: { schemas: {} },
  };
}

/** `GET /openapi/v3`: where each group version's document is. */
export function openApiV3Root(): object {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of groupVersions()) {
    const gvPath = gvPathOf(gv.group, gv.version);
    const hash = hashOf(JSON.stringify(documentFor(gv.group, gv.version)));
    paths[gvPath] = { serverRelativeURL: `/openapi/v3/${gvPath}?hash=${hash}` };
  }
  return { paths };
}

/** `GET /openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`, or undefined when not served. */
export function openApiV3Document(parts: readonly string[]): object | undefined {
  if (parts[0] === "api" && parts.length === 2) return documentFor("", parts[1] as string);
  if (parts[0] === "apis" && parts.length === 3) return documentFor(parts[1] as string, parts[2] as string);
  return undefined;
}

/** The media type client-go asks /openapi/v2 for: gnostic's `openapi_v2.Document` in protobuf. */
export const openApiV2ProtobufType = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

function lengthDelimited(field: number, payload: Buffer): Buffer {
  const length: number[] = [];
  let n = payload.length;
  while (n >= 0x80) {
    length.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  length.push(n);
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...length]), payload]);
}

/**
 * `GET /openapi/v2`: a Swagger 2.0 document without definitions, in protobuf (`swagger` is field 1,
 * `info` field 2 with `title` 1 and `version` 2). client-go's validator downloads it before anything else
 * (helm install stops at "failed to download openapi" without it), then asks /openapi/v3 whether the
 * server validates fields itself; it does, for every kind served, so no schema is ever looked up.
 */
export function openApiV2Protobuf(): Buffer {
  const info = Buffer.concat([
    lengthDelimited(1, Buffer.from("Kubernetes")),
    lengthDelimited(2, Buffer.from("v1.31.0-multus-ipmgr-sim")),
  ]);
  return Buffer.concat([lengthDelimited(1, Buffer.from("2.0")), lengthDelimited(2, info)]);
}
