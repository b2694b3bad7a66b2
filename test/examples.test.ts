/**
 * Every manifest in deploy/ is valid against the Kubernetes schemas (kubernetes-models: its validator for
 * types, required fields and enums, its TypeScript models for unknown fields, see helpers/manifest-types.ts),
 * and says what the product needs: the one image, configuration the commands accept, probes on the
 * sidecar's endpoints, whereabouts pools clear of the addresses AWS reserves and inside the allowed CIDRs.
 * Each overlay (one per way of running) renders, with its ServiceAccounts' IAM steps in docs/install-eks.md;
 * the monitoring objects fit the metrics and the ports; the node-side snippets agree with each other.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { z } from "zod";
import { toolPaths } from "../scripts/helm-bin.mjs";
import {
  addressAtOffset,
  anyCidrContains,
  awsReservedAddresses,
  cidrContains,
  cidrSize,
  compareAddresses,
  parseCidr,
} from "../src/eni/ip.js";
import { podSettings } from "../src/eni/process/config.js";
import { initSettings, loadInitConfig } from "../src/init/settings.js";
import { bridgeSettings, loadBridgeConfig } from "../src/ipam-whereabouts-bridge/settings.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { SidecarMetrics } from "../src/sidecar/metrics.js";
import { loadSidecarConfig, sidecarSettings } from "../src/sidecar/settings.js";
import { bridgeKubeGrants, grantLine } from "./helpers/bridge-rbac.js";
import { helmUnavailableReason } from "./helpers/helm.js";
import { objectId, type RenderedObject, renderKustomization } from "./helpers/kustomize.js";
import { checkManifestTypes, type ManifestDocument } from "./helpers/manifest-types.js";

const ROOT = resolve(import.meta.dirname, "..");
const DEPLOY = join(ROOT, "deploy");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

/** The one image every example names; a user's kustomization gives it a registry (deploy/README.md). */
const IMAGE = `multus-ipmgr:${VERSION}`;
const DOCUMENTATION_RANGES = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"];
const NAD = { apiVersion: "k8s.cni.cncf.io/v1", kind: "NetworkAttachmentDefinition" };
const NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks";
/** The overlays, one per way of running (docs/install-eks.md), and what else renders on its own. */
const OVERLAYS = ["overlays/init", "overlays/sidecar", "overlays/bridge", "overlays/bridge-app"] as const;
const KUSTOMIZATIONS = [...OVERLAYS, "monitoring"];
/** Kinds of the Prometheus Operator (monitoring.coreos.com/v1), which kubernetes-models does not ship. */
const MONITORING = "monitoring.coreos.com/v1";

type Json = Record<string, unknown>;

interface Doc extends ManifestDocument {
  readonly file: string;
}

/** Every YAML file under deploy/ but the node snippets, as `dir/file.yaml`. */
const manifestFiles = (readdirSync(DEPLOY, { recursive: true }) as string[])
  .filter((f) => f.endsWith(".yaml") && !f.startsWith("node/"))
  .sort();

const yamlErrors: string[] = [];
const docs: Doc[] = manifestFiles.flatMap((file) =>
  parseAllDocuments(readFileSync(join(DEPLOY, file), "utf8")).flatMap((parsed, i) => {
    for (const error of parsed.errors) yamlErrors.push(`${file}, document ${i + 1}: ${error.message}`);
    const object: unknown = parsed.toJS();
    if (object === null || object === undefined) return [];
    return [{ file, label: `${file}, document ${i + 1}`, object: object as Json }];
  }),
);

const kindOf = (doc: Doc): string => `${String(doc.object.apiVersion)}/${String(doc.object.kind)}`;
const metadataOf = (
  object: Json,
): { name?: string; namespace?: string; annotations?: Record<string, string> } =>
  (object.metadata ?? {}) as never;
const isNad = (doc: Doc): boolean => kindOf(doc) === `${NAD.apiVersion}/${NAD.kind}`;
const isMonitoring = (doc: Doc): boolean => String(doc.object.apiVersion) === MONITORING;
const objects = docs.filter((d) => d.object.kind !== "Kustomization");

// ---- Pods -------------------------------------------------------------------------------------------------

interface Container {
  name: string;
  image?: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  restartPolicy?: string;
  ports?: { name?: string; containerPort: number }[];
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface Probe {
  httpGet?: { path?: string; port: number | string };
}
interface PodSpec {
  serviceAccountName?: string;
  hostNetwork?: boolean;
  initContainers?: Container[];
  containers: Container[];
  volumes?: {
    name: string;
    downwardAPI?: { items?: { path: string; fieldRef?: { fieldPath: string } }[] };
  }[];
  affinity?: {
    podAntiAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: { topologyKey: string; labelSelector?: unknown }[];
    };
  };
  terminationGracePeriodSeconds?: number;
}
interface Workload {
  readonly doc: Doc;
  readonly name: string;
  readonly namespace: string;
  readonly annotations: Record<string, string>;
  readonly pod: PodSpec;
}

const WORKLOAD_KINDS = new Set(["apps/v1/Deployment", "apps/v1/StatefulSet", "apps/v1/DaemonSet"]);
const workloads: Workload[] = objects
  .filter((d) => WORKLOAD_KINDS.has(kindOf(d)))
  .map((doc) => {
    const template = (doc.object.spec as { template: { metadata?: Json; spec: PodSpec } }).template;
    return {
      doc,
      name: metadataOf(doc.object).name ?? "",
      namespace: metadataOf(doc.object).namespace ?? "default",
      annotations: metadataOf(template).annotations ?? {},
      pod: template.spec,
    };
  });

/** The containers running our image, with the command they run (`init`, `sidecar`, ...). */
function ipmgrContainers(pod: PodSpec): { container: Container; command: string; asInit: boolean }[] {
  return [
    ...(pod.initContainers ?? []).map((c) => ({ container: c, asInit: true })),
    ...pod.containers.map((c) => ({ container: c, asInit: false })),
  ]
    .filter(({ container }) => container.image?.includes("multus-ipmgr") === true)
    .map((x) => ({ ...x, command: x.container.args?.[0] ?? "" }));
}

function envOf(container: Container): Record<string, string> {
  return Object.fromEntries(
    (container.env ?? []).flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value] as const])),
  );
}

/** What the downward API would give, for loading a container's configuration as Kubernetes would start it. */
const FIELD_SAMPLES: Readonly<Record<string, string>> = { "spec.nodeName": "ip-198-51-100-10.ec2.internal" };

function runtimeEnvOf(container: Container): Record<string, string> {
  const fromFields = (container.env ?? []).flatMap((e) => {
    const path = e.valueFrom?.fieldRef?.fieldPath;
    const sample = path === undefined ? undefined : FIELD_SAMPLES[path];
    return sample === undefined ? [] : [[e.name, sample] as const];
  });
  return { ...Object.fromEntries(fromFields), ...envOf(container) };
}

const SETTINGS_OF: Record<string, { env: string }[]> = {
  init: Object.values(initSettings),
  sidecar: Object.values(sidecarSettings),
  bridge: Object.values(bridgeSettings),
};
const LOADERS: Record<string, (argv: readonly string[], env: NodeJS.ProcessEnv) => unknown> = {
  init: loadInitConfig,
  sidecar: loadSidecarConfig,
  bridge: loadBridgeConfig,
};

function portOf(container: Container, probe: Probe | undefined): number | undefined {
  const port = probe?.httpGet?.port;
  return typeof port === "number" ? port : container.ports?.find((p) => p.name === port)?.containerPort;
}

/**
 * The bridge: a DaemonSet's regular container on the node's network (IMDS), NODE_NAME from the downward API,
 * readiness on /readyz and liveness on /healthz at its HTTP port, a termination grace past its shutdown grace.
 */
function checkBridgeContainer(w: Workload, container: Container, asInit: boolean): void {
  expect({ kind: w.doc.object.kind, asInit }).toEqual({ kind: "DaemonSet", asInit: false });
  expect(w.pod.hostNetwork).toBe(true);
  expect(container.env?.find((e) => e.name === bridgeSettings.nodeName.env)?.valueFrom).toEqual({
    fieldRef: { fieldPath: "spec.nodeName" },
  });
  const config = loadBridgeConfig(container.args?.slice(1) ?? [], runtimeEnvOf(container));
  for (const [probe, path] of [
    [container.readinessProbe, "/readyz"],
    [container.livenessProbe, "/healthz"],
  ] as const) {
    expect({ path: probe?.httpGet?.path, port: portOf(container, probe) }).toEqual({
      path,
      port: config.httpPort,
    });
  }
  if (container.startupProbe !== undefined) {
    expect(container.startupProbe.httpGet?.path).toBe("/readyz");
  }
  const resources = (container as { resources?: { requests?: Json; limits?: Json } }).resources;
  expect(Object.keys(resources?.requests ?? {}).sort()).toEqual(["cpu", "memory"]);
  expect(resources?.limits?.memory).toBeDefined();
  const grace = (w.pod.terminationGracePeriodSeconds ?? 30) * 1000;
  expect(grace).toBeGreaterThan(config.shutdownGraceMs + 1000);
}

// ---- NetworkAttachmentDefinitions --------------------------------------------------------------------------

const parses = (f: () => unknown): boolean => {
  try {
    f();
    return true;
  } catch {
    return false;
  }
};
const address = z.string().refine((s) => !s.includes("/") && parses(() => compareAddresses(s, s)), {
  message: "an IP address",
});
const whereaboutsRange = z.strictObject({
  range: z.string().refine((s) => s.includes("/") && parses(() => parseCidr(s)), { message: "a CIDR" }),
  range_start: address.optional(),
  range_end: address.optional(),
  exclude: z.array(z.string()).optional(),
});
/** whereabouts' other documented IPAM keys (README of k8snetworkplumbingwg/whereabouts). */
const whereaboutsOptions = {
  gateway: address.optional(),
  routes: z.array(z.strictObject({ dst: z.string(), gw: address.optional() })).optional(),
  network_name: z.string().optional(),
  enable_overlapping_ranges: z.boolean().optional(),
  node_slice_size: z.string().optional(),
};
/**
 * The CNI configuration we document: ipvlan in L2 mode (optionally `mtu`, `linkInContainer`) with whereabouts,
 * one range or `ipRanges` (dual stack). A key outside these is refused, so a misspelt one fails.
 */
const ipvlanWhereabouts = z.strictObject({
  cniVersion: z.string(),
  name: z.string(),
  type: z.literal("ipvlan"),
  master: z.string().min(1),
  mode: z.literal("l2"),
  mtu: z.number().int().positive().optional(),
  linkInContainer: z.boolean().optional(),
  ipam: z.union([
    z.strictObject({ type: z.literal("whereabouts"), ...whereaboutsRange.shape, ...whereaboutsOptions }),
    z.strictObject({
      type: z.literal("whereabouts"),
      ipRanges: z.array(whereaboutsRange).min(1),
      ...whereaboutsOptions,
    }),
  ]),
});
type WhereaboutsRange = z.infer<typeof whereaboutsRange>;

function rangesOf(config: z.infer<typeof ipvlanWhereabouts>): WhereaboutsRange[] {
  return "ipRanges" in config.ipam ? config.ipam.ipRanges : [config.ipam];
}

/**
 * The first and last address whereabouts may hand out from a range: range_start and range_end, or else the
 * block without its network address and, for IPv4, its broadcast address. For IPv6 both ends of the block
 * count as handed out (conservative).
 */
function poolOf(range: WhereaboutsRange): { first: string; last: string } {
  const ipv4 = parseCidr(range.range).family === 4;
  const reserved = awsReservedAddresses(range.range); // first four and last, ascending
  const network = reserved[0] ?? "";
  const broadcast = reserved[reserved.length - 1] ?? "";
  return {
    first: range.range_start ?? (ipv4 ? (reserved[1] ?? network) : network),
    last: range.range_end ?? (ipv4 ? lastButOne(range.range) : broadcast),
  };
}

function lastButOne(cidr: string): string {
  const size = cidrSize(cidr);
  return addressAtOffset(cidr, size > 1n ? size - 2n : 0n);
}

function excluded(range: WhereaboutsRange, addressText: string): boolean {
  const { first, last } = poolOf(range);
  return (
    compareAddresses(addressText, first) < 0 ||
    compareAddresses(addressText, last) > 0 ||
    (range.exclude ?? []).some((cidr) => cidrContains(cidr, addressText))
  );
}

const nads = objects.filter(isNad).map((doc) => ({
  doc,
  name: metadataOf(doc.object).name ?? "",
  namespace: metadataOf(doc.object).namespace ?? "default",
  configText: String((doc.object.spec as { config?: unknown } | undefined)?.config),
}));

function parsedConfig(configText: string): z.infer<typeof ipvlanWhereabouts> {
  return ipvlanWhereabouts.parse(JSON.parse(configText));
}

/** The NADs a pod names in its networks annotation (`a,b` or `ns/a` or the JSON list form). */
function networksOf(workload: Workload): { name: string; namespace: string }[] {
  const value = workload.annotations[NETWORKS_ANNOTATION];
  if (value === undefined) return [];
  const entries: { name: string; namespace?: string }[] = value.trim().startsWith("[")
    ? (JSON.parse(value) as { name: string; namespace?: string }[])
    : value.split(",").map((s) => {
        const [first, second] = s.trim().split("/");
        return second === undefined ? { name: first ?? "" } : { namespace: first ?? "", name: second };
      });
  return entries.map((e) => ({
    name: e.name.replace(/@.*$/, ""),
    namespace: e.namespace ?? workload.namespace,
  }));
}

// ---- Tests ------------------------------------------------------------------------------------------------

describe("deploy/**/*.yaml", () => {
  it("parse as YAML (no duplicate keys), each document with apiVersion, kind and metadata.name", () => {
    expect(yamlErrors).toEqual([]);
    expect(manifestFiles.length).toBeGreaterThan(0);
    for (const doc of objects) {
      expect({
        doc: doc.label,
        ok: typeof doc.object.apiVersion === "string" && typeof doc.object.kind === "string",
      }).toEqual({ doc: doc.label, ok: true });
      expect({ doc: doc.label, name: typeof metadataOf(doc.object).name }).toEqual({
        doc: doc.label,
        name: "string",
      });
    }
  });

  it("match the Kubernetes schemas (kubernetes-models' validator: types, required fields, enums, formats)", async () => {
    const failures: string[] = [];
    for (const doc of objects.filter((d) => !isNad(d) && !isMonitoring(d))) {
      const { apiVersion, kind } = doc.object as { apiVersion: string; kind: string };
      const specifier = `kubernetes-models/${apiVersion}/${kind}`;
      const module = (await import(/* @vite-ignore */ specifier)) as Record<
        string,
        new (
          data: unknown,
        ) => { validate(): void }
      >;
      const Model = module[kind];
      if (Model === undefined) {
        failures.push(`${doc.label}: kubernetes-models has no ${apiVersion} ${kind}`);
        continue;
      }
      try {
        new Model(doc.object).validate();
      } catch (error) {
        failures.push(`${doc.label}: ${(error as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("name no field the schemas do not know, at any depth (a misspelt field fails here)", () => {
    expect(checkManifestTypes(ROOT, docs)).toEqual([]);
  });

  it("the type check finds a misspelt field deep in a pod template, and names it", () => {
    const deployment = structuredClone(workloads.find((w) => w.name === "cnf-worker")?.doc);
    const nad = structuredClone(nads[0]?.doc);
    if (deployment === undefined || nad === undefined)
      throw new Error("the examples lost their Deployment or NAD");
    const container = (deployment.object.spec as { template: { spec: PodSpec } }).template.spec
      .initContainers?.[0];
    Object.assign(container ?? {}, { imagePullPolcy: "Always" });
    Object.assign(nad.object.spec as Json, { confg: "{}" });
    const problems = checkManifestTypes(ROOT, [deployment, nad]);
    expect(problems.map((p) => [p.document, p.path])).toEqual([
      [deployment.label, "spec.template.spec.initContainers[0].imagePullPolcy"],
      [nad.label, "spec.confg"],
    ]);
    expect(problems[0]?.message).toContain("'\"imagePullPolcy\"' does not exist in type");
  });

  it("cover what a user needs: IPv4 and dual-stack NADs, init, network-status, native sidecar, IRSA, Pod Identity", () => {
    const configs = nads.map((n) => parsedConfig(n.configText));
    expect(configs.some((c) => !("ipRanges" in c.ipam))).toBe(true);
    expect(
      configs.some(
        (c) =>
          "ipRanges" in c.ipam && new Set(c.ipam.ipRanges.map((r) => parseCidr(r.range).family)).size === 2,
      ),
    ).toBe(true);
    const commands = workloads.flatMap((w) =>
      ipmgrContainers(w.pod).map((c) => [w.doc.object.kind, c.command, c.asInit]),
    );
    expect(commands).toContainEqual(["Deployment", "init", true]);
    expect(commands).toContainEqual(["StatefulSet", "sidecar", true]);
    expect(commands).toContainEqual(["DaemonSet", "bridge", false]);
    expect(
      workloads.some((w) =>
        ipmgrContainers(w.pod).some((c) => envOf(c.container).IPMGR_ADDRESS_SOURCE === "network-status"),
      ),
    ).toBe(true);
    const serviceAccounts = objects.filter((d) => d.object.kind === "ServiceAccount").map((d) => d.file);
    expect(serviceAccounts.sort()).toEqual([
      "overlays/bridge/bridge-rbac.yaml",
      "pod-serviceaccount/serviceaccount.yaml",
    ]);
  });
});

describe("the multus-ipmgr containers", () => {
  it.each(
    workloads
      .filter((w) => w.doc.file !== "overlays/bridge-app/deployment-app.yaml")
      .map((w) => [w.doc.label, w] as const),
  )("%s: use the one image and a known command", (_, w) => {
    const containers = ipmgrContainers(w.pod);
    expect(containers.length).toBeGreaterThan(0);
    for (const { container, command } of containers) {
      expect(container.image).toBe(IMAGE);
      expect(["init", "sidecar", "bridge"]).toContain(command);
    }
  });

  it.each(workloads.map((w) => [w.doc.label, w] as const))(
    "%s: environment the command accepts (known variables, valid values)",
    (_, w) => {
      for (const { container, command } of ipmgrContainers(w.pod)) {
        const known = new Set((SETTINGS_OF[command] ?? []).map((s) => s.env));
        const unknown = (container.env ?? [])
          .map((e) => e.name)
          .filter((n) => n.startsWith("IPMGR_") && !known.has(n));
        expect({ container: container.name, unknown }).toEqual({ container: container.name, unknown: [] });
        const load = LOADERS[command];
        expect(load).toBeDefined();
        expect(() => load?.(container.args?.slice(1) ?? [], runtimeEnvOf(container))).not.toThrow();
      }
    },
  );

  it.each(workloads.map((w) => [w.doc.label, w] as const))(
    "%s: run as `init` in initContainers, as a native sidecar, or as the bridge's DaemonSet, with probes on its endpoints",
    (_, w) => {
      for (const { container, command, asInit } of ipmgrContainers(w.pod)) {
        if (command === "init") {
          expect(asInit).toBe(true);
          expect(container.restartPolicy).toBeUndefined();
        }
        if (command === "bridge") {
          checkBridgeContainer(w, container, asInit);
          continue;
        }
        if (command !== "sidecar") continue;
        expect(asInit).toBe(true);
        expect(container.restartPolicy).toBe("Always");
        const config = loadSidecarConfig(container.args?.slice(1) ?? [], envOf(container));
        const portOf = (probe: Probe | undefined): number | undefined => {
          const port = probe?.httpGet?.port;
          return typeof port === "number"
            ? port
            : container.ports?.find((p) => p.name === port)?.containerPort;
        };
        for (const [probe, path] of [
          [container.startupProbe, "/readyz"],
          [container.readinessProbe, "/readyz"],
          [container.livenessProbe, "/healthz"],
        ] as const) {
          expect({ path: probe?.httpGet?.path, port: portOf(probe) }).toEqual({
            path,
            port: config.httpPort,
          });
        }
        const grace = (w.pod.terminationGracePeriodSeconds ?? 30) * 1000;
        expect(grace).toBeGreaterThan(config.shutdownGraceMs + 1000);
        const antiAffinity =
          w.pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
        expect(antiAffinity.map((t) => t.topologyKey)).toContain("kubernetes.io/hostname");
      }
    },
  );

  it.each(workloads.map((w) => [w.doc.label, w] as const))(
    "%s: with IPMGR_ADDRESS_SOURCE=network-status, mounts the pod's annotations where IPMGR_NETWORK_STATUS_FILE reads them",
    (_, w) => {
      for (const { container } of ipmgrContainers(w.pod)) {
        const env = envOf(container);
        if (env.IPMGR_ADDRESS_SOURCE !== "network-status") continue;
        const file = env.IPMGR_NETWORK_STATUS_FILE ?? podSettings.networkStatusFile.default ?? "";
        const found = (container.volumeMounts ?? []).flatMap((mount) =>
          (w.pod.volumes ?? [])
            .filter((v) => v.name === mount.name)
            .flatMap((v) => v.downwardAPI?.items ?? [])
            .filter((item) => `${mount.mountPath.replace(/\/$/, "")}/${item.path}` === file)
            .map((item) => item.fieldRef?.fieldPath),
        );
        expect({ file, fieldPaths: found }).toEqual({ file, fieldPaths: ["metadata.annotations"] });
      }
    },
  );

  it.each(workloads.filter((w) => ipmgrContainers(w.pod).length > 0).map((w) => [w.doc.label, w] as const))(
    "%s: its ServiceAccount is in deploy/",
    (_, w) => {
      const accounts = objects
        .filter((d) => d.object.kind === "ServiceAccount")
        .map((d) => `${metadataOf(d.object).namespace}/${metadataOf(d.object).name}`);
      expect(accounts).toContain(`${w.namespace}/${w.pod.serviceAccountName}`);
    },
  );
});

describe("NetworkAttachmentDefinitions", () => {
  it.each(nads.map((n) => [n.doc.label, n] as const))(
    "%s: spec.config is JSON, an ipvlan L2 network with whereabouts IPAM and no unknown key",
    (_, n) => {
      const config = parsedConfig(n.configText);
      expect(config.name).toBe(n.name);
    },
  );

  it.each(nads.map((n) => [n.doc.label, n] as const))(
    "%s: each pool excludes the five addresses AWS reserves in the subnet, in documentation ranges only",
    (_, n) => {
      for (const range of rangesOf(parsedConfig(n.configText))) {
        const { first, last } = poolOf(range);
        for (const a of [parseCidr(range.range).network, first, last]) {
          expect({
            range: range.range,
            address: a,
            documentation: anyCidrContains(DOCUMENTATION_RANGES, a),
          }).toEqual({ range: range.range, address: a, documentation: true });
        }
        expect(cidrContains(range.range, first) && cidrContains(range.range, last)).toBe(true);
        expect(compareAddresses(first, last)).toBeLessThanOrEqual(0);
        const handedOut = awsReservedAddresses(range.range).filter((r) => !excluded(range, r));
        expect({ range: range.range, reservedInPool: handedOut }).toEqual({
          range: range.range,
          reservedInPool: [],
        });
      }
    },
  );

  const podWorkloads = workloads.filter((w) => ipmgrContainers(w.pod).every((c) => c.command !== "bridge"));
  it.each(podWorkloads.map((w) => [w.doc.label, w] as const))(
    "%s: names networks that exist, whose pools lie inside its IPMGR_ALLOWED_CIDRS",
    (_, w) => {
      const networks = networksOf(w);
      expect(networks.length).toBeGreaterThan(0);
      for (const network of networks) {
        const nad = nads.find((n) => n.name === network.name && n.namespace === network.namespace);
        expect({ network, found: nad !== undefined }).toEqual({ network, found: true });
        if (nad === undefined) continue;
        for (const { container } of ipmgrContainers(w.pod)) {
          const allowed = (envOf(container).IPMGR_ALLOWED_CIDRS ?? "").split(",").map((s) => s.trim());
          for (const range of rangesOf(parsedConfig(nad.configText))) {
            const { first, last } = poolOf(range);
            const inside = allowed.some((cidr) => cidrContains(cidr, first) && cidrContains(cidr, last));
            expect({ pool: `${first} - ${last}`, allowed, inside }).toEqual({
              pool: `${first} - ${last}`,
              allowed,
              inside: true,
            });
          }
        }
      }
    },
  );

  it("the bridge's IPMGR_ALLOWED_CIDRS cover every whereabouts pool of every NAD (it manages them all)", () => {
    const bridges = workloads.flatMap((w) => ipmgrContainers(w.pod).filter((c) => c.command === "bridge"));
    expect(bridges).toHaveLength(1);
    for (const { container } of bridges) {
      const allowed = (envOf(container).IPMGR_ALLOWED_CIDRS ?? "").split(",").map((s) => s.trim());
      for (const nad of nads) {
        for (const range of rangesOf(parsedConfig(nad.configText))) {
          const { first, last } = poolOf(range);
          const inside = allowed.some((cidr) => cidrContains(cidr, first) && cidrContains(cidr, last));
          expect({ nad: nad.name, pool: `${first} - ${last}`, inside }).toEqual({
            nad: nad.name,
            pool: `${first} - ${last}`,
            inside: true,
          });
        }
      }
    }
  });

  it("the pool arithmetic: AWS's five reserved addresses are out of a pool only when range_start and range_end keep them out", () => {
    const whole = { range: "198.51.100.0/24" };
    expect(awsReservedAddresses(whole.range).filter((r) => !excluded(whole, r))).toEqual([
      "198.51.100.1",
      "198.51.100.2",
      "198.51.100.3",
    ]);
    const top = { range: "198.51.100.0/24", range_start: "198.51.100.224", range_end: "198.51.100.255" };
    expect(awsReservedAddresses(top.range).filter((r) => !excluded(top, r))).toEqual(["198.51.100.255"]);
    const ours = { ...top, range_end: "198.51.100.254" };
    expect(awsReservedAddresses(ours.range).filter((r) => !excluded(ours, r))).toEqual([]);
    const excludedLow = {
      range: "198.51.100.0/24",
      range_end: "198.51.100.254",
      exclude: ["198.51.100.0/30"],
    };
    expect(awsReservedAddresses(excludedLow.range).filter((r) => !excluded(excludedLow, r))).toEqual([]);
  });
});

describe("ServiceAccounts and IAM roles", () => {
  const accounts = objects.filter((d) => d.object.kind === "ServiceAccount");
  const readme = readFileSync(join(DEPLOY, "README.md"), "utf8");

  it("IRSA: deploy/README.md's patch, in a user's kustomization, names the pod role, whose trust policy admits exactly that ServiceAccount", () => {
    const patch = /```yaml\n(patches:\n[\s\S]*?)```/.exec(readme)?.[1];
    expect(patch).toBeDefined();
    const rendered = renderKustomization(join(ROOT, "my-cluster"), ROOT, {
      resources: ["../deploy/overlays/sidecar"],
      ...(parseYaml(patch ?? "") as Json),
    });
    const account = rendered.find((o) => o.object.kind === "ServiceAccount");
    const meta = metadataOf(account?.object ?? {});
    expect(meta.annotations).toEqual({
      "eks.amazonaws.com/role-arn": "arn:aws:iam::<ACCOUNT_ID>:role/multus-ipmgr-pod",
    });
    const trust = readFileSync(join(DEPLOY, "iam/iam-trust-policy-irsa.json"), "utf8");
    expect(trust).toContain(`"system:serviceaccount:${meta.namespace}:${meta.name}"`);
    expect(JSON.parse(trust).Statement[0].Action).toBe("sts:AssumeRoleWithWebIdentity");
  });

  it("Pod Identity: the ServiceAccount has no role annotation; its association command is in its file and deploy/README.md", () => {
    const doc = accounts.find((d) => d.file === "pod-serviceaccount/serviceaccount.yaml");
    const meta = metadataOf(doc?.object ?? {});
    expect(meta.annotations ?? {}).toEqual({});
    const command =
      /aws eks create-pod-identity-association[^\n]*\\\n[^\n]*--namespace (\S+) --service-account (\S+)/;
    for (const text of [
      readFileSync(join(DEPLOY, "pod-serviceaccount/serviceaccount.yaml"), "utf8"),
      readme,
    ]) {
      const match = command.exec(text.replace(/^# ?/gm, ""));
      expect(match?.slice(1, 3)).toEqual([meta.namespace, meta.name]);
    }
    const trust = JSON.parse(readFileSync(join(DEPLOY, "iam/iam-trust-policy-pod-identity.json"), "utf8"));
    expect(trust.Statement[0].Principal).toEqual({ Service: "pods.eks.amazonaws.com" });
    expect(trust.Statement[0].Action).toEqual(["sts:AssumeRole", "sts:TagSession"]);
  });
});

describe("the bridge's RBAC (bridge-rbac.yaml)", () => {
  interface Rule {
    apiGroups: string[];
    resources: string[];
    verbs: string[];
    resourceNames?: string[];
  }
  type Binding = {
    roleRef: { kind: string; name: string };
    subjects: { kind: string; name: string; namespace?: string }[];
  };
  const rbac = objects.filter((d) => d.file === "overlays/bridge/bridge-rbac.yaml");
  const daemonSet = workloads.find((w) => ipmgrContainers(w.pod).some((c) => c.command === "bridge"));
  const bridgeEnv = (): Record<string, string> => {
    const container = ipmgrContainers(daemonSet?.pod ?? { containers: [] })[0]?.container;
    return container === undefined ? {} : runtimeEnvOf(container);
  };
  /** Each rule as `group/resource verb [names]`, one line per verb. */
  const grants = (rules: Rule[]): string[] =>
    rules
      .flatMap((r) =>
        r.apiGroups.flatMap((g) =>
          r.resources.flatMap((res) =>
            r.verbs.map((v) => `${g}/${res} ${v}${r.resourceNames ? ` [${r.resourceNames.join(",")}]` : ""}`),
          ),
        ),
      )
      .sort();
  const named = (kind: string) => rbac.filter((d) => d.object.kind === kind);

  /** Attach mode's calls (the startup taint's nodes): deploy/ is rendered without attach mode, the chart grants them with it. */
  const ATTACH_ONLY = new Set(["nodes"]);

  it("grants exactly what the bridge's Kubernetes adapter calls, leases and attach mode's aside (cluster-wide; test/chart-rbac.test.ts)", () => {
    expect(named("ClusterRole")).toHaveLength(1);
    expect(grants((named("ClusterRole")[0]?.object.rules ?? []) as Rule[])).toEqual(
      bridgeKubeGrants(ROOT)
        .filter((g) => g.resource !== "leases" && !ATTACH_ONLY.has(g.resource))
        .map(grantLine),
    );
  });

  it("grants get and update on the one Lease the DaemonSet names, create on leases of its namespace only", () => {
    const config = loadBridgeConfig([], bridgeEnv());
    const roles = named("Role");
    expect(roles.map((r) => metadataOf(r.object).namespace)).toEqual([config.leaseNamespace]);
    expect(grants((roles[0]?.object.rules ?? []) as Rule[])).toEqual([
      "coordination.k8s.io/leases create",
      `coordination.k8s.io/leases get [${config.leaseName}]`,
      `coordination.k8s.io/leases update [${config.leaseName}]`,
    ]);
  });

  it("binds both roles to the DaemonSet's ServiceAccount, defined in the same file", () => {
    const account = `${daemonSet?.namespace}/${daemonSet?.pod.serviceAccountName}`;
    const accounts = named("ServiceAccount").map(
      (d) => `${metadataOf(d.object).namespace}/${metadataOf(d.object).name}`,
    );
    expect(accounts).toEqual([account]);
    const bindings = [...named("ClusterRoleBinding"), ...named("RoleBinding")];
    expect(bindings.map((b) => (b.object as unknown as Binding).roleRef.kind).sort()).toEqual([
      "ClusterRole",
      "Role",
    ]);
    for (const b of bindings) {
      const binding = b.object as unknown as Binding;
      const role = rbac.find(
        (d) => d.object.kind === binding.roleRef.kind && metadataOf(d.object).name === binding.roleRef.name,
      );
      expect({ binding: b.label, role: role !== undefined }).toEqual({ binding: b.label, role: true });
      if (b.object.kind === "RoleBinding")
        expect(metadataOf(b.object).namespace).toBe(metadataOf(role?.object ?? {}).namespace);
      expect(binding.subjects.map((s) => `${s.kind} ${s.namespace}/${s.name}`)).toEqual([
        `ServiceAccount ${account}`,
      ]);
    }
  });

  it("the Kubernetes interface's RBAC notes name no resource the roles leave out", () => {
    const source = readFileSync(join(ROOT, "src/ipam-whereabouts-bridge/kube/kube-api.ts"), "utf8");
    const noted = [...source.matchAll(/RBAC: ([a-z-]+)/g)].map((m) => m[1] ?? "");
    expect(noted.length).toBeGreaterThan(0);
    const granted = new Set(
      rbac.flatMap((d) => ((d.object.rules ?? []) as Rule[]).flatMap((r) => r.resources)),
    );
    expect(noted.filter((r) => !granted.has(r) && !ATTACH_ONLY.has(r))).toEqual([]);
  });
});

// ---- Kustomizations ---------------------------------------------------------------------------------------

/** The install page, docs/install-eks.md. */
const INSTALL = join(ROOT, "docs", "install-eks.md");

/** docs/install-eks.md's shell lines, with continuations joined. */
function installCommands(): string[] {
  return readFileSync(INSTALL, "utf8")
    .replace(/\\\n\s*/g, " ")
    .split("\n");
}

const rendered = new Map<string, RenderedObject[]>(
  KUSTOMIZATIONS.map((dir) => [dir, renderKustomization(join(DEPLOY, dir), DEPLOY)]),
);
const renderedDocs = (dir: string): Doc[] =>
  (rendered.get(dir) ?? []).map((o) => ({
    file: o.file,
    label: `${dir}: ${objectId(o.object)}`,
    object: o.object,
  }));

/** The IAM policy each command's role needs (docs/install-eks.md, "IAM"). */
const POLICY_OF: Readonly<Record<string, string>> = {
  init: "iam-policy-pod.json",
  sidecar: "iam-policy-pod.json",
  bridge: "iam-policy-bridge.json",
};

/** kubectl: the one scripts/helm-bin.mjs unzips from a devDependency (linux x64), else the PATH's. */
const KUBECTL = helmUnavailableReason() === undefined ? toolPaths().kubectl : "kubectl";
const kubectlMissing = (() => {
  try {
    execFileSync(KUBECTL, ["version", "--client"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "kubectl is not installed";
  }
})();
if (kubectlMissing !== undefined)
  console.warn(`examples: the renders are not compared with kubectl kustomize: ${kubectlMissing}`);

/** What `kubectl kustomize` renders for `dir`, by object id. */
function kubectlKustomize(dir: string): Map<string, Json> {
  const out = execFileSync(KUBECTL, ["kustomize", dir], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Map(
    parseAllDocuments(out).map((d) => {
      const object = d.toJS() as Json;
      return [objectId(object), object] as const;
    }),
  );
}

describe("kustomizations: a base and one overlay per way of running", () => {
  it("every manifest is rendered by an overlay or by monitoring/, and nothing is rendered twice in one", () => {
    const renderedFiles = new Set([...rendered.values()].flat().map((o) => o.file));
    const expected = manifestFiles.filter((f) => !f.endsWith("kustomization.yaml"));
    expect([...renderedFiles].sort()).toEqual(expected);
  });

  it("each overlay renders its own workloads and no other way's", () => {
    const workloadsOf = (dir: string) =>
      (rendered.get(dir) ?? [])
        .filter((o) => WORKLOAD_KINDS.has(`${String(o.object.apiVersion)}/${String(o.object.kind)}`))
        .map((o) => objectId(o.object))
        .sort();
    expect(Object.fromEntries(OVERLAYS.map((dir) => [dir, workloadsOf(dir)]))).toEqual({
      "overlays/init": ["Deployment cnf/cnf-worker", "Deployment cnf/cnf-worker-status"],
      "overlays/sidecar": ["StatefulSet cnf/cnf"],
      "overlays/bridge": ["DaemonSet kube-system/multus-ipmgr-bridge"],
      "overlays/bridge-app": ["Deployment cnf/cnf-app"],
    });
    for (const dir of OVERLAYS.filter((d) => d !== "overlays/bridge")) {
      const ids = (rendered.get(dir) ?? []).map((o) => objectId(o.object));
      expect(ids).toContain("Namespace /cnf");
      expect(ids.filter((id) => id.startsWith("NetworkAttachmentDefinition "))).toHaveLength(2);
    }
  });

  it("the bridge overlay brings nothing of the base: kubectl delete -k of it leaves the namespace cnf and the NADs", () => {
    const ids = (rendered.get("overlays/bridge") ?? []).map((o) => objectId(o.object)).sort();
    expect(ids).toEqual([
      "ClusterRole /multus-ipmgr-bridge",
      "ClusterRoleBinding /multus-ipmgr-bridge",
      "DaemonSet kube-system/multus-ipmgr-bridge",
      "Role kube-system/multus-ipmgr-bridge-lease",
      "RoleBinding kube-system/multus-ipmgr-bridge-lease",
      "ServiceAccount kube-system/multus-ipmgr-bridge",
    ]);
  });

  // overlays/bridge-app runs no container of ours: its pods need no role.
  it.each(OVERLAYS.filter((dir) => dir !== "overlays/bridge-app").map((dir) => [dir] as const))(
    "%s: every ServiceAccount of a pod running our image has its role, policy and association in docs/install-eks.md",
    (dir) => {
      const lines = installCommands();
      const docs = renderedDocs(dir);
      const pods = docs
        .filter((d) => WORKLOAD_KINDS.has(kindOf(d)))
        .map((d) => ({ d, pod: (d.object.spec as { template: { spec: PodSpec } }).template.spec }));
      const steps: string[] = [];
      for (const { d, pod } of pods) {
        const commands = ipmgrContainers(pod).map((c) => c.command);
        if (commands.length === 0) {
          expect({ pod: d.label, serviceAccount: pod.serviceAccountName }).toEqual({
            pod: d.label,
            serviceAccount: undefined,
          });
          continue;
        }
        const namespace = metadataOf(d.object).namespace ?? "default";
        const account = pod.serviceAccountName ?? "default";
        expect(docs.map((o) => objectId(o.object))).toContain(`ServiceAccount ${namespace}/${account}`);
        const association = lines.find(
          (l) =>
            l.includes(`aws eks create-pod-identity-association`) &&
            l.includes(`--namespace ${namespace} --service-account ${account} `),
        );
        const role = /--role-arn arn:aws:iam::<ACCOUNT_ID>:role\/(\S+)/.exec(association ?? "")?.[1];
        const created = lines.some((l) => l.includes(`aws iam create-role --role-name ${role} `));
        const policy = lines
          .find((l) => l.includes(`aws iam put-role-policy --role-name ${role} `))
          ?.match(/--policy-document file:\/\/(\S+)/)?.[1];
        for (const command of commands) {
          steps.push(
            `${namespace}/${account} (${command}): role ${role}, created ${created}, policy ${policy}`,
          );
          expect({ account: `${namespace}/${account}`, command, role, created, policy }).toEqual({
            account: `${namespace}/${account}`,
            command,
            role: expect.any(String),
            created: true,
            policy: POLICY_OF[command],
          });
        }
      }
      expect(steps.length).toBeGreaterThan(0);
    },
  );

  it("the renderer refuses what it does not implement, naming it", () => {
    expect(() =>
      renderKustomization(join(ROOT, "my-cluster"), ROOT, { resources: [], namePrefix: "x-" }),
    ).toThrow("my-cluster: kustomization field(s) namePrefix not supported here");
    expect(() =>
      renderKustomization(join(ROOT, "my-cluster"), ROOT, {
        resources: ["../deploy/overlays/init", "../deploy/overlays/sidecar"],
      }),
    ).toThrow("my-cluster: Namespace /cnf is rendered twice");
  });

  it.skipIf(kubectlMissing !== undefined).each(KUSTOMIZATIONS.map((d) => [d] as const))(
    "%s: the renderer agrees with kubectl kustomize",
    (dir) => {
      const ours = rendered.get(dir) ?? [];
      const theirs = kubectlKustomize(join(DEPLOY, dir));
      expect(new Map(ours.map((o) => [objectId(o.object), o.object]))).toEqual(theirs);
    },
  );
});

describe("placeholders", () => {
  it("every placeholder used in deploy/ is listed in deploy/README.md, and every listed one is used", () => {
    const files = (readdirSync(DEPLOY, { recursive: true }) as string[]).filter((f) =>
      /\.(ya?ml|json)$/.test(f),
    );
    const used = new Set(
      files.flatMap((f) =>
        [...readFileSync(join(DEPLOY, f), "utf8").matchAll(/<[A-Z][A-Z0-9_]*>/g)].map((m) => m[0]),
      ),
    );
    const readme = readFileSync(join(DEPLOY, "README.md"), "utf8");
    const section = readme.slice(
      readme.indexOf("## Placeholders"),
      readme.indexOf("\n## ", readme.indexOf("## Placeholders") + 1),
    );
    const listed = new Set([...section.matchAll(/^\| `(<[A-Z][A-Z0-9_]*>)` \|/gm)].map((m) => m[1] ?? ""));
    expect([...used].sort()).toEqual([...listed].sort());
    expect(readme).toContain(IMAGE);
  });
});

describe("monitoring/: ServiceMonitors and alert rules for the documented metrics", () => {
  interface Rule {
    alert: string;
    expr: string;
    for?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  }
  const all = [...rendered.values()].flat();
  const monitors = all.filter((o) => o.object.kind === "ServiceMonitor");
  const services = all.filter((o) => o.object.kind === "Service");
  const groups = all
    .filter((o) => o.object.kind === "PrometheusRule")
    .flatMap((o) => (o.object.spec as { groups: { name: string; rules: Rule[] }[] }).groups);
  const metricsOf = (registry: { getMetricsAsArray(): { name: string }[] }) =>
    new Set(registry.getMetricsAsArray().map((m) => m.name));
  const known: Record<string, Set<string>> = {
    "multus-ipmgr-sidecar": metricsOf(new SidecarMetrics().registry),
    "multus-ipmgr-bridge": metricsOf(new BridgeMetrics().registry),
  };
  /** The job each ServiceMonitor's relabeling gives its targets. */
  const jobOf = (monitor: Json): string | undefined =>
    (
      monitor.spec as { endpoints: { relabelings?: { targetLabel?: string; replacement?: string }[] }[] }
    ).endpoints[0]?.relabelings?.find((r) => r.targetLabel === "job")?.replacement;

  it("each ServiceMonitor finds a Service whose named port reaches the /metrics port of the pods running our image", () => {
    expect(monitors.map((m) => jobOf(m.object)).sort()).toEqual(Object.keys(known).sort());
    for (const monitor of monitors) {
      const spec = monitor.object.spec as {
        selector: { matchLabels: Record<string, string> };
        namespaceSelector: { matchNames?: string[]; any?: boolean };
        endpoints: { port: string; path: string }[];
      };
      const service = services.find(
        (s) =>
          (spec.namespaceSelector.any === true ||
            (spec.namespaceSelector.matchNames ?? []).includes(metadataOf(s.object).namespace ?? "")) &&
          Object.entries(spec.selector.matchLabels).every(
            ([k, v]) => (s.object.metadata as { labels?: Record<string, string> }).labels?.[k] === v,
          ),
      );
      expect({ monitor: objectId(monitor.object), service: service && objectId(service.object) }).toEqual({
        monitor: objectId(monitor.object),
        service: expect.any(String),
      });
      const serviceSpec = service?.object.spec as {
        selector: Record<string, string>;
        ports: { name: string; targetPort: number }[];
      };
      const target = serviceSpec.ports.find((p) => p.name === spec.endpoints[0]?.port)?.targetPort;
      const pods = workloads.filter(
        (w) =>
          w.namespace === metadataOf(service?.object ?? {}).namespace &&
          Object.entries(serviceSpec.selector).every(
            ([k, v]) =>
              ((w.doc.object.spec as { template: { metadata: Json } }).template.metadata.labels as Json)?.[
                k
              ] === v,
          ),
      );
      expect(pods.length).toBe(1);
      for (const w of pods) {
        const { container, command } = ipmgrContainers(w.pod)[0] ?? { container: undefined, command: "" };
        expect(`multus-ipmgr-${command}`).toBe(jobOf(monitor.object));
        const port = Number(envOf(container ?? { name: "" }).IPMGR_HTTP_PORT);
        expect({ monitor: objectId(monitor.object), path: spec.endpoints[0]?.path, target }).toEqual({
          monitor: objectId(monitor.object),
          path: "/metrics",
          target: port,
        });
      }
    }
  });

  it("every alert names only metrics its command registers, selects its ServiceMonitor's job, and says what to do", () => {
    const rules = groups.flatMap((g) => g.rules.map((r) => ({ group: g.name, rule: r })));
    expect(rules.length).toBeGreaterThan(5);
    for (const { group, rule } of rules) {
      const jobs = [...rule.expr.matchAll(/job="([^"]+)"/g)].map((m) => m[1] ?? "");
      expect({ alert: rule.alert, jobs: [...new Set(jobs)] }).toEqual({ alert: rule.alert, jobs: [group] });
      const metrics = [...rule.expr.matchAll(/\b(multus_ipmgr_[a-z_]+)\b/g)].map((m) =>
        (m[1] ?? "").replace(/_(bucket|sum|count)$/, ""),
      );
      const unknown = metrics.filter((m) => !known[group]?.has(m));
      expect({ alert: rule.alert, unknown }).toEqual({ alert: rule.alert, unknown: [] });
      let depth = 0;
      for (const c of rule.expr) {
        depth += c === "(" ? 1 : c === ")" ? -1 : 0;
        expect(depth).toBeGreaterThanOrEqual(0);
      }
      expect({
        alert: rule.alert,
        name: /^MultusIpmgr[A-Z][A-Za-z]+$/.test(rule.alert),
        depth,
        for: /^\d+[smh]$/.test(rule.for ?? ""),
        severity: ["warning", "critical"].includes(rule.labels?.severity ?? ""),
        summary: (rule.annotations?.summary ?? "").length > 0,
        description: (rule.annotations?.description ?? "").length > 0,
      }).toEqual({
        alert: rule.alert,
        name: true,
        depth: 0,
        for: true,
        severity: true,
        summary: true,
        description: true,
      });
    }
  });

  it("docs/metrics.md lists every alert, and names no alert that the rules lack", () => {
    const metrics = readFileSync(join(ROOT, "docs", "metrics.md"), "utf8");
    const listed = [...metrics.matchAll(/`(MultusIpmgr[A-Za-z]+)`/g)].map((m) => m[1] ?? "");
    const alerts = groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect([...new Set(listed)].sort()).toEqual([...alerts].sort());
  });
});

describe("deploy/node: the Multus ENI at first boot", () => {
  const NODE = join(DEPLOY, "node");
  const script = readFileSync(join(NODE, "multus-eni.sh"), "utf8");
  const pascal = (kebab: string) => kebab.replace(/(^|-)([a-z])/g, (_, __, c: string) => c.toUpperCase());

  it("multus-eni.sh is valid bash, names the interface as the NADs' master, and tags the ENI no_manage", () => {
    execFileSync("bash", ["-n", join(NODE, "multus-eni.sh")], { stdio: ["ignore", "pipe", "pipe"] });
    const ifname = /^IFNAME=(\S+)$/m.exec(script)?.[1];
    const masters = nads.map((n) => parsedConfig(n.configText).master);
    expect(new Set(masters)).toEqual(new Set([ifname]));
    expect(script).toContain("Tags=[{Key=node.k8s.amazonaws.com/no_manage,Value=true}]");
    expect(script).toContain("--device-index 1");
    expect(script).toMatch(/DHCP=no\nLinkLocalAddressing=no\nIPv6AcceptRA=no/);
    expect(script).toContain(`net.ipv4.conf.$IFNAME.rp_filter = 0`);
  });

  it("iam-policy-node-multus-eni.json grants exactly the EC2 calls multus-eni.sh makes", () => {
    const calls = new Set(
      [...script.matchAll(/aws ec2 ([a-z-]+)/g)]
        .map((m) => m[1] ?? "")
        .filter((command) => command !== "wait")
        .map((command) => `ec2:${pascal(command)}`),
    );
    calls.add("ec2:CreateTags"); // the tags given at creation (--tag-specifications)
    // `aws ec2 wait network-interface-available` polls DescribeNetworkInterfaces.
    if (script.includes("aws ec2 wait network-interface-available"))
      calls.add("ec2:DescribeNetworkInterfaces");
    const policy = JSON.parse(readFileSync(join(NODE, "iam-policy-node-multus-eni.json"), "utf8")) as {
      Statement: { Action: string | string[] }[];
    };
    const granted = new Set(policy.Statement.flatMap((s) => [s.Action].flat()));
    expect([...granted].sort()).toEqual([...calls].sort());
  });

  it("user-data.sh prints MIME multipart with multus-eni.sh as its one shell part", () => {
    const mime = execFileSync("bash", [join(NODE, "user-data.sh")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    const boundary = /boundary="([^"]+)"/.exec(mime)?.[1] ?? "";
    expect(mime.startsWith("MIME-Version: 1.0\nContent-Type: multipart/mixed;")).toBe(true);
    const parts = mime.split(`--${boundary}`).slice(1, -1);
    expect(parts).toHaveLength(1);
    expect(parts[0]).toBe(`\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n${script}\n`);
    expect(mime.endsWith(`--${boundary}--\n`)).toBe(true);
  });

  it("eksctl-cluster.yaml runs the same script on an AL2023 managed node group with IMDSv2 and the CNI policy", () => {
    const config = parseYaml(readFileSync(join(NODE, "eksctl-cluster.yaml"), "utf8")) as {
      apiVersion: string;
      kind: string;
      managedNodeGroups: {
        amiFamily: string;
        disableIMDSv1: boolean;
        preBootstrapCommands: string[];
        iam: { attachPolicyARNs: string[] };
      }[];
    };
    expect([config.apiVersion, config.kind]).toEqual(["eksctl.io/v1alpha5", "ClusterConfig"]);
    const group = config.managedNodeGroups[0];
    expect(group?.amiFamily).toBe("AmazonLinux2023");
    expect(group?.disableIMDSv1).toBe(true);
    expect(group?.preBootstrapCommands).toEqual([script]);
    expect(group?.iam.attachPolicyARNs).toContain("arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy");
  });

  it("docs/install-eks.md's launch template sets IMDSv2 with hop limit 2 and the user data", () => {
    const readme = readFileSync(INSTALL, "utf8");
    const data = /--launch-template-data "(\{[\s\S]*?\})"\n/.exec(readme)?.[1];
    expect(data).toBeDefined();
    const json = JSON.parse((data ?? "").replace(/\$\([^)]*\)/, "BASE64").replaceAll('\\"', '"')) as Json;
    expect(json).toEqual({
      MetadataOptions: { HttpTokens: "required", HttpPutResponseHopLimit: 2 },
      UserData: "BASE64",
    });
  });
});
