/**
 * The EC2 calls of one new node in attach mode, in the order the bridge makes them, for the scale model's
 * attach rows. The bridge's own sequence is src/ipam-whereabouts-bridge/attach/attach-mode.ts (`reconcile`:
 * the instance's ENIs, then this cluster's available ENIs made for the instance) and
 * src/ipam-whereabouts-bridge/attach/attach-apply.ts (per network: CreateNetworkInterface with tags and
 * ClientToken, AttachNetworkInterface, ModifyNetworkInterfaceAttribute DeleteOnTermination, then
 * SourceDestCheck only when the network's value differs from EC2's default, true). Keep `nodeAttachCalls`
 * in step with those two files: it is the only place the model writes that sequence.
 *
 * Prefix mode then holds the node's slices: `after-attach`, the prefix assigns of the bridge's own wave
 * planner (node-wave.ts `prefixModeWave`, one call per ENI and family); `at-create`, the same prefixes
 * carried by CreateNetworkInterface (`Ipv4Prefixes` / `Ipv6Prefixes`), one call fewer per ENI and family.
 */
import { ModelNode } from "./model-node.js";
import { type ModelAction, prefixModeWave } from "./node-wave.js";
import type { ModelEc2Action } from "./token-bucket.js";

/** Where a node's slices come from in prefix mode. */
export type SlicePrefixes = "after-attach" | "at-create";

/** One call of a node's sequence. */
export interface AttachCall {
  readonly action: ModelEc2Action;
  /** Printed in the model's tests: what the call does. */
  readonly what: string;
  /**
   * `attach`: attach mode's pass (a call failing past the EC2 adapter's retries holds the pass back and the
   * next pass reads the instance's ENIs again); `wave`: the wave loop's prefix assign (wave backoff).
   */
  readonly loop: "attach" | "wave";
  /** The ENI's number (1..) for calls about one ENI. */
  readonly eni?: number;
}

export interface NodeAttachOptions {
  /** The node's Multus networks, one ENI each. */
  readonly networks: number;
  /** The networks' SourceDestCheck differs from EC2's default (attach mode's default, false, does). */
  readonly sourceDestCheckDiffers: boolean;
  readonly prefixes: SlicePrefixes;
}

/** The reads that open every attach pass (attach-mode.ts `reconcile`), here with free slots to fill. */
export const PASS_READS: readonly AttachCall[] = [
  { action: "DescribeNetworkInterfaces", what: "the instance's ENIs", loop: "attach" },
  {
    action: "DescribeNetworkInterfaces",
    what: "this cluster's available ENIs for the instance",
    loop: "attach",
  },
];

/** The prefix assigns the bridge's prefix planner makes for a node whose Multus ENIs hold nothing. */
function slicePrefixAssigns(): ModelAction[] {
  const node = new ModelNode(0, 30);
  return prefixModeWave
    .plan(node.waveInput(0, 0).input())
    .actions.filter((a) => a.kind === "assign-prefixes");
}

/**
 * A new node's calls, in order: the instance type's limits once, the pass's reads, each network's ENI,
 * then (prefixes `after-attach`) the wave's prefix assigns.
 */
export function nodeAttachCalls(options: NodeAttachOptions): AttachCall[] {
  const assigns = slicePrefixAssigns();
  if (assigns.length < options.networks) {
    throw new Error(
      `scale model: the prefix plan holds ${assigns.length} ENIs' slices, not ${options.networks}`,
    );
  }
  const calls: AttachCall[] = [
    { action: "DescribeInstanceTypes", what: "the instance type's ENI limits", loop: "attach" },
    ...PASS_READS,
  ];
  for (let eni = 1; eni <= options.networks; eni++) {
    const carried = options.prefixes === "at-create" ? " with the slice's prefixes" : "";
    calls.push(
      { action: "CreateNetworkInterface", what: `create ENI ${eni}${carried}`, loop: "attach", eni },
      { action: "AttachNetworkInterface", what: `attach ENI ${eni}`, loop: "attach", eni },
      {
        action: "ModifyNetworkInterfaceAttribute",
        what: `ENI ${eni} DeleteOnTermination`,
        loop: "attach",
        eni,
      },
    );
    if (options.sourceDestCheckDiffers) {
      calls.push({
        action: "ModifyNetworkInterfaceAttribute",
        what: `ENI ${eni} SourceDestCheck`,
        loop: "attach",
        eni,
      });
    }
  }
  if (options.prefixes === "after-attach") {
    for (const assign of assigns.slice(0, options.networks)) {
      if (assign.kind !== "assign-prefixes") continue;
      calls.push({
        action: assign.family === 4 ? "AssignPrivateIpAddresses" : "AssignIpv6Addresses",
        what: `${assign.eniId} prefixes ${assign.prefixes.join(" ")}`,
        loop: "wave",
        eni: Number(assign.eniId.slice("eni-".length)),
      });
    }
  }
  return calls;
}

/** Whether EC2 counts the call against a mutating bucket (what the ≤ 5 calls per ENI target counts). */
export function isMutating(action: ModelEc2Action): boolean {
  return !action.startsWith("Describe");
}
