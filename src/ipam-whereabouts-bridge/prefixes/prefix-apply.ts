/**
 * The EC2 calls of prefix mode's steps, in order. A swap (the unassign of the singles inside new prefixes,
 * then the prefix assign) is one unit: once its unassign has started, a shutdown does not stop it between its
 * two calls; its assign, or the restore of the singles when the assign fails, runs to its end. Only the
 * shutdown grace running out cuts it (the EC2 adapter's own signal), and then the log names the addresses
 * held by no ENI (issue 27: a SIGTERM between the two calls left three pods' addresses unrouted, silently).
 */
import type { Ec2Api } from "../../eni/ec2-api.js";
import { Ec2Error } from "../../eni/errors/ec2-error.js";
import { IpmgrError } from "../../eni/errors/ipmgr-error.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { IpFamily } from "../../eni/types.js";
import type { BridgeMetrics } from "../telemetry/metrics.js";
import type { PrefixStep } from "./prefix-plan.js";

export interface PrefixApplyDeps {
  readonly ec2: Ec2Api;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Pick<BridgeMetrics, "prefixesReleased" | "prefixSwapGap">;
  /** Records a change EC2 accepted (prefix mode overlays it on IMDS, which shows it late). */
  readonly remember: (
    eniId: string,
    family: IpFamily,
    values: readonly string[],
    kind: "assigned" | "released",
  ) => void;
}

type AssignStep = Extract<PrefixStep, { kind: "assign-prefixes" }>;
type UnassignStep = Extract<PrefixStep, { kind: "unassign-addresses" }>;

/** A prefix assign EC2 refused (not for throttling or unavailability): its ENI, prefixes and EC2's sentence. */
export interface RefusedAssign {
  readonly eniId: string;
  readonly family: IpFamily;
  readonly prefixes: readonly string[];
  readonly message: string;
}

export interface PrefixApplyResult {
  /** EC2 writes made, and those EC2 accepted. */
  readonly calls: number;
  readonly changed: number;
  /** EC2's sentences for the steps it refused. */
  readonly failures: string[];
  readonly refusedAssigns: RefusedAssign[];
}

/**
 * Runs the steps in order. Throws what the wave must retry whole (EC2 unavailable after its retries), and an
 * abort: `signal` (the shutdown) is checked before each step and each swap, never inside a swap.
 */
export async function applyPrefixSteps(
  steps: readonly PrefixStep[],
  deps: PrefixApplyDeps,
  signal: AbortSignal,
): Promise<PrefixApplyResult> {
  const result = { calls: 0, changed: 0, failures: [] as string[], refusedAssigns: [] as RefusedAssign[] };
  for (let i = 0; i < steps.length; i += 1) {
    const step = steps[i] as PrefixStep;
    signal.throwIfAborted();
    // The prefix assign this step makes or leads to: EC2 refusing it is remembered as the slice's refusal.
    let assign: AssignStep | undefined;
    try {
      if (step.kind === "unassign-addresses") {
        const next = steps[i + 1];
        if (next?.kind !== "assign-prefixes" || next.eniId !== step.eniId || next.family !== step.family)
          throw new Error("internal: a swap's unassign without its prefix assign right after it");
        i += 1;
        const started = deps.clock.now();
        await unassignForSwap(step, deps, result);
        assign = next;
        await finishSwap(step, next, deps, result, started);
      } else if (step.kind === "assign-prefixes") {
        assign = step;
        result.calls += 1;
        await assignPrefixes(step, deps);
        result.changed += 1;
      } else {
        result.calls += 1;
        await (step.family === 4
          ? deps.ec2.unassignIpv4Prefixes(step.eniId, step.prefixes)
          : deps.ec2.unassignIpv6Prefixes(step.eniId, step.prefixes));
        deps.metrics.prefixesReleased(step.prefixes.length, false);
        deps.remember(step.eniId, step.family, step.prefixes, "released");
        result.changed += 1;
      }
    } catch (error) {
      if (error instanceof Ec2Error && error.kind === "unavailable") throw error;
      if (!(error instanceof IpmgrError)) throw error;
      result.failures.push(error.message);
      // A swap whose unassign EC2 refused made no assign: it is tried again at the next wave.
      if (assign !== undefined) result.refusedAssigns.push({ ...pick(assign), message: error.message });
      deps.logger.warn({ err: error, step }, "EC2 refused a prefix step of the wave; the others go on");
    }
  }
  return result;
}

function pick(step: AssignStep): Pick<RefusedAssign, "eniId" | "family" | "prefixes"> {
  return { eniId: step.eniId, family: step.family, prefixes: step.prefixes };
}

async function assignPrefixes(step: AssignStep, deps: PrefixApplyDeps): Promise<void> {
  await (step.family === 4
    ? deps.ec2.assignIpv4Prefixes(step.eniId, step.prefixes)
    : deps.ec2.assignIpv6Prefixes(step.eniId, step.prefixes));
  deps.remember(step.eniId, step.family, step.prefixes, "assigned");
  deps.logger.info({ eniId: step.eniId, prefixes: step.prefixes }, "prefixes assigned");
}

/** A swap's first call: EC2's refusal is thrown as it is (nothing was unassigned, no assign follows). */
async function unassignForSwap(
  unassign: UnassignStep,
  deps: PrefixApplyDeps,
  result: { calls: number; changed: number },
): Promise<void> {
  const { eniId, family, addresses } = unassign;
  result.calls += 1;
  try {
    await (family === 4
      ? deps.ec2.unassignPrivateIpv4(eniId, addresses)
      : deps.ec2.unassignIpv6(eniId, addresses));
  } catch (error) {
    if (!(error instanceof IpmgrError))
      deps.logger.error(
        { eniId, addresses },
        "the shutdown grace ran out during a swap's unassign: if EC2 applied it, these addresses are held by no ENI until the next bridge on this node assigns them",
      );
    throw error;
  }
  deps.remember(eniId, family, addresses, "released");
  result.changed += 1;
}

/** A swap's second call, once the singles are unassigned: the prefix assign, or the singles assigned back. */
async function finishSwap(
  unassign: UnassignStep,
  assign: AssignStep,
  deps: PrefixApplyDeps,
  result: { calls: number; changed: number },
  started: number,
): Promise<void> {
  const { clock, logger, metrics } = deps;
  const { eniId, addresses } = unassign;
  result.calls += 1;
  try {
    await assignPrefixes(assign, deps);
  } catch (error) {
    if (!(error instanceof IpmgrError)) {
      unroutedAtShutdown(logger, eniId, addresses, clock.now() - started);
      throw error;
    }
    result.calls += 1;
    await restore(unassign, deps, started);
    result.changed += 1;
    throw error;
  }
  const gapMs = clock.now() - started;
  metrics.prefixSwapGap(gapMs);
  logger.info(
    { eniId, prefixes: assign.prefixes, addresses, gapMs },
    "single addresses taken over by a prefix (unassigned, then the prefix assigned in the next call)",
  );
  result.changed += 1;
}

/** A swap's assign failed: the singles it unassigned go back to the ENI at once, never taken from elsewhere. */
async function restore(unassign: UnassignStep, deps: PrefixApplyDeps, since: number): Promise<void> {
  const { ec2, clock, logger, metrics } = deps;
  const { eniId, family, addresses } = unassign;
  try {
    await (family === 4 ? ec2.assignPrivateIpv4(eniId, addresses, false) : ec2.assignIpv6(eniId, addresses));
  } catch (error) {
    metrics.prefixSwapGap(clock.now() - since);
    if (!(error instanceof IpmgrError)) unroutedAtShutdown(logger, eniId, addresses, clock.now() - since);
    else
      logger.error(
        { err: error, eniId, addresses },
        "the prefix assign failed after its single addresses were unassigned, and assigning them again failed too: they are held by no ENI until the next wave assigns them",
      );
    throw error;
  }
  deps.remember(eniId, family, addresses, "assigned");
  metrics.prefixSwapGap(clock.now() - since);
  logger.warn(
    { eniId, addresses, gapMs: clock.now() - since },
    "the prefix assign failed after its single addresses were unassigned; they were assigned again",
  );
}

function unroutedAtShutdown(
  logger: Logger,
  eniId: string,
  addresses: readonly string[],
  gapMs: number,
): void {
  logger.error(
    { eniId, addresses, gapMs },
    "the shutdown grace ran out in the middle of a swap: these addresses were unassigned and are held by no ENI until the next bridge on this node assigns them",
  );
}
