import type { PodInterface } from "../eni/types.js";

/**
 * Pure snapshot arithmetic for the address watcher: no I/O, no time. Addresses are compared as the
 * InterfaceSource reports them (canonical text), so one address has one spelling.
 */

/** What changed between two snapshots of the managed interfaces. */
export interface SnapshotDiff {
  /** Addresses present now and in no interface before. Sorted. */
  readonly added: readonly string[];
  /** Addresses present before and in no interface now. Sorted. */
  readonly removed: readonly string[];
  /**
   * True when anything a reconcile depends on differs: an address, an interface appearing or going, or an
   * interface's MAC. An address moving from net1 to net2 is a change but neither added nor removed.
   */
  readonly changed: boolean;
}

/** Every address on any interface of the snapshot. */
export function addressesOf(snapshot: readonly PodInterface[]): Set<string> {
  const result = new Set<string>();
  for (const iface of snapshot) for (const address of iface.addresses) result.add(address);
  return result;
}

/** A string equal for two snapshots exactly when they mean the same to a reconcile, whatever their order. */
export function snapshotKey(snapshot: readonly PodInterface[]): string {
  return snapshot
    .map((iface) => `${iface.name}|${iface.mac}|${[...iface.addresses].sort().join(",")}`)
    .sort()
    .join("\n");
}

export function diffSnapshots(before: readonly PodInterface[], after: readonly PodInterface[]): SnapshotDiff {
  const was = addressesOf(before);
  const is = addressesOf(after);
  return {
    added: [...is].filter((a) => !was.has(a)).sort(),
    removed: [...was].filter((a) => !is.has(a)).sort(),
    changed: snapshotKey(before) !== snapshotKey(after),
  };
}

/**
 * The addresses to offer the planner as `released`: every address seen earlier and gone now, until a
 * reconcile has acted on it. An address that comes back (failback) is no longer released: it is wanted again.
 */
export function nextReleased(
  released: ReadonlySet<string>,
  diff: SnapshotDiff,
  current: ReadonlySet<string>,
): Set<string> {
  const result = new Set<string>();
  for (const address of released) if (!current.has(address)) result.add(address);
  for (const address of diff.removed) if (!current.has(address)) result.add(address);
  return result;
}
