/**
 * docs/install-eks.md, walked as a user would, as far as it runs without AWS: its values file (step 0) is
 * written into a temporary my-cluster/, and every `helm` command of the page's sh blocks runs with it
 * (`helm install` with --dry-run=client: no cluster is contacted, KUBECONFIG is /dev/null). What they render
 * is checked against the Kubernetes API types and against what the page says it installs; then the page's
 * install, upgrade steps and uninstall run against the simulator's Kubernetes API. And the page keeps
 * its promise: no command writes or edits a tracked file, and nothing of the node side asks to be filled in.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { toolPaths } from "../scripts/helm-bin.mjs";
import { writeKubeconfig } from "../src/sim/kube/kubeconfig.js";
import { helmAgainst, helmUnavailableReason, idOf, type K8sObject } from "./helpers/helm.js";
import { kube, kubeEndpointOf, kubeWorld, startKubeSim } from "./helpers/kube-worlds.js";
import { renderedTypeFailures } from "./helpers/rendered-types.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const ROOT = resolve(import.meta.dirname, "..");
const PAGE = readFileSync(join(ROOT, "docs", "install-eks.md"), "utf8");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
/** The page's placeholders, as a user fills them in. */
const PLACEHOLDERS: Record<string, string> = { "<ACCOUNT_ID>": "111122223333", "<REGION>": "eu-west-1" };
const VALUES = "my-cluster/values.yaml";

interface Heredoc {
  readonly target: string;
  readonly body: string;
}

/** The page's sh blocks: their command lines (continuations joined) and the files their heredocs write. */
function shellOf(page: string): { commands: string[]; heredocs: Heredoc[] } {
  const commands: string[] = [];
  const heredocs: Heredoc[] = [];
  for (const block of page.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    const lines = (block[1] ?? "").replace(/\\\n\s*/g, " ").split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] ?? "";
      const doc = /^cat > (\S+) <<'?(\w+)'?$/.exec(line);
      if (doc !== null) {
        const end = lines.indexOf(doc[2] ?? "", i + 1);
        heredocs.push({ target: doc[1] ?? "", body: lines.slice(i + 1, end).join("\n") });
        commands.push(line);
        i = end;
        continue;
      }
      if (line.trim() !== "") commands.push(line.replace(/\s+#.*$/, ""));
    }
  }
  return { commands, heredocs };
}

const fill = (text: string): string =>
  Object.entries(PLACEHOLDERS).reduce((t, [placeholder, value]) => t.replaceAll(placeholder, value), text);

const { commands, heredocs } = shellOf(PAGE);
const helmCommands = commands.filter((c) => c.startsWith("helm "));

/** Where a command writes a file: `> F`, `>> F`, `tee F`, `cp ... F`. */
function writeTargets(command: string): string[] {
  const targets = [...command.matchAll(/(?:^|\s)>>?\s*(\S+)/g)].map((m) => m[1] ?? "");
  const tee = /\btee\s+(?:-a\s+)?(\S+)/.exec(command);
  if (tee !== null) targets.push(tee[1] ?? "");
  const cp = /^cp\s+(?:-\S+\s+)*\S+\s+(\S+)$/.exec(command);
  if (cp !== null) targets.push(cp[1] ?? "");
  return targets.filter((t) => !t.startsWith("&") && t !== "/dev/null");
}

const unavailable = helmUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/install-guide.test.ts runs no helm\n`);

describe("docs/install-eks.md: no tracked file is edited", () => {
  it("writes one values file, in my-cluster/, which git ignores", () => {
    expect(heredocs.map((h) => h.target)).toEqual([VALUES]);
    expect(readFileSync(join(ROOT, ".gitignore"), "utf8").split("\n")).toContain("/my-cluster*/");
    const tracked = spawnSync("git", ["ls-files", "my-cluster"], { cwd: ROOT, encoding: "utf8" });
    expect(tracked.status).toBe(0);
    expect(tracked.stdout).toBe("");
  });

  it("writes every file into my-cluster/ and edits none in place", () => {
    const writes = commands.flatMap(writeTargets);
    expect(writes.length).toBeGreaterThan(1);
    expect(writes.filter((t) => !t.startsWith("my-cluster/"))).toEqual([]);
    expect(commands.filter((c) => /\bsed\s+-i\b|\bperl\s+-pi\b|\bvi\b|\bnano\b/.test(c))).toEqual([]);
  });

  it("gives every helm command the values file, and only it", () => {
    const install = helmCommands.filter((c) => /^helm (install|upgrade|template) /.test(c));
    expect(install.length).toBeGreaterThanOrEqual(3);
    for (const c of install) expect(c.match(/--values (\S+)/g)).toEqual([`--values ${VALUES}`]);
    expect(
      helmCommands.some((c) => c.startsWith("helm uninstall multus-ipmgr --namespace kube-system")),
    ).toBe(true);
  });

  it("asks for nothing to be filled into deploy/node: the script takes the subnet and group from the tag the page sets", () => {
    const script = readFileSync(join(ROOT, "deploy", "node", "multus-eni.sh"), "utf8");
    expect(script).not.toMatch(/\b(subnet|sg)-0[0-9a-f]+\b/);
    const tag = /^SUBNET_TAG=(\S+)$/m.exec(script)?.[1];
    expect(tag).toBe("multus-ipmgr.io/multus-eni-security-group");
    expect(commands).toContain(`aws ec2 create-tags --resources subnet-... --tags Key=${tag},Value=sg-...`);
    expect(commands).toContain("cp deploy/node/eksctl-cluster.yaml my-cluster/");
    expect(
      commands.some((c) => c.startsWith("aws eks create-nodegroup ") && c.includes("--ami-type AL2023_")),
    ).toBe(true);
  });
});

describe.skipIf(unavailable !== undefined)(
  "docs/install-eks.md: its helm commands, with its values file",
  () => {
    let dir: string | undefined;
    let valuesPath = "";
    const values = parseYaml(fill(heredocs.find((h) => h.target === VALUES)?.body ?? "")) as {
      addressPlan: {
        networks: {
          name: string;
          ranges: { range: string; start: string; end: string }[];
          allowedCidrs: string[];
        }[];
      };
    };

    beforeAll(() => {
      dir = makeTempDir("ipmgr-node-");
      mkdirSync(join(dir, "my-cluster"));
      valuesPath = join(dir, VALUES);
      writeFileSync(valuesPath, fill(heredocs.find((h) => h.target === VALUES)?.body ?? ""));
    });
    afterAll(() => removeTempDir(dir));

    /** Runs one of the page's helm commands here: its values file is the temporary one, an install is a dry run. */
    function runHelm(command: string): { status: number | null; stdout: string; stderr: string } {
      const args = command
        .replace(/\s+>\s*\S+$/, "")
        .split(/\s+/)
        .slice(1)
        .map((a) => (a === VALUES ? valuesPath : a));
      if (args[0] === "install") args.push("--dry-run=client");
      const run = spawnSync(toolPaths().helm, args, {
        cwd: ROOT,
        encoding: "utf8",
        env: { ...process.env, KUBECONFIG: "/dev/null" },
        maxBuffer: 64 * 1024 * 1024,
      });
      return { status: run.status, stdout: run.stdout, stderr: run.stderr };
    }

    const find = (objects: K8sObject[], kind: string, name: string): K8sObject => {
      const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
      if (found === undefined)
        throw new Error(`rendered no ${kind} ${name}: ${objects.map(idOf).join(", ")}`);
      return found;
    };

    const objectsOf = (stdout: string): K8sObject[] =>
      parseAllDocuments(stdout.replace(/\nNOTES:\n[\s\S]*$/, ""))
        .map((d) => d.toJS() as K8sObject | null)
        .filter((o): o is K8sObject => o !== null && typeof o === "object" && "kind" in o);

    it("step 7's helm install renders what the page says: the sidecar's demo in cnf, no bridge, no Deployment", async () => {
      const install = helmCommands.find((c) => c.startsWith("helm install "));
      expect(install).toBe(
        `helm install multus-ipmgr charts/multus-ipmgr --namespace kube-system --values ${VALUES}`,
      );
      const run = runHelm(install ?? "");
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      const objects = objectsOf(run.stdout);
      expect(objects.map(idOf).sort()).toEqual([
        "Namespace /cnf",
        "NetworkAttachmentDefinition cnf/ipvlan-multus",
        "NetworkAttachmentDefinition cnf/ipvlan-multus-dual",
        "Service cnf/cnf",
        "ServiceAccount cnf/multus-ipmgr",
        "StatefulSet cnf/cnf",
      ]);
      expect(
        await renderedTypeFailures(
          ROOT,
          objects.map((object) => ({ label: `step 7: ${idOf(object)}`, object })),
        ),
      ).toEqual([]);
    });

    it("step 7's install takes the registry, the ranges and the allowed CIDRs from the values file", () => {
      const objects = objectsOf(
        runHelm(helmCommands.find((c) => c.startsWith("helm install ")) ?? "").stdout,
      );
      const statefulSet = find(objects, "StatefulSet", "cnf");
      const pod = (
        statefulSet.spec as {
          template: {
            spec: {
              initContainers: { name: string; image: string; env: { name: string; value?: string }[] }[];
            };
          };
        }
      ).template.spec;
      const sidecar = pod.initContainers.find((c) => c.name === "multus-ipmgr");
      expect(sidecar?.image).toBe(`111122223333.dkr.ecr.eu-west-1.amazonaws.com/multus-ipmgr:${VERSION}`);
      for (const network of values.addressPlan.networks) {
        const nad = find(objects, "NetworkAttachmentDefinition", network.name);
        const config = JSON.parse((nad.spec as { config: string }).config) as {
          ipam: Record<string, unknown>;
        };
        const ranges =
          network.ranges.length === 1 ? [config.ipam] : (config.ipam.ipRanges as Record<string, unknown>[]);
        expect(ranges.map((r) => ({ range: r.range, start: r.range_start, end: r.range_end }))).toEqual(
          network.ranges,
        );
      }
      const env = Object.fromEntries((sidecar?.env ?? []).map((e) => [e.name, e.value ?? ""]));
      const annotation = (
        statefulSet.spec as { template: { metadata: { annotations: Record<string, string> } } }
      ).template.metadata.annotations["k8s.v1.cni.cncf.io/networks"];
      // The annotation names its networks as a JSON list or `ns/name,...`: take its words, match whole names.
      const words = new Set((annotation ?? "").split(/[^A-Za-z0-9-]+/));
      const network = values.addressPlan.networks.find((n) => words.has(n.name));
      expect(env.IPMGR_ALLOWED_CIDRS).toBe(network?.allowedCidrs.join(","));
    });

    it("every helm template of the page renders with the values file, each object of its kind's type", async () => {
      const templates = helmCommands.filter((c) => c.startsWith("helm template "));
      expect(templates.length).toBeGreaterThanOrEqual(2);
      for (const command of templates) {
        const run = runHelm(command);
        expect({ command, stderr: run.stderr, status: run.status }).toEqual({
          command,
          stderr: "",
          status: 0,
        });
        const objects = objectsOf(run.stdout);
        expect(objects.length).toBeGreaterThan(0);
        expect(
          await renderedTypeFailures(
            ROOT,
            objects.map((object) => ({ label: `${command}: ${idOf(object)}`, object })),
          ),
        ).toEqual([]);
      }
    });

    it("the page's bridge-only install (bridge.enabled, the demo off) renders the bridge and no demo object", () => {
      const install = helmCommands.find((c) => c.startsWith("helm install ")) ?? "";
      const run = runHelm(`${install} --set bridge.enabled=true --set demo.enabled=false`);
      expect(run.status).toBe(0);
      const kinds = objectsOf(run.stdout).map(idOf);
      expect(kinds).toContain("DaemonSet kube-system/multus-ipmgr-bridge");
      expect(kinds.filter((k) => k.includes(" cnf/") || k === "Namespace /cnf")).toEqual([]);
    });

    it("the page's install, its upgrade steps and its uninstall run against the simulator's Kubernetes API, leaving nothing", async () => {
      const sim = await startKubeSim(
        kubeWorld({ networkAttachmentDefinitions: [], ipPools: [], pods: [], namespaces: [] }),
      );
      const kubeconfig = join(dir as string, "kubeconfig");
      try {
        await writeKubeconfig(kubeconfig, kubeEndpointOf(sim));
        /** One of the page's helm commands, as written, with the values file and (for `>`) its output. */
        const page = async (prefix: string, nth = 0): Promise<string> => {
          const command = helmCommands.filter((c) => c.startsWith(prefix))[nth];
          expect(command, `the page runs ${prefix}`).toBeDefined();
          const args = (command ?? "")
            .replace(/\s+>\s*\S+$/, "")
            .split(/\s+/)
            .slice(1)
            .map((a) => (a === VALUES ? valuesPath : a));
          const run = await helmAgainst(kubeconfig, join(dir as string, "helm"), args);
          expect({ command, status: run.status, stderr: run.stderr }).toEqual({
            command,
            status: 0,
            stderr: "",
          });
          return run.stdout;
        };
        const served = async (path: string) => (await kube(sim, "GET", path)).status;
        const demo = [
          "/api/v1/namespaces/cnf",
          "/api/v1/namespaces/cnf/services/cnf",
          "/api/v1/namespaces/cnf/serviceaccounts/multus-ipmgr",
          "/apis/apps/v1/namespaces/cnf/statefulsets/cnf",
          "/apis/k8s.cni.cncf.io/v1/namespaces/cnf/network-attachment-definitions/ipvlan-multus",
          "/apis/k8s.cni.cncf.io/v1/namespaces/cnf/network-attachment-definitions/ipvlan-multus-dual",
        ];

        await page("helm install ");
        for (const path of demo) expect(await served(path), path).toBe(200);
        // The upgrade section: what runs now, what the chart would render, then the upgrade.
        const old = objectsOf(await page("helm get manifest "));
        const next = objectsOf(await page("helm template ", 1));
        expect(old.map(idOf).sort()).toEqual(next.map(idOf).sort());
        await page("helm upgrade ");
        for (const path of demo) expect(await served(path), path).toBe(200);
        await page("helm uninstall ");
        for (const path of demo) expect(await served(path), path).toBe(404);
      } finally {
        await sim.close();
      }
    });
  },
);
