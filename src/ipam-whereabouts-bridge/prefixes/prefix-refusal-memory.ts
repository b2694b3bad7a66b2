/**
 * Prefix mode's memory of the slices EC2 refused (or that were found taken in the subnet before a swap).
 *
 * Without it, `swap` paid for the same refusal at every wave: unassign the pods' singles, fail the prefix,
 * assign them back, an unrouted window each time (issue 27). A slice refused here is withheld from the plan,
 * which reports it like any other refusal (Event, metric, /readyz), until the first of:
 * - what EC2 was asked changes: the slice or its ENI (another key), or the prefixes the ENI holds inside the
 *   slice (its fingerprint). Not the ENI's single addresses there: the network is per-address meanwhile, so
 *   each new pod adds one, and none of them is what EC2 refused;
 * - the backoff ends: 1 min after the first refusal, doubling to 30 min (jitter on top), so that a cause
 *   outside this node (another instance's address, a reservation) is looked at again, at most once a period.
 * A slice refused again after its backoff ended waits twice as long; one whose ENI changed inside starts over.
 */
import { type BackoffPolicy, backoffDelay } from "../../eni/backoff.js";
import { cidrsOverlap } from "../../eni/ip.js";
import type { EniState, IpFamily } from "../../eni/types.js";
import { prefixKey, type WithheldSlice } from "./prefix-plan.js";

/** 1 min after the first refusal of a slice, doubling to 30 min. */
export const DEFAULT_REFUSAL_BACKOFF: BackoffPolicy = { baseMs: 60_000, maxMs: 1_800_000 };

interface Remembered extends WithheldSlice {
  readonly fingerprint: string;
  readonly until: number;
  readonly refusals: number;
}

/** What the ENI holds inside a slice that a refusal depends on: its prefixes there, sorted. */
export function sliceFingerprint(
  enis: readonly EniState[],
  eniId: string,
  family: IpFamily,
  slice: string,
): string {
  const eni = enis.find((e) => e.eniId === eniId);
  if (eni === undefined) return "no ENI";
  const prefixes = (family === 4 ? eni.ipv4Prefixes : eni.ipv6Prefixes) ?? [];
  return prefixes
    .filter((p) => cidrsOverlap(p, slice))
    .sort()
    .join(" ");
}

export class PrefixRefusalMemory {
  readonly #slices = new Map<string, Remembered>();

  constructor(
    private readonly backoff: BackoffPolicy = DEFAULT_REFUSAL_BACKOFF,
    private readonly random: () => number = Math.random,
  ) {}

  /**
   * Remembers a refusal of `slice` on `eniId`; returns in how many ms it is looked at again. `detail` is the
   * sentence's cause ("EC2 refused ...: <message>"); the time and the fix are added here.
   */
  refused(
    at: { eniId: string; slice: string; fingerprint: string },
    reason: WithheldSlice["reason"],
    cause: string,
    now: number,
  ): number {
    const key = prefixKey(at.eniId, at.slice);
    const refusals = (this.#slices.get(key)?.refusals ?? 0) + 1;
    const delay = backoffDelay(this.backoff, refusals, this.random);
    this.#slices.set(key, {
      reason,
      detail: `${cause}; nothing is unassigned or assigned for the slice ${at.slice} on ENI ${at.eniId} again until the prefixes its ENI holds there change, or for ${Math.round(delay / 1000)} s: ${FIX[reason]}`,
      fingerprint: at.fingerprint,
      until: now + delay,
      refusals,
    });
    return delay;
  }

  /**
   * The slices to withhold now, `prefixKey(eniId, slice)` -> why. `fingerprintOf` gives what the ENI holds
   * inside a slice now; a slice whose fingerprint changed is forgotten, backoff included.
   */
  withheld(
    now: number,
    fingerprintOf: (eniId: string, slice: string) => string,
  ): ReadonlyMap<string, WithheldSlice> {
    const out = new Map<string, WithheldSlice>();
    for (const [key, r] of this.#slices) {
      const [eniId = "", slice = ""] = key.split(" ");
      if (fingerprintOf(eniId, slice) !== r.fingerprint) {
        this.#slices.delete(key);
        continue;
      }
      if (now < r.until) out.set(key, { reason: r.reason, detail: r.detail });
    }
    return out;
  }

  /** When the first backoff still running ends; undefined: none. */
  nextAt(now: number): number | undefined {
    const ends = [...this.#slices.values()].map((r) => r.until).filter((t) => t > now);
    return ends.length === 0 ? undefined : Math.min(...ends);
  }
}

const FIX: Readonly<Record<WithheldSlice["reason"], string>> = {
  "ec2-refused":
    "fix what EC2's message names (a non-Nitro instance type, an address of another ENI or a reservation inside the slice), or set IPMGR_BRIDGE_PREFIX_MODE=defer",
  "held-in-subnet":
    "release those addresses there (whereabouts' ranges must not overlap another ENI's), or move the NAD's range",
};
