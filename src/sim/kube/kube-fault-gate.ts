import type { Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "../../eni/process/clock.js";
import { KubeApiError } from "../errors/kube-api-error.js";
import type { FaultState } from "../fault-state.js";
import type { Faults, KubeErrorStatus, KubeVerb } from "../faults.js";
import type { WatchStreams } from "./watch-stream.js";

/** What a request asks for, as the faults select it: its verb and, for a resource request, which resource. */
export interface RequestTarget {
  readonly verb: KubeVerb;
  /** Plural name, e.g. `pods`; undefined for discovery, /version, /healthz and unknown paths. */
  readonly resource: string | undefined;
  /** API group of the resource ("" for the core group). */
  readonly group: string;
  readonly namespace: string | undefined;
}

/** The API server's reason and wording for an error code (apimachinery's NewGenericServerResponse). */
const genericErrors: Readonly<Record<number, readonly [reason: string, message: string]>> = {
  400: ["BadRequest", "the server rejected our request for an unknown reason"],
  401: ["Unauthorized", "Unauthorized"],
  404: ["NotFound", "the server could not find the requested resource"],
  405: ["MethodNotAllowed", "the server does not allow this method on the requested resource"],
  409: ["Conflict", "the server reported a conflict"],
  422: ["Invalid", "the server rejected our request due to an error in our request"],
  429: ["TooManyRequests", "Too many requests, please try again later."],
  500: ["InternalError", "Internal error occurred: injected failure (multus-ipmgr sim)"],
  503: ["ServiceUnavailable", "the server is currently unable to handle the request"],
  504: [
    "Timeout",
    "the server was unable to return a response in the time allotted, but may still be processing the request",
  ],
};

/** The error `fault` answers `target` with, worded as kube-apiserver words it. */
export function injectedError(fault: KubeErrorStatus, target: RequestTarget): KubeApiError {
  const { code } = fault;
  let [reason, message] = genericErrors[code] ?? [
    "Unknown",
    `the server responded with the status code ${code} but did not return more information`,
  ];
  const qualified =
    target.resource === undefined
      ? undefined
      : target.group === ""
        ? target.resource
        : `${target.resource}.${target.group}`;
  if (code === 403) {
    reason = "Forbidden";
    const scope =
      target.namespace === undefined ? "at the cluster scope" : `in the namespace "${target.namespace}"`;
    message =
      qualified === undefined
        ? `forbidden: User "system:anonymous" cannot ${target.verb} path`
        : `${qualified} is forbidden: User "system:anonymous" cannot ${target.verb} resource "${target.resource}" in API group "${target.group}" ${scope}`;
  }
  const details = {
    ...(target.resource === undefined ? {} : { kind: target.resource }),
    ...(target.group === "" ? {} : { group: target.group }),
    ...(code === 429 ? { retryAfterSeconds: 1 } : {}),
  };
  return new KubeApiError(
    code,
    fault.reason ?? reason,
    fault.message ?? message,
    Object.keys(details).length === 0 ? undefined : details,
  );
}

function errorApplies(fault: KubeErrorStatus, target: RequestTarget): boolean {
  if (fault.verbs !== undefined && !fault.verbs.includes(target.verb)) return false;
  if (fault.resources === undefined) return true;
  return target.resource !== undefined && fault.resources.includes(target.resource);
}

/** Why a request is held unanswered now, or undefined to serve it. */
function holdReason(faults: Faults, target: RequestTarget): string | undefined {
  if (faults.kubeFreeze) return "kubeFreeze";
  if (faults.kubeHangVerbs.includes(target.verb)) return `kubeHangVerbs ${target.verb}`;
  return undefined;
}

interface Held {
  readonly target: RequestTarget;
  readonly resolve: (serve: boolean) => void;
}

/**
 * The Kubernetes API's faults (`kube*` in the faults): it refuses connections by closing the listener,
 * freezes watches and holds requests without an answer, adds latency, answers injected errors and expires
 * watch resumes. Every request passes `admit` first; fault changes act at once on what is open.
 */
export class KubeFaultGate {
  readonly #faults: FaultState;
  readonly #clock: Clock;
  readonly #watches: WatchStreams;
  readonly #errorLog: (line: string) => void;
  readonly #held = new Set<Held>();
  #server: Server | undefined;
  #address: AddressInfo | undefined;
  #refusing = false;
  #frozen = false;
  #closed = false;
  /** Settles when the listener closed by kubeRefuseConnections has finished closing. */
  #closing: Promise<void> = Promise.resolve();
  readonly #unsubscribe: () => void;

  constructor(faults: FaultState, clock: Clock, watches: WatchStreams, errorLog: (line: string) => void) {
    this.#faults = faults;
    this.#clock = clock;
    this.#watches = watches;
    this.#errorLog = errorLog;
    this.#unsubscribe = faults.subscribe((next) => this.#apply(next));
  }

  /** The server whose listener kubeRefuseConnections closes; call once it listens. */
  attach(server: Server): void {
    this.#server = server;
    this.#address = server.address() as AddressInfo;
    this.#apply(this.#faults.get());
  }

  #apply(faults: Faults): void {
    if (this.#closed) return;
    if (faults.kubeFreeze !== this.#frozen) {
      this.#frozen = faults.kubeFreeze;
      if (this.#frozen) this.#watches.freezeAll();
      else this.#watches.thawAll();
    }
    for (const held of [...this.#held]) {
      if (holdReason(faults, held.target) === undefined) {
        this.#held.delete(held);
        held.resolve(true);
      }
    }
    if (faults.kubeRefuseConnections !== this.#refusing && this.#server !== undefined) {
      this.#refusing = faults.kubeRefuseConnections;
      if (this.#refusing) this.#stopListening(this.#server);
      else this.#listenAgain(this.#server);
    }
  }

  #stopListening(server: Server): void {
    this.#closing = new Promise((resolve) => {
      server.close((error) => {
        if (error !== undefined) this.#errorLog(`kubernetes: closing the listener failed: ${error.message}`);
        resolve();
      });
    });
    server.closeAllConnections();
  }

  /** Listens again on the same address, once the listener is closed, unless refused again meanwhile. */
  #listenAgain(server: Server): void {
    const address = this.#address;
    if (address === undefined) return;
    void this.#closing.then(() => {
      if (this.#closed || this.#refusing || server.listening) return;
      server.once("error", (error) =>
        this.#errorLog(`kubernetes: listening again on port ${address.port} failed: ${error.message}`),
      );
      server.listen(address.port, address.address);
    });
  }

  /**
   * Waits until `target` may be served (freeze, hung verbs, latency). Resolves true to serve it, or throws the
   * injected error; false when the client left or the simulator closes meanwhile (answer nothing then).
   */
  async admit(target: RequestTarget, res: ServerResponse): Promise<boolean> {
    let gone = false;
    let held: Held | undefined;
    // The client went (its timeout fired, or the connection was destroyed): nothing to answer.
    const onClose = (): void => {
      gone = true;
      if (held !== undefined && this.#held.delete(held)) held.resolve(false);
    };
    res.once("close", onClose);
    try {
      if (holdReason(this.#faults.get(), target) !== undefined) {
        const serve = await new Promise<boolean>((resolve) => {
          held = { target, resolve };
          this.#held.add(held);
        });
        if (!serve) return false;
      }
      const latency = this.#faults.get().kubeLatencyMs;
      if (latency > 0) await this.#clock.sleep(latency);
      if (gone || this.#closed) return false;
      const error = this.#faults.get().kubeErrorStatus;
      if (error !== null && errorApplies(error, target)) throw injectedError(error, target);
      return true;
    } finally {
      res.off("close", onClose);
    }
  }

  /** Whether this watch resume must be answered 410 Expired (consumes one of kubeExpireWatchResume). */
  expireWatchResume(): boolean {
    return this.#faults.takeExpireWatchResume();
  }

  /** Drops what is held (the simulator closes): held requests are not answered. */
  close(): void {
    this.#closed = true;
    this.#unsubscribe();
    for (const held of this.#held) held.resolve(false);
    this.#held.clear();
  }
}
