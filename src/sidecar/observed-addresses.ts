/**
 * What the sidecar knows of its addresses between steps: which of them our ENI held at the last look, their
 * drift episodes (DriftEpisodes), what EC2 answered that IMDS does not show yet (Ec2Answers), and the view
 * /readyz reads. observe() looks (IMDS, then EC2 for the holders of addresses taken off our ENI); seed() and
 * confirmed() record what startup and a reconcile placed.
 */
import { DriftEpisodes, type EpisodeEvent } from "../eni/drift-episodes.js";
import { tryCanonical } from "../eni/ip.js";
import { plan as planOffline } from "../eni/planner.js";
import { type Observation, observe } from "../eni/reconcile.js";
import type { Plan } from "../eni/types.js";
import { addressesOf } from "./address-diff.js";
import { logEpisodeEvent } from "./drift-log.js";
import { Ec2Answers } from "./ec2-answers.js";
import { HolderLookup } from "./holder-lookup.js";
import type { ReadinessView } from "./readiness.js";
import { DEFAULT_REPAIR_BACKOFF, type ReconcileLoopOptions } from "./reconcile-loop-options.js";

/** What one observation (IMDS, plus EC2 for the holders of lost addresses) showed. */
export interface Observed {
  readonly observation: Observation;
  readonly offline: Plan;
  /** Clock time just before the interfaces were read. */
  readonly observedAt: number;
}

export class ObservedAddresses {
  readonly #o: ReconcileLoopOptions;
  /**
   * The addresses on our interfaces at startup: what CNI ADD put there (the IPAM's), and a floating address
   * only if it was already there when this container started. Any other address is floating.
   */
  readonly #atStartup = new Set<string>();
  /** Addresses our ENI held at the last observation (or confirmation). */
  readonly held = new Set<string>();
  readonly episodes: DriftEpisodes;
  /** What EC2 answered that IMDS does not show: assignments not yet confirmed, refusals on facts we cannot read. */
  readonly ec2 = new Ec2Answers();
  readonly #holders: HolderLookup;
  #view: ReadinessView | undefined;
  #refusalKey = "";

  constructor(options: ReconcileLoopOptions) {
    this.#o = options;
    const repairBackoff = options.repairBackoff ?? DEFAULT_REPAIR_BACKOFF;
    this.episodes = new DriftEpisodes({
      backoff: repairBackoff,
      quietMs: options.episodeQuietMs ?? 2 * repairBackoff.maxMs,
      random: options.random ?? Math.random,
    });
    this.#holders = new HolderLookup(options.deps);
  }

  /** What the last observation showed, for /readyz; undefined before the first. */
  get view(): ReadinessView | undefined {
    return this.#view;
  }

  /** Startup (init) placed these addresses: they count as held, so that losing one later is drift. */
  seed(plan: Plan): void {
    const held = new Set(plan.placements.map((p) => p.address));
    for (const address of held) this.held.add(address);
    this.#o.elasticIps?.held(heldBy(plan, held), this.#o.deps.clock.now());
    const present = new Set([
      ...held,
      ...plan.refusals.map((r) => r.address),
      ...plan.skipped.map((s) => s.address),
    ]);
    for (const address of present) this.#atStartup.add(tryCanonical(address) ?? address);
    this.#setView({ plan, present, held, observedAt: this.#o.deps.clock.now() });
  }

  /**
   * One observation: the pod's interfaces and our ENIs through IMDS; then, for addresses taken off our ENI,
   * who holds them (one EC2 read per family). Updates the episodes and the readiness view.
   */
  async observe(): Promise<Observed> {
    const { deps, policy } = this.#o;
    const observedAt = deps.clock.now();
    const observation = await observe(deps);
    this.ec2.observed(observation.enis, observation.interfaces);
    const offline = planOffline({
      interfaces: observation.interfaces,
      enis: observation.enis,
      policy,
      learnedRefusals: this.ec2.refusals(),
      floating: this.floating(addressesOf(observation.interfaces)),
    });
    const satisfied = new Set(offline.satisfied);
    const wanted = new Map(offline.placements.map((p) => [p.address, p]));
    const lost: string[] = [];
    for (const address of wanted.keys()) {
      if (satisfied.has(address)) {
        this.held.add(address);
        this.#episodeEvent(this.episodes.held(address, observedAt));
      } else if (this.episodes.lost(address, observedAt, this.held.has(address))) {
        this.held.delete(address);
        lost.push(address);
      }
    }
    for (const address of this.held) if (!wanted.has(address)) this.held.delete(address);
    for (const event of this.episodes.keepOnly(new Set(wanted.keys()))) this.#episodeEvent(event);

    const holders = await this.#holders.holdersOf(lost);
    const now = deps.clock.now();
    for (const address of lost) {
      const holder = holders.get(address);
      const placement = wanted.get(address);
      if (placement !== undefined && holder === placement.eniId) {
        // EC2 says our ENI holds it: IMDS is lagging, nothing drifted.
        this.held.add(address);
        this.#episodeEvent(this.episodes.held(address, now));
        satisfied.add(address);
        continue;
      }
      this.#episodeEvent(this.episodes.holder(address, holder, now));
    }
    this.#logRefusals(offline);
    this.#setView({
      plan: offline,
      present: addressesOf(observation.interfaces),
      held: satisfied,
      observedAt,
    });
    this.#o.elasticIps?.held(heldBy(offline, satisfied), observedAt);
    return { observation, offline, observedAt };
  }

  /**
   * A reconcile placed everything `planned` (confirmed through IMDS, or already in place) at `confirmedAt`;
   * held-back addresses are not. `movedAt`: when EC2 accepted what it assigned, else `confirmedAt`.
   */
  confirmed(
    planned: Plan,
    observed: { readonly offline: Plan; readonly present: ReadonlySet<string> },
    confirmedAt: number,
    movedAt: number,
  ): void {
    const held = new Set(planned.placements.map((p) => p.address));
    this.ec2.held(held);
    for (const address of held) {
      this.held.add(address);
      this.#episodeEvent(this.episodes.held(address, confirmedAt));
    }
    this.#o.elasticIps?.held(heldBy(planned, held), movedAt);
    this.#setView({ plan: observed.offline, present: observed.present, held, observedAt: confirmedAt });
  }

  /**
   * Whether what a failed step tried on `address`, configured here, is still to be done: refused up front
   * since, or not held by our ENI (held back). One that left the interface is not.
   */
  outstanding(address: string): boolean {
    const view = this.#view;
    if (view === undefined) return false;
    if (view.plan.refusals.some((r) => r.address === address)) return true;
    return view.plan.placements.some((p) => p.address === address) && !view.held.has(address);
  }

  /**
   * The floating addresses among `present`: those that appeared after startup. The planner refuses one inside
   * a prefix (a node's whereabouts slice); the pod's own IPAM addresses, there since CNI ADD, may lie in one.
   */
  floating(present: Iterable<string>): string[] {
    return [...present]
      .map((address) => tryCanonical(address) ?? address)
      .filter((address) => !this.#atStartup.has(address));
  }

  /** Logs and counts what the episodes report: each conflict and each drift once per episode. */
  #episodeEvent(event: EpisodeEvent | undefined): void {
    if (event === undefined) return;
    const placement = this.#view?.plan.placements.find((p) => p.address === event.episode.address);
    logEpisodeEvent(event, placement, this.#o.deps.logger, this.#o.metrics);
    this.#o.metrics.addressesInConflict(this.episodes.conflicts());
  }

  #logRefusals(offline: Plan): void {
    const key = offline.refusals.map((r) => `${r.address}|${r.interfaceName}|${r.reason}`).join("\n");
    if (key === this.#refusalKey) return;
    this.#refusalKey = key;
    if (offline.refusals.length === 0) {
      this.#o.deps.logger.info("no address refused any more");
      return;
    }
    for (const refusal of offline.refusals) {
      this.#o.deps.logger.error(
        { address: refusal.address, interface: refusal.interfaceName, reason: refusal.reason },
        refusal.detail,
      );
    }
  }

  #setView(view: ReadinessView): void {
    this.#view = view;
    this.#o.metrics.addressesHeld(view.plan.placements.filter((p) => view.held.has(p.address)).length);
    this.#o.metrics.addressesInConflict(this.episodes.conflicts());
  }
}

/** The placements of `plan` whose address is in `held`: address -> the ENI (ours) that holds it. */
function heldBy(plan: Plan, held: ReadonlySet<string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of plan.placements) if (held.has(p.address)) out.set(p.address, p.eniId);
  return out;
}
