import { apiVersionOf, groupVersions, type ResourceDef } from "./resources.js";

/** The Kubernetes version the simulated API server reports at /version. */
export const simulatedVersion = {
  major: "1",
  minor: "31",
  gitVersion: "v1.31.0-multus-ipmgr-sim",
  gitCommit: "0000000000000000000000000000000000000000",
  gitTreeState: "clean",
  buildDate: "2024-01-01T00:00:00Z",
  goVersion: "go1.22.5",
  compiler: "gc",
  platform: "linux/amd64",
};

/** `GET /api`: the core group's versions. */
export function apiVersions(serverAddress: string): object {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

function groupOf(group: string): object {
  const versions = groupVersions()
    .filter((gv) => gv.group === group)
    .map((gv) => ({ groupVersion: apiVersionOf(gv), version: gv.version }));
  return { name: group, versions, preferredVersion: versions[0] };
}

/** `GET /apis`: every named group. */
export function apiGroupList(): object {
  const groups = [...new Set(groupVersions().map((gv) => gv.group))].filter((g) => g !== "");
  return { kind: "APIGroupList", apiVersion: "v1", groups: groups.map(groupOf) };
}

/** `GET /apis/<group>`, or undefined for a group the simulator does not serve. */
export function apiGroup(group: string): object | undefined {
  if (group === "" || !groupVersions().some((gv) => gv.group === group)) return undefined;
  return { kind: "APIGroup", apiVersion: "v1", ...groupOf(group) };
}

function entry(r: ResourceDef): object {
  return {
    name: r.plural,
    singularName: r.singular,
    namespaced: r.namespaced,
    kind: r.kind,
    verbs: r.verbs,
    ...(r.shortNames.length === 0 ? {} : { shortNames: r.shortNames }),
    ...(r.categories.length === 0 ? {} : { categories: r.categories }),
  };
}

/** `GET /api/v1` or `/apis/<group>/<version>`: an APIResourceList, or undefined when not served. */
export function apiResourceList(group: string, version: string): object | undefined {
  const gv = groupVersions().find((g) => g.group === group && g.version === version);
  if (gv === undefined) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: apiVersionOf(gv),
    resources: gv.resources.map(entry),
  };
}

/** The media type of aggregated discovery (apidiscovery.k8s.io/v2), which client-go asks /api and /apis for first. */
export const aggregatedDiscoveryType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/** Whether an Accept header offers aggregated discovery v2 (client-go lists it before plain JSON). */
export function acceptsAggregatedDiscovery(accept: string): boolean {
  return accept
    .split(",")
    .map((type) => type.replace(/\s/g, ""))
    .some(
      (type) =>
        type.includes("g=apidiscovery.k8s.io") &&
        type.includes("v=v2;") &&
        type.endsWith("as=APIGroupDiscoveryList"),
    );
}

function discoveryResource(r: ResourceDef): object {
  return {
    resource: r.plural,
    responseKind: { group: r.group, version: r.version, kind: r.kind },
    scope: r.namespaced ? "Namespaced" : "Cluster",
    singularResource: r.singular,
    verbs: r.verbs,
    ...(r.shortNames.length === 0 ? {} : { shortNames: r.shortNames }),
    ...(r.categories.length === 0 ? {} : { categories: r.categories }),
  };
}

/**
 * `GET /api` (`core`) or `/apis` in aggregated form: every group with its versions and their resources in
 * one document, as kube-apiserver 1.30+ answers, so that a client needs no request per group version.
 */
export function aggregatedDiscovery(core: boolean): object {
  const groups = [...new Set(groupVersions().map((gv) => gv.group))].filter((g) => (g === "") === core);
  return {
    kind: "APIGroupDiscoveryList",
    apiVersion: "apidiscovery.k8s.io/v2",
    metadata: {},
    items: groups.map((group) => ({
      metadata: group === "" ? {} : { name: group },
      versions: groupVersions()
        .filter((gv) => gv.group === group)
        .map((gv) => ({
          version: gv.version,
          resources: gv.resources.map(discoveryResource),
          freshness: "Current",
        })),
    })),
  };
}
