import type { PlanAction } from "./types.js";

/** An assign to one of our ENIs, either family. */
export const isAssign = (action: PlanAction): boolean =>
  action.kind === "assign-ipv4" || action.kind === "assign-ipv6";

/** An IPv6 address taken from its current holder, right before our ENI's assign of it. */
export const isMove = (action: PlanAction): boolean =>
  action.kind === "unassign-ipv6" && action.reason === "move";

/** A release from one of our ENIs, either family (an IPv6 move is not one). */
export const isRelease = (action: PlanAction): boolean =>
  action.kind === "unassign-ipv4" || (action.kind === "unassign-ipv6" && action.reason === "release");
