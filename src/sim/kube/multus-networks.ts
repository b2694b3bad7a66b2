import { isJsonObject } from "./kube-object.js";

/** The annotation a pod names its extra networks in, as Multus reads it. */
export const NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks";

/** One network a pod asks for. */
export interface NetworkSelection {
  readonly namespace: string;
  readonly name: string;
  /** Default `net1`, `net2`, ... in the order of the annotation. */
  readonly interface: string;
  /** A MAC asked for in the JSON form; default the plugin's. */
  readonly mac: string | undefined;
}

/**
 * The networks of Multus' annotation: a comma-separated list of `[namespace/]name[@interface]`, or a JSON
 * list of `{name, namespace?, interface?, mac?}`. The namespace defaults to the pod's. Throws Error with the
 * reason for an annotation Multus would refuse.
 */
export function parseNetworks(annotation: string, podNamespace: string): NetworkSelection[] {
  const text = annotation.trim();
  if (text === "") return [];
  if (text.startsWith("[")) {
    let list: unknown;
    try {
      list = JSON.parse(text);
    } catch (error) {
      throw new Error(`${NETWORKS_ANNOTATION} is not valid JSON: ${(error as Error).message}`);
    }
    if (!Array.isArray(list)) throw new Error(`${NETWORKS_ANNOTATION} is not a JSON list`);
    return list.map((item, i) => {
      if (!isJsonObject(item) || typeof item.name !== "string" || item.name === "") {
        throw new Error(`${NETWORKS_ANNOTATION} entry ${i} has no name`);
      }
      return {
        namespace:
          typeof item.namespace === "string" && item.namespace !== "" ? item.namespace : podNamespace,
        name: item.name,
        interface:
          typeof item.interface === "string" && item.interface !== "" ? item.interface : `net${i + 1}`,
        mac: typeof item.mac === "string" ? item.mac : undefined,
      };
    });
  }
  return text.split(",").map((part, i) => {
    const item = part.trim();
    const match = /^(?:([^/@]+)\/)?([^/@]+)(?:@([^/@]+))?$/.exec(item);
    if (match === null) {
      throw new Error(
        `${NETWORKS_ANNOTATION} entry ${JSON.stringify(item)} is not [namespace/]name[@interface]`,
      );
    }
    return {
      namespace: match[1] ?? podNamespace,
      name: match[2] as string,
      interface: match[3] ?? `net${i + 1}`,
      mac: undefined,
    };
  });
}
