/**
 * What a wave tells the outside once it has run: the pods' Events (addresses assigned, not assigned, in
 * conflict), the view's gauges, and the report /readyz and the tests read. Pure: the bridge posts the
 * events and sets the gauges.
 */
import { coveringPrefix } from "../eni/ip.js";
import { isAssign } from "../eni/plan-actions.js";
import type { EniState, PlanAction } from "../eni/types.js";
import type { EpisodeConflict } from "./conflict-episodes.js";
import type { DesiredState, PodRef } from "./desired-state.js";
import type { PodEvent } from "./kube-api.js";
import type { BridgeMetrics, WaveOutcome } from "./metrics.js";
import type { BridgeRefusal, Wave } from "./wave-plan.js";

/** Whether the ENI holds a delegated prefix over the address (prefix mode): held, with no call. */
function insidePrefix(enis: readonly EniState[], eniId: string, address: string): boolean {
  const eni = enis.find((e) => e.eniId === eniId);
  return (
    eni !== undefined &&
    coveringPrefix([...(eni.ipv4Prefixes ?? []), ...(eni.ipv6Prefixes ?? [])], address) !== undefined
  );
}

/** What the last wave saw and did, for /readyz and the tests. */
export interface WaveReport {
  readonly at: number;
  readonly outcome: WaveOutcome;
  readonly mutatingCalls: number;
  readonly wanted: number;
  readonly held: number;
  readonly refusals: readonly BridgeRefusal[];
  readonly conflicts: readonly string[];
  readonly failures: readonly string[];
  readonly pendingReleases: number;
}

/** An action EC2 refused in the wave, with its error. */
export interface FailedAction {
  readonly action: PlanAction;
  readonly error: unknown;
}

export interface WaveReportInput {
  readonly desired: DesiredState;
  readonly wave: Wave;
  /** The ENIs as the wave read them, before its actions. */
  readonly enis: readonly EniState[];
  /** The actions EC2 accepted. */
  readonly done: ReadonlySet<PlanAction>;
  readonly failures: readonly FailedAction[];
  /** Open episodes in which another ENI took an address back (ConflictEpisodes.conflicts). */
  readonly taken: readonly EpisodeConflict[];
  readonly outcome: WaveOutcome;
  readonly mutatingCalls: number;
  readonly at: number;
}

export interface WaveTelling {
  /** In the order they are posted. */
  readonly events: readonly PodEvent[];
  readonly view: Parameters<BridgeMetrics["view"]>[0];
  readonly report: WaveReport;
}

const ref = (pod: PodRef): string => `${pod.namespace}/${pod.name}`;

/** The events, gauges and report of one wave. */
export function tellWave(input: WaveReportInput): WaveTelling {
  const { desired, wave, enis, done, failures, taken } = input;
  const heldBefore = new Set(enis.flatMap((e) => [...e.ipv4s, ...e.ipv6s].map((a) => `${e.eniId} ${a}`)));
  const assignedNow = new Set<string>();
  for (const action of done) {
    if (isAssign(action)) {
      for (const a of action.addresses) assignedNow.add(`${action.eniId} ${a}`);
    }
  }
  const failedBy = new Map<string, string>();
  for (const { action, error } of failures) {
    for (const a of action.addresses) failedBy.set(a, error instanceof Error ? error.message : String(error));
  }

  // Per pod: what is now held, what was assigned in this wave, what could not be.
  const perPod = new Map<string, { pod: PodRef; assigned: string[]; problems: string[] }>();
  const entry = (pod: PodRef) => {
    const key = ref(pod);
    const found = perPod.get(key) ?? { pod, assigned: [], problems: [] };
    perPod.set(key, found);
    return found;
  };
  let held = 0;
  for (const p of wave.placements) {
    const pod = desired.podOfInterface.get(p.interfaceName);
    if (pod === undefined) continue;
    const key = `${p.eniId} ${p.address}`;
    const failure = failedBy.get(p.address);
    if (failure !== undefined && !heldBefore.has(key)) {
      entry(pod).problems.push(failure);
      continue;
    }
    if (heldBefore.has(key) || assignedNow.has(key) || insidePrefix(enis, p.eniId, p.address)) held += 1;
    if (assignedNow.has(key))
      entry(pod).assigned.push(`${p.address} (${p.interfaceName.split("/").pop()}) on ${p.eniId}`);
  }
  for (const refusal of wave.refusals) {
    const pod = desired.podOfInterface.get(refusal.interfaceName);
    if (pod !== undefined) entry(pod).problems.push(refusal.detail);
  }
  const events: PodEvent[] = [];
  for (const { pod, assigned, problems } of perPod.values()) {
    if (problems.length > 0) {
      events.push({ pod, type: "Warning", reason: "AddressesNotAssigned", message: problems.join(" ") });
    } else if (assigned.length > 0) {
      events.push({
        pod,
        type: "Normal",
        reason: "AddressesAssigned",
        message: `assigned ${assigned.join(", ")}`,
      });
    }
  }
  for (const conflict of desired.conflicts) {
    for (const pod of [conflict.pod, conflict.other])
      events.push({ pod, type: "Warning", reason: "AddressConflict", message: conflict.detail });
  }
  for (const conflict of taken)
    events.push({ pod: conflict.pod, type: "Warning", reason: "AddressConflict", message: conflict.message });

  const conflictLines = [...new Set([...desired.conflicts, ...taken].map((c) => c.detail))];
  return {
    events,
    view: {
      managed: desired.managedPods.length,
      optedOut: desired.skippedPods.filter((s) => s.reason === "opted-out").length,
      sidecar: desired.skippedPods.filter((s) => s.reason === "sidecar").length,
      wanted: wave.placements.length,
      held,
      refused: wave.refusals.length,
      conflicts: conflictLines.length,
      pendingReleases: desired.pending.length,
    },
    report: {
      at: input.at,
      outcome: input.outcome,
      mutatingCalls: input.mutatingCalls,
      wanted: wave.placements.length,
      held,
      refusals: wave.refusals,
      conflicts: conflictLines,
      failures: [...new Set(failedBy.values())],
      pendingReleases: desired.pending.length,
    },
  };
}

/** The lines of /readyz that tell the last wave. */
export function reportLines(report: WaveReport): string[] {
  return [
    `${report.held} of ${report.wanted} pod addresses held by their ENI; ${report.pendingReleases} releases pending`,
    ...report.refusals.map((r) => `refused: ${r.detail}`),
    ...report.conflicts.map((conflict) => `conflict: ${conflict}`),
    ...report.failures.map((failure) => `failed: ${failure}`),
  ];
}
