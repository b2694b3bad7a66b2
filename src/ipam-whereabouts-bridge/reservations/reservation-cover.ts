/**
 * Which explicit subnet CIDR reservations keep EC2 (DHCP for new ENIs, the VPC CNI's warm pool) off the
 * whereabouts ranges. Pure.
 *
 * For each whereabouts range and each subnet it overlaps: the range's addresses inside the subnet (with the
 * block's network and broadcast address when the range reaches them), without its `exclude` blocks and the
 * five addresses AWS reserves, as the smallest list of CIDR blocks. Compared
 * with the subnet's reservations: the parts no explicit reservation covers are missing; a `prefix`
 * reservation over a range is a problem (EC2 hands those addresses out as prefixes), never touched.
 */
import { addressValue, cidrBounds, intervalToCidrs } from "../../eni/ip.js";
import type { IpFamily, SubnetCidrReservation } from "../../eni/types.js";
import type { WhereaboutsRange } from "../state/whereabouts-ranges.js";

export interface SubnetView {
  readonly subnetId: string;
  /** The subnet's IPv4 and IPv6 CIDR blocks. */
  readonly cidrs: readonly string[];
}

/** One block a reservation should cover. */
export interface WantedBlock {
  readonly subnetId: string;
  readonly cidr: string;
  /** `namespace/name` of the NAD and its range, for the description and the log. */
  readonly nad: string;
  readonly range: string;
}

type Interval = readonly [bigint, bigint];

function subtract(intervals: readonly Interval[], [from, to]: Interval): Interval[] {
  const out: Interval[] = [];
  for (const [a, b] of intervals) {
    if (to < a || from > b) {
      out.push([a, b]);
      continue;
    }
    if (a < from) out.push([a, from - 1n]);
    if (b > to) out.push([to + 1n, b]);
  }
  return out;
}

function blocks(fam: IpFamily, intervals: readonly Interval[]): string[] {
  return intervals.flatMap(([a, b]) => intervalToCidrs(fam, a, b));
}

/**
 * The addresses a reservation covers for a range: its first to its last address, widened to the block's
 * network and broadcast address when the range reaches them (whereabouts never hands those out, nobody
 * else should get them, and the block stays one CIDR).
 */
function spanOf(range: WhereaboutsRange): { first: bigint; last: bigint } {
  const block = cidrBounds(range.cidr);
  const first = addressValue(range.first);
  const last = addressValue(range.last);
  return {
    first: first === block.first + 1n ? block.first : first,
    last: last === block.last - 1n ? block.last : last,
  };
}

/** The range as the NAD would write it: its block when it has all of it, else first-last. */
function rangeText(r: WhereaboutsRange): string {
  const block = cidrBounds(r.cidr);
  const span = spanOf(r);
  if (span.first === block.first && span.last === block.last) return r.cidr;
  return r.first === r.last ? r.first : `${r.first}-${r.last}`;
}

/** The blocks that cover every whereabouts range inside the given subnets, without duplicates. */
export function wantedReservations(
  ranges: readonly WhereaboutsRange[],
  subnets: readonly SubnetView[],
): WantedBlock[] {
  const seen = new Set<string>();
  const out: WantedBlock[] = [];
  for (const range of ranges) {
    for (const subnet of subnets) {
      for (const subnetCidr of subnet.cidrs) {
        const s = cidrBounds(subnetCidr);
        if (s.family !== range.family) continue;
        // AWS keeps the subnet's first four addresses and its last.
        const low = s.first + 4n;
        const high = s.last - 1n;
        const span = spanOf(range);
        const first = span.first > low ? span.first : low;
        const last = span.last < high ? span.last : high;
        if (first > last) continue;
        let parts: Interval[] = [[first, last]];
        for (const excluded of range.exclude) {
          const e = cidrBounds(excluded);
          if (e.family === range.family) parts = subtract(parts, [e.first, e.last]);
        }
        for (const cidr of blocks(range.family, parts)) {
          const key = `${subnet.subnetId} ${cidr}`;
          if (seen.has(key)) continue;
          seen.add(key);
          out.push({ subnetId: subnet.subnetId, cidr, nad: range.nad, range: rangeText(range) });
        }
      }
    }
  }
  return out;
}

export interface ReservationGap {
  /** Blocks no explicit reservation covers: to create (or to report). */
  readonly missing: WantedBlock[];
  /** A prefix reservation overlaps a wanted block: one sentence each, with the fix. */
  readonly problems: string[];
}

/** What the subnets' reservations leave uncovered. `existing` are the reservations of the wanted subnets. */
export function reservationGap(
  wanted: readonly WantedBlock[],
  existing: readonly SubnetCidrReservation[],
): ReservationGap {
  const missing: WantedBlock[] = [];
  const problems: string[] = [];
  for (const block of wanted) {
    const b = cidrBounds(block.cidr);
    let parts: Interval[] = [[b.first, b.last]];
    for (const r of existing) {
      if (r.subnetId !== block.subnetId) continue;
      const e = cidrBounds(r.cidr);
      if (e.family !== b.family || e.last < b.first || e.first > b.last) continue;
      if (r.type === "prefix") {
        problems.push(
          `prefix reservation ${r.reservationId} (${r.cidr}) in ${r.subnetId} overlaps the whereabouts range ` +
            `${block.range} of NAD ${block.nad}: EC2 hands those addresses out as prefixes; delete it ` +
            `(aws ec2 delete-subnet-cidr-reservation --subnet-cidr-reservation-id ${r.reservationId}) and let the bridge create the explicit one.`,
        );
        continue;
      }
      parts = subtract(parts, [e.first, e.last]);
    }
    for (const cidr of blocks(b.family, parts)) missing.push({ ...block, cidr });
  }
  return { missing, problems };
}
