/**
 * Which pod interfaces are ours to manage. eth0 belongs to the VPC CNI, so it is excluded by default;
 * lo is never a pod interface, so it is excluded whatever the selection says. A name ending in `*`
 * matches by prefix (`net*`).
 */
export interface InterfaceSelection {
  /** Names to manage; empty means every interface not excluded. */
  readonly include: readonly string[];
  /** Names never managed, even if included. Default `lo`, `eth0`; `lo` is never managed anyway. */
  readonly exclude: readonly string[];
}

function matches(pattern: string, name: string): boolean {
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

/** The loopback interface: its addresses (127.0.0.1, ::1) are never an ENI's. */
const LOOPBACK = "lo";

export function isManagedInterface(selection: InterfaceSelection, name: string): boolean {
  if (name === LOOPBACK || selection.exclude.some((p) => matches(p, name))) return false;
  return selection.include.length === 0 || selection.include.some((p) => matches(p, name));
}

/** Whether the exclude pattern `exclude` leaves out every name the include pattern `include` matches. */
function excludesAllOf(exclude: string, include: string): boolean {
  if (!exclude.endsWith("*")) return exclude === include;
  const prefix = exclude.slice(0, -1);
  return include.startsWith(prefix);
}

/**
 * The include patterns that can match some interface the selection manages; none means the selection
 * manages no interface at all (`IPMGR_EXCLUDE_INTERFACES=*`, or `IPMGR_INTERFACES=eth0` with eth0 excluded).
 * An empty include list stands for every name: it is left with a pattern unless an exclude pattern is `*`.
 */
export function includesLeft(selection: InterfaceSelection): string[] {
  const include = selection.include.length === 0 ? ["*"] : selection.include;
  const exclude = [LOOPBACK, ...selection.exclude];
  return include.filter((pattern) => !exclude.some((e) => excludesAllOf(e, pattern)));
}

/**
 * Why the selection manages no interface at all, and which of its two lists to blame: `exclude` when it
 * excludes everything (`*`) with no include list, else `include` (every name it lists is excluded). Undefined
 * when some interface can be managed. The problem names IPMGR_INTERFACES and IPMGR_EXCLUDE_INTERFACES.
 */
export function emptySelection(
  selection: InterfaceSelection,
): { readonly blame: "include" | "exclude"; readonly problem: string } | undefined {
  if (includesLeft(selection).length > 0) return undefined;
  if (selection.include.length === 0) {
    return {
      blame: "exclude",
      problem:
        "excludes every interface, so no interface would ever be managed; name only the interfaces to leave " +
        "out, e.g. lo,eth0 (the default), or list those to manage in IPMGR_INTERFACES",
    };
  }
  return {
    blame: "include",
    problem:
      `every interface it names is excluded (IPMGR_EXCLUDE_INTERFACES=${JSON.stringify(selection.exclude.join(","))}, ` +
      "and lo is never managed), so no interface would ever be managed; name the pod's Multus interfaces " +
      "(e.g. net1), or take them out of IPMGR_EXCLUDE_INTERFACES",
  };
}
