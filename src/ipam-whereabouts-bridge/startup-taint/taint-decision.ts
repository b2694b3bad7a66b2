/**
 * Whether the startup taint comes off, goes back on, or stays as it is: a pure function of what attach mode,
 * the links agent and prefix mode report, and of whether the taint is on now. No I/O, so that its rules are
 * tested with tables and properties: it never takes the taint off while a network is not ready, and puts it
 * back when a network is lost.
 */
import type { LinkStatus } from "../node/link-status.js";

/** The links agent's pass interval by default, ms (`multus-ipmgr links`). */
export const LINKS_AGENT_INTERVAL_MS = 2_000;
/** A link status older than three of the agent's intervals is stale, ms: the agent is not running. */
export const LINK_STATUS_STALE_MS = 3 * LINKS_AGENT_INTERVAL_MS;

/** Attach mode's report of one configured network: whether EC2 shows its ENI attached to this instance. */
export interface NetworkAttachReport {
  /** The network's `name` (IPMGR_BRIDGE_ATTACH_NETWORKS), as the links agent reports it too. */
  readonly network: string;
  readonly attached: boolean;
  /** The attached ENI's MAC, lower case, when known: the link the agent reports must carry it. */
  readonly mac?: string | undefined;
}

export interface TaintInputs {
  /** Every configured network, from attach mode; undefined until it has read the instance's ENIs once. */
  readonly networks: readonly NetworkAttachReport[] | undefined;
  /** The links agent's status file, parsed; undefined when absent or unreadable. */
  readonly links: LinkStatus | undefined;
  /** Prefix mode: whether the node's slices are held as prefixes; undefined when prefix mode is off. */
  readonly slicesHeld: boolean | undefined;
  /** Whether the node carries the taint now. */
  readonly taintOn: boolean;
  /** The taint's key, for the sentences. */
  readonly taintKey: string;
  /** Clock time now and when the bridge began to look, ms. */
  readonly now: number;
  readonly startedAt: number;
  /** A link status older than this is treated as absent, ms (LINK_STATUS_STALE_MS by default). */
  readonly staleAfterMs: number;
}

export type TaintAction = "remove" | "add" | "keep";

export interface TaintDecision {
  readonly action: TaintAction;
  /** Every network is ready (ENI attached, link ready in a fresh report, slices held in prefix mode). */
  readonly ready: boolean;
  /** One sentence: what is done and why. */
  readonly reason: string;
}

interface Problem {
  readonly why: string;
  /**
   * Whether it shows a network missing, rather than a report not come yet: only a missing network puts the
   * taint back (a bridge started on a healthy node waits for the agent's first report instead).
   */
  readonly missing: boolean;
}

function linkProblems(input: TaintInputs, networks: readonly NetworkAttachReport[]): Problem[] {
  const { links, now, startedAt, staleAfterMs } = input;
  // No attached network has a link to wait for: the file does not matter.
  if (networks.length === 0) return [];
  if (links === undefined) {
    const waited = now - startedAt;
    return waited > staleAfterMs
      ? [
          {
            why: `the links agent's status file is absent or unreadable after ${waited} ms (the agent is not running)`,
            missing: true,
          },
        ]
      : [{ why: "the links agent has not written its status file yet", missing: false }];
  }
  const writtenAt = Date.parse(links.writtenAt);
  if (Number.isNaN(writtenAt)) {
    return [
      {
        why: `the links agent's status file has a writtenAt that is not a time (${links.writtenAt})`,
        missing: true,
      },
    ];
  }
  const age = now - writtenAt;
  if (age > staleAfterMs) {
    return [
      {
        why: `the links agent's status file is ${age} ms old, stale after ${staleAfterMs} ms (the agent is not running)`,
        missing: true,
      },
    ];
  }
  const problems: Problem[] = [];
  for (const network of networks) {
    const link = links.links.find((l) => l.network === network.network);
    if (link === undefined) {
      problems.push({ why: `network ${network.network}: the links agent reports no link`, missing: true });
    } else if (link.state !== "ready") {
      problems.push({
        why: `network ${network.network}: its link is ${link.state} (${link.detail})`,
        missing: true,
      });
    } else if (network.mac !== undefined && link.mac !== undefined && link.mac !== network.mac) {
      problems.push({
        why: `network ${network.network}: its link has MAC ${link.mac}, not the attached ENI's ${network.mac}`,
        missing: true,
      });
    }
  }
  return problems;
}

function problemsOf(input: TaintInputs): Problem[] {
  const { networks } = input;
  if (networks === undefined) {
    return [{ why: "attach mode has not read the instance's ENIs from EC2 yet", missing: false }];
  }
  const problems: Problem[] = networks
    .filter((n) => !n.attached)
    .map((n) => ({ why: `network ${n.network}: its ENI is not attached (EC2)`, missing: true }));
  problems.push(
    ...linkProblems(
      input,
      networks.filter((n) => n.attached),
    ),
  );
  if (input.slicesHeld === false) {
    problems.push({ why: "prefix mode: the node's slices are not held as prefixes yet", missing: true });
  }
  return problems;
}

export function decideTaint(input: TaintInputs): TaintDecision {
  const problems = problemsOf(input);
  const taint = input.taintKey;
  if (problems.length === 0) {
    const names = (input.networks ?? []).map((n) => n.network).join(", ") || "none configured";
    const slices = input.slicesHeld === true ? ", and the node's slices are held" : "";
    return input.taintOn
      ? {
          action: "remove",
          ready: true,
          reason: `every network's ENI is attached and its link ready (${names})${slices}: the taint ${taint} comes off`,
        }
      : {
          action: "keep",
          ready: true,
          reason: `every network is ready (${names})${slices}; the taint ${taint} is off`,
        };
  }
  const whys = problems.map((p) => p.why).join("; ");
  if (input.taintOn) return { action: "keep", ready: false, reason: `the taint ${taint} stays on: ${whys}` };
  if (problems.some((p) => p.missing)) {
    return { action: "add", ready: false, reason: `the taint ${taint} goes back on: ${whys}` };
  }
  return {
    action: "keep",
    ready: false,
    reason: `the taint ${taint} is off and stays off while waiting: ${whys}`,
  };
}
