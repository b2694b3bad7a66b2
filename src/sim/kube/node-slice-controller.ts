import { KubeApiError } from "../errors/kube-api-error.js";
import { mustParseCidr } from "../ip-math.js";
import type { KubeApi } from "./kube-api.js";
import { isJsonObject, type JsonObject, type KubeObject } from "./kube-object.js";
import type { StoreEvent } from "./kube-store.js";
import {
  assignNodes,
  divideRange,
  freeAllocations,
  type NodeSliceAllocation,
  removeUnusedNodes,
  type WhereaboutsNetwork,
  whereaboutsNetworkOf,
} from "./node-slices.js";
import { primaryResource } from "./resources.js";
import { whereaboutsNamespace } from "./whereabouts-records.js";

export interface NodeSliceControllerDeps {
  readonly api: KubeApi;
  /** Why a NAD got no NodeSlicePool (whereabouts' controller logs it and retries). */
  readonly log: (line: string) => void;
  /** The stand-in's own failures. */
  readonly errorLog: (line: string) => void;
}

const nadApiVersion = "k8s.cni.cncf.io/v1";
const nadKind = "NetworkAttachmentDefinition";

function allocationsOf(pool: KubeObject): NodeSliceAllocation[] {
  const status = isJsonObject(pool.status) ? pool.status : {};
  const list = Array.isArray(status.allocations) ? status.allocations.filter(isJsonObject) : [];
  return list.map((a) => ({
    nodeName: typeof a.nodeName === "string" ? a.nodeName : "",
    sliceRange: typeof a.sliceRange === "string" ? a.sliceRange : "",
  }));
}

function ownerNames(object: KubeObject): string[] {
  const refs = (object.metadata.ownerReferences ?? []) as unknown[];
  return refs.filter(isJsonObject).map((r) => String(r.name ?? ""));
}

/**
 * whereabouts' node-slice controller (cmd/nodeslicecontroller), played inside the simulator. On a NAD's
 * change, and for every NAD on a node's ADDED or DELETED, it reconciles as whereabouts' syncHandler does:
 * a NAD whose whereabouts IPAM has `node_slice_size` gets a NodeSlicePool in kube-system named after its
 * `network_name` (else its config's `name`), with `spec.range` (the first range), `spec.sliceSize`, and
 * `status.allocations`: every slice of the range, the first free one given to each node without one (nodes
 * in name order), `nodeName: ""` for the rest. A node that is gone frees its slice; a changed range or size
 * re-cuts the pool and reassigns every node. When the last NAD owning a pool is deleted, the pool named after
 * that NAD goes. Only NADs in kube-system are handled: whereabouts requires the NAD in its own namespace, and
 * on a cluster the garbage collector deletes a pool whose owner reference crosses namespaces. Edits clients
 * make to a NodeSlicePool stand until the next NAD or node change, as whereabouts watches no pool.
 */
export class NodeSliceController {
  readonly #deps: NodeSliceControllerDeps;
  #unsubscribe: () => void = () => undefined;
  /** NADs to reconcile (`namespace/name`), in the order asked. */
  readonly #pending = new Set<string>();

  constructor(deps: NodeSliceControllerDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#unsubscribe = this.#deps.api.store.subscribe((event) => this.#onChange(event));
  }

  stop(): void {
    this.#unsubscribe();
  }

  #onChange(event: StoreEvent): void {
    if (event.storage === "network-attachment-definitions") {
      const { namespace = "", name = "" } = event.object.metadata;
      this.#queue(`${namespace}/${name}`);
    } else if (event.storage === "nodes" && event.type !== "MODIFIED") {
      for (const nad of this.#deps.api.store.list("network-attachment-definitions")) {
        this.#queue(`${nad.metadata.namespace ?? ""}/${nad.metadata.name ?? ""}`);
      }
    }
  }

  /**
   * Queues a NAD's reconcile for after the change that asks for it, never inside a store listener, so
   * watches see the change first. A key queued twice is reconciled once, as whereabouts' work queue does:
   * a world of many nodes costs one pass per NAD, not one per node.
   */
  #queue(key: string): void {
    this.#pending.add(key);
    if (this.#pending.size > 1) return;
    queueMicrotask(() => {
      const keys = [...this.#pending];
      this.#pending.clear();
      for (const queued of keys) {
        const slash = queued.indexOf("/");
        this.#run(() => this.reconcile(queued.slice(0, slash), queued.slice(slash + 1)));
      }
    });
  }

  #run(work: () => void): void {
    try {
      work();
    } catch (error) {
      if (error instanceof KubeApiError) {
        // A conflicting write by a client: whereabouts requeues; the next NAD or node change retries.
        this.#deps.log(`whereabouts node-slice controller: ${error.message}; requeuing`);
        return;
      }
      this.#deps.errorLog(
        `whereabouts node-slice controller stand-in failed: ${(error as Error).stack ?? String(error)}`,
      );
    }
  }

  #network(nad: KubeObject): WhereaboutsNetwork | undefined {
    const spec = isJsonObject(nad.spec) ? nad.spec : {};
    return whereaboutsNetworkOf(typeof spec.config === "string" ? spec.config : "");
  }

  /** One pass of whereabouts' syncHandler for the NAD `namespace/name`. */
  reconcile(namespace: string, name: string): void {
    if (namespace !== whereaboutsNamespace) return;
    const { api } = this.#deps;
    const where = `network-attachment-definition ${namespace}/${name}`;
    const nad = api.store.get("network-attachment-definitions", namespace, name);
    if (nad === undefined) {
      this.#ownerGone(name);
      return;
    }
    let network: WhereaboutsNetwork | undefined;
    try {
      network = this.#network(nad);
    } catch (error) {
      this.#deps.log(`whereabouts node-slice controller: ${where}: ${(error as Error).message}`);
      return;
    }
    // whereabouts checks the mismatch first, but for a NAD without node slices it changes nothing.
    if (network === undefined || network.sliceSize === "") return;
    const mismatch = this.#mismatch(nad, network);
    if (mismatch !== undefined) {
      const shared = network.networkName === "" ? "no network_name" : `network_name ${network.networkName}`;
      this.#deps.log(
        `whereabouts node-slice controller: ${where}: found IPAM conf mismatch for network-attachment-definitions with same network name: ` +
          `${namespace}/${name} (${describe(network)}) and ${mismatch} both have ${shared}; ` +
          "make their range and node_slice_size agree, or give each network its own network_name",
      );
      return;
    }
    if (network.poolName === "") {
      this.#deps.log(
        `whereabouts node-slice controller: ${where}: its config has no network_name and no name to name the NodeSlicePool`,
      );
      return;
    }
    const nodes = api.store
      .list("nodes")
      .map((n) => n.metadata.name ?? "")
      .sort();
    const pools = primaryResource("nodeslicepools");
    const existing = api.store.get("nodeslicepools", whereaboutsNamespace, network.poolName);
    const slices = () => {
      const cut = divideRange(mustParseCidr(network.range), network.sliceSize);
      if (typeof cut === "string") throw new SliceError(`${where}: ${cut}`);
      return assignNodes(freeAllocations(cut), nodes);
    };
    try {
      if (existing === undefined) {
        api.create(
          pools,
          whereaboutsNamespace,
          {
            apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
            kind: "NodeSlicePool",
            metadata: {
              name: network.poolName,
              ownerReferences: [
                {
                  apiVersion: nadApiVersion,
                  kind: nadKind,
                  name,
                  uid: nad.metadata.uid,
                  controller: true,
                  blockOwnerDeletion: true,
                },
              ],
            },
            spec: { range: network.range, sliceSize: network.sliceSize },
            status: { allocations: slices() },
          },
          { dryRun: false },
        );
        return;
      }
      const next = structuredClone(existing);
      if (!ownerNames(existing).includes(name)) {
        next.metadata.ownerReferences = [
          ...((existing.metadata.ownerReferences ?? []) as JsonObject[]),
          { apiVersion: nadApiVersion, kind: nadKind, name, uid: nad.metadata.uid },
        ] as never;
      }
      const spec = isJsonObject(existing.spec) ? existing.spec : {};
      if (spec.range !== network.range || spec.sliceSize !== network.sliceSize) {
        next.spec = { range: network.range, sliceSize: network.sliceSize };
        next.status = { allocations: slices() };
      } else {
        next.status = {
          allocations: removeUnusedNodes(assignNodes(allocationsOf(existing), nodes), nodes),
        };
      }
      api.update(pools, whereaboutsNamespace, network.poolName, next, { dryRun: false });
    } catch (error) {
      if (!(error instanceof SliceError)) throw error;
      this.#deps.log(`whereabouts node-slice controller: ${error.message}`);
    }
  }

  /**
   * Another whereabouts NAD of the same `network_name` (unset counts as one name, as in whereabouts) whose
   * first range or slice size differ, described; else undefined. whereabouts then refuses to reconcile.
   */
  #mismatch(nad: KubeObject, network: WhereaboutsNetwork): string | undefined {
    for (const other of this.#deps.api.store.list("network-attachment-definitions")) {
      if (other.metadata.uid === nad.metadata.uid) continue;
      let theirs: WhereaboutsNetwork | undefined;
      try {
        theirs = this.#network(other);
      } catch {
        continue;
      }
      if (theirs === undefined || theirs.networkName !== network.networkName) continue;
      if (theirs.range !== network.range || theirs.sliceSize !== network.sliceSize) {
        return `${other.metadata.namespace}/${other.metadata.name} (${describe(theirs)})`;
      }
    }
    return undefined;
  }

  /**
   * A deleted NAD: whereabouts deletes the pool named after the NAD (not after its network) when that NAD is
   * the pool's only owner; a pool other NADs still own stays.
   */
  #ownerGone(nadName: string): void {
    const { api } = this.#deps;
    const owned = api.store
      .list("nodeslicepools")
      .some((pool) => ownerNames(pool).includes(nadName) && ownerNames(pool).length === 1);
    if (owned && api.store.get("nodeslicepools", whereaboutsNamespace, nadName) !== undefined) {
      api.forceDelete("nodeslicepools", whereaboutsNamespace, nadName);
    }
  }
}

function describe(network: WhereaboutsNetwork): string {
  return `${network.range} ${network.sliceSize === "" ? "without node slices" : `in ${network.sliceSize} slices`}`;
}

class SliceError extends Error {
  override name = "SliceError";
}
