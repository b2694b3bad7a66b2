/**
 * Whether the bridge's view of the cluster can be trusted to release an address: a pure judgement on the
 * health of the watches it reads. "Listed once" is not enough. A watch that is failing, relisting, or has
 * not been heard from (an event or a bookmark) for longer than the silence bound may hide the pod that
 * carries an address now, so nothing is released until every watch is back and heard from.
 */

/** What a watch is doing now. */
export type WatchPhase = "listing" | "watching" | "retrying";

/** Why a watch failed last: the HTTP status when the API server answered, and a sentence for operators. */
export interface WatchFault {
  readonly status: number | undefined;
  /** A sentence naming the resource, what happened and the fix (refused, 403 RBAC, 404 CRD, silence). */
  readonly detail: string;
}

/** The health of one watch, as its reflector reports it. */
export interface WatchHealth {
  /** The resource's plural, e.g. `pods`. */
  readonly resource: string;
  readonly phase: WatchPhase;
  /** Whether a list has completed once (the cache has been complete once). */
  readonly synced: boolean;
  /** When the API server was last heard from on this watch (list answer, event or bookmark), ms; undefined: never. */
  readonly lastHeardAt: number | undefined;
  /** The last failure, until a list or watch succeeds again. */
  readonly fault: WatchFault | undefined;
}

export interface ViewTrust {
  readonly trusted: boolean;
  /** One sentence per watch that makes the view untrusted; empty when trusted. */
  readonly reasons: readonly string[];
}

/**
 * The view is trusted when every watch has listed, is watching now, has no fault, and was heard from within
 * `silenceMs` of `now`.
 */
export function viewTrust(watches: readonly WatchHealth[], now: number, silenceMs: number): ViewTrust {
  const reasons: string[] = [];
  for (const w of watches) {
    if (w.fault !== undefined) {
      reasons.push(w.fault.detail);
    } else if (!w.synced) {
      reasons.push(`the ${w.resource} watch has not listed yet`);
    } else if (w.phase !== "watching") {
      reasons.push(`the ${w.resource} watch is ${w.phase === "listing" ? "relisting" : "being restarted"}`);
    } else if (w.lastHeardAt === undefined) {
      reasons.push(`the ${w.resource} watch has not been heard from`);
    } else if (now - w.lastHeardAt > silenceMs) {
      reasons.push(
        `the ${w.resource} watch has been silent for ${Math.round((now - w.lastHeardAt) / 1000)} s (no event or bookmark; the bound is ${Math.round(silenceMs / 1000)} s)`,
      );
    }
  }
  return { trusted: reasons.length === 0, reasons };
}
