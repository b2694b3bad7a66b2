/**
 * Attach mode's description of a node's Multus networks (IPMGR_BRIDGE_ATTACH_NETWORKS), parsed in the core
 * (src/eni/attach-networks.ts) so that the bridge, the links agent and doctor read the same JSON the same way.
 */
export {
  ATTACH_TAGS,
  type AttachNetwork,
  AttachNetworksProblem,
  parseAttachNetworks,
} from "../../eni/attach-networks.js";
