/** Pods by name and by reference, as the desired state's phases name them. Pure. */

import type { PodInfo } from "../kube/kube-api.js";
import type { PodRef } from "./desired-types.js";

/** `namespace/name`. */
export const podKey = (pod: { namespace: string; name: string }): string => `${pod.namespace}/${pod.name}`;

export const refOf = (pod: PodInfo): PodRef => ({ namespace: pod.namespace, name: pod.name, uid: pod.uid });

/** A podref's pod; its uid when it is a pod of this node (`uids`: podKey -> uid), so that its Event shows. */
export function refOfPodref(podref: string, uids: ReadonlyMap<string, string>): PodRef {
  const slash = podref.indexOf("/");
  const [namespace, name] =
    slash < 0 ? ["default", podref] : [podref.slice(0, slash), podref.slice(slash + 1)];
  return { namespace, name, uid: uids.get(`${namespace}/${name}`) };
}

/** A pod whose containers have all ended for good: it carries no address any more. */
export function podFinished(pod: PodInfo): boolean {
  return pod.phase === "Succeeded" || pod.phase === "Failed";
}
