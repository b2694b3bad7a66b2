/**
 * The scale model's attach rows: `nodes` new nodes join at once in attach mode, each making its Multus ENIs
 * (attach-calls.ts) and, in prefix mode, holding its slices, on one account's documented buckets. Two runs:
 * the slices assigned after the attach (one assign per ENI and family), and carried by CreateNetworkInterface.
 */
import type { BenchResult } from "../result.js";
import { ModelAccount } from "./account.js";
import { type AttachCall, isMutating, nodeAttachCalls, type SlicePrefixes } from "./attach-calls.js";
import { EventQueue } from "./event-queue.js";
import { type AttachNodeSettings, ModelAttachNode } from "./model-attach-node.js";
import { MULTUS_ENIS } from "./model-node.js";
import { DOCUMENTED_BUCKETS, type ModelEc2Action } from "./token-bucket.js";

/** The target of the issue: at most this many EC2 calls per ENI. */
export const CALLS_PER_ENI_TARGET = 5;
/**
 * deploy/node/multus-eni.sh for one node and one network, when nothing fails: DescribeSubnets,
 * CreateNetworkInterface, AttachNetworkInterface, ModifyNetworkInterfaceAttribute (DeleteOnTermination).
 * It leaves SourceDestCheck at EC2's default and holds no prefix. docs/attach-mode.md, "Calls, beside the
 * first-boot script".
 */
export const FIRST_BOOT_SCRIPT_CALLS = { reads: 1, mutating: 3 } as const;

export interface AttachJoinRun {
  readonly prefixes: SlicePrefixes;
  readonly calls: readonly AttachCall[];
  readonly accepted: number;
  readonly throttled: number;
  /** Accepted calls by action. */
  readonly byAction: ReadonlyMap<ModelEc2Action, number>;
  /** Until the last node's last call was answered; NaN when some node had not finished by the cap. */
  readonly seconds: number;
  readonly done: number;
  readonly heldBack: number;
  readonly events: number;
}

export interface AttachJoinWorld {
  readonly nodes: number;
  readonly bootSpreadMs: number;
  readonly capMs: number;
  readonly settings: AttachNodeSettings;
  readonly random: () => number;
}

/** Printed in the model's header: the buckets of attach mode's mutating calls. */
export const ATTACH_BUCKETS = (
  ["CreateNetworkInterface", "AttachNetworkInterface", "ModifyNetworkInterfaceAttribute"] as const
)
  .map(
    (a) =>
      `${DOCUMENTED_BUCKETS[a].name} ${DOCUMENTED_BUCKETS[a].capacity} / ${DOCUMENTED_BUCKETS[a].refillPerSecond} a s`,
  )
  .join(", ");

/** Both runs on the same world (one random sequence, as the bench draws it), their summary printed, their rows. */
export function attachJoinRuns(
  world: Omit<AttachJoinWorld, "settings">,
  settings: AttachNodeSettings,
): BenchResult[] {
  const after = attachJoin({ ...world, settings }, "after-attach");
  const atCreate = attachJoin({ ...world, settings }, "at-create");
  process.stdout.write(`${attachJoinSummary(after)}\n${attachJoinSummary(atCreate)}\n`);
  return attachJoinRows(world.nodes, after, atCreate);
}

/** `world.nodes` new nodes boot within `bootSpreadMs`; each bridge sends its calls from its start. */
export function attachJoin(world: AttachJoinWorld, prefixes: SlicePrefixes): AttachJoinRun {
  const calls = nodeAttachCalls({ networks: MULTUS_ENIS, sourceDestCheckDiffers: true, prefixes });
  const queue = new EventQueue();
  const account = new ModelAccount();
  let done = 0;
  const nodes: ModelAttachNode[] = [];
  for (let n = 0; n < world.nodes; n++) {
    const node = new ModelAttachNode(
      calls,
      { queue, account, random: world.random, onDone: () => done++ },
      world.settings,
    );
    nodes.push(node);
    queue.at((n / world.nodes) * world.bootSpreadMs, () => node.start());
  }
  queue.run(world.capMs, () => done === world.nodes);
  const { accepted, throttled } = account.total();
  const byAction = new Map([...account.counts()].map(([action, c]) => [action, c.accepted]));
  return {
    prefixes,
    calls,
    accepted,
    throttled,
    byAction,
    seconds: done === world.nodes ? Math.max(...nodes.map((n) => n.doneAt)) / 1000 : Number.NaN,
    done,
    heldBack: nodes.reduce((s, n) => s + n.heldBack, 0),
    events: queue.ran,
  };
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

/** Mutating calls per ENI and reads per node of a node's sequence, when nothing is throttled. */
export function perNode(calls: readonly AttachCall[]): { mutatingPerEni: number; reads: number } {
  const mutating = calls.filter((c) => isMutating(c.action)).length;
  return { mutatingPerEni: mutating / MULTUS_ENIS, reads: calls.length - mutating };
}

/** Accepted calls to mutating actions: each call of the sequence once, whatever was throttled or read again. */
function mutatingAccepted(run: AttachJoinRun): number {
  let n = 0;
  for (const [action, accepted] of run.byAction) if (isMutating(action)) n += accepted;
  return n;
}

/** The rows of the two runs, beside the targets and the first-boot script. */
export function attachJoinRows(nodes: number, after: AttachJoinRun, atCreate: AttachJoinRun): BenchResult[] {
  const title = `scale-model: ${fmt(nodes)} new nodes join in attach mode (${MULTUS_ENIS} Multus ENIs each, prefix mode)`;
  const script = FIRST_BOOT_SCRIPT_CALLS;
  const rows: BenchResult[] = [];
  for (const run of [after, atCreate]) {
    const how =
      run.prefixes === "after-attach"
        ? "slices assigned after the attach"
        : "slices carried by CreateNetworkInterface";
    const { mutatingPerEni, reads } = perNode(run.calls);
    const finished = run.done === nodes ? "all finished" : `only ${fmt(run.done)} of ${fmt(nodes)} finished`;
    rows.push(
      {
        name: `${title}, ${how}: mutating EC2 calls per ENI (+ ${reads} reads a node; the first-boot script: ${script.mutating} per ENI + ${script.reads} read, no SourceDestCheck, no slice)`,
        value: mutatingPerEni,
        unit: "calls",
        target: `<= ${CALLS_PER_ENI_TARGET}`,
        ok: mutatingPerEni <= CALLS_PER_ENI_TARGET,
      },
      {
        name: `${title}, ${how}: EC2 calls until the last node's ENIs are attached and its slices held (${fmt(run.accepted)} accepted, ${fmt(run.throttled)} throttled, ${fmt(run.heldBack)} passes held back)`,
        value: run.accepted + run.throttled,
        unit: "calls",
        target: `printed (${finished})`,
        ok: run.done === nodes,
      },
      {
        name: `${title}, ${how}: time until the last node's ENIs are attached and its slices held`,
        value: run.seconds,
        unit: "s",
        target: "printed",
        ok: Number.isFinite(run.seconds),
      },
    );
  }
  const saved = mutatingAccepted(after) - mutatingAccepted(atCreate);
  rows.push({
    name: `${title}: accepted mutating calls saved by carrying the slices in CreateNetworkInterface (${fmt(mutatingAccepted(after))} -> ${fmt(mutatingAccepted(atCreate))}; time ${after.seconds.toFixed(0)} s -> ${atCreate.seconds.toFixed(0)} s)`,
    value: saved,
    unit: "calls",
    target: `one per node, ENI and family = ${fmt(nodes * MULTUS_ENIS)}`,
    ok: saved === nodes * MULTUS_ENIS,
  });
  return rows;
}

/** One line per run: accepted calls by action, the bucket that sets the time. */
export function attachJoinSummary(run: AttachJoinRun): string {
  const parts = [...run.byAction].map(([action, n]) => `${action} ${fmt(n)}`);
  return `  attach mode, ${run.prefixes}: ${parts.join(", ")} accepted; ${fmt(run.events)} events`;
}
