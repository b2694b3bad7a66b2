/**
 * The known name nearest to a misspelt one, for "did you mean ...?": by edit distance (Levenshtein: one
 * insertion, deletion or substitution each), ignoring case. Pure.
 */

/** Edit distance between `a` and `b`. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The name's words (between `_` and `-`) in sorted order, so that two orders of the same words compare equal. */
function sortedWords(name: string): string {
  return name.split(/[_-]/).sort().join("_");
}

/**
 * How far `candidate` is from `name` (both upper case): the edit distance, or one more than the edit distance
 * between their words sorted, when that is less. IPMGR_INTERFACES_EXCLUDE is 8 edits from IPMGR_INTERFACES
 * but the same words as IPMGR_EXCLUDE_INTERFACES: 1.
 */
function nameDistance(name: string, candidate: string): number {
  return Math.min(editDistance(name, candidate), editDistance(sortedWords(name), sortedWords(candidate)) + 1);
}

/**
 * The candidate nearest to `name`, when it is near enough to be a misspelling of it: at most a third of
 * `name`'s length away (at least 2 edits allowed), so that IPMGR_TIMOUT_MS finds IPMGR_TIMEOUT_MS,
 * IPMGR_INTERFACE finds IPMGR_INTERFACES and IPMGR_INTERFACES_EXCLUDE (its words in another order) finds
 * IPMGR_EXCLUDE_INTERFACES, while a name unlike any gets no suggestion. Ties: the first candidate in the
 * order given.
 */
export function nearestName(name: string, candidates: readonly string[]): string | undefined {
  const upper = name.toUpperCase();
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const candidate of candidates) {
    const distance = nameDistance(upper, candidate.toUpperCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
