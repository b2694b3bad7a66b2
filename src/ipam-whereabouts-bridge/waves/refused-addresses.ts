/**
 * Addresses EC2 refused to assign to an ENI, found alone by splitting a refused assign (wave-apply.ts): an
 * address inside a prefix another instance's ENI still holds stays refused until that node lets it go.
 * Asking again in every wave's batch would have EC2 refuse the batch and the split start over, many calls a
 * wave: each is held back from the waves' assigns and asked again alone, after a backoff (1 s doubling to
 * 60 s, as conflict repairs). Held back, it is refused with the same sentence as its Event, and counts as
 * not held on /readyz. Forgotten once its ENI holds it, or no pod wants it there any more.
 */
import { type BackoffPolicy, backoffDelay } from "../../eni/backoff.js";
import { isAssign, isMove } from "../../eni/plan-actions.js";
import type { PlanAction } from "../../eni/types.js";
import type { BridgeRefusal, Wave } from "./wave-plan.js";
import { type FailedAction, notAssignedDetail } from "./wave-report.js";

/** Default pacing of a refused address's next try. */
export const DEFAULT_REFUSAL_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

interface Refused {
  readonly attempts: number;
  readonly retryAt: number;
  readonly message: string;
}

const keyOf = (eniId: string, address: string): string => `${eniId} ${address}`;

export class RefusedAddresses {
  readonly #refused = new Map<string, Refused>();

  constructor(private readonly backoff: BackoffPolicy = DEFAULT_REFUSAL_BACKOFF) {}

  /** Remembers each assign of one address EC2 refused in the wave. */
  learn(failures: readonly FailedAction[], now: number): void {
    for (const { action, error } of failures) {
      const [address] = action.addresses;
      if (!isAssign(action) || action.addresses.length !== 1 || address === undefined) continue;
      const key = keyOf(action.eniId, address);
      const attempts = (this.#refused.get(key)?.attempts ?? 0) + 1;
      const message = error instanceof Error ? error.message : String(error);
      this.#refused.set(key, { attempts, retryAt: now + backoffDelay(this.backoff, attempts), message });
    }
  }

  /** Keeps only the refusals `keep` accepts (`eniId address`): those still wanted there and not held. */
  retain(keep: (key: string) => boolean): void {
    for (const key of this.#refused.keys()) if (!keep(key)) this.#refused.delete(key);
  }

  /** When a refused address is due to be asked again; undefined: none remembered. */
  nextAt(): number | undefined {
    const times = [...this.#refused.values()].map((r) => r.retryAt);
    return times.length === 0 ? undefined : Math.min(...times);
  }

  /**
   * The wave with each refused address out of its assign: refused again before its time (with its moves
   * trimmed), or, when due, asked alone right after the assign it came from.
   */
  holdBack(wave: Wave, now: number): Wave {
    if (this.#refused.size === 0) return wave;
    const heldBack = new Set<string>();
    const refusals: BridgeRefusal[] = [];
    const actions: PlanAction[] = [];
    for (const action of wave.actions) {
      if (!isAssign(action)) {
        actions.push(action);
        continue;
      }
      const alone: PlanAction[] = [];
      const rest = action.addresses.filter((address) => {
        const refused = this.#refused.get(keyOf(action.eniId, address));
        if (refused === undefined) return true;
        if (refused.retryAt <= now) alone.push({ ...action, addresses: [address] });
        else heldBack.add(keyOf(action.eniId, address));
        return false;
      });
      if (rest.length > 0) actions.push({ ...action, addresses: rest });
      actions.push(...alone);
    }
    for (const p of wave.placements) {
      const refused = this.#refused.get(keyOf(p.eniId, p.address));
      if (refused === undefined || !heldBack.has(keyOf(p.eniId, p.address))) continue;
      refusals.push({
        address: p.address,
        interfaceName: p.interfaceName,
        reason: "ec2-refused",
        detail: notAssignedDetail(p.address, p.interfaceName, p.eniId, refused.message),
      });
    }
    const kept = actions
      .map((a) =>
        isMove(a) ? { ...a, addresses: a.addresses.filter((x) => !heldBackAnywhere(heldBack, x)) } : a,
      )
      .filter((a) => !isMove(a) || a.addresses.length > 0);
    return {
      actions: kept,
      placements: wave.placements.filter((p) => !heldBack.has(keyOf(p.eniId, p.address))),
      refusals: [...wave.refusals, ...refusals],
    };
  }
}

/** Whether an address is held back from any ENI (a move serves the assign of its address). */
function heldBackAnywhere(heldBack: ReadonlySet<string>, address: string): boolean {
  for (const key of heldBack) if (key.endsWith(` ${address}`)) return true;
  return false;
}
