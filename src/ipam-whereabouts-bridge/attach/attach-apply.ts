/**
 * The EC2 calls of attach mode's plan, network by network, in EC2's order: CreateNetworkInterface (tags at
 * creation, the slot's ClientToken), AttachNetworkInterface, then ModifyNetworkInterfaceAttribute for
 * DeleteOnTermination and, only when it differs, for SourceDestCheck (one attribute per call, as EC2 requires).
 *
 * - An attach EC2 refuses (AttachmentLimitExceeded, the device index in use, ...) deletes the ENI the create
 *   made at once, and says so; the slot's ClientToken moves to its next generation. An ENI of ours found
 *   available and attached again (`reattach`) is not deleted when its attach is refused: it is ours, made for
 *   this instance, and the next pass tries it again (or the orphan sweep takes it after its grace).
 * - InvalidNetworkInterface.InUse on the attach: the ENI is attached already. Two bridges on one node ask with
 *   one ClientToken and get one ENI; the one whose attach comes second deletes nothing (EC2 would refuse to
 *   delete an attached ENI anyway), and its next pass finds the ENI attached.
 * - InvalidNetworkInterfaceID.NotFound right after a create is EC2's eventual consistency, not a refusal: the
 *   attach is tried again after a short backoff (6 attempts in all, 200 ms doubling to 2 s), never a delete.
 * - EC2 unavailable (throttling, 5xx, no answer, after the adapter's own retries): the network is tried again
 *   later and nothing is deleted; an ENI made and not attached is found available at the next pass.
 * - DeleteOnTermination or SourceDestCheck failing leaves the ENI attached: reported as a problem, and the next
 *   pass's plan sets them again.
 * Failures are returned in the outcome (an AttachError each), not logged here: attach-mode.ts logs them once
 * per change.
 */
import { type BackoffPolicy, backoffDelay } from "../../eni/backoff.js";
import type { Ec2EniLifecycleApi } from "../../eni/ec2-eni-lifecycle-api.js";
import { Ec2Error } from "../../eni/errors/ec2-error.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { Ec2NetworkInterface } from "../../eni/types.js";
import type { AttachOutcome } from "./attach-outcome.js";
import type { AttachAction, NetworkPlan } from "./attach-plan.js";
import { type SlotTokens, slotKey } from "./client-token.js";
import { AttachError, type AttachStep } from "./errors/attach-error.js";

export const ENI_NOT_FOUND = "InvalidNetworkInterfaceID.NotFound";
const TOKEN_MISMATCH = "IdempotentParameterMismatch";
/** The ENI is attached already: two creates with one ClientToken answered one ENI, and the other attached it. */
const ENI_IN_USE = "InvalidNetworkInterface.InUse";

/** How NotFound right after a create is retried: attempts in all, the first included, and the backoff between. */
export interface NotFoundRetry {
  readonly attempts: number;
  readonly backoff: BackoffPolicy;
}

export const DEFAULT_NOT_FOUND_RETRY: NotFoundRetry = { attempts: 6, backoff: { baseMs: 200, maxMs: 2_000 } };

export interface AttachApplyDeps {
  readonly ec2: Ec2EniLifecycleApi;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The ClientToken generation of each slot (the caller keeps it for the process's life). */
  readonly tokens: SlotTokens;
  readonly notFoundRetry?: NotFoundRetry;
  readonly random?: () => number;
}

export interface AttachContext {
  readonly clusterName: string;
  readonly instanceId: string;
}

/** Runs each network's actions; one network's failure never stops the next. Throws only an abort or a bug. */
export async function applyAttachPlan(
  plans: readonly NetworkPlan[],
  context: AttachContext,
  deps: AttachApplyDeps,
  signal: AbortSignal,
): Promise<AttachOutcome[]> {
  const outcomes: AttachOutcome[] = [];
  for (const plan of plans) {
    signal.throwIfAborted();
    outcomes.push(await applyNetwork(plan, context, deps, signal));
  }
  return outcomes;
}

/** The calls of one network, counted. */
class NetworkRun {
  calls = 0;
  readonly problems: AttachError[] = [];

  constructor(
    readonly plan: NetworkPlan,
    readonly context: AttachContext,
    readonly deps: AttachApplyDeps,
    readonly signal: AbortSignal,
  ) {}

  get name(): string {
    return this.plan.network.name;
  }

  get at(): string {
    return `card ${this.plan.slot.networkCardIndex} device ${this.plan.slot.deviceIndex}`;
  }

  async call<T>(step: AttachStep, eniId: string | undefined, run: () => Promise<T>): Promise<T> {
    this.calls += 1;
    try {
      return await run();
    } catch (error) {
      if (error instanceof Ec2Error) throw new StepFailure(step, eniId, error);
      throw error;
    }
  }

  /** A problem of a call after the attach: the ENI stays attached, the next pass's plan sets it again. */
  problem(failure: StepFailure, what: string): void {
    const error = new AttachError(
      { network: this.name, step: failure.step, eniId: failure.eniId, cause: failure.cause },
      `network ${this.name}: ENI ${failure.eniId} is attached at ${this.at}, but setting ${what} failed (${failure.cause.message}); it is set again at the next pass`,
    );
    this.problems.push(error);
  }
}

/** An Ec2Error of one step, with the step. Internal to this file: outcomes carry AttachError. */
class StepFailure extends Error {
  constructor(
    readonly step: AttachStep,
    readonly eniId: string | undefined,
    override readonly cause: Ec2Error,
  ) {
    super(cause.message, { cause });
  }
}

async function applyNetwork(
  plan: NetworkPlan,
  context: AttachContext,
  deps: AttachApplyDeps,
  signal: AbortSignal,
): Promise<AttachOutcome> {
  const run = new NetworkRun(plan, context, deps, signal);
  const [first, ...rest] = plan.actions;
  const base = { network: plan.network.name, slot: plan.slot };
  if (first === undefined) throw new Error(`internal: network ${plan.network.name} has no action`);
  switch (first.kind) {
    case "refuse":
      return { kind: "refused", ...base, detail: first.detail, code: undefined, calls: 0 };
    case "wait":
      return { kind: "waiting", ...base, detail: first.detail };
    case "none":
      await settle(run, rest);
      return attached(run, first.eni, first.eni.attachment?.attachmentId, false, first.foreign);
    case "reattach":
      return await attachThenSettle(run, first.eni, false);
    case "create-and-attach":
      return await createThenAttach(run, first);
    default:
      throw new Error(`internal: network ${plan.network.name} starts with ${first.kind}`);
  }
}

function attached(
  run: NetworkRun,
  eni: Ec2NetworkInterface,
  attachmentId: string | undefined,
  changed: boolean,
  foreign?: string,
): AttachOutcome {
  return {
    kind: "attached",
    network: run.name,
    slot: run.plan.slot,
    eniId: eni.eniId,
    mac: eni.mac,
    attachmentId,
    calls: run.calls,
    changed,
    ...(foreign === undefined ? {} : { foreign }),
    problems: run.problems,
  };
}

/** The plan's set-delete-on-termination and set-source-dest-check for an ENI already attached. */
async function settle(run: NetworkRun, actions: readonly AttachAction[]): Promise<void> {
  const { ec2 } = run.deps;
  for (const action of actions) {
    try {
      if (action.kind === "set-delete-on-termination")
        await run.call("delete-on-termination", action.eniId, () =>
          ec2.setDeleteOnTermination(action.eniId, action.attachmentId, true),
        );
      else if (action.kind === "set-source-dest-check")
        await run.call("source-dest-check", action.eniId, () =>
          ec2.setSourceDestCheck(action.eniId, action.sourceDestCheck),
        );
    } catch (error) {
      if (!(error instanceof StepFailure)) throw error;
      run.problem(error, action.kind === "set-source-dest-check" ? "SourceDestCheck" : "DeleteOnTermination");
    }
  }
}

async function createThenAttach(
  run: NetworkRun,
  action: Extract<AttachAction, { kind: "create-and-attach" }>,
): Promise<AttachOutcome> {
  const { ec2, tokens, logger } = run.deps;
  const slot = run.plan.slot;
  const create = () =>
    run.call("create", undefined, () =>
      ec2.createNetworkInterface({
        subnetId: action.subnetId,
        securityGroupIds: action.securityGroupIds,
        description: action.description,
        tags: action.tags,
        clientToken: tokens.token(slot),
      }),
    );
  let eni: Ec2NetworkInterface;
  try {
    eni = await create();
    if (tokens.answeredLost(slot, eni.eniId)) {
      // EC2 answered the token with the ENI an earlier pass never found: it is gone; a new token makes one.
      logger.info(
        { network: run.name, eniId: eni.eniId, slot: slotKey(slot) },
        "the ClientToken answered an ENI that no longer exists; creating with the slot's next token",
      );
      tokens.deleted(slot);
      eni = await create();
    }
  } catch (error) {
    if (!(error instanceof StepFailure)) throw error;
    if (error.cause.code === TOKEN_MISMATCH) tokens.deleted(slot);
    return failed(
      run,
      error,
      `EC2 refused to create the ENI of network ${run.name} in subnet ${action.subnetId} (${error.cause.message})`,
      "nothing was made",
    );
  }
  tokens.answered(slot, eni.eniId);
  logger.info(
    { network: run.name, eniId: eni.eniId, subnetId: action.subnetId, slot: slotKey(slot) },
    "ENI created for the network",
  );
  return await attachThenSettle(run, eni, true);
}

/** Attach, DeleteOnTermination, SourceDestCheck when it differs. `made`: the create of this pass made the ENI. */
async function attachThenSettle(
  run: NetworkRun,
  eni: Ec2NetworkInterface,
  made: boolean,
): Promise<AttachOutcome> {
  const { logger, tokens } = run.deps;
  const { slot, network } = run.plan;
  run.signal.throwIfAborted();
  let attachmentId: string;
  try {
    attachmentId = await attachWithRetry(run, eni.eniId, made);
  } catch (error) {
    if (!(error instanceof StepFailure)) throw error;
    const cause = error.cause;
    if (cause.code === ENI_NOT_FOUND && made) {
      tokens.lost(slot, eni.eniId);
      return failed(
        run,
        error,
        `EC2 did not find ENI ${eni.eniId} of network ${run.name}, made a moment ago, after every retry (${cause.message})`,
        "nothing was deleted; the next pass attaches it if EC2 shows it, or makes another",
      );
    }
    if (cause.code === ENI_IN_USE)
      return failed(
        run,
        error,
        `ENI ${eni.eniId} of network ${run.name} was attached meanwhile, by another call than this one (a second bridge on this node?) (${cause.message})`,
        "nothing was deleted; the next pass finds it attached",
        "retry-later",
      );
    if (cause.kind !== "refused" || !made)
      return failed(
        run,
        error,
        `EC2 did not attach ENI ${eni.eniId} of network ${run.name} at ${run.at} (${cause.message})`,
        made
          ? "nothing was deleted; the next pass attaches it again"
          : "the ENI is ours and left available; the next pass tries again",
      );
    return await deleteRefused(run, eni, error);
  }
  logger.info(
    { network: network.name, eniId: eni.eniId, attachmentId, slot: slotKey(slot) },
    made ? "ENI attached to the instance" : "ENI of ours found available, attached again",
  );
  const settles: AttachAction[] = [{ kind: "set-delete-on-termination", eniId: eni.eniId, attachmentId }];
  // EC2 makes an ENI with SourceDestCheck on; one found available keeps what it had.
  if ((eni.sourceDestCheck ?? true) !== network.sourceDestCheck)
    settles.push({
      kind: "set-source-dest-check",
      eniId: eni.eniId,
      sourceDestCheck: network.sourceDestCheck,
    });
  await settle(run, settles);
  return attached(run, eni, attachmentId, true);
}

/** AttachNetworkInterface; NotFound right after our own create is retried with a short backoff. */
async function attachWithRetry(run: NetworkRun, eniId: string, made: boolean): Promise<string> {
  const { ec2, clock, random } = run.deps;
  const retry = run.deps.notFoundRetry ?? DEFAULT_NOT_FOUND_RETRY;
  const { slot } = run.plan;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await run.call("attach", eniId, () =>
        ec2.attachNetworkInterface(eniId, run.context.instanceId, slot.deviceIndex, slot.networkCardIndex),
      );
    } catch (error) {
      const notYet = error instanceof StepFailure && error.cause.code === ENI_NOT_FOUND;
      if (!notYet || !made || attempt >= retry.attempts) throw error;
      await clock.sleep(backoffDelay(retry.backoff, attempt, random), run.signal);
    }
  }
}

/** The attach of an ENI this pass made was refused: the ENI is deleted at once, and the outcome says so. */
async function deleteRefused(
  run: NetworkRun,
  eni: Ec2NetworkInterface,
  refusal: StepFailure,
): Promise<AttachOutcome> {
  const { ec2, tokens, logger } = run.deps;
  const cause = `EC2 refused to attach ENI ${eni.eniId} of network ${run.name} at ${run.at} (${refusal.cause.message})`;
  try {
    run.calls += 1;
    await ec2.deleteNetworkInterface(eni.eniId);
  } catch (error) {
    if (!(error instanceof Ec2Error)) throw error;
    logger.error(
      { err: error, network: run.name, eniId: eni.eniId },
      `${cause}; deleting the ENI failed too (${error.message}): it stays, tagged, available, and the next pass attaches it or the orphan sweep deletes it`,
    );
    return failed(
      run,
      refusal,
      cause,
      `deleting the ENI failed (${error.message}); it is tagged and attached again at the next pass`,
    );
  }
  tokens.deleted(run.plan.slot);
  return failed(run, refusal, cause, `ENI ${eni.eniId} was deleted`);
}

/** The outcome of a failed step: refused (EC2 said no), or retry-later (EC2 unavailable, NotFound). */
function failed(
  run: NetworkRun,
  failure: StepFailure,
  cause: string,
  done: string,
  kind?: "retry-later",
): AttachOutcome {
  const retryLater =
    kind === "retry-later" || failure.cause.kind === "unavailable" || failure.cause.code === ENI_NOT_FOUND;
  const detail = `${cause}; ${done}`;
  const error = new AttachError(
    { network: run.name, step: failure.step, eniId: failure.eniId, cause: failure.cause },
    detail,
  );
  const base = {
    network: run.name,
    slot: run.plan.slot,
    detail,
    code: failure.cause.code,
    error,
    calls: run.calls,
  };
  return retryLater ? { kind: "retry-later", ...base } : { kind: "refused", ...base };
}
