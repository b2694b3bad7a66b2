/**
 * Which pod interfaces are ours to manage. eth0 belongs to the VPC CNI and lo to nobody, so both are
 * excluded by default. A name ending in `*` matches by prefix (`net*`).
 */
export interface InterfaceSelection {
  /** Names to manage; empty means every interface not excluded. */
  readonly include: readonly string[];
  /** Names never managed, even if included. Default `lo`, `eth0`. */
  readonly exclude: readonly string[];
}

function matches(pattern: string, name: string): boolean {
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

export function isManagedInterface(selection: InterfaceSelection, name: string): boolean {
  if (selection.exclude.some((p) => matches(p, name))) return false;
  return selection.include.length === 0 || selection.include.some((p) => matches(p, name));
}
