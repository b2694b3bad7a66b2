import { AddressNotAllowedError } from "../eni/errors/address-not-allowed-error.js";
import { Ec2Error } from "../eni/errors/ec2-error.js";
import { canonical } from "../eni/ip.js";
import { isAssign, isRelease } from "../eni/plan-actions.js";
import type { EniState, Placement, Plan, PlanAction, PodInterface, Refusal } from "../eni/types.js";

/** EC2's code when an ENI would hold more private IPv4 addresses than its instance type allows. */
export const ENI_FULL_CODE = "PrivateIpAddressLimitExceeded";

/** An action of a plan that EC2 refused, and its error (applyPlan's `failures`). */
export interface RefusedAction {
  readonly action: PlanAction;
  readonly error: unknown;
}

interface LearnedRefusal {
  readonly refusal: Refusal;
  readonly askAgainAt: number;
  /** For a full ENI: the ENI and how many IPv4 addresses it held then. Fewer later means room: ask again. */
  readonly full?: { readonly eniId: string; readonly ipv4s: number };
}

/**
 * What EC2's answers told the sidecar that its reads (IMDS) do not show, and the planner is given:
 * - assignments EC2 accepted that IMDS has not shown yet (IMDS lags, at times past the confirm timeout): a
 *   release takes them as held, so that an address that leaves in that window is still released;
 * - refusals EC2 made on facts the planner cannot read (an address that is another instance's primary, an
 *   ENI that is full): kept for a while, during which the planner refuses the address up front, with no
 *   call. A full ENI's refusal is forgotten sooner, as soon as the ENI holds fewer addresses than it did.
 * Pure bookkeeping: the loop says what happened and when.
 */
export class Ec2Answers {
  /** address -> the ENI EC2 accepted it on. */
  readonly #assignedUnconfirmed = new Map<string, string>();
  /** refusalKey(address, interface) -> the refusal, and until when it is kept from EC2. */
  readonly #refusals = new Map<string, LearnedRefusal>();

  /** Assignments EC2 accepted that IMDS has not shown on their ENI yet: address -> ENI id. */
  get assignedUnconfirmed(): ReadonlyMap<string, string> {
    return this.#assignedUnconfirmed;
  }

  /**
   * A plan was applied, but for the `failed` actions: its assigns are unconfirmed, its releases gone. A
   * release EC2 accepted made room on its ENI: a full-ENI refusal there is forgotten at once. Returns
   * whether one was, so that the caller asks again without waiting for the next read.
   */
  applied(planned: Plan, failed: ReadonlySet<PlanAction> = new Set()): boolean {
    let roomMade = false;
    for (const action of planned.actions) {
      if (failed.has(action) || action.addresses.length === 0) continue;
      for (const address of action.addresses) {
        if (isAssign(action)) this.#assignedUnconfirmed.set(address, action.eniId);
        else if (isRelease(action)) this.#assignedUnconfirmed.delete(address);
      }
      if (action.kind !== "unassign-ipv4") continue;
      for (const [key, { full }] of this.#refusals) {
        if (full?.eniId !== action.eniId) continue;
        this.#refusals.delete(key);
        roomMade = true;
      }
    }
    return roomMade;
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
    const present = new Set(
      interfaces.flatMap((i) => i.addresses.map((a) => refusalKey(canonical(a), i.name))),
    );
    for (const [key, { full, refusal }] of this.#refusals) {
      if (!present.has(key)) this.#refusals.delete(key);
      else if (full !== undefined && !stillFull(full, refusal.address, enis)) this.#refusals.delete(key);
    }
  }

  /**
   * Keeps the refusals among `refused` that only EC2 could make, not to be asked about before `askAgainAt`:
   * another instance's primary (AddressNotAllowedError), and a full ENI (`PrivateIpAddressLimitExceeded` on
   * an IPv4 assign), for the addresses of that assign as `placements` place them on the ENIs `enis` show.
   */
  refusedBy(
    refused: readonly RefusedAction[],
    view: { readonly placements: readonly Placement[]; readonly enis: readonly EniState[] },
    askAgainAt: number,
  ): void {
    for (const { action, error } of refused) {
      if (error instanceof AddressNotAllowedError) {
        for (const refusal of error.refusals) {
          this.#refusals.set(refusalKey(refusal.address, refusal.interfaceName), { refusal, askAgainAt });
        }
      } else if (isEniFull(action, error)) {
        const eni = view.enis.find((e) => e.eniId === action.eniId);
        const full = { eniId: action.eniId, ipv4s: eni?.ipv4s.length ?? 0 };
        for (const placement of view.placements) {
          if (placement.eniId !== action.eniId || !action.addresses.includes(placement.address)) continue;
          const refusal = eniFullRefusal(placement, eni);
          this.#refusals.set(refusalKey(refusal.address, refusal.interfaceName), {
            refusal,
            askAgainAt,
            full,
          });
        }
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

/** A learned refusal's key: one address on one interface. */
function refusalKey(address: string, interfaceName: string): string {
  return `${address} ${interfaceName}`;
}

function isEniFull(action: PlanAction, error: unknown): boolean {
  return action.kind === "assign-ipv4" && error instanceof Ec2Error && error.code === ENI_FULL_CODE;
}

/** The ENI still holds as many IPv4 addresses as when EC2 refused, and not the address itself. */
function stillFull(
  full: NonNullable<LearnedRefusal["full"]>,
  address: string,
  enis: readonly EniState[],
): boolean {
  const eni = enis.find((e) => e.eniId === full.eniId);
  if (eni === undefined || eni.ipv4s.length < full.ipv4s) return false;
  return !eni.ipv4s.some((a) => canonical(a) === address);
}

function eniFullRefusal(placement: Placement, eni: EniState | undefined): Refusal {
  const held = eni === undefined ? "" : ` (it holds ${eni.ipv4s.length}, the primary included)`;
  return {
    address: placement.address,
    interfaceName: placement.interfaceName,
    mac: placement.mac,
    reason: "eni-full",
    detail:
      `address ${placement.address} on ${placement.interfaceName}: ENI ${placement.eniId} holds as many private ` +
      `IPv4 addresses as its instance type allows${held}, and EC2 refused AssignPrivateIpAddresses ` +
      `(${ENI_FULL_CODE}); asked again once an address leaves the ENI, or after the resync interval. ` +
      "Free addresses on that ENI (fewer pods or floating addresses on this node) or run on a larger " +
      "instance type; `multus-ipmgr doctor` shows each ENI's room.",
  };
}
