/**
 * doctor's Kubernetes endpoint from a kubeconfig (IPMGR_KUBECONFIG, --kubeconfig: the bridge's setting), so that
 * the node-slice check runs from a shell as well as in a pod, e.g. against the simulator's API server. Only
 * what one GET needs: the current context's cluster (`server`, `certificate-authority(-data)`,
 * `insecure-skip-tls-verify`) and user (`token`, `tokenFile`, `client-certificate(-data)`,
 * `client-key(-data)`); relative file names are read beside the kubeconfig, as kubectl does. The YAML parser
 * comes with doctor's chunk, which no other command loads.
 */
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { parse } from "yaml";
import type { KubeEndpoint } from "./node-slices.js";

type Raw = Record<string, unknown>;
const record = (value: unknown): Raw | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Raw) : undefined;
const text = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;

/** The entry of a kubeconfig list (`clusters`, `users`, `contexts`) named `name`: its inner object. */
function named(doc: Raw, list: string, field: string, name: string): Raw | undefined {
  const items = doc[list];
  const item = (Array.isArray(items) ? items : []).map(record).find((i) => i?.name === name);
  return record(item?.[field]);
}

/**
 * The endpoint of the kubeconfig at `path` (its current context), or a sentence saying why doctor cannot use
 * it (a user whose credentials come from a command). `fail` builds the error for a kubeconfig that cannot be
 * read or names no server (a ConfigError naming the setting, in main.ts).
 */
export async function kubeconfigEndpoint(
  path: string,
  timeoutMs: number,
  fail: (problemAndFix: string) => Error,
): Promise<KubeEndpoint | string> {
  let doc: Raw | undefined;
  try {
    doc = record(parse(await readFile(path, "utf8")));
  } catch (error) {
    throw fail(
      `cannot read the kubeconfig (${error instanceof Error ? error.message : String(error)}); name a kubeconfig file, e.g. the one multus-ipmgr sim --kubeconfig writes`,
    );
  }
  if (doc === undefined) throw fail("the kubeconfig is not a YAML mapping; name a kubeconfig file");
  const contextName = text(doc["current-context"]);
  const context = contextName === undefined ? undefined : named(doc, "contexts", "context", contextName);
  if (contextName === undefined || context === undefined) {
    throw fail(
      `the kubeconfig's current-context ${contextName === undefined ? "is not set" : `"${contextName}" is not among its contexts`}; set one (kubectl config use-context NAME --kubeconfig ${path})`,
    );
  }
  const clusterName = text(context.cluster) ?? "";
  const cluster = named(doc, "clusters", "cluster", clusterName);
  const server = text(cluster?.server);
  if (cluster === undefined || server === undefined) {
    throw fail(
      `the current context "${contextName}" names cluster "${clusterName}", which has no server in the kubeconfig; add the API server's URL as its server`,
    );
  }
  const user = named(doc, "users", "user", text(context.user) ?? "") ?? {};
  if (user.exec !== undefined || user["auth-provider"] !== undefined) {
    return `not checked: the kubeconfig ${path} gets its credentials from a command (${user.exec !== undefined ? "exec" : "auth-provider"}), which doctor does not run. Fix: give doctor a kubeconfig with a token (kubectl create token), or run doctor in the bridge's pod.`;
  }
  /** A file the kubeconfig names, read beside it when relative. */
  const fileNamed = async (key: string, file: string): Promise<string> => {
    try {
      return await readFile(resolve(dirname(path), file), "utf8");
    } catch (error) {
      throw fail(
        `its ${key} ${file} cannot be read (${error instanceof Error ? error.message : String(error)}); fix the path in the kubeconfig`,
      );
    }
  };
  /** PEM from `KEY-data` (base64) or the file `KEY` of `entry`. */
  const pem = async (entry: Raw, key: string): Promise<string | undefined> => {
    const data = text(entry[`${key}-data`]);
    if (data !== undefined) return Buffer.from(data, "base64").toString("utf8");
    const file = text(entry[key]);
    return file === undefined ? undefined : fileNamed(key, file);
  };
  const tokenFile = text(user.tokenFile);
  const token =
    text(user.token) ??
    (tokenFile === undefined ? undefined : (await fileNamed("tokenFile", tokenFile)).trim());
  const ca = await pem(cluster, "certificate-authority");
  const cert = await pem(user, "client-certificate");
  const key = await pem(user, "client-key");
  return {
    server,
    timeoutMs,
    kubeconfig: path,
    ...(token === undefined ? {} : { token }),
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    ...(cluster["insecure-skip-tls-verify"] === true ? { insecure: true } : {}),
  };
}
