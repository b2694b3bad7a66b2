/**
 * The node's pods as the desired state reads them, with the plugin's claims in: a claim counts as its pod
 * carrying the address (a network-status entry on the claim's interface and MAC), so that the next wave
 * assigns it as it would for a pod Multus has written about, and no wave releases it. Pure.
 *
 * - The claim's pod in the view: its network-status gains an entry for each claimed address it does not list
 *   yet on that MAC. Once Multus has written the address, the claim and the pod are one (no second entry).
 * - The claim's pod not in the view yet (ADD runs before Multus writes anything, and often before the watch
 *   delivers the pod): a pod of this node with only the claims' entries stands in for it.
 * - An address whose DEL the bridge has answered (a tombstone) is taken out of its own pod's network-status:
 *   the terminating pod still lists it, and must neither have it assigned again nor keep it from release.
 */
import { NETWORK_STATUS_ANNOTATIONS } from "../../eni/network-status.js";
import type { PodInfo } from "../kube/kube-api.js";

export interface CniPodRef {
  readonly namespace: string;
  readonly name: string;
  /** CNI_ARGS' K8S_POD_UID; undefined when Multus did not pass it. */
  readonly uid: string | undefined;
}

/** One address of a sandbox interface that an ADD asked for, on the node's Multus ENI of that MAC. */
export interface CniClaim {
  readonly pod: CniPodRef;
  /** The interface in the pod (prevResult's interface name, `net1`). */
  readonly interfaceName: string;
  /** Lowercase. */
  readonly mac: string;
  readonly eniId: string;
  /** Canonical. */
  readonly address: string;
  /** The netconf's `name`. */
  readonly network: string;
}

/** An address of a pod whose DEL the bridge answered. */
export interface CniTombstone {
  readonly pod: CniPodRef;
  readonly address: string;
  /** When the DEL was answered, ms since the epoch. */
  readonly at: number;
}

const keyOf = (pod: { namespace: string; name: string }): string => `${pod.namespace}/${pod.name}`;

/** Whether a pod of the view is the pod a claim or tombstone names (the uid compared when both are known). */
export function samePod(pod: PodInfo, ref: CniPodRef): boolean {
  return keyOf(pod) === keyOf(ref) && (ref.uid === undefined || pod.uid === "" || pod.uid === ref.uid);
}

type Entry = Record<string, unknown>;

/** `pods` (this node's) with `claims` in and `tombstones` out. */
export function podsWithClaims(
  pods: readonly PodInfo[],
  claims: readonly CniClaim[],
  tombstones: readonly CniTombstone[],
  nodeName: string,
): PodInfo[] {
  const out: PodInfo[] = [];
  const placed = new Set<CniClaim>();
  for (const pod of pods) {
    const mine = claims.filter((c) => samePod(pod, c.pod));
    for (const c of mine) placed.add(c);
    const gone = tombstones.filter((t) => samePod(pod, t.pod)).map((t) => t.address);
    out.push(mine.length === 0 && gone.length === 0 ? pod : withEntries(pod, mine, gone));
  }
  const standIns = new Map<string, CniClaim[]>();
  for (const c of claims) {
    if (placed.has(c)) continue;
    standIns.set(keyOf(c.pod), [...(standIns.get(keyOf(c.pod)) ?? []), c]);
  }
  for (const group of standIns.values()) {
    const ref = (group[0] as CniClaim).pod;
    const pod: PodInfo = {
      namespace: ref.namespace,
      name: ref.name,
      uid: ref.uid ?? "",
      nodeName,
      deleting: false,
      phase: "Pending",
      annotations: {},
      containers: [],
    };
    out.push(withEntries(pod, group, []));
  }
  return out;
}

/** The pod with `gone` out of its network-status entries and an entry for each claim it does not list. */
function withEntries(pod: PodInfo, claims: readonly CniClaim[], gone: readonly string[]): PodInfo {
  const key =
    NETWORK_STATUS_ANNOTATIONS.find((k) => pod.annotations[k] !== undefined) ?? NETWORK_STATUS_ANNOTATIONS[0];
  const text = pod.annotations[key];
  let entries: Entry[] = [];
  if (text !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Unreadable: left as it is, the desired state names it and releases nothing while it is.
      return pod;
    }
    if (!Array.isArray(parsed)) return pod;
    entries = parsed as Entry[];
  }
  const goneSet = new Set(gone);
  entries = entries.map((entry) =>
    typeof entry === "object" && entry !== null && Array.isArray(entry.ips) && gone.length > 0
      ? {
          ...entry,
          ips: (entry.ips as unknown[]).filter((ip) => !(typeof ip === "string" && goneSet.has(ip))),
        }
      : entry,
  );
  const listed = (claim: CniClaim): boolean =>
    entries.some(
      (e) =>
        typeof e === "object" &&
        e !== null &&
        typeof e.mac === "string" &&
        e.mac.toLowerCase() === claim.mac &&
        Array.isArray(e.ips) &&
        e.ips.includes(claim.address),
    );
  const byInterface = new Map<string, CniClaim[]>();
  for (const claim of claims) {
    if (listed(claim)) continue;
    const k = `${claim.interfaceName} ${claim.mac}`;
    byInterface.set(k, [...(byInterface.get(k) ?? []), claim]);
  }
  for (const group of byInterface.values()) {
    const first = group[0] as CniClaim;
    entries.push({
      name: `${pod.namespace}/${first.network}`,
      interface: first.interfaceName,
      mac: first.mac,
      ips: group.map((c) => c.address),
    });
  }
  return { ...pod, annotations: { ...pod.annotations, [key]: JSON.stringify(entries) } };
}
