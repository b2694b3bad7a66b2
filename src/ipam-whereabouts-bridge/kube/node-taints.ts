/**
 * A node's taints as the bridge changes them: one taint put on or taken off with a JSON patch (RFC 6902) that
 * first tests the list it was computed from, so that a taint another controller added or removed in between
 * is never lost (the API server refuses the patch, 422, and the caller reads again). A merge or strategic
 * merge patch could not do this: `spec.taints` has no merge key, both replace the whole list.
 */

export type TaintEffect = "NoSchedule" | "PreferNoSchedule" | "NoExecute";

/** A node's `spec.taints` entry. */
export interface NodeTaint {
  readonly key: string;
  readonly value?: string | undefined;
  readonly effect: TaintEffect;
  /** RFC 3339, seconds: set by the node controller on NoExecute taints, kept as read. */
  readonly timeAdded?: string | undefined;
}

/** A node's taints and the resourceVersion they were read at. */
export interface NodeTaints {
  /** Undefined when the node has no `spec.taints` field at all (a test of a missing path fails). */
  readonly taints: readonly NodeTaint[] | undefined;
  readonly resourceVersion: string;
}

export type JsonPatchOperation =
  | { readonly op: "test"; readonly path: string; readonly value: unknown }
  | { readonly op: "add" | "replace"; readonly path: string; readonly value: unknown };

/** Attempts of one taint change before it gives up: a read and a patch each. */
export const TAINT_PATCH_ATTEMPTS = 5;

const sameTaint = (a: NodeTaint, b: NodeTaint): boolean => a.key === b.key && a.effect === b.effect;

/** A taint as the API serializes it: no undefined fields. */
function plain(taint: NodeTaint): NodeTaint {
  return {
    key: taint.key,
    ...(taint.value === undefined || taint.value === "" ? {} : { value: taint.value }),
    effect: taint.effect,
    ...(taint.timeAdded === undefined ? {} : { timeAdded: taint.timeAdded }),
  };
}

/** Whether the node carries `taint` (same key and effect; the value is ours to set). */
export function hasTaint(taints: readonly NodeTaint[] | undefined, taint: NodeTaint): boolean {
  return (taints ?? []).some((t) => sameTaint(t, taint) && (t.value ?? "") === (taint.value ?? ""));
}

/**
 * The JSON patch that puts `taint` on (`present`) or takes it off the node read as `read`, every other taint
 * as it was; undefined when the node is already so. Taken off: every taint with its key and effect. The patch
 * tests the list it replaces, or, with no list, the resourceVersion.
 */
export function taintPatch(
  read: NodeTaints,
  taint: NodeTaint,
  present: boolean,
): JsonPatchOperation[] | undefined {
  const current = (read.taints ?? []).map(plain);
  if (present ? hasTaint(current, taint) : !current.some((t) => sameTaint(t, taint))) return undefined;
  const others = current.filter((t) => !sameTaint(t, taint));
  const next = present ? [...others, plain(taint)] : others;
  if (read.taints === undefined) {
    return [
      { op: "test", path: "/metadata/resourceVersion", value: read.resourceVersion },
      { op: "add", path: "/spec/taints", value: next },
    ];
  }
  return [
    { op: "test", path: "/spec/taints", value: current },
    { op: "replace", path: "/spec/taints", value: next },
  ];
}
