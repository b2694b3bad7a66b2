/**
 * The reservations Lease (coordination.k8s.io/v1), held by one bridge at a time, as client-go's leader
 * election holds one: the holder renews it on a timer of its own (every sixth of the Lease's duration), not
 * once per reservations pass, so that a slow pass (EC2 answering in seconds) does not let it expire midway;
 * and it counts itself the holder only until two thirds of the duration after the start of its last
 * successful renewal (the renew deadline), a third before any other bridge may take the Lease over, so that
 * it stops writing before another can start, whatever its clock's skew up to that third. A renewal that
 * finds another holder ends the hold at once. The identity is unique per process: the pod's name and uid
 * (downward API), not the host's name, which host-network pods on one node share.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import { KubeConflictError } from "../kube/errors/kube-conflict-error.js";
import type { KubeApi } from "../kube/kube-api.js";

export interface LeaseOptions {
  readonly namespace: string;
  readonly name: string;
  /** How long the Lease holds without renewal, in ms; another bridge takes it over after that. */
  readonly durationMs: number;
  /** This process, as the Lease's holderIdentity (`leaseIdentity`). */
  readonly identity: string;
}

/**
 * The holder identity: `POD_NAME_POD_UID` from the downward API. Without them (a bridge run outside a pod,
 * or a DaemonSet from before they were asked for), the host name, the node and a random uuid, with a warning:
 * unique to this process still, but naming no pod.
 */
export function leaseIdentity(
  pod: { readonly podName: string | undefined; readonly podUid: string | undefined },
  nodeName: string,
  logger: Logger,
): string {
  if (pod.podName !== undefined && pod.podName !== "" && pod.podUid !== undefined && pod.podUid !== "") {
    return `${pod.podName}_${pod.podUid}`;
  }
  const identity = `${hostname()}_${nodeName}_${randomUUID()}`;
  logger.warn(
    { identity },
    "POD_NAME and POD_UID are not set: the reservations Lease's holder identity is the host name, the node " +
      "and a random uuid, unique to this process but naming no pod; set both from the downward API " +
      "(fieldRef metadata.name and metadata.uid, as deploy/overlays/bridge/daemonset-bridge.yaml does)",
  );
  return identity;
}

export class LeaseRenewer {
  /** Until when this process counts itself the holder (clock time); undefined: not the holder. */
  #heldUntil: number | undefined;
  #renewing: Promise<boolean> | undefined;
  #failure: string | undefined;

  constructor(
    private readonly deps: { readonly kube: KubeApi; readonly clock: Clock; readonly logger: Logger },
    readonly options: LeaseOptions,
  ) {}

  /** The renew deadline: two thirds of the Lease's duration after a renewal started. */
  get renewDeadlineMs(): number {
    return Math.floor((this.options.durationMs * 2) / 3);
  }

  /** The timer's period: a sixth of the Lease's duration, four tries before the renew deadline. */
  get renewIntervalMs(): number {
    return Math.max(1, Math.floor(this.options.durationMs / 6));
  }

  /** Whether this process holds the Lease now: renewed within the renew deadline, and not lost since. */
  holds(): boolean {
    return this.#heldUntil !== undefined && this.deps.clock.now() < this.#heldUntil;
  }

  /**
   * Takes or renews the Lease; true when this process holds it. A lost race is not an error. One renewal
   * at a time: a call while one is under way waits for it (two of ours must not race each other).
   * @throws KubeError when the API cannot be asked (the hold then lasts until its deadline).
   */
  renew(): Promise<boolean> {
    this.#renewing ??= this.#renew().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  /**
   * Renews every `renewIntervalMs` until `signal` aborts, while this process holds the Lease or has not
   * heard that another does (taking it is the passes' job, once the watches have listed); a failure is
   * logged once and tried again.
   */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.deps;
    while (!signal.aborted) {
      try {
        if (this.#heldUntil !== undefined) await this.renew();
        if (this.#failure !== undefined) logger.info("the reservations Lease is renewed again");
        this.#failure = undefined;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (this.#failure !== message) {
          logger.warn(
            { err: error, renewDeadlineMs: this.renewDeadlineMs },
            "could not renew the reservations Lease; no reservation is written once the renew deadline passes",
          );
        }
        this.#failure = message;
      }
      await clock.sleep(this.renewIntervalMs, signal).catch((error: unknown) => {
        if (!signal.aborted) throw error;
      });
    }
  }

  async #renew(): Promise<boolean> {
    const { kube, clock, logger } = this.deps;
    const { namespace, name, identity, durationMs } = this.options;
    const started = clock.now();
    const now = new Date(started);
    const durationSeconds = Math.ceil(durationMs / 1000);
    const held = this.holds();
    try {
      const current = await kube.getLease(namespace, name);
      if (current === undefined) {
        await kube.createLease({
          namespace,
          name,
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: 0,
          resourceVersion: undefined,
        });
        logger.info({ lease: `${namespace}/${name}`, identity }, "took the reservations Lease");
        return this.#held(started);
      }
      const ours = current.holderIdentity === identity;
      const renewedAt = current.renewTime?.getTime() ?? 0;
      const expired = renewedAt + (current.leaseDurationSeconds ?? durationSeconds) * 1000 <= now.getTime();
      if (!ours && !expired && current.holderIdentity !== undefined && current.holderIdentity !== "") {
        return this.#lost(held, current.holderIdentity);
      }
      await kube.updateLease({
        ...current,
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        renewTime: now,
        ...(ours ? {} : { acquireTime: now, leaseTransitions: (current.leaseTransitions ?? 0) + 1 }),
      });
      if (!ours)
        logger.info(
          { lease: `${namespace}/${name}`, from: current.holderIdentity, identity },
          "took the reservations Lease over",
        );
      return this.#held(started);
    } catch (error) {
      // Someone else wrote the Lease between our read and our write.
      if (error instanceof KubeConflictError) return this.#lost(held, undefined);
      throw error;
    }
  }

  #held(startedAt: number): boolean {
    this.#heldUntil = startedAt + this.renewDeadlineMs;
    return this.holds();
  }

  #lost(held: boolean, holder: string | undefined): false {
    this.#heldUntil = undefined;
    if (held) {
      this.deps.logger.warn(
        { lease: `${this.options.namespace}/${this.options.name}`, holder },
        "lost the reservations Lease: no reservation is written until it is taken again",
      );
    }
    return false;
  }
}
