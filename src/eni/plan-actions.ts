/**
 * What a plan action is (an assign, a move, a release): the one home of these questions, used rather than
 * comparing `kind`s by hand. isMove and isRelease are not type predicates: `unassign-ipv6` is either, by its
 * `reason`, so a `false` must not narrow the kind away.
 */
import type { PlanAction } from "./types.js";

/** The actions isAssign accepts. */
export type AssignAction = Extract<PlanAction, { readonly kind: "assign-ipv4" | "assign-ipv6" }>;

/** An assign to one of our ENIs, either family. */
export const isAssign = (action: PlanAction): action is AssignAction =>
  action.kind === "assign-ipv4" || action.kind === "assign-ipv6";

/** An IPv6 address taken from its current holder, right before our ENI's assign of it. */
export const isMove = (action: PlanAction): boolean =>
  action.kind === "unassign-ipv6" && action.reason === "move";

/** A release from one of our ENIs, either family (an IPv6 move is not one). */
export const isRelease = (action: PlanAction): boolean =>
  action.kind === "unassign-ipv4" || (action.kind === "unassign-ipv6" && action.reason === "release");
