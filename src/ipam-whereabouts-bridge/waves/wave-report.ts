/**
 * What a wave tells the outside once it has run: the pods' Events (addresses assigned, not assigned, in
 * conflict), the view's gauges, and the report /readyz and the tests read. Pure: the bridge posts the
 * events and sets the gauges.
 */
import { isAssign, isRelease } from "../../eni/plan-actions.js";
import type { EniState, PlanAction } from "../../eni/types.js";
import type { PodEvent } from "../kube/kube-api.js";
import type { DesiredState, PodRef } from "../state/desired-state.js";
import type { BridgeMetrics, WaveOutcome } from "../telemetry/metrics.js";
import type { EpisodeConflict } from "./conflict-episodes.js";
import {
  type AddressCount,
  countPodAddresses,
  type HeldAddresses,
  POLICY_REFUSALS,
} from "./pod-address-count.js";
import type { BridgeRefusal, Wave } from "./wave-plan.js";

/** What the last wave saw and did, for /readyz and the tests. */
export interface WaveReport {
  readonly at: number;
  readonly outcome: WaveOutcome;
  readonly mutatingCalls: number;
  /** Addresses of the managed pods the bridge holds (policy refusals and conflicts excluded); see pod-address-count.ts. */
  readonly wanted: number;
  readonly held: number;
  /** `address (namespace/pod/interface)` of each such address not held after the wave. */
  readonly unheld: readonly string[];
  /** What the ENIs hold after the wave, to count the pods' addresses again as pods come and go. */
  readonly heldAfter: HeldAddresses;
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
  /** Releases due but not made in this wave (held, or being confirmed), counted as pending. */
  readonly heldReleases: number;
}

export interface WaveTelling {
  /** In the order they are posted. */
  readonly events: readonly PodEvent[];
  readonly view: Parameters<BridgeMetrics["view"]>[0];
  readonly report: WaveReport;
}

const ref = (pod: PodRef): string => `${pod.namespace}/${pod.name}`;

/** The sentence of an address EC2 refused to assign: for its pod's Event and /readyz. */
export function notAssignedDetail(
  address: string,
  interfaceName: string,
  eniId: string,
  message: string,
): string {
  return `address ${address} on ${interfaceName} was not assigned to ENI ${eniId}: ${message}`;
}

/** The events, gauges and report of one wave. */
export function tellWave(input: WaveReportInput): WaveTelling {
  const { desired, wave, enis, done, failures, taken } = input;
  const heldBefore = new Set(enis.flatMap((e) => [...e.ipv4s, ...e.ipv6s].map((a) => `${e.eniId} ${a}`)));
  const assignedNow = new Set<string>();
  const heldAfter = new Set(heldBefore);
  for (const action of done) {
    for (const a of action.addresses) {
      const key = `${action.eniId} ${a}`;
      if (isAssign(action)) {
        assignedNow.add(key);
        heldAfter.add(key);
      } else if (isRelease(action)) heldAfter.delete(key);
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
  for (const p of wave.placements) {
    const pod = desired.podOfInterface.get(p.interfaceName);
    if (pod === undefined) continue;
    const key = `${p.eniId} ${p.address}`;
    const failure = failedBy.get(p.address);
    if (failure !== undefined && !heldBefore.has(key)) {
      entry(pod).problems.push(notAssignedDetail(p.address, p.interfaceName, p.eniId, failure));
      continue;
    }
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
  const excused = new Set([
    ...wave.refusals.filter((r) => POLICY_REFUSALS.has(r.reason)).map((r) => r.address),
    ...desired.conflicts.map((c) => c.address),
    ...taken.map((c) => c.address),
  ]);
  const heldView: HeldAddresses = { enis, keys: heldAfter, excused };
  const count = countPodAddresses(desired.interfaces, heldView);
  const pendingReleases = desired.pending.length + input.heldReleases;
  return {
    events,
    view: {
      managed: desired.managedPods.length,
      optedOut: desired.skippedPods.filter((s) => s.reason === "opted-out").length,
      sidecar: desired.skippedPods.filter((s) => s.reason === "sidecar").length,
      wanted: count.wanted,
      held: count.held,
      refused: wave.refusals.length,
      conflicts: conflictLines.length,
      pendingReleases,
    },
    report: {
      at: input.at,
      outcome: input.outcome,
      mutatingCalls: input.mutatingCalls,
      wanted: count.wanted,
      held: count.held,
      unheld: count.unheld,
      heldAfter: heldView,
      refusals: wave.refusals,
      conflicts: conflictLines,
      failures: [...new Set(failedBy.values())],
      pendingReleases,
    },
  };
}

/**
 * The lines of /readyz that tell the last wave; `count` the managed pods' addresses counted again now (the
 * report's own count by default).
 */
export function reportLines(report: WaveReport, count: AddressCount = report): string[] {
  return [
    `${count.held} of ${count.wanted} pod addresses held by their ENI; ${report.pendingReleases} releases pending`,
    ...count.unheld.map((a) => `not held: ${a}`),
    ...report.refusals.map((r) => `refused: ${r.detail}`),
    ...report.conflicts.map((conflict) => `conflict: ${conflict}`),
    ...report.failures.map((failure) => `failed: ${failure}`),
  ];
}
