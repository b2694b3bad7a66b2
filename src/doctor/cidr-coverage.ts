/** CIDR relations doctor needs beyond the planner's: nesting, and what a set of blocks leaves uncovered. Pure. */
import { addressAtOffset, cidrSize, cidrsOverlap, offsetInCidr, parseCidr } from "../eni/ip.js";

/**
 * How block `a` relates to block `b`. CIDR blocks never overlap partly: either one holds the other or they
 * are apart. Different families are `disjoint`.
 */
export function cidrRelation(a: string, b: string): "inside" | "equal" | "contains" | "disjoint" {
  if (!cidrsOverlap(a, b)) return "disjoint";
  const pa = parseCidr(a).prefix;
  const pb = parseCidr(b).prefix;
  return pa === pb ? "equal" : pa > pb ? "inside" : "contains";
}

/**
 * The parts of `cidr` that no block of `covers` holds, as the fewest CIDR blocks, in address order. Blocks of
 * `covers` may overlap each other, lie partly outside `cidr`, or be of the other family.
 */
export function uncoveredParts(cidr: string, covers: readonly string[]): string[] {
  const block = parseCidr(cidr);
  const size = cidrSize(cidr);
  const bits = block.family === 4 ? 32 : 128;
  const spans: [bigint, bigint][] = [];
  for (const cover of covers) {
    const relation = cidrRelation(cover, cidr);
    if (relation === "disjoint") continue;
    if (relation !== "inside") return [];
    const start = offsetInCidr(cidr, parseCidr(cover).network);
    spans.push([start, start + cidrSize(cover)]);
  }
  spans.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  const gaps: [bigint, bigint][] = [];
  let next = 0n;
  for (const [start, end] of spans) {
    if (start > next) gaps.push([next, start]);
    if (end > next) next = end;
  }
  if (next < size) gaps.push([next, size]);
  const out: string[] = [];
  for (let [start, end] of gaps) {
    while (start < end) {
      // The largest block aligned at `start` (cidr's network is aligned to its own size) that fits the gap.
      let length = 1n;
      while (start % (length * 2n) === 0n && start + length * 2n <= end) length *= 2n;
      let hostBits = 0;
      for (let l = length; l > 1n; l >>= 1n) hostBits++;
      out.push(`${addressAtOffset(cidr, start)}/${bits - hostBits}`);
      start += length;
    }
  }
  return out;
}
