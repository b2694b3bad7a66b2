/**
 * The Helm chart (charts/multus-ipmgr), with the helm that scripts/helm-bin.mjs extracts from a
 * devDependency: `helm lint --strict`; `helm template` over a matrix of values, each rendered object valid
 * against the Kubernetes API types (kubernetes-models' validate(), and its TypeScript models, where a misspelt
 * field at any depth is an error); what each value changes; and values.schema.json refusing each misspelt key
 * or wrong type, naming it.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { CHART, DEPLOY_VALUES } from "../scripts/manifests.mjs";
import {
  helm,
  helmUnavailableReason,
  idOf,
  installNotes,
  type K8sObject,
  renderChart,
} from "./helpers/helm.js";
import { renderedTypeFailures } from "./helpers/rendered-types.js";

const ROOT = resolve(import.meta.dirname, "..");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

type Container = {
  name: string;
  image: string;
  args: string[];
  env?: { name: string; value?: string }[];
};
type PodSpec = { initContainers?: Container[]; containers: Container[] };

const podOf = (o: K8sObject): PodSpec => (o.spec as { template: { spec: PodSpec } }).template.spec;
const ipmgrContainers = (o: K8sObject): Container[] =>
  [...(podOf(o).initContainers ?? []), ...podOf(o).containers].filter((c) => c.name !== "app");
const envOf = (c: Container | undefined): Record<string, string> =>
  Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value ?? ""]));
const find = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined)
    throw new Error(`the chart rendered no ${kind} ${name}: ${objects.map(idOf).join(", ")}`);
  return found;
};
/** A Helm hook (the test pod): created by `helm test`, not by `helm install`. */
const isHook = (o: K8sObject): boolean => o.metadata.annotations?.["helm.sh/hook"] !== undefined;
const nadConfig = (o: K8sObject): { ipam: Record<string, unknown> } =>
  JSON.parse((o.spec as { config: string }).config) as { ipam: Record<string, unknown> };

/**
 * Every object of each case against the Kubernetes API types: the failures, one line each, named
 * `case: Kind namespace/name`. One TypeScript program checks all the cases at once (a program costs seconds).
 */
async function typeFailures(cases: Record<string, K8sObject[]>): Promise<string[]> {
  const labelled = Object.entries(cases).flatMap(([name, objects]) =>
    objects.map((object) => ({ label: `${name}: ${idOf(object)}`, object })),
  );
  return renderedTypeFailures(ROOT, labelled);
}

const PREFIX_MODE = `
bridge:
  prefixMode: swap
addressPlan:
  allowedCidrs: [198.51.100.192/26]
  networks:
    - name: ipvlan-multus
      master: eth1
      ranges: [{ range: 198.51.100.0/24, start: 198.51.100.192, end: 198.51.100.254 }]
      allowedCidrs: [198.51.100.192/26]
      nodeSliceSize: /28
    - name: ipvlan-multus-dual
      master: eth1
      ranges: [{ range: 198.51.100.0/24, start: 198.51.100.192, end: 198.51.100.207 }]
      allowedCidrs: [198.51.100.192/27]
      floatingAddresses: [198.51.100.210]
demo:
  enabled: true
`;

/** Another address plan than the defaults': nothing of the defaults' may be left in what renders. */
const OTHER_PLAN = `
addressPlan:
  allowedCidrs: [192.0.2.128/25, 2001:db8:0:2::100/120]
  networks:
    - name: ipvlan-multus
      master: ens6
      ranges: [{ range: 192.0.2.0/24, start: 192.0.2.224, end: 192.0.2.254 }]
      allowedCidrs: [192.0.2.224/27]
    - name: ipvlan-multus-dual
      master: ens6
      ranges:
        - { range: 192.0.2.0/24, start: 192.0.2.128, end: 192.0.2.143 }
        - { range: "2001:db8:0:2::/64", start: "2001:db8:0:2::100", end: "2001:db8:0:2::1ff" }
      allowedCidrs: [192.0.2.128/27, 2001:db8:0:2::100/120]
      floatingAddresses: [192.0.2.150]
demo:
  enabled: true
`;

const MONITORING = `
monitoring:
  enabled: true
  labels: { release: kps }
  sidecar: { enabled: true }
`;

const unavailable = helmUnavailableReason();
if (unavailable !== undefined) process.stderr.write(`note: ${unavailable}; test/chart.test.ts is skipped\n`);

describe.skipIf(unavailable !== undefined)("the chart (charts/multus-ipmgr)", () => {
  it("has package.json's version as its version and appVersion", () => {
    const chart = parseYaml(readFileSync(join(CHART, "Chart.yaml"), "utf8")) as Record<string, string>;
    expect({ version: chart.version, appVersion: chart.appVersion }).toEqual({
      version: VERSION,
      appVersion: VERSION,
    });
  });

  it("passes helm lint --strict with its defaults and with deploy/'s values", () => {
    for (const args of [[], ["--values", DEPLOY_VALUES]]) {
      const run = helm(["lint", "--strict", CHART, ...args]);
      expect({ args, status: run.status, out: run.stdout }).toMatchObject({ args, status: 0 });
      expect(run.stdout).toContain("1 chart(s) linted, 0 chart(s) failed");
    }
  });

  it("renders objects valid against the Kubernetes API types over a matrix of values", async () => {
    const matrix: Record<string, string | undefined> = {
      "the defaults (the bridge alone)": undefined,
      "deploy/'s values (demo, monitoring)": readFileSync(DEPLOY_VALUES, "utf8"),
      "the bridge in prefix mode, over node-sliced networks": PREFIX_MODE,
      "the init and sidecar snippets on another address plan": OTHER_PLAN,
      "monitoring on, with the sidecar's": MONITORING,
    };
    const cases = Object.fromEntries(
      Object.entries(matrix).map(([name, values]) => [name, renderChart(values)]),
    );
    for (const [name, objects] of Object.entries(cases))
      expect({ name, objects: objects.length > 0 }).toEqual({ name, objects: true });
    expect(await typeFailures(cases)).toEqual([]);
  });

  it("the type checks find a misspelt field of a rendered object, and name it", async () => {
    const objects = renderChart();
    const daemonSet = structuredClone(find(objects, "DaemonSet", "multus-ipmgr-bridge"));
    Object.assign(podOf(daemonSet).containers[0] ?? {}, { imagePullPolcy: "Always" });
    const failures = await typeFailures({ misspelt: [daemonSet] });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain("misspelt: DaemonSet kube-system/multus-ipmgr-bridge");
    expect(failures[0]).toContain("spec.template.spec.containers[0].imagePullPolcy");
  });

  it("a bridge-only install (the defaults) creates the bridge's objects and no demo object", () => {
    const objects = renderChart();
    expect(objects.filter(isHook).map(idOf)).toEqual(["Pod kube-system/multus-ipmgr-bridge-doctor-node"]);
    expect(
      objects
        .filter((o) => !isHook(o))
        .map(idOf)
        .sort(),
    ).toEqual([
      "ClusterRole /multus-ipmgr-bridge",
      "ClusterRoleBinding /multus-ipmgr-bridge",
      "DaemonSet kube-system/multus-ipmgr-bridge",
      "Role kube-system/multus-ipmgr-bridge-lease",
      "RoleBinding kube-system/multus-ipmgr-bridge-lease",
      "ServiceAccount kube-system/multus-ipmgr-bridge",
    ]);
  });

  it("the address plan is the one place of the addresses: NADs, the bridge's and the pods' IPMGR_ALLOWED_CIDRS, the floating address", () => {
    const objects = renderChart(OTHER_PLAN);
    const text = JSON.stringify(objects);
    expect(text).not.toContain("198.51.100.");
    expect(text).not.toContain("2001:db8:0:1:");
    expect(
      envOf(ipmgrContainers(find(objects, "DaemonSet", "multus-ipmgr-bridge"))[0]).IPMGR_ALLOWED_CIDRS,
    ).toBe("192.0.2.128/25,2001:db8:0:2::100/120");
    expect(envOf(ipmgrContainers(find(objects, "Deployment", "cnf-worker"))[0]).IPMGR_ALLOWED_CIDRS).toBe(
      "192.0.2.224/27",
    );
    expect(envOf(ipmgrContainers(find(objects, "StatefulSet", "cnf"))[0]).IPMGR_ALLOWED_CIDRS).toBe(
      "192.0.2.128/27,2001:db8:0:2::100/120",
    );
    const single = nadConfig(find(objects, "NetworkAttachmentDefinition", "ipvlan-multus"));
    expect(single).toMatchObject({
      master: "ens6",
      mode: "l2",
      type: "ipvlan",
      ipam: {
        type: "whereabouts",
        range: "192.0.2.0/24",
        range_start: "192.0.2.224",
        range_end: "192.0.2.254",
      },
    });
    expect(
      nadConfig(find(objects, "NetworkAttachmentDefinition", "ipvlan-multus-dual")).ipam.ipRanges,
    ).toEqual([
      { range: "192.0.2.0/24", range_start: "192.0.2.128", range_end: "192.0.2.143" },
      { range: "2001:db8:0:2::/64", range_start: "2001:db8:0:2::100", range_end: "2001:db8:0:2::1ff" },
    ]);
    const demo = objects.filter((o) => !["kube-system", undefined].includes(o.metadata.namespace));
    expect(demo.map((o) => o.metadata.namespace)).toEqual(demo.map(() => "cnf"));
  });

  it("prefix mode: the bridge's IPMGR_BRIDGE_PREFIX_MODE and the NADs' node_slice_size", () => {
    const objects = renderChart(PREFIX_MODE);
    expect(
      envOf(ipmgrContainers(find(objects, "DaemonSet", "multus-ipmgr-bridge"))[0]).IPMGR_BRIDGE_PREFIX_MODE,
    ).toBe("swap");
    expect(
      nadConfig(find(objects, "NetworkAttachmentDefinition", "ipvlan-multus")).ipam.node_slice_size,
    ).toBe("/28");
    expect(
      nadConfig(find(objects, "NetworkAttachmentDefinition", "ipvlan-multus-dual")).ipam,
    ).not.toHaveProperty("node_slice_size");
    expect(
      envOf(ipmgrContainers(find(renderChart(), "DaemonSet", "multus-ipmgr-bridge"))[0]),
    ).not.toHaveProperty("IPMGR_BRIDGE_PREFIX_MODE");
  });

  it("the image: the chart's appVersion by default, a registry and a digest when given", () => {
    const image = (values?: string) =>
      ipmgrContainers(find(renderChart(values), "DaemonSet", "multus-ipmgr-bridge"))[0]?.image;
    expect(image()).toBe(`multus-ipmgr:${VERSION}`);
    const digest = `sha256:${"ab".repeat(32)}`;
    expect(
      image(`image: { registry: 111122223333.dkr.ecr.eu-west-1.amazonaws.com, digest: "${digest}" }`),
    ).toBe(`111122223333.dkr.ecr.eu-west-1.amazonaws.com/multus-ipmgr@${digest}`);
    expect(image("image: { tag: 0.2.0-rc.1 }")).toBe("multus-ipmgr:0.2.0-rc.1");
  });

  it("IRSA: the ServiceAccounts carry the role annotations given; Pod Identity needs none", () => {
    const role = (name: string) => `arn:aws:iam::111122223333:role/${name}`;
    const objects = renderChart(`
bridge: { serviceAccount: { annotations: { eks.amazonaws.com/role-arn: "${role("multus-ipmgr-bridge")}" } } }
pods: { serviceAccount: { annotations: { eks.amazonaws.com/role-arn: "${role("multus-ipmgr-pod")}" } } }
demo: { enabled: true }
`);
    expect(find(objects, "ServiceAccount", "multus-ipmgr-bridge").metadata.annotations).toEqual({
      "eks.amazonaws.com/role-arn": role("multus-ipmgr-bridge"),
    });
    expect(find(objects, "ServiceAccount", "multus-ipmgr").metadata.annotations).toEqual({
      "eks.amazonaws.com/role-arn": role("multus-ipmgr-pod"),
    });
    expect(find(renderChart(), "ServiceAccount", "multus-ipmgr-bridge").metadata.annotations).toBeUndefined();
  });

  it("monitoring: absent() for each job, rules and the sidecar's ServiceMonitor bound to no namespace, the release label on each", () => {
    const objects = renderChart(MONITORING);
    const monitoring = objects.filter((o) => o.apiVersion === "monitoring.coreos.com/v1");
    expect(monitoring.map(idOf).sort()).toEqual([
      "PrometheusRule kube-system/multus-ipmgr",
      "ServiceMonitor kube-system/multus-ipmgr-bridge",
      "ServiceMonitor kube-system/multus-ipmgr-sidecar",
    ]);
    for (const o of monitoring)
      expect({ o: idOf(o), release: o.metadata.labels?.release }).toEqual({ o: idOf(o), release: "kps" });
    const sidecar = find(objects, "ServiceMonitor", "multus-ipmgr-sidecar").spec as Record<string, unknown>;
    expect(sidecar.namespaceSelector).toEqual({ any: true });
    const groups = (
      find(objects, "PrometheusRule", "multus-ipmgr").spec as {
        groups: { name: string; rules: { alert: string; expr: string }[] }[];
      }
    ).groups;
    expect(groups.map((g) => g.name)).toEqual(["multus-ipmgr-sidecar", "multus-ipmgr-bridge"]);
    for (const g of groups) {
      expect(g.rules.map((r) => r.expr)).toContain(`absent(up{job="${g.name}"})`);
      for (const r of g.rules)
        expect({ alert: r.alert, expr: r.expr }).toEqual({
          alert: r.alert,
          expr: expect.not.stringMatching(/namespace=|pod=|app_kubernetes_io/),
        });
    }
    const bridgeOnly = find(renderChart("monitoring: { enabled: true }"), "PrometheusRule", "multus-ipmgr");
    expect((bridgeOnly.spec as { groups: { name: string }[] }).groups.map((g) => g.name)).toEqual([
      "multus-ipmgr-bridge",
    ]);
    // Neither the bridge nor the sidecar's monitoring: no rule group, so no PrometheusRule (its groups are required).
    expect(renderChart("bridge: { enabled: false }\nmonitoring: { enabled: true }").map(idOf)).toEqual([]);
  });
});

type EnvVar = { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } };
type ProbedContainer = Omit<Container, "env"> & {
  env: EnvVar[];
  readinessProbe: { httpGet: Record<string, unknown> };
  livenessProbe: { httpGet: Record<string, unknown> };
};
type TestPodSpec = {
  hostNetwork: boolean;
  serviceAccountName: string;
  restartPolicy: string;
  nodeSelector?: Record<string, string>;
  affinity?: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: unknown[] } };
  tolerations?: unknown[];
  containers: ProbedContainer[];
};

describe.skipIf(unavailable !== undefined)("helm test (templates/tests/doctor-node.yaml)", () => {
  const testPod = (values?: string): K8sObject =>
    find(renderChart(values), "Pod", "multus-ipmgr-bridge-doctor-node");

  it("runs doctor --profile node in a pod like the bridge's: host network, its ServiceAccount, its allowed CIDRs, next to a bridge pod", () => {
    const objects = renderChart();
    const pod = find(objects, "Pod", "multus-ipmgr-bridge-doctor-node");
    const daemonSet = find(objects, "DaemonSet", "multus-ipmgr-bridge");
    const bridgePod = (
      daemonSet.spec as {
        template: { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> };
      }
    ).template;
    expect(pod.metadata.annotations).toEqual({
      "helm.sh/hook": "test",
      "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
    });
    const spec = pod.spec as TestPodSpec;
    expect({
      hostNetwork: spec.hostNetwork,
      serviceAccountName: spec.serviceAccountName,
      restartPolicy: spec.restartPolicy,
    }).toEqual({
      hostNetwork: true,
      serviceAccountName: find(objects, "ServiceAccount", "multus-ipmgr-bridge").metadata.name,
      restartPolicy: "Never",
    });
    expect(spec.tolerations).toEqual(bridgePod.spec.tolerations);
    expect(spec.affinity?.podAffinity.requiredDuringSchedulingIgnoredDuringExecution).toEqual([
      { labelSelector: { matchLabels: bridgePod.metadata.labels }, topologyKey: "kubernetes.io/hostname" },
    ]);
    const [doctor, ...others] = spec.containers;
    expect(others).toEqual([]);
    expect(doctor?.args).toEqual(["doctor", "--profile", "node"]);
    expect(doctor?.image).toBe(ipmgrContainers(daemonSet)[0]?.image);
    const bridgeEnv = envOf(ipmgrContainers(daemonSet)[0]);
    expect(envOf(doctor).IPMGR_ALLOWED_CIDRS).toBe(bridgeEnv.IPMGR_ALLOWED_CIDRS);
    expect(doctor?.env.find((e) => e.name === "NODE_NAME")?.valueFrom).toEqual({
      fieldRef: { fieldPath: "spec.nodeName" },
    });
  });

  it("tests.nodeName pins the node; the bridge's extraEnv goes along; tests.enabled false or no bridge renders no test", () => {
    const pinned = testPod(
      "tests: { nodeName: ip-10-0-8-17.eu-west-1.compute.internal }\nbridge: { extraEnv: [{ name: AWS_REGION, value: eu-west-1 }] }",
    );
    const spec = pinned.spec as TestPodSpec;
    expect(spec.nodeSelector).toEqual({
      "kubernetes.io/hostname": "ip-10-0-8-17.eu-west-1.compute.internal",
    });
    expect(spec.affinity).toBeUndefined();
    expect(envOf(spec.containers[0]).AWS_REGION).toBe("eu-west-1");
    expect(renderChart("tests: { enabled: false }").filter(isHook)).toEqual([]);
    expect(installNotes()).toContain("\n  helm test multus-ipmgr --namespace kube-system\n");
    expect(installNotes("tests: { enabled: false }")).not.toContain("helm test");
    expect(renderChart("bridge: { enabled: false }").filter(isHook)).toEqual([]);
  });

  it("with bridge.attach.enabled, doctor gets the bridge's attach settings (it probes attach mode's calls); without, none", () => {
    const values =
      "bridge: { attach: { enabled: true, clusterName: prod-1, networks: [{ name: eth1, deviceIndex: 1, subnet: { byZone: { us-east-1a: subnet-0123 } }, securityGroups: { ids: [sg-0123] } }] } }";
    const objects = renderChart(values);
    const bridgeEnv = envOf(ipmgrContainers(find(objects, "DaemonSet", "multus-ipmgr-bridge"))[0]);
    const doctorEnv = envOf(
      (find(objects, "Pod", "multus-ipmgr-bridge-doctor-node").spec as TestPodSpec).containers[0],
    );
    for (const name of ["IPMGR_BRIDGE_ATTACH", "IPMGR_BRIDGE_ATTACH_NETWORKS", "IPMGR_CLUSTER_NAME"]) {
      expect({ name, value: doctorEnv[name] }).toEqual({ name, value: bridgeEnv[name] });
    }
    expect(doctorEnv.IPMGR_BRIDGE_ATTACH).toBe("on");
    // It lands on a node that still carries the startup taint, even with the bridge's tolerations narrowed.
    const narrowed = renderChart(values.replace("attach:", "tolerations: [], attach:"));
    const tolerations = (
      find(narrowed, "Pod", "multus-ipmgr-bridge-doctor-node").spec as { tolerations?: unknown[] }
    ).tolerations;
    expect(tolerations).toEqual([
      { key: "multus-ipmgr.io/enis-not-ready", operator: "Exists", effect: "NoSchedule" },
    ]);
    const off = envOf((testPod().spec as TestPodSpec).containers[0]);
    expect(off.IPMGR_BRIDGE_ATTACH).toBeUndefined();
  });
});

describe.skipIf(unavailable !== undefined)("the bridge's listen address (bridge.httpHost)", () => {
  const bridge = (values?: string): ProbedContainer =>
    podOf(find(renderChart(values), "DaemonSet", "multus-ipmgr-bridge")).containers[0] as ProbedContainer;

  it("defaults to the node's own address (status.hostIP), which the probes and the metrics Service reach", () => {
    const container = bridge();
    expect(container.env.find((e) => e.name === "IPMGR_HTTP_HOST")).toEqual({
      name: "IPMGR_HTTP_HOST",
      valueFrom: { fieldRef: { fieldPath: "status.hostIP" } },
    });
    // No host: the kubelet probes the pod's address, a host-network pod's is its node's.
    expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
    const service = find(
      renderChart("monitoring: { enabled: true }"),
      "Service",
      "multus-ipmgr-bridge-metrics",
    );
    expect(service.spec).toMatchObject({ clusterIP: "None", ports: [{ port: 9180, targetPort: 9180 }] });
  });

  it("takes an address: 127.0.0.1 closes it to the node, the probes follow it; 0.0.0.0 leaves them on the pod's address", () => {
    const loopback = bridge("bridge: { httpHost: 127.0.0.1 }");
    expect(envOf(loopback).IPMGR_HTTP_HOST).toBe("127.0.0.1");
    expect(loopback.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http", host: "127.0.0.1" });
    expect(loopback.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http", host: "127.0.0.1" });
    const every = bridge("bridge: { httpHost: 0.0.0.0 }");
    expect(envOf(every).IPMGR_HTTP_HOST).toBe("0.0.0.0");
    expect(every.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
  });

  it("refuses a loopback address with monitoring on, naming the value and the fix", () => {
    const run = helm(
      ["template", "multus-ipmgr", CHART],
      "bridge: { httpHost: 127.0.0.1 }\nmonitoring: { enabled: true }",
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      "bridge.httpHost 127.0.0.1 keeps /metrics on each node, where Prometheus cannot scrape it, and monitoring.enabled is true: leave bridge.httpHost empty (the node's own address) and close port 9180 to the rest of the VPC with the nodes' security groups, or set monitoring.enabled to false",
    );
  });
});

/** The IAM policies (JSON objects, each starting with `{` alone on a line) that NOTES print. */
const policiesIn = (notes: string): unknown[] =>
  [...notes.matchAll(/^\{\n[\s\S]*?^\}$/gm)].map((m) => JSON.parse(m[0]) as unknown);
const deployPolicy = (file: string): unknown =>
  JSON.parse(readFileSync(join(ROOT, "deploy", "iam", file), "utf8"));

interface Policy {
  Statement: { Sid: string; Action: string[] }[];
}

/** deploy's bridge policy less what the defaults (reservations report, prefix mode off) never call. */
function defaultBridgePolicy(): Policy {
  const policy = deployPolicy("iam-policy-bridge.json") as Policy;
  const writes = ["ReservePodRanges", "TagReservationsWhenCreated", "DeleteOwnReservations"];
  return {
    ...policy,
    Statement: policy.Statement.filter((s) => !writes.includes(s.Sid)).map((s) => ({
      ...s,
      Action: s.Action.filter((a) => a !== "ec2:DescribeInstanceTypes"),
    })),
  };
}

/** The default bridge policy with DescribeInstanceTypes, which attach mode calls for the instance's ENI limits. */
function attachModeBridgePolicy(): Policy {
  const whole = deployPolicy("iam-policy-bridge.json") as Policy;
  const policy = defaultBridgePolicy();
  return {
    ...policy,
    Statement: policy.Statement.map(
      (s) => whole.Statement.find((w) => w.Sid === s.Sid && w.Sid === "ReadEnisAndReservations") ?? s,
    ),
  };
}

describe.skipIf(unavailable !== undefined)("the chart's NOTES (helm install)", () => {
  it("print the bridge's IAM policy for the values: no reservation write, no DescribeInstanceTypes by default", () => {
    const notes = installNotes();
    expect(policiesIn(notes)).toEqual([defaultBridgePolicy()]);
    expect(JSON.stringify(policiesIn(notes))).not.toMatch(
      /SubnetCidrReservation"|DescribeInstanceTypes|CreateTags/,
    );
  });

  it("print the whole bridge policy with reservations create and prefix mode on", () => {
    const notes = installNotes("bridge: { reservations: create, prefixMode: swap }");
    expect(policiesIn(notes)).toEqual([deployPolicy("iam-policy-bridge.json")]);
  });

  it("in attach mode, print the attach policy with the cluster's name, and keep DescribeInstanceTypes", () => {
    const notes = installNotes(`
bridge:
  extraEnv:
    - { name: IPMGR_BRIDGE_ATTACH, value: "on" }
    - { name: IPMGR_CLUSTER_NAME, value: prod-a }
`);
    const attach = JSON.parse(
      readFileSync(join(ROOT, "deploy", "iam", "iam-policy-attach.json"), "utf8").replaceAll(
        "<CLUSTER_NAME>",
        "prod-a",
      ),
    ) as unknown;
    expect(policiesIn(notes)).toEqual([attachModeBridgePolicy(), attach]);
    expect(notes).toContain("tagged multus-ipmgr.io/cluster=prod-a:");
    expect(notes).not.toContain('<CLUSTER_NAME>"');
  });

  it("with bridge.attach.enabled, print the attach policy with bridge.attach.clusterName", () => {
    const notes = installNotes(
      "bridge: { attach: { enabled: true, clusterName: prod-b, networks: [{ name: eth1, deviceIndex: 1, subnet: { byZone: { us-east-1a: subnet-0123 } }, securityGroups: { ids: [sg-0123] } }] } }",
    );
    const attach = JSON.parse(
      readFileSync(join(ROOT, "deploy", "iam", "iam-policy-attach.json"), "utf8").replaceAll(
        "<CLUSTER_NAME>",
        "prod-b",
      ),
    ) as unknown;
    expect(policiesIn(notes)).toEqual([attachModeBridgePolicy(), attach]);
  });

  it("in attach mode without the cluster's name, print the attach policy with its placeholder and say so", () => {
    const notes = installNotes(`bridge: { extraEnv: [{ name: IPMGR_BRIDGE_ATTACH, value: "on" }] }`);
    expect(policiesIn(notes)).toEqual([attachModeBridgePolicy(), deployPolicy("iam-policy-attach.json")]);
    expect(notes).toContain("(replace <CLUSTER_NAME> with IPMGR_CLUSTER_NAME)");
  });

  it("print no attach policy when attach mode is off", () => {
    const notes = installNotes(`bridge: { extraEnv: [{ name: IPMGR_BRIDGE_ATTACH, value: "off" }] }`);
    expect(policiesIn(notes)).toEqual([defaultBridgePolicy()]);
    expect(notes).not.toContain("iam-policy-attach.json");
  });

  it("print the bridge's ServiceAccount and the Pod Identity association, and no pod policy", () => {
    const notes = installNotes();
    expect(policiesIn(notes)).toHaveLength(1);
    expect(notes).toContain("the bridge's ServiceAccount kube-system/multus-ipmgr-bridge needs an IAM role");
    expect(notes.replace(/\\\n\s*/g, "")).toContain(
      "aws eks create-pod-identity-association --cluster-name <CLUSTER_NAME> --namespace kube-system " +
        "--service-account multus-ipmgr-bridge --role-arn arn:aws:iam::<ACCOUNT_ID>:role/multus-ipmgr-bridge",
    );
  });

  it("with IRSA annotations and the demo's pods, name the roles and print the pod policy too", () => {
    const notes = installNotes(`
bridge: { serviceAccount: { annotations: { eks.amazonaws.com/role-arn: "arn:aws:iam::111122223333:role/b" } } }
demo: { enabled: true }
`);
    expect(policiesIn(notes)).toEqual([defaultBridgePolicy(), deployPolicy("iam-policy-pod.json")]);
    expect(notes).toContain("IRSA: the ServiceAccount names the role arn:aws:iam::111122223333:role/b");
    expect(notes).toContain("system:serviceaccount:kube-system:multus-ipmgr-bridge");
    expect(notes).toContain("--namespace cnf --service-account multus-ipmgr");
    expect(notes).toContain("deploy/iam/iam-policy-elastic-ips.json");
  });

  it("print no IAM policy when nothing that calls EC2 is installed", () => {
    expect(policiesIn(installNotes("bridge: { enabled: false }"))).toEqual([]);
  });
});

/** Each a misspelt key or a wrong type, and what helm's schema error must name. */
const TYPOS: [string, string][] = [
  ["bridge: { prefixMod: swap }", "at '/bridge': additional properties 'prefixMod' not allowed"],
  ["bridge: { prefixMode: always }", "at '/bridge/prefixMode'"],
  ["bridge: { httpPort: '9180' }", "at '/bridge/httpPort': got string, want integer"],
  ["bridge: { releaseDryRun: 'yes' }", "at '/bridge/releaseDryRun': got string, want boolean"],
  ["bridge: { reservation: create }", "additional properties 'reservation' not allowed"],
  [
    "bridge: { resources: { request: { cpu: 1 } } }",
    "at '/bridge/resources': additional properties 'request' not allowed",
  ],
  [
    "bridge: { tolerations: [{ operater: Exists }] }",
    "at '/bridge/tolerations/0': additional properties 'operater' not allowed",
  ],
  ["bridge: { securityContext: { runAsUSer: 0 } }", "additional properties 'runAsUSer' not allowed"],
  ["image: { tags: v1 }", "at '/image': additional properties 'tags' not allowed"],
  ["image: { digest: v1 }", "at '/image/digest'"],
  [
    "addressPlan: { allowedCidr: [192.0.2.0/24] }",
    "at '/addressPlan': additional properties 'allowedCidr' not allowed",
  ],
  ["addressPlan: { allowedCidrs: [192.0.2.0] }", "at '/addressPlan/allowedCidrs/0'"],
  [
    "addressPlan: { allowedCidrs: [192.0.2.0/24], networks: [{ name: n, mastr: eth1, master: eth1, ranges: [{ range: 192.0.2.0/24, start: 192.0.2.10, end: 192.0.2.20 }], allowedCidrs: [192.0.2.0/27] }] }",
    "at '/addressPlan/networks/0': additional properties 'mastr' not allowed",
  ],
  ["monitoring: { enable: true }", "at '/monitoring': additional properties 'enable' not allowed"],
  [
    "monitoring: { sidecar: { serviceLabel: { a: b } } }",
    "at '/monitoring/sidecar': additional properties 'serviceLabel' not allowed",
  ],
  ["bridge: { httpHost: localhost }", "at '/bridge/httpHost'"],
  // The bridge takes a links status older than 6 s as absent: a slower agent would keep the taint on.
  ["bridge: { attach: { linksIntervalMs: 2001 } }", "at '/bridge/attach/linksIntervalMs'"],
  ["tests: { nodeNmae: n1 }", "at '/tests': additional properties 'nodeNmae' not allowed"],
  ["demo: { enabled: 'true' }", "at '/demo/enabled': got string, want boolean"],
  ["demos: { enabled: true }", "additional properties 'demos' not allowed"],
  [
    "pods: { serviceAccount: { annotation: {} } }",
    "at '/pods/serviceAccount': additional properties 'annotation' not allowed",
  ],
];

describe.skipIf(unavailable !== undefined)("values.schema.json", () => {
  it.each(TYPOS)("refuses %s in helm template and helm lint --strict, naming the key", (values, named) => {
    const template = helm(["template", "multus-ipmgr", CHART], values);
    expect({ status: template.status, stdout: template.stdout }).toEqual({ status: 1, stdout: "" });
    expect(template.stderr).toContain("values don't meet the specifications of the schema");
    expect(template.stderr).toContain(named);
    const lint = helm(["lint", "--strict", CHART], values);
    expect(lint.status).toBe(1);
    expect(lint.stdout).toContain(named);
  });

  it("has additionalProperties false on every object of fixed keys (maps of names are the only open ones)", () => {
    const schema = JSON.parse(readFileSync(join(CHART, "values.schema.json"), "utf8")) as Record<
      string,
      unknown
    >;
    const open: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== "object" || node === null) return;
      const n = node as Record<string, unknown>;
      if (n.type === "object" && n.properties !== undefined && n.additionalProperties !== false)
        open.push(path);
      for (const [k, v] of Object.entries(n)) walk(v, `${path}/${k}`);
    };
    walk(schema, "");
    expect(open).toEqual([]);
  });
});
