import { type BackoffPolicy, backoffDelay } from "../eni/backoff.js";

/**
 * Who holds an address that is configured here but is not on our ENI: another ENI (its id), no ENI
 * (`null`), or not known (`undefined`: the EC2 read failed, or has not been made yet).
 */
export type Holder = string | null | undefined;

/** The rules of drift episodes. */
export interface EpisodeRules {
  /** Pacing of repairs against a rival that holds the address: 1 s doubling to 60 s by default. */
  readonly backoff: BackoffPolicy;
  /** How long our ENI must hold the address undisturbed for its episode to end, in ms. */
  readonly quietMs: number;
  /** Jitter source, in [0, 1). */
  readonly random: () => number;
}

/** One address's episode, as the loop and /readyz read it. */
export interface EpisodeView {
  readonly address: string;
  readonly startedAt: number;
  /** Moves of the address seen in this episode: the rival's takes and our repairs. */
  readonly moves: number;
  /** Repairs we made in this episode. */
  readonly repairs: number;
  /** Whether our ENI held it at the last observation. */
  readonly held: boolean;
  /** Who held it at the last observation, when our ENI did not. */
  readonly holder: Holder;
  /** The first rival seen in this episode; undefined while none was. */
  readonly rival: string | undefined;
  /** Clock time from which a repair may be made; undefined while held, or while a repair is under way. */
  readonly repairAt: number | undefined;
}

/** What an observation changed, for the loop to log and count. */
export type EpisodeEvent =
  | { readonly kind: "conflict"; readonly episode: EpisodeView }
  | { readonly kind: "drift"; readonly episode: EpisodeView }
  | { readonly kind: "over"; readonly episode: EpisodeView; readonly reason: "quiet" | "not-configured" };

interface Episode {
  readonly address: string;
  readonly startedAt: number;
  moves: number;
  repairs: number;
  /** Since when our ENI holds it again; undefined while it does not. */
  heldSince: number | undefined;
  /** When the current loss was first seen; undefined while held. */
  lostAt: number | undefined;
  holder: Holder;
  /** The rival of the current loss was counted as a move. */
  rivalCounted: boolean;
  rival: string | undefined;
  repairAt: number | undefined;
  /** A repair was made for the current loss; the next observation tells whether it stuck. */
  repairing: boolean;
  /** When EC2 accepted our last repair in this episode. */
  repairedAt: number | undefined;
  driftReported: boolean;
}

function view(e: Episode): EpisodeView {
  return {
    address: e.address,
    startedAt: e.startedAt,
    moves: e.moves,
    repairs: e.repairs,
    held: e.heldSince !== undefined,
    holder: e.holder,
    rival: e.rival,
    repairAt: e.repairing ? undefined : e.repairAt,
  };
}

/**
 * Drift episodes: an address configured here, held by our ENI once, and taken off it since. Pure state, no
 * I/O; time comes in as arguments.
 *
 * The backoff paces repairs only against a rival that holds the address (split brain: another pod claims
 * it): the repair waits from the moment the loss was seen, by the backoff of the moves seen so far in the
 * episode. Every move counts, the rival's takes and our repairs, so two sidecars that both claim an address
 * wait 1 s, 4 s, 16 s, 60 s... between their own repairs (or twice the rival's last interval once it is
 * quiet, see #repairAt: the stretches still double): the pair converges on one holder for longer and
 * longer stretches instead of trading the address in lockstep. An address that no ENI holds is repaired at
 * once, whatever the episode's history: nothing is fought over, and the address must be routed.
 * A holder that could not be read is treated as a rival, the cautious side.
 */
export class DriftEpisodes {
  readonly #rules: EpisodeRules;
  readonly #episodes = new Map<string, Episode>();

  constructor(rules: EpisodeRules) {
    this.#rules = rules;
  }

  get size(): number {
    return this.#episodes.size;
  }

  has(address: string): boolean {
    return this.#episodes.has(address);
  }

  get(address: string): EpisodeView | undefined {
    const episode = this.#episodes.get(address);
    return episode === undefined ? undefined : view(episode);
  }

  all(): EpisodeView[] {
    return [...this.#episodes.values()].map(view);
  }

  /** Open episodes in which a rival was seen: addresses another pod claims too. */
  conflicts(): number {
    let count = 0;
    for (const episode of this.#episodes.values()) if (episode.rival !== undefined) count++;
    return count;
  }

  /** Our ENI holds `address`. Ends its episode once it has held it for the quiet time. */
  held(address: string, now: number): EpisodeEvent | undefined {
    const episode = this.#episodes.get(address);
    if (episode === undefined) return undefined;
    episode.heldSince ??= now;
    episode.lostAt = undefined;
    episode.holder = undefined;
    episode.rivalCounted = false;
    episode.repairAt = undefined;
    episode.repairing = false;
    if (now - episode.heldSince < this.#rules.quietMs) return undefined;
    this.#episodes.delete(address);
    return { kind: "over", episode: view(episode), reason: "quiet" };
  }

  /**
   * Our ENI does not hold `address`, which it held before (`wasHeld`) or which has an episode. Opens the
   * episode or records a new loss. Returns false when this is no drift (never held, no episode).
   * The holder is not known yet: call `holder()` next.
   */
  lost(address: string, now: number, wasHeld: boolean): boolean {
    let episode = this.#episodes.get(address);
    if (episode === undefined) {
      if (!wasHeld) return false;
      episode = {
        address,
        startedAt: now,
        moves: 0,
        repairs: 0,
        heldSince: undefined,
        lostAt: undefined,
        holder: undefined,
        rivalCounted: false,
        rival: undefined,
        repairAt: undefined,
        repairing: false,
        repairedAt: undefined,
        driftReported: false,
      };
      this.#episodes.set(address, episode);
    }
    episode.heldSince = undefined;
    if (episode.lostAt === undefined || episode.repairing) {
      // A new loss: held until now, or our repair did not stick.
      episode.lostAt = now;
      episode.rivalCounted = false;
      episode.repairAt = undefined;
      episode.repairing = false;
    }
    return true;
  }

  /** Who holds a lost address now. Sets when it may be repaired; returns an event the first time per kind. */
  holder(address: string, holder: Holder, now: number): EpisodeEvent | undefined {
    const episode = this.#episodes.get(address);
    if (episode === undefined || episode.lostAt === undefined) return undefined;
    const before = episode.holder;
    episode.holder = holder;
    if (holder === null) {
      episode.repairAt = now;
      if (episode.driftReported || episode.rival !== undefined) return undefined;
      episode.driftReported = true;
      return { kind: "drift", episode: view(episode) };
    }
    const pace = (from: number): number => this.#repairAt(episode, from);
    if (!episode.rivalCounted) {
      episode.rivalCounted = true;
      if (holder !== undefined) episode.moves += 1;
      episode.repairAt = pace(episode.lostAt);
    } else if (before === null) {
      // No ENI held it at the last look, and one took it since: paced again, from now.
      episode.repairAt = pace(now);
    }
    if (holder === undefined || episode.rival !== undefined) return undefined;
    episode.rival = holder;
    return { kind: "conflict", episode: view(episode) };
  }

  /**
   * When a repair against a rival may be made, the loss seen at `from`: after the backoff of the moves seen,
   * or sooner once the rival has gone quiet. A rival that took the address back `interval` after our last
   * repair, and has not moved it for that long again since its take, has stopped (a script that stole it
   * every few seconds, an operator's one-off assign): the address is taken back once the rival has been
   * quiet for twice that interval, instead of waiting out a backoff grown to 60 s while it was active.
   * Two sidecars of a pair still back off: each waits out the other's last wait twice over, so the stretches
   * between moves still double (1, 1, 2, 4, 8, 16 s at least: at most 6 moves in a 30 s split brain).
   */
  #repairAt(episode: Episode, from: number): number {
    const paced = from + backoffDelay(this.#rules.backoff, Math.max(1, episode.moves), this.#rules.random);
    if (episode.repairedAt === undefined || episode.lostAt === undefined) return paced;
    // Never shorter than the backoff's base: a read lagging our repair is no rival taking it back at once.
    const interval = Math.max(episode.lostAt - episode.repairedAt, this.#rules.backoff.baseMs);
    return Math.min(paced, from + 2 * interval);
  }

  /** Addresses whose repair may not be made at `now`: a rival holds them and the backoff has not passed. */
  heldBack(now: number): Set<string> {
    const result = new Set<string>();
    for (const episode of this.#episodes.values()) {
      if (episode.lostAt === undefined || episode.repairing) continue;
      if (episode.repairAt === undefined || now < episode.repairAt) result.add(episode.address);
    }
    return result;
  }

  /** The earliest clock time at which a held-back repair comes due; undefined when none waits. */
  nextRepairAt(): number | undefined {
    let next: number | undefined;
    for (const episode of this.#episodes.values()) {
      if (episode.lostAt === undefined || episode.repairing || episode.repairAt === undefined) continue;
      next = next === undefined ? episode.repairAt : Math.min(next, episode.repairAt);
    }
    return next;
  }

  /** Whether a lost address may be repaired now (its holder is known, and the backoff has passed). */
  repairDue(address: string, now: number): boolean {
    const episode = this.#episodes.get(address);
    if (episode === undefined || episode.lostAt === undefined || episode.repairing) return false;
    return episode.repairAt !== undefined && now >= episode.repairAt;
  }

  /** EC2 accepted our repair of `address` at `now`: one more move. */
  repaired(address: string, now: number): void {
    const episode = this.#episodes.get(address);
    if (episode === undefined || episode.lostAt === undefined) return;
    episode.moves += 1;
    episode.repairs += 1;
    episode.repairing = true;
    episode.repairedAt = now;
  }

  /** Ends the episodes of addresses no longer configured here. */
  keepOnly(configured: ReadonlySet<string>): EpisodeEvent[] {
    const events: EpisodeEvent[] = [];
    for (const [address, episode] of this.#episodes) {
      if (configured.has(address)) continue;
      this.#episodes.delete(address);
      events.push({ kind: "over", episode: view(episode), reason: "not-configured" });
    }
    return events;
  }
}
