import type { EpisodeView } from "../eni/drift-episodes.js";
import type { ProbeResult } from "../eni/process/probe-server.js";
import type { Placement, Plan, PodInterface } from "../eni/types.js";

/** What the last observation showed, for /readyz. */
export interface ReadinessView {
  /** The offline plan of that observation: every placement wanted, every refusal. */
  readonly plan: Plan;
  /** Addresses seen on the interfaces at that observation (all families and kinds). */
  readonly present: ReadonlySet<string>;
  /** Placements held by their ENI at that observation. */
  readonly held: ReadonlySet<string>;
  /** Clock time of the observation. */
  readonly observedAt: number;
}

export interface ReadinessInput {
  readonly view: ReadinessView;
  readonly now: number;
  /** An observation older than this (the drift check period, in ms) proves nothing: not ready. */
  readonly maxAgeMs: number;
  /** The interfaces as the watcher sees them now. */
  readonly configured: readonly PodInterface[];
  readonly episodes: { get(address: string): EpisodeView | undefined };
  readonly lastFailure: string | undefined;
}

/**
 * /readyz: ready only when the last observation is recent and shows every address configured here on its
 * ENI, and nothing refused. Never says "held" for an address another ENI or no ENI holds.
 */
export function readinessOf(input: ReadinessInput): ProbeResult {
  const { view, now } = input;
  const lines: string[] = [];
  const age = now - view.observedAt;
  if (age > input.maxAgeMs) {
    lines.push(
      `the last observation of our ENIs is ${age} ms old (more than the drift check interval, ${input.maxAgeMs} ms)`,
    );
  }
  for (const iface of input.configured) {
    for (const address of iface.addresses) {
      if (!view.present.has(address)) lines.push(`${address} on ${iface.name}: seen, not reconciled yet`);
    }
  }
  for (const refusal of view.plan.refusals) lines.push(`refused: ${refusal.detail}`);
  for (const placement of view.plan.placements) {
    if (view.held.has(placement.address)) continue;
    lines.push(missingLine(placement, input.episodes.get(placement.address), now));
  }
  if (lines.length > 0 && input.lastFailure !== undefined) {
    lines.push(`last reconcile failed: ${input.lastFailure}`);
  }
  if (lines.length > 0) return { ok: false, lines };
  return {
    ok: true,
    lines: view.plan.placements.map((p) => `${p.address} on ${p.interfaceName} held by ${p.eniId}`),
  };
}

function missingLine(placement: Placement, episode: EpisodeView | undefined, now: number): string {
  const head = `${placement.address} on ${placement.interfaceName}: not held by ${placement.eniId}`;
  if (episode === undefined) return `${head} yet`;
  if (episode.holder === null) return `${head} (held by no ENI); assigning it again`;
  const who =
    episode.holder === undefined
      ? " (holder unknown)"
      : ` (held by ${episode.holder}: another pod claims it)`;
  const wait = episode.repairAt === undefined ? "" : `; repair in ${Math.max(0, episode.repairAt - now)} ms`;
  return `${head}${who}${wait}`;
}
