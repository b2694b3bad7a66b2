/**
 * The simulated cluster's objects as GET /state shows them, kind by kind. A type of its own, so that the
 * simulator's state (sim-state.ts) names it without importing the cluster that fills it.
 */
import type { KubeObject } from "./kube-object.js";

/** The Kubernetes objects, as GET /state shows them: each list ordered by namespace and name. */
export interface SimKubeState {
  /** The cluster's latest resourceVersion. */
  resourceVersion: string;
  namespaces: KubeObject[];
  nodes: KubeObject[];
  pods: KubeObject[];
  networkAttachmentDefinitions: KubeObject[];
  ipPools: KubeObject[];
  overlappingRangeIPReservations: KubeObject[];
  nodeSlicePools: KubeObject[];
  leases: KubeObject[];
  /** core/v1 form. */
  events: KubeObject[];
}
