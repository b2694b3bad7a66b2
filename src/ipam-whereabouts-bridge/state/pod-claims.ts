/**
 * The desired state's pod phases. Pure.
 *
 * `readPods`: what each live pod of this node carries (every pod, managed or not: nothing it carries is
 * released) and, for the managed ones, a claim per address of each attachment whose MAC is an ENI of this
 * node. An attachment whose MAC matches no ENI is `unmatched` (macvlan, bridge and SR-IOV give the pod a MAC
 * of its own; only ipvlan's pod interface carries its ENI's MAC). A pod whose network-status cannot be read
 * is `unreadable`: the bridge then releases nothing, as that pod may carry any address.
 *
 * `interfacesOf`: the accepted claims as the planner's interfaces, one per pod attachment.
 */
import { cidrContains, compareAddresses, family } from "../../eni/ip.js";
import type { EniState, PodInterface } from "../../eni/types.js";
import type { PodInfo } from "../kube/kube-api.js";
import type { Claim, DesiredState, InputProblem, PodRef } from "./desired-types.js";
import { type PodAttachment, podNetworks, skipReasonOf } from "./pod-networks.js";
import { podKey, refOf } from "./pod-refs.js";
import type { WhereaboutsRange } from "./whereabouts-ranges.js";

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export interface PodClaims {
  /** Address -> the first pod of this node that carries it (network-status), managed or not. */
  readonly carriedBy: Map<string, string>;
  readonly claims: Claim[];
  readonly managedPods: PodRef[];
  readonly skippedPods: DesiredState["skippedPods"];
  readonly unmatched: DesiredState["unmatched"];
  readonly unreadablePods: string[];
}

/** `pods`: this node's live pods, sorted. `enisByMac`: this node's ENIs by lowercase MAC. */
export function readPods(
  pods: readonly PodInfo[],
  enisByMac: ReadonlyMap<string, EniState>,
  rangesByNad: ReadonlyMap<string, readonly WhereaboutsRange[]>,
  problems: InputProblem[],
): PodClaims {
  const out: PodClaims = {
    carriedBy: new Map(),
    claims: [],
    managedPods: [],
    skippedPods: [],
    unmatched: [],
    unreadablePods: [],
  };
  for (const pod of pods) {
    const networks = podNetworks(pod);
    if (networks.problems.length > 0) {
      out.unreadablePods.push(podKey(pod));
      for (const message of networks.problems) {
        problems.push({
          kind: "Pod",
          namespace: pod.namespace,
          name: pod.name,
          uid: pod.uid,
          message: `${message}; the bridge releases no address on this node until it can read it`,
        });
      }
    }
    for (const attachment of networks.attachments) {
      for (const a of attachment.addresses) if (!out.carriedBy.has(a)) out.carriedBy.set(a, podKey(pod));
    }
    const skip = skipReasonOf(pod);
    if (skip !== undefined) {
      out.skippedPods.push({ pod: refOf(pod), reason: skip });
      continue;
    }
    out.managedPods.push(refOf(pod));
    for (const attachment of networks.attachments) {
      if (!enisByMac.has(attachment.mac)) {
        out.unmatched.push({ pod: refOf(pod), interfaceName: attachment.interfaceName, mac: attachment.mac });
        continue;
      }
      for (const address of attachment.addresses) {
        const claimNetworks = networksOfClaim(pod, attachment, address, rangesByNad);
        out.claims.push({
          pod,
          interfaceName: attachment.interfaceName,
          mac: attachment.mac,
          address,
          networks: claimNetworks,
        });
      }
    }
  }
  return out;
}

/**
 * The whereabouts networks a claim can be in: the `network_name`s of the ranges of its attachment's NAD
 * (Multus names it `namespace/name`, or `name` in the pod's namespace) that hold the address; undefined
 * when none can be told (the NAD unknown, or none of its ranges holds it).
 */
function networksOfClaim(
  pod: PodInfo,
  attachment: PodAttachment,
  address: string,
  rangesByNad: ReadonlyMap<string, readonly WhereaboutsRange[]>,
): ReadonlySet<string> | undefined {
  const nad = attachment.network.includes("/")
    ? attachment.network
    : `${pod.namespace}/${attachment.network}`;
  const names = (rangesByNad.get(nad) ?? [])
    .filter((r) => r.family === family(address) && cidrContains(r.cidr, address))
    .map((r) => r.networkName);
  return names.length === 0 ? undefined : new Set(names);
}

/** The accepted claims as the planner's input: one interface per pod attachment, named `namespace/pod/interface`. */
export function interfacesOf(accepted: readonly Claim[]): {
  interfaces: PodInterface[];
  podOfInterface: Map<string, PodRef>;
} {
  const interfacesByName = new Map<string, { mac: string; addresses: string[]; pod: PodInfo }>();
  for (const claim of accepted) {
    const name = `${podKey(claim.pod)}/${claim.interfaceName}`;
    const entry = interfacesByName.get(name) ?? { mac: claim.mac, addresses: [], pod: claim.pod };
    entry.addresses.push(claim.address);
    interfacesByName.set(name, entry);
  }
  const interfaces: PodInterface[] = [];
  const podOfInterface = new Map<string, PodRef>();
  for (const [name, entry] of [...interfacesByName].sort(([a], [b]) => byString(a, b))) {
    interfaces.push({
      name,
      mac: entry.mac,
      addresses: [...new Set(entry.addresses)].sort(compareAddresses),
    });
    podOfInterface.set(name, refOf(entry.pod));
  }
  return { interfaces, podOfInterface };
}
