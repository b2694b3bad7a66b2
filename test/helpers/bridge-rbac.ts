/**
 * The Kubernetes permissions the bridge's calls need, read from its one Kubernetes adapter
 * (src/ipam-whereabouts-bridge/kube/kube-client.ts, the only importer of @kubernetes/client-node), as
 * test/iam-policy.test.ts reads the EC2 actions from the EC2 adapter:
 * - each watched collection (`#reflect(resource, path, ...)`) needs list and watch on the path's resource;
 * - each typed call (`this.#client.<verb>Namespaced<Kind>(`, or `<verb><Kind>(` for a cluster-scoped kind)
 *   needs its verb (read is get, replace is update) on the kind's resource, in the group of the API class the
 *   client was made from.
 * A call of a shape not known here throws, naming it, so that a new kind of call cannot go unseen.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface Grant {
  readonly group: string;
  readonly resource: string;
  readonly verb: string;
}

/** `group/resource verb`, the form the tests compare. */
export const grantLine = (g: Grant): string => `${g.group}/${g.resource} ${g.verb}`;

/** The API group of each typed client class the adapter makes. */
const GROUP_OF_API: Record<string, string> = { CoreV1Api: "", CoordinationV1Api: "coordination.k8s.io" };
const VERB_OF: Record<string, string> = {
  read: "get",
  list: "list",
  create: "create",
  replace: "update",
  patch: "patch",
  delete: "delete",
};

/** Every grant the adapter's calls need, sorted, without duplicates. */
export function bridgeKubeGrants(root: string): Grant[] {
  const source = readFileSync(join(root, "src/ipam-whereabouts-bridge/kube/kube-client.ts"), "utf8");
  const grants = new Map<string, Grant>();
  const add = (g: Grant) => grants.set(grantLine(g), g);

  // Constants the watched paths are built from: `const X = { group: "...", ... }` and `const x = "..."`.
  const values = new Map<string, string>();
  for (const m of source.matchAll(/const (\w+) = \{([^}]*)\}/g))
    for (const field of (m[2] ?? "").matchAll(/(\w+): "([^"]*)"/g))
      values.set(`${m[1]}.${field[1]}`, field[2] ?? "");
  for (const m of source.matchAll(/const (\w+) = "([^"]*)";/g)) values.set(m[1] ?? "", m[2] ?? "");
  const resolve = (template: string): string =>
    template.replace(/\$\{([\w.]+)\}/g, (_, name: string) => {
      const value = values.get(name);
      if (value === undefined)
        throw new Error(`kube-client.ts: a watched path uses \${${name}}, not a constant`);
      return value;
    });

  const watches = [...source.matchAll(/#reflect\(\s*[^,]+,\s*(`[^`]+`|"[^"]+")/g)];
  if (watches.length === 0) throw new Error("kube-client.ts: no #reflect(resource, path, ...) call found");
  for (const m of watches) {
    const path = resolve((m[1] ?? "").slice(1, -1));
    const core = /^\/api\/v1\/([a-z]+)$/.exec(path);
    const grouped = /^\/apis\/([^/]+)\/[^/]+\/([a-z-]+)$/.exec(path);
    const [group, resource] = core ? ["", core[1]] : grouped ? [grouped[1], grouped[2]] : [];
    if (group === undefined || resource === undefined)
      throw new Error(`kube-client.ts: a watched path of an unknown shape: ${path}`);
    add({ group, resource, verb: "list" });
    add({ group, resource, verb: "watch" });
  }

  const clients = new Map(
    [...source.matchAll(/this\.#(\w+) = config\.makeApiClient\((\w+)\)/g)].map((m) => [m[1], m[2]]),
  );
  for (const m of source.matchAll(/this\.#(\w+)\.(\w+)\(/g)) {
    const [, client = "", method = ""] = m;
    const api = clients.get(client);
    if (api === undefined) continue; // not an API client (#reflectors, #call ...)
    const call = /^(read|list|create|replace|patch|delete)(?:Namespaced)?([A-Z]\w*)$/.exec(method);
    const group = GROUP_OF_API[api];
    if (call === null || group === undefined)
      throw new Error(
        `kube-client.ts: ${api}.${method} is a call this test does not know: add its RBAC here`,
      );
    add({ group, resource: `${(call[2] ?? "").toLowerCase()}s`, verb: VERB_OF[call[1] ?? ""] ?? "" });
  }
  return [...grants.values()].sort((a, b) => grantLine(a).localeCompare(grantLine(b)));
}
