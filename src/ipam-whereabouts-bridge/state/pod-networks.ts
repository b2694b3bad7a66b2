/**
 * What a pod of this node carries, read from its Multus annotation, and whether the bridge manages it. Pure.
 */

import { tryCanonical } from "../../eni/ip.js";
import { NETWORK_STATUS_ANNOTATIONS } from "../../eni/network-status.js";
import { MANAGED_ANNOTATION, type PodInfo, SIDECAR_ANNOTATION } from "../kube/kube-api.js";

/** One Multus attachment of a pod that names a MAC: its addresses belong on the ENI with that MAC. */
export interface PodAttachment {
  /** The network, as Multus names it: usually `namespace/nad-name`. */
  readonly network: string;
  readonly interfaceName: string;
  readonly mac: string;
  /** Canonical addresses; text that is no address is left out (and reported). */
  readonly addresses: readonly string[];
}

export interface PodNetworks {
  readonly attachments: PodAttachment[];
  /** Sentences about entries that could not be read; the readable ones still count. */
  readonly problems: string[];
}

export type PodSkipReason = "opted-out" | "sidecar";

/**
 * Why the bridge leaves a pod alone, or undefined when it manages it: the opt-out annotation, or the
 * sidecar (by annotation, or a container of a multus-ipmgr image whose first argument is `sidecar`).
 */
export function skipReasonOf(pod: PodInfo): PodSkipReason | undefined {
  if (pod.annotations[MANAGED_ANNOTATION] === "false") return "opted-out";
  if (pod.annotations[SIDECAR_ANNOTATION] === "true") return "sidecar";
  const runsSidecar = pod.containers.some(
    (c) => imageName(c.image).includes("multus-ipmgr") && c.args[0] === "sidecar",
  );
  return runsSidecar ? "sidecar" : undefined;
}

/** `registry:5000/team/multus-ipmgr:0.1.0@sha256:...` gives `multus-ipmgr`. */
function imageName(image: string): string {
  const withoutDigest = image.split("@")[0] ?? "";
  const last = withoutDigest.split("/").pop() ?? "";
  return last.split(":")[0] ?? "";
}

/**
 * The non-default entries of the pod's `k8s.v1.cni.cncf.io/network-status` annotation (or the older
 * `networks-status`) that name an interface and a MAC. No annotation: none yet (Multus writes it after CNI ADD).
 * An entry that names addresses (`ips` set, and not an empty list) without an `interface` or a `mac`, or with
 * `ips` that is no list, is a problem, as an annotation that is not JSON: its addresses are unknown.
 */
export function podNetworks(pod: PodInfo): PodNetworks {
  const ref = `${pod.namespace}/${pod.name}`;
  const annotation = NETWORK_STATUS_ANNOTATIONS.find((key) => pod.annotations[key] !== undefined);
  if (annotation === undefined) return { attachments: [], problems: [] };
  let entries: unknown;
  try {
    entries = JSON.parse(pod.annotations[annotation] ?? "");
  } catch {
    return { attachments: [], problems: [`pod ${ref}: the ${annotation} annotation is not JSON`] };
  }
  if (!Array.isArray(entries)) {
    return { attachments: [], problems: [`pod ${ref}: the ${annotation} annotation is not a JSON list`] };
  }
  const attachments: PodAttachment[] = [];
  const problems: string[] = [];
  entries.forEach((raw: unknown, index) => {
    if (typeof raw !== "object" || raw === null) {
      problems.push(`pod ${ref}: ${annotation} entry ${index} is not an object`);
      return;
    }
    const entry = raw as Record<string, unknown>;
    if (entry.default === true) return;
    const unread = unreadPart(entry);
    if (unread !== undefined) {
      // An entry that names addresses but cannot be read whole may hold a live pod's address: the pod is
      // unreadable, never one attachment short. One that names none (no IPAM) has nothing to place.
      if (namesAddresses(entry)) {
        const network = typeof entry.name === "string" ? ` (network ${JSON.stringify(entry.name)})` : "";
        problems.push(`pod ${ref}: ${annotation} entry ${index}${network} ${unread}`);
      }
      return;
    }
    const ips: unknown[] = Array.isArray(entry.ips) ? entry.ips : [];
    const addresses: string[] = [];
    for (const ip of ips) {
      const address = typeof ip === "string" ? tryCanonical(ip) : undefined;
      if (address === undefined) {
        problems.push(
          `pod ${ref}: ${annotation} entry ${index} lists ${JSON.stringify(ip)}, which is not an address`,
        );
      } else {
        addresses.push(address);
      }
    }
    attachments.push({
      network: typeof entry.name === "string" ? entry.name : "",
      interfaceName: entry.interface as string,
      mac: (entry.mac as string).trim().toLowerCase(),
      addresses,
    });
  });
  return { attachments, problems };
}

/** Whether a network-status entry names addresses: `ips` set to anything but null or an empty list. */
function namesAddresses(entry: Record<string, unknown>): boolean {
  const { ips } = entry;
  if (ips === undefined || ips === null) return false;
  return !(Array.isArray(ips) && ips.length === 0);
}

/** What keeps an entry from being read whole (the end of a sentence), or undefined when nothing does. */
function unreadPart(entry: Record<string, unknown>): string | undefined {
  if (entry.ips !== undefined && entry.ips !== null && !Array.isArray(entry.ips)) {
    return `has "ips" ${JSON.stringify(entry.ips)}, which is not a list of addresses`;
  }
  if (typeof entry.interface !== "string" || entry.interface === "") {
    return `lists addresses ${JSON.stringify(entry.ips)} but names no "interface"`;
  }
  if (typeof entry.mac !== "string" || entry.mac.trim() === "") {
    return `lists addresses ${JSON.stringify(entry.ips)} on ${entry.interface} but names no "mac", so the ENI they belong on is unknown`;
  }
  return undefined;
}
