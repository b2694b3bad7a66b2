import { AddressNotAllowedError } from "../eni/errors/address-not-allowed-error.js";
import { canonical } from "../eni/ip.js";
import { isAssign, isRelease } from "../eni/plan-actions.js";
import type { EniState, Plan, PlanAction, PodInterface, Refusal } from "../eni/types.js";

/**
 * What EC2's answers told the sidecar that its reads (IMDS) do not show, and the planner is given:
 * - assignments EC2 accepted that IMDS has not shown yet (IMDS lags, at times past the confirm timeout): a
 *   release takes them as held, so that an address that leaves in that window is still released;
 * - refusals EC2 made on facts the planner cannot read (an address that is another instance's primary):
 *   kept for a while, during which the planner refuses the address up front, with no call.
 * Pure bookkeeping: the loop says what happened and when.
 */
export class Ec2Answers {
  /** address -> the ENI EC2 accepted it on. */
  readonly #assignedUnconfirmed = new Map<string, string>();
  /** `${address} ${interface}` -> the refusal, and until when it is kept from EC2. */
  readonly #refusals = new Map<string, { readonly refusal: Refusal; readonly askAgainAt: number }>();

  /** Assignments EC2 accepted that IMDS has not shown on their ENI yet: address -> ENI id. */
  get assignedUnconfirmed(): ReadonlyMap<string, string> {
    return this.#assignedUnconfirmed;
  }

  /** A plan was applied, but for the `failed` actions: its assigns are unconfirmed, its releases gone. */
  applied(planned: Plan, failed: ReadonlySet<PlanAction> = new Set()): void {
    for (const action of planned.actions) {
      if (failed.has(action)) continue;
      for (const address of action.addresses) {
        if (isAssign(action)) this.#assignedUnconfirmed.set(address, action.eniId);
        else if (isRelease(action)) this.#assignedUnconfirmed.delete(address);
      }
    }
  }

  /** IMDS confirmed these addresses (every placement of a plan). */
  confirmed(addresses: Iterable<string>): void {
    for (const address of addresses) this.#assignedUnconfirmed.delete(address);
  }

  /** Forgets the unconfirmed assignments that IMDS shows on their ENI now. */
  observed(enis: readonly EniState[], interfaces: readonly PodInterface[]): void {
    for (const [address, eniId] of this.#assignedUnconfirmed) {
      const eni = enis.find((e) => e.eniId === eniId);
      if (eni !== undefined && [...eni.ipv4s, ...eni.ipv6s].some((a) => canonical(a) === address)) {
        this.#assignedUnconfirmed.delete(address);
      }
    }
    const present = new Set(interfaces.flatMap((i) => i.addresses.map((a) => `${canonical(a)} ${i.name}`)));
    for (const key of this.#refusals.keys()) if (!present.has(key)) this.#refusals.delete(key);
  }

  /** Keeps the refusals among `errors` that only EC2 could make, not to be asked about before `askAgainAt`. */
  refusedBy(errors: readonly unknown[], askAgainAt: number): void {
    for (const error of errors) {
      if (!(error instanceof AddressNotAllowedError)) continue;
      for (const refusal of error.refusals) {
        this.#refusals.set(`${refusal.address} ${refusal.interfaceName}`, { refusal, askAgainAt });
      }
    }
  }

  /**
   * The refusals learned from EC2: for a reconcile at `now`, those not yet to be asked about again; for the
   * readiness view and the log (`now` undefined), all of them, so that a refusal stays shown while EC2 is
   * asked again.
   */
  refusals(now?: number): Refusal[] {
    return [...this.#refusals.values()]
      .filter(({ askAgainAt }) => now === undefined || now < askAgainAt)
      .map((r) => r.refusal);
  }

  /** EC2 took these addresses after all: their refusals are forgotten. */
  held(addresses: Iterable<string>): void {
    const held = new Set(addresses);
    for (const [key, { refusal }] of this.#refusals)
      if (held.has(refusal.address)) this.#refusals.delete(key);
  }
}
