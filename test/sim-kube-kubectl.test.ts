import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadWorldFile, type SimulatorHandle } from "../src/sim/index.js";
import { writeKubeconfig } from "../src/sim/kube/kubeconfig.js";
import {
  control,
  eventually,
  kubeEndpointOf,
  kubeWorld,
  MAC_B,
  multusPod,
  NODE_B,
  startKubeSim,
} from "./helpers/kube-worlds.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

/**
 * kubectl, a second real client, against the simulator. CI machines may not have it (it is not installed
 * by the project): the tests are then skipped, with the reason printed.
 */
const probe = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8", timeout: 30_000 });
const kubectlMissing =
  probe.error !== undefined || probe.status !== 0
    ? `kubectl is not installed (${probe.error?.message ?? probe.stderr.trim()}); the kubectl tests are skipped`
    : undefined;
if (kubectlMissing !== undefined) process.stderr.write(`note: ${kubectlMissing}\n`);

let sim: SimulatorHandle | undefined;
let dir: string | undefined;
const children: ChildProcess[] = [];

beforeEach(async () => {
  sim = await startKubeSim(kubeWorld());
  dir = makeTempDir("ipmgr-kube-");
  await writeKubeconfig(join(dir, "kubeconfig"), kubeEndpointOf(sim));
});

afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await sim?.close();
  sim = undefined;
  removeTempDir(dir);
  dir = undefined;
});

function args(rest: string[]): string[] {
  // A cache of its own: kubectl would otherwise cache discovery under ~/.kube.
  return [
    "--kubeconfig",
    join(dir as string, "kubeconfig"),
    "--cache-dir",
    join(dir as string, "cache"),
    "--request-timeout=20s",
    ...rest,
  ];
}

function kubectl(...rest: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("kubectl", args(rest), { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr });
    });
  });
}

describe.skipIf(kubectlMissing !== undefined)("kubectl against the simulator", () => {
  it("gets pods in every namespace and nodes", async () => {
    const pods = await kubectl("get", "pods", "-A");
    expect(pods.stderr).toBe("");
    expect(pods.stdout.split("\n")[0]).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
    expect(pods.stdout).toMatch(/^cnf\s+upf-0\s+1\/1\s+Running\s+0\s+\d+s$/m);
    const nodes = await kubectl("get", "nodes", "-o", "wide");
    expect(nodes.stdout).toMatch(
      /^ip-198-51-100-20\.ec2\.internal\s+Ready\s+<none>\s+\d+s\s+v1\.31\.0\s+198\.51\.100\.20$/m,
    );
  });

  it("sees a pod added while it watches (get -w)", async () => {
    const child = spawn("kubectl", args(["get", "pods", "-n", "cnf", "-w"]), {
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    await eventually(() => out.includes("upf-0"), "the listed pod", 30_000);
    await control(
      sim as SimulatorHandle,
      "POST",
      "/kubernetes/pods",
      multusPod("upf-1", NODE_B, ["198.51.100.194"], MAC_B),
    );
    await eventually(() => /^upf-1\s+1\/1\s+Running/m.test(out), "the added pod", 30_000);
  });

  it("applies a NetworkAttachmentDefinition (create, unchanged, configured) and deletes it", async () => {
    const file = join(dir as string, "nad.yaml");
    const manifest = (master: string) =>
      [
        "apiVersion: k8s.cni.cncf.io/v1",
        "kind: NetworkAttachmentDefinition",
        "metadata: { name: sriov-net, namespace: cnf }",
        `spec: { config: '{"cniVersion":"0.3.1","type":"ipvlan","master":"${master}","ipam":{"type":"whereabouts","range":"198.51.100.224/28"}}' }`,
      ].join("\n");
    writeFileSync(file, manifest("eth2"));
    expect((await kubectl("apply", "-f", file)).stdout).toBe(
      "networkattachmentdefinition.k8s.cni.cncf.io/sriov-net created\n",
    );
    expect((await kubectl("apply", "-f", file)).stdout).toBe(
      "networkattachmentdefinition.k8s.cni.cncf.io/sriov-net unchanged\n",
    );
    writeFileSync(file, manifest("eth3"));
    expect((await kubectl("apply", "-f", file)).stdout).toBe(
      "networkattachmentdefinition.k8s.cni.cncf.io/sriov-net configured\n",
    );
    const nad = sim
      ?.state()
      .kubernetes?.networkAttachmentDefinitions.find((n) => n.metadata.name === "sriov-net");
    const spec = nad?.spec as { config: string } | undefined;
    expect(JSON.parse(spec?.config ?? "{}").master).toBe("eth3");
    expect(nad?.metadata.annotations?.["kubectl.kubernetes.io/last-applied-configuration"]).toContain("eth3");
    const deleted = await kubectl("delete", "-f", file);
    expect(deleted.stdout).toBe('networkattachmentdefinition.k8s.cni.cncf.io "sriov-net" deleted\n');
    expect(sim?.state().kubernetes?.networkAttachmentDefinitions.map((n) => n.metadata.name)).toEqual([
      "multus-ipvlan",
    ]);
  });

  it("applies a node-sliced NAD, then gets, reads and edits the NodeSlicePool whereabouts' controller makes", async () => {
    const file = join(dir as string, "sliced.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: k8s.cni.cncf.io/v1",
        "kind: NetworkAttachmentDefinition",
        "metadata: { name: slices, namespace: kube-system }",
        `spec: { config: '{"cniVersion":"0.3.1","name":"slices","type":"ipvlan","master":"eth1","ipam":{"type":"whereabouts","network_name":"slices","range":"198.51.100.224/27","node_slice_size":"/28"}}' }`,
      ].join("\n"),
    );
    expect((await kubectl("apply", "-f", file)).stdout).toBe(
      "networkattachmentdefinition.k8s.cni.cncf.io/slices created\n",
    );
    let listed = "";
    await eventually(async () => {
      listed = (await kubectl("get", "nodeslicepools", "-n", "kube-system")).stdout;
      return listed.includes("slices");
    }, "the NodeSlicePool listed");
    expect(listed).toMatch(/^NAME\s+AGE\nslices\s+\d+s\n$/);
    const slices = await kubectl(
      "get",
      "nodeslicepool",
      "slices",
      "-n",
      "kube-system",
      "-o",
      "jsonpath={range .status.allocations[*]}{.nodeName}={.sliceRange}{'\\n'}{end}",
    );
    expect(slices.stdout).toBe(
      "ip-198-51-100-10.ec2.internal=198.51.100.224/28\nip-198-51-100-20.ec2.internal=198.51.100.240/28\n",
    );
    const patched = await kubectl(
      "patch",
      "nodeslicepool",
      "slices",
      "-n",
      "kube-system",
      "--type=json",
      "-p",
      '[{"op":"replace","path":"/status/allocations/1/nodeName","value":""}]',
    );
    expect(patched).toMatchObject({
      code: 0,
      stdout: "nodeslicepool.whereabouts.cni.cncf.io/slices patched\n",
    });
    const pool = sim?.state().kubernetes?.nodeSlicePools.find((p) => p.metadata.name === "slices");
    expect((pool?.status as { allocations: unknown[] } | undefined)?.allocations[1]).toEqual({
      nodeName: "",
      sliceRange: "198.51.100.240/28",
    });
  });

  it("applies a ConfigMap server-side: created, a dropped key removed, another manager's change refused until --force-conflicts", async () => {
    const file = join(dir as string, "cm.yaml");
    const manifest = (data: string) =>
      ["apiVersion: v1", "kind: ConfigMap", "metadata: { name: plan, namespace: cnf }", `data: ${data}`].join(
        "\n",
      );
    writeFileSync(file, manifest("{ a: '1', b: '2' }"));
    expect(await kubectl("apply", "--server-side", "-f", file)).toMatchObject({
      code: 0,
      stdout: "configmap/plan serverside-applied\n",
    });
    writeFileSync(file, manifest("{ a: '3' }"));
    expect((await kubectl("apply", "--server-side", "-f", file)).code).toBe(0);
    const data = await kubectl("get", "configmap", "-n", "cnf", "plan", "-o", "jsonpath={.data}");
    expect(JSON.parse(data.stdout)).toEqual({ a: "3" });
    writeFileSync(file, manifest("{ a: '4' }"));
    const refused = await kubectl("apply", "--server-side", "--field-manager", "other", "-f", file);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('conflict with "kubectl" using v1: .data.a');
    const forced = await kubectl(
      "apply",
      "--server-side",
      "--field-manager",
      "other",
      "--force-conflicts",
      "-f",
      file,
    );
    expect(forced.code).toBe(0);
    const managers = await kubectl(
      "get",
      "configmap",
      "-n",
      "cnf",
      "plan",
      "--show-managed-fields",
      "-o",
      "jsonpath={.metadata.managedFields[*].manager}",
    );
    expect(managers.stdout.split(" ").sort()).toEqual(["other"]);
  });

  it("deletes a pod and waits for it to be gone", async () => {
    const deleted = await kubectl("delete", "pod", "-n", "cnf", "upf-0");
    expect(deleted).toMatchObject({ code: 0, stdout: 'pod "upf-0" deleted\n' });
    expect(sim?.state().kubernetes?.pods).toEqual([]);
  });

  it("runs docs/sim.md's kubelet stand-in example: kubectl apply, then Running with whereabouts' addresses", async () => {
    const page = readFileSync("docs/sim.md", "utf8");
    const section = page.slice(page.indexOf("**The kubelet stand-in**"));
    const manifest = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(manifest, "docs/sim.md's kubelet stand-in section has a yaml block").toContain("name: upf-2");
    await sim?.close();
    sim = await startKubeSim(await loadWorldFile("examples/world-bridge.yaml"));
    await writeKubeconfig(join(dir as string, "kubeconfig"), kubeEndpointOf(sim));
    const file = join(dir as string, "pod.yaml");
    writeFileSync(file, manifest as string);
    expect(await kubectl("apply", "-f", file)).toMatchObject({ code: 0, stdout: "pod/upf-2 created\n" });
    let wide = "";
    await eventually(async () => {
      wide = (await kubectl("get", "pod", "-n", "cnf", "upf-2", "-o", "wide")).stdout;
      return /\bRunning\b/.test(wide);
    }, "upf-2 Running");
    // The page's line, field by field, whatever the age.
    const fields = (line: string) =>
      line
        .trim()
        .split(/\s+/)
        .map((f, i) => (i === 4 ? "AGE" : f));
    const shown = /^# (upf-2 .*)$/m.exec(section)?.[1] ?? "docs/sim.md shows no upf-2 line";
    expect(fields(wide.split("\n")[1] ?? "")).toEqual(fields(shown));
    const status = await kubectl(
      "get",
      "pod",
      "-n",
      "cnf",
      "upf-2",
      "-o",
      "jsonpath={.metadata.annotations.k8s\\.v1\\.cni\\.cncf\\.io/network-status}",
    );
    expect(JSON.parse(status.stdout)[1]).toEqual({
      name: "cnf/multus-ipvlan",
      interface: "net1",
      ips: ["198.51.100.195", "2001:db8:100:2::102"],
      mac: "02:00:00:00:01:01",
      dns: {},
    });
    for (const address of ["198.51.100.195", "2001:db8:100:2::102"]) expect(section).toContain(address);
  });

  it("shows an Event created without timestamps as <unknown>, as against a real API server", async () => {
    const file = join(dir as string, "event.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: v1",
        "kind: Event",
        "metadata: { name: upf-0.bare, namespace: cnf }",
        "involvedObject: { kind: Pod, namespace: cnf, name: upf-0 }",
        "reason: AddressConflict",
        "message: conflict",
        "type: Warning",
      ].join("\n"),
    );
    expect((await kubectl("create", "-f", file)).stdout).toBe("event/upf-0.bare created\n");
    const events = await kubectl("get", "events", "-n", "cnf");
    expect(
      events.stdout
        .split("\n")[1]
        ?.trim()
        .split(/\s{2,}/),
    ).toEqual(["<unknown>", "Warning", "AddressConflict", "pod/upf-0", "conflict"]);
  });
});
