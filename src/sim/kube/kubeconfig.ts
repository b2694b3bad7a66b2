import { rename, writeFile } from "node:fs/promises";
import { stringify } from "yaml";

/** The names the kubeconfig gives its cluster, user and context. */
export const kubeconfigName = "multus-ipmgr-sim";

/**
 * A kubeconfig for the simulated API server: one cluster (plain HTTP), one user with a dummy bearer token
 * (the simulator accepts any), one context, current, with namespace `default`. The cluster says
 * `insecure-skip-tls-verify: true`: @kubernetes/client-node 1.x refuses an `http:` server without it
 * ("HTTP protocol is not allowed when skipTLSVerify is not set or false"); kubectl ignores it for `http:`.
 */
export function kubeconfigYaml(server: string): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: kubeconfigName, cluster: { server, "insecure-skip-tls-verify": true } }],
    users: [{ name: kubeconfigName, user: { token: "multus-ipmgr-sim-token" } }],
    contexts: [
      {
        name: kubeconfigName,
        context: { cluster: kubeconfigName, user: kubeconfigName, namespace: "default" },
      },
    ],
    "current-context": kubeconfigName,
    preferences: {},
  });
}

/** Writes the kubeconfig to `path` (mode 0600, replaced atomically, so a reader never sees half a file). */
export async function writeKubeconfig(path: string, server: string): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, kubeconfigYaml(server), { mode: 0o600 });
  await rename(temporary, path);
}
