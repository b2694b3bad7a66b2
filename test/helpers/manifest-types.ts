/**
 * Checks Kubernetes manifests against the TypeScript models of kubernetes-models, with the compiler's
 * excess-property check: a field the schema does not know (a misspelling) is an error at any depth, which
 * kubernetes-models' own `validate()` does not report (its JSON schemas allow unknown properties).
 *
 * Each document becomes `export const docN: <its model> = <its JSON>;` in one module that exists only in
 * memory, type-checked with the project's TypeScript. Kinds kubernetes-models does not ship get a small
 * model here: NetworkAttachmentDefinition, from the Multus CRD (network-attachment-definitions.k8s.cni.cncf.io,
 * v1: `spec.config`, a string holding CNI JSON), kustomize's Kustomization (the fields we use), and the
 * Prometheus Operator's ServiceMonitor and PrometheusRule (monitoring.coreos.com/v1, from their CRDs).
 * The compiler reports the first unknown field of each document; the path names it.
 */
import { join } from "node:path";
import ts from "typescript";

export interface ManifestDocument {
  /** E.g. `deployment-init.yaml, document 1`. */
  readonly label: string;
  readonly object: Record<string, unknown>;
}

export interface TypeProblem {
  readonly document: string;
  /** Dotted path of the offending field, e.g. `spec.template.spec.containers[0].imagePullPolcy`. */
  readonly path: string;
  readonly message: string;
}

const MODELS = "kubernetes-models";

const LOCAL_MODELS = `
type ObjectMeta = NonNullable<import("${MODELS}/v1/ConfigMap").IConfigMap["metadata"]>;
/** From the Multus CRD; config is required here (a network without one attaches nothing). */
interface INetworkAttachmentDefinition {
  apiVersion: "k8s.cni.cncf.io/v1";
  kind: "NetworkAttachmentDefinition";
  metadata: ObjectMeta;
  spec: { config: string };
}
/** kustomize.config.k8s.io/v1beta1 Kustomization: the fields the examples use. */
interface IKustomization {
  apiVersion: "kustomize.config.k8s.io/v1beta1";
  kind: "Kustomization";
  namespace?: string;
  resources: string[];
  images?: { name: string; newName?: string; newTag?: string }[];
  patches?: { patch: string }[];
}
type LabelSelector = NonNullable<import("${MODELS}/apps/v1/Deployment").IDeployment["spec"]>["selector"];
/** Prometheus Operator, monitoring.coreos.com/v1 ServiceMonitor (its CRD): the fields the examples use. */
interface IServiceMonitor {
  apiVersion: "monitoring.coreos.com/v1";
  kind: "ServiceMonitor";
  metadata: ObjectMeta;
  spec: {
    selector: LabelSelector;
    namespaceSelector?: { any?: boolean; matchNames?: string[] };
    jobLabel?: string;
    endpoints: {
      port?: string;
      targetPort?: number | string;
      path?: string;
      scheme?: "http" | "https";
      interval?: string;
      scrapeTimeout?: string;
      honorLabels?: boolean;
      relabelings?: RelabelConfig[];
      metricRelabelings?: RelabelConfig[];
    }[];
  };
}
interface RelabelConfig {
  action?: "replace" | "keep" | "drop" | "labelmap" | "labeldrop" | "labelkeep" | "hashmod" | "lowercase" | "uppercase" | "keepequal" | "dropequal";
  sourceLabels?: string[];
  separator?: string;
  regex?: string;
  targetLabel?: string;
  replacement?: string;
  modulus?: number;
}
/** Prometheus Operator, monitoring.coreos.com/v1 PrometheusRule (its CRD): alerting and recording rules. */
interface IPrometheusRule {
  apiVersion: "monitoring.coreos.com/v1";
  kind: "PrometheusRule";
  metadata: ObjectMeta;
  spec: {
    groups: {
      name: string;
      interval?: string;
      rules: ({ alert: string; expr: string; for?: string; keep_firing_for?: string; labels?: Record<string, string>; annotations?: Record<string, string> } | { record: string; expr: string; labels?: Record<string, string> })[];
    }[];
  };
}
`;

/** The TypeScript type of a document, by apiVersion and kind. */
function modelOf(object: Record<string, unknown>): string {
  const { apiVersion, kind } = object;
  if (
    typeof apiVersion !== "string" ||
    typeof kind !== "string" ||
    !/^[A-Za-z0-9./]+$/.test(apiVersion + kind)
  ) {
    return "never";
  }
  if (apiVersion === "k8s.cni.cncf.io/v1" && kind === "NetworkAttachmentDefinition") {
    return "INetworkAttachmentDefinition";
  }
  if (apiVersion === "kustomize.config.k8s.io/v1beta1" && kind === "Kustomization") return "IKustomization";
  if (apiVersion === "monitoring.coreos.com/v1" && (kind === "ServiceMonitor" || kind === "PrometheusRule")) {
    return `I${kind}`;
  }
  return `import("${MODELS}/${apiVersion}/${kind}").I${kind}`;
}

/** The dotted path of the object-literal property or array element at `position`. */
function pathAt(source: ts.SourceFile, position: number): string {
  let node: ts.Node = source;
  for (;;) {
    const child: ts.Node | undefined = node
      .getChildren(source)
      .find((c) => c.getStart(source) <= position && position < c.getEnd());
    if (child === undefined) break;
    node = child;
  }
  const parts: string[] = [];
  for (let n: ts.Node = node; n.parent !== undefined; n = n.parent) {
    const parent = n.parent;
    if (ts.isPropertyAssignment(parent) && ts.isStringLiteral(parent.name) && parent.name === n) continue;
    if (ts.isPropertyAssignment(n) && ts.isStringLiteral(n.name)) parts.unshift(`.${n.name.text}`);
    if (ts.isArrayLiteralExpression(parent))
      parts.unshift(`[${parent.elements.indexOf(n as ts.Expression)}]`);
    if (ts.isVariableDeclaration(n)) break;
  }
  return parts.join("").replace(/^\./, "");
}

/** Type-checks the documents; `root` is the directory whose node_modules holds kubernetes-models. */
export function checkManifestTypes(root: string, documents: readonly ManifestDocument[]): TypeProblem[] {
  const fileName = join(root, "deploy", "__manifests__.ts");
  const ranges: { start: number; end: number; label: string }[] = [];
  let text = LOCAL_MODELS;
  documents.forEach((doc, i) => {
    const start = text.length;
    text += `export const doc${i}: ${modelOf(doc.object)} = ${JSON.stringify(doc.object, null, 2)};\n`;
    ranges.push({ start, end: text.length, label: doc.label });
  });

  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ["lib.es2023.d.ts"],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (name, ...rest) => (name === fileName ? source : getSourceFile(name, ...rest));
  host.fileExists = (name) => name === fileName || fileExists(name);
  const program = ts.createProgram([fileName], options, host);

  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, " ");
    if (d.file?.fileName !== fileName || d.start === undefined) {
      return { document: d.file?.fileName ?? "(program)", path: "", message };
    }
    const start = d.start;
    const range = ranges.find((r) => r.start <= start && start < r.end);
    return { document: range?.label ?? "(models)", path: pathAt(source, start), message };
  });
}
