import type { JsonObject, KubeObject } from "./kube-object.js";

/**
 * core/v1 Events and events.k8s.io/v1 Events are one stored resource seen through two APIs, as in
 * kube-apiserver: an Event created through either shows in both. It is stored in core/v1 form; these map the
 * fields that are named differently (the rest, e.g. eventTime, series, action, reason, type, related and
 * reportingInstance, have the same name in both).
 */
const renamed: readonly (readonly [core: string, events: string])[] = [
  ["involvedObject", "regarding"],
  ["message", "note"],
  ["reportingComponent", "reportingController"],
  ["source", "deprecatedSource"],
  ["firstTimestamp", "deprecatedFirstTimestamp"],
  ["lastTimestamp", "deprecatedLastTimestamp"],
  ["count", "deprecatedCount"],
];

function rename(object: KubeObject, from: 0 | 1, apiVersion: string): KubeObject {
  const out: JsonObject = { ...object, apiVersion, kind: "Event" };
  for (const pair of renamed) {
    const source = pair[from];
    const target = pair[1 - from] as string;
    delete out[target];
    if (object[source] !== undefined) out[target] = object[source];
    delete out[source];
  }
  // Zero values the API server omits in one form and writes in the other.
  if (from === 0 && out.deprecatedCount === 0) delete out.deprecatedCount;
  return out as KubeObject;
}

/** A stored (core/v1) Event as events.k8s.io/v1 shows it. */
export function eventToEventsV1(core: KubeObject): KubeObject {
  return rename(core, 0, "events.k8s.io/v1");
}

/** An events.k8s.io/v1 Event in its stored (core/v1) form. */
export function eventFromEventsV1(events: KubeObject): KubeObject {
  return rename(events, 1, "v1");
}
