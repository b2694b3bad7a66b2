import type { Clock } from "../../eni/process/clock.js";
import { KubeApiError } from "../errors/kube-api-error.js";
import { GivenWrites } from "./given-writes.js";
import type { KubeApi } from "./kube-api.js";
import { isJsonObject, type JsonObject, jsonEqual, type KubeObject, kubeTime } from "./kube-object.js";
import type { StoreEvent } from "./kube-store.js";
import { pickNode } from "./node-fit.js";
import { primaryResource } from "./resources.js";

export interface SchedulerDeps {
  readonly api: KubeApi;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly errorLog: (line: string) => void;
  /** Scripted writes in progress: their pods are taken as given. Default: none ever. */
  readonly given?: GivenWrites;
}

const defaultScheduler = "default-scheduler";

function objectAt(object: JsonObject, field: string): JsonObject {
  const value = object[field];
  return isJsonObject(value) ? value : {};
}

/** A pod kube-scheduler would try to place: not bound, its scheduler ours, Pending, not terminating. */
export function wantsScheduling(pod: KubeObject): boolean {
  const spec = objectAt(pod, "spec");
  const status = objectAt(pod, "status");
  return (
    (typeof spec.nodeName !== "string" || spec.nodeName === "") &&
    (spec.schedulerName ?? defaultScheduler) === defaultScheduler &&
    (status.phase === undefined || status.phase === "Pending") &&
    pod.metadata.deletionTimestamp === undefined
  );
}

/**
 * kube-scheduler, reduced to its filters (node-fit.ts): a pod with no `spec.nodeName` is bound to the first
 * node, in name order, that is not cordoned, matches its nodeSelector and carries no NoSchedule or NoExecute
 * taint it does not tolerate; `spec.nodeName` is set and PodScheduled=True, as the binding subresource does.
 * A pod no node takes stays Pending with PodScheduled=False, reason Unschedulable and the scheduler's
 * message, and is tried again on every node change (a taint removed, a node added). The kubelet stand-in then
 * runs a bound pod. Pods the world file and the control API write are taken as given, unbound ones too. No
 * scoring, no preemption, no affinity beyond nodeSelector. Work runs after the change
 * that asks for it, never inside a store listener, so watches see the pod unbound first.
 */
export class Scheduler {
  readonly #deps: SchedulerDeps;
  #unsubscribe: () => void = () => undefined;
  /** Pods to place (`namespace/name`), in the order asked. */
  readonly #pending = new Set<string>();
  /** Uids of the pods the world file and the control API wrote: taken as given, never bound. */
  readonly #given = new Set<string>();
  readonly #writes: GivenWrites;

  constructor(deps: SchedulerDeps) {
    this.#deps = deps;
    this.#writes = deps.given ?? new GivenWrites();
  }

  start(): void {
    this.#unsubscribe = this.#deps.api.store.subscribe((event) => this.#onChange(event));
  }

  stop(): void {
    this.#unsubscribe();
  }

  #onChange(event: StoreEvent): void {
    if (event.storage === "pods") {
      const uid = event.object.metadata.uid ?? "";
      if (event.type === "DELETED") this.#given.delete(uid);
      else if (this.#writes.active) this.#given.add(uid);
      else if (!this.#given.has(uid) && wantsScheduling(event.object)) this.#queue(event.object);
    } else if (event.storage === "nodes" && event.type !== "DELETED") {
      for (const pod of this.#deps.api.store.list("pods")) {
        if (!this.#given.has(pod.metadata.uid ?? "") && wantsScheduling(pod)) this.#queue(pod);
      }
    }
  }

  #queue(pod: KubeObject): void {
    this.#pending.add(`${pod.metadata.namespace ?? ""}/${pod.metadata.name ?? ""}`);
    if (this.#pending.size > 1) return;
    queueMicrotask(() => {
      const keys = [...this.#pending];
      this.#pending.clear();
      for (const key of keys) {
        const slash = key.indexOf("/");
        this.#run(() => this.schedule(key.slice(0, slash), key.slice(slash + 1)));
      }
    });
  }

  #run(work: () => void): void {
    try {
      work();
    } catch (error) {
      if (error instanceof KubeApiError) {
        // A client changed the pod in between: the change that did it queues the pod again.
        this.#deps.log(`scheduler: ${error.message}; requeuing`);
        return;
      }
      this.#deps.errorLog(`scheduler stand-in failed: ${(error as Error).stack ?? String(error)}`);
    }
  }

  /** One scheduling attempt of the pod `namespace/name`. */
  schedule(namespace: string, name: string): void {
    const { api } = this.#deps;
    const pod = api.store.get("pods", namespace, name);
    if (pod === undefined || !wantsScheduling(pod)) return;
    const choice = pickNode(pod, api.store.list("nodes"));
    const next = structuredClone(pod);
    const status = objectAt(next, "status");
    const conditions = Array.isArray(status.conditions) ? status.conditions.filter(isJsonObject) : [];
    const old = conditions.find((c) => c.type === "PodScheduled");
    const scheduled =
      "node" in choice
        ? { type: "PodScheduled", status: "True" }
        : { type: "PodScheduled", status: "False", reason: "Unschedulable", message: choice.unschedulable };
    const sameState = old !== undefined && old.status === scheduled.status;
    const condition = {
      ...scheduled,
      lastProbeTime: null,
      lastTransitionTime: sameState ? old.lastTransitionTime : kubeTime(this.#deps.clock.now()),
    };
    next.status = { ...status, conditions: [...conditions.filter((c) => c !== old), condition] };
    if ("node" in choice) next.spec = { ...objectAt(next, "spec"), nodeName: choice.node };
    if (jsonEqual(next, pod)) return;
    api.update(primaryResource("pods"), namespace, name, next, { dryRun: false });
  }
}
