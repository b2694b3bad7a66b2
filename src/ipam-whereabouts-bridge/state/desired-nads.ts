/**
 * The desired state's NAD phases. Pure.
 *
 * `readNads`: each NAD's whereabouts ranges. A NAD whose configuration cannot be read keeps the ranges it
 * had when it last read (`lastGoodRanges`) and is listed in `unreadableNads`, so that its reservations are
 * kept; a NAD that named ranges when last read and names none now is `vanished`, decided by
 * `keepVanishedRanges` once the carried addresses are known (vanished-ranges.ts).
 */

import type { NadInfo } from "../kube/kube-api.js";
import type { InputProblem } from "./desired-types.js";
import { podKey } from "./pod-refs.js";
import { keptVanishedRanges, vanishedRangesMessage } from "./vanished-ranges.js";
import { rangesOfNad, type WhereaboutsRange, whyNoWhereaboutsRange } from "./whereabouts-ranges.js";

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export interface NadRanges {
  /** Every NAD's ranges, the last good ones for unreadable NADs; `keepVanishedRanges` adds to it. */
  readonly ranges: WhereaboutsRange[];
  /** `namespace/name` -> its ranges; `keepVanishedRanges` adds to it. */
  readonly rangesByNad: Map<string, readonly WhereaboutsRange[]>;
  readonly unreadableNads: string[];
  /** NADs that named ranges when last read and name none now. */
  readonly vanished: { readonly nad: NadInfo; readonly lastRanges: readonly WhereaboutsRange[] }[];
}

export function readNads(
  nads: readonly NadInfo[],
  lastGoodRanges: ReadonlyMap<string, readonly WhereaboutsRange[]> | undefined,
  problems: InputProblem[],
): NadRanges {
  const ranges: WhereaboutsRange[] = [];
  const rangesByNad = new Map<string, readonly WhereaboutsRange[]>();
  const unreadableNads: string[] = [];
  const vanished: NadRanges["vanished"] = [];
  for (const nad of [...nads].sort((a, b) => byString(podKey(a), podKey(b)))) {
    const read = rangesOfNad(nad);
    const key = podKey(nad);
    let kept: readonly WhereaboutsRange[] = read.ranges;
    const lastRanges = lastGoodRanges?.get(key) ?? [];
    if (read.ranges.length === 0 && read.problems.length === 0 && lastRanges.length > 0) {
      vanished.push({ nad, lastRanges });
    }
    if (read.problems.length > 0) {
      unreadableNads.push(key);
      kept = [...read.ranges, ...lastRanges.filter((r) => !read.ranges.some((n) => n.cidr === r.cidr))];
      for (const message of read.problems) {
        problems.push({
          kind: "NetworkAttachmentDefinition",
          namespace: nad.namespace,
          name: nad.name,
          uid: nad.uid,
          message:
            `${message}; the bridge keeps what it last read of this NAD (${kept.length === 0 ? "nothing" : kept.map((r) => r.cidr).join(", ")}) ` +
            "and its reservations until the NAD reads again or is deleted: fix spec.config",
        });
      }
    }
    rangesByNad.set(key, kept);
    ranges.push(...kept);
  }
  return { ranges, rangesByNad, unreadableNads, vanished };
}

/**
 * A vanished NAD's last ranges that a pod still carries an address in (`carriedBy`: address -> a pod) are
 * kept, in `nads.ranges` and `nads.rangesByNad`, and the NAD is reported.
 */
export function keepVanishedRanges(
  nads: NadRanges,
  carriedBy: ReadonlyMap<string, string>,
  problems: InputProblem[],
): void {
  for (const { nad, lastRanges } of nads.vanished) {
    const kept = keptVanishedRanges(lastRanges, carriedBy);
    if (kept.length === 0) continue;
    nads.rangesByNad.set(
      podKey(nad),
      kept.map((k) => k.range),
    );
    nads.ranges.push(...kept.map((k) => k.range));
    problems.push({
      kind: "NetworkAttachmentDefinition",
      namespace: nad.namespace,
      name: nad.name,
      uid: nad.uid,
      message: vanishedRangesMessage(podKey(nad), whyNoWhereaboutsRange(nad), kept),
    });
  }
}
