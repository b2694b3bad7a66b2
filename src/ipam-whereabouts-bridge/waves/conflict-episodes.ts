/**
 * Addresses a pod of this node carries that another ENI took back after ours held them. Whereabouts names
 * neither pod (else desired-state.ts reports the conflict and assigns nothing), so this node cannot tell
 * which pod is right: two pods on two nodes carrying one address, each bridge assigning it to its own ENI at
 * every wave, trade it forever. The rival's take is seen here: an address our ENI held (IMDS, or our own
 * assign that EC2 accepted) and holds no more, while another ENI does (one EC2 read, only for the addresses
 * lost). It is reported as a conflict (Event on the pod, metric, /readyz) on each node that sees it, and
 * taken back paced by the sidecar's drift episodes (src/eni/drift-episodes.ts): 1 s, 4 s, 16 s, up to 60 s
 * between repairs as the moves add up, sooner once the other side has been quiet for twice its last
 * interval, at once when no ENI holds it. Pure state and one EC2 read; time comes
 * in as arguments.
 */
import type { BackoffPolicy } from "../../eni/backoff.js";
import { DriftEpisodes, type EpisodeEvent, type Holder } from "../../eni/drift-episodes.js";
import type { Ec2Api } from "../../eni/ec2-api.js";
import { IpmgrError } from "../../eni/errors/ipmgr-error.js";
import { family } from "../../eni/ip.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { EniState, PodInterface } from "../../eni/types.js";
import type { PodRef } from "../state/desired-state.js";

/** 1 s doubling to 60 s, as the sidecar's repairs. */
export const DEFAULT_REPAIR_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };
/** While an episode is open, how often a wave looks again (IMDS; EC2 only for a lost address), in ms. */
export const DEFAULT_EPISODE_CHECK_MS = 1_000;

/** One address a pod of this node carries, on the ENI it belongs on. */
export interface Wanted {
  readonly address: string;
  readonly eniId: string;
  readonly pod: PodRef;
  /** `namespace/pod/interface`. */
  readonly interfaceName: string;
}

/** An open episode in which another ENI took the address: a conflict, reported on our pod. */
export interface EpisodeConflict {
  readonly address: string;
  readonly pod: PodRef;
  /** For the pod's Event: unchanged while the episode lasts, so that the Event is not posted again. */
  readonly message: string;
  /** For /readyz: the message, the moves so far and when the next repair comes. */
  readonly detail: string;
}

/** The key of an episode: the address on the ENI it belongs on (a pod recreated on another ENI starts afresh). */
export const episodeKey = (eniId: string, address: string): string => `${eniId} ${address}`;
const keyOf = episodeKey;

export class ConflictEpisodes {
  readonly #episodes: DriftEpisodes;
  /** Keys our ENI held at an observation, or whose assign EC2 accepted. */
  readonly #held = new Set<string>();
  #wanted = new Map<string, Wanted>();
  #holderFailure: string | undefined;

  constructor(rules: { readonly backoff: BackoffPolicy; readonly random?: () => number }) {
    this.#episodes = new DriftEpisodes({
      backoff: rules.backoff,
      quietMs: 2 * rules.backoff.maxMs,
      random: rules.random ?? Math.random,
    });
  }

  /**
   * A wave's look: `observe`, then who holds the addresses lost, and those in a conflict that only our own
   * recent assign says we hold (one EC2 read per family, `readHolders`), then `settle`; each conflict and
   * each end of an episode logged once. A failed read is logged once and leaves the holders unknown, paced
   * as rivals (the cautious side). Returns the keys (`episodeKey`) that `enis` shows on our ENI but that EC2
   * says another ENI (or none) holds: the rival took them back after our repair, before IMDS showed it.
   */
  async look(
    interfaces: readonly PodInterface[],
    podOf: ReadonlyMap<string, PodRef>,
    enis: readonly EniState[],
    now: number,
    deps: { readonly ec2: Ec2Api; readonly clock: Clock; readonly logger: Logger },
    shown?: readonly EniState[],
  ): Promise<Set<string>> {
    const { lost, unconfirmed, events } = this.observe(interfaces, podOf, enis, now, shown);
    let holders = new Map<string, Holder>();
    const toRead = [...lost, ...unconfirmed];
    if (toRead.length > 0) {
      try {
        holders = await readHolders(
          deps.ec2,
          toRead.map((w) => w.address),
        );
        this.#holderFailure = undefined;
      } catch (error) {
        if (!(error instanceof IpmgrError)) throw error;
        if (this.#holderFailure !== error.message) {
          deps.logger.warn(
            { err: error, addresses: lost.map((w) => w.address) },
            "could not read which ENI holds the addresses taken off ours; taking them back with backoff",
          );
        }
        this.#holderFailure = error.message;
      }
    }
    const { taken, events: confirmed } = this.confirmHeld(unconfirmed, holders, now);
    const settled = this.settle([...lost, ...taken], holders, deps.clock.now());
    for (const event of [...events, ...confirmed, ...settled]) log(event, deps.logger);
    return new Set(taken.map((w) => keyOf(w.eniId, w.address)));
  }

  /**
   * The addresses in a conflict that only our recent assign says we hold, against who EC2 says holds them:
   * ours (IMDS lags), held; another ENI or none, a new loss to `settle` (`taken`). Unknown (the read
   * failed): held, as `enis` says.
   */
  confirmHeld(
    unconfirmed: readonly Wanted[],
    holders: ReadonlyMap<string, Holder>,
    now: number,
  ): { taken: Wanted[]; events: EpisodeEvent[] } {
    const taken: Wanted[] = [];
    const events: EpisodeEvent[] = [];
    for (const w of unconfirmed) {
      const key = keyOf(w.eniId, w.address);
      const holder = holders.get(w.address);
      if (holder === undefined || holder === w.eniId) {
        this.#held.add(key);
        const event = this.#episodes.held(key, now);
        if (event !== undefined) events.push(event);
        continue;
      }
      this.#held.delete(key);
      this.#episodes.lost(key, now, true);
      taken.push(w);
    }
    return { taken, events };
  }

  /**
   * One observation of what our pods want (`interfaces`, each on the ENI with its MAC) against what our ENIs
   * hold (`enis`: IMDS with our recent changes over it; `shown`: IMDS alone, when known). Returns the lost
   * addresses whose holder `settle` must be told (lost now, or due for a repair); the addresses of a
   * conflict (a rival took them before) that `enis` holds only by our recent assign, whose holder EC2 must
   * confirm (`confirmHeld`): a rival can take one back before IMDS ever shows our repair; the events of
   * episodes ended.
   */
  observe(
    interfaces: readonly PodInterface[],
    podOf: ReadonlyMap<string, PodRef>,
    enis: readonly EniState[],
    now: number,
    shown?: readonly EniState[],
  ): { lost: Wanted[]; unconfirmed: Wanted[]; events: EpisodeEvent[] } {
    const byMac = new Map(enis.map((e) => [e.mac.toLowerCase(), e]));
    const wanted = new Map<string, Wanted>();
    for (const iface of interfaces) {
      const eni = byMac.get(iface.mac.toLowerCase());
      const pod = podOf.get(iface.name);
      if (eni === undefined || pod === undefined) continue;
      for (const address of iface.addresses) {
        wanted.set(keyOf(eni.eniId, address), { address, eniId: eni.eniId, pod, interfaceName: iface.name });
      }
    }
    this.#wanted = wanted;
    const events: EpisodeEvent[] = [];
    const lost: Wanted[] = [];
    const unconfirmed: Wanted[] = [];
    const eniById = new Map(enis.map((e) => [e.eniId, e]));
    const shownById = shown === undefined ? undefined : new Map(shown.map((e) => [e.eniId, e]));
    const holdsOn = (eni: EniState | undefined, address: string): boolean =>
      eni !== undefined && (family(address) === 4 ? eni.ipv4s : eni.ipv6s).includes(address);
    for (const [key, w] of wanted) {
      const holds = holdsOn(eniById.get(w.eniId), w.address);
      if (
        holds &&
        shownById !== undefined &&
        !holdsOn(shownById.get(w.eniId), w.address) &&
        this.#episodes.get(key)?.rival !== undefined
      ) {
        unconfirmed.push(w);
      } else if (holds) {
        this.#held.add(key);
        const event = this.#episodes.held(key, now);
        if (event !== undefined) events.push(event);
      } else if (this.#episodes.lost(key, now, this.#held.has(key))) {
        this.#held.delete(key);
        // The holder is read for a new loss, and again when the repair comes due; not at every wave between.
        const repairAt = this.#episodes.get(key)?.repairAt;
        if (repairAt === undefined || now >= repairAt) lost.push(w);
      }
    }
    for (const key of this.#held) if (!wanted.has(key)) this.#held.delete(key);
    events.push(...this.#episodes.keepOnly(new Set(wanted.keys())));
    return { lost, unconfirmed, events };
  }

  /** Who holds each lost address (`readHolders`): opens or paces its episode; a conflict event the first time. */
  settle(lost: readonly Wanted[], holders: ReadonlyMap<string, Holder>, now: number): EpisodeEvent[] {
    const events: EpisodeEvent[] = [];
    for (const w of lost) {
      const key = keyOf(w.eniId, w.address);
      const holder = holders.get(w.address);
      if (holder === w.eniId) {
        // EC2 says our ENI holds it: IMDS lags, nothing was taken.
        this.#held.add(key);
        const event = this.#episodes.held(key, now);
        if (event !== undefined) events.push(event);
        continue;
      }
      const event = this.#episodes.holder(key, holder, now);
      if (event !== undefined) events.push(event);
    }
    return events;
  }

  /** The interfaces without the addresses whose repair must wait (a rival holds them, the backoff runs). */
  withoutHeldBack(
    interfaces: readonly PodInterface[],
    enis: readonly EniState[],
    now: number,
  ): PodInterface[] {
    const heldBack = this.#episodes.heldBack(now);
    if (heldBack.size === 0) return [...interfaces];
    const byMac = new Map(enis.map((e) => [e.mac.toLowerCase(), e.eniId]));
    return interfaces.map((iface) => {
      const eniId = byMac.get(iface.mac.toLowerCase()) ?? "";
      return { ...iface, addresses: iface.addresses.filter((a) => !heldBack.has(keyOf(eniId, a))) };
    });
  }

  /** EC2 accepted our assign of these addresses to `eniId`: held from now, a repair if an episode waited for it. */
  assigned(eniId: string, addresses: readonly string[], now: number): void {
    for (const address of addresses) {
      const key = keyOf(eniId, address);
      if (this.#episodes.repairDue(key, now)) this.#episodes.repaired(key, now);
      this.#held.add(key);
    }
  }

  /** When a wave must look again: the next repair, or the episode check while any episode is open. */
  nextCheckAt(now: number, checkMs: number): number | undefined {
    if (this.#episodes.size === 0) return undefined;
    return Math.min(now + checkMs, this.#episodes.nextRepairAt() ?? Infinity);
  }

  /** The open episodes in which another ENI took the address, one sentence each naming the fix. */
  conflicts(now: number): EpisodeConflict[] {
    const out: EpisodeConflict[] = [];
    for (const episode of this.#episodes.all()) {
      if (episode.rival === undefined) continue;
      const w = this.#wanted.get(episode.address);
      if (w === undefined) continue;
      const [namespace, pod, iface] = w.interfaceName.split("/");
      const message =
        `address ${w.address} on ${namespace}/${pod} (${iface}) belongs on ENI ${w.eniId}, but ENI ${episode.rival} ` +
        "took it back after ours held it: a pod elsewhere carries the same address and whereabouts names " +
        "neither; it is taken back with backoff until one pod lets it go. Give each pod its own address, or " +
        "delete the pod that should not have it.";
      const next =
        episode.repairAt === undefined
          ? "being taken back"
          : `next try in ${Math.max(0, Math.ceil((episode.repairAt - now) / 1000))} s`;
      out.push({
        address: w.address,
        pod: w.pod,
        message,
        detail: `${message} (${episode.moves} moves; ${next})`,
      });
    }
    return out;
  }
}

/** Each conflict and each end of an episode, logged once. */
function log(event: EpisodeEvent, logger: Logger): void {
  const [eniId, address] = event.episode.address.split(" ");
  if (event.kind === "conflict") {
    logger.warn(
      { address, ourEniId: eniId, otherEniId: event.episode.rival },
      `conflict: ${address} belongs on ENI ${eniId} here, but ENI ${event.episode.rival} took it back: a pod ` +
        "elsewhere carries the same address and whereabouts names neither; taking it back with backoff, at " +
        "once if it is let go. Logged once per episode.",
    );
  } else if (event.kind === "over") {
    logger.info(
      { address, ourEniId: eniId, moves: event.episode.moves, otherEniId: event.episode.rival },
      event.reason === "quiet"
        ? "conflict episode over: our ENI has held the address undisturbed"
        : "conflict episode over: no pod of this node carries the address on that ENI any more",
    );
  }
}

/** Who holds each address, by one EC2 read per family: an ENI id, null for none. Throws Ec2Error. */
export async function readHolders(ec2: Ec2Api, addresses: readonly string[]): Promise<Map<string, Holder>> {
  const result = new Map<string, Holder>();
  if (addresses.length === 0) return result;
  const v4 = addresses.filter((a) => family(a) === 4);
  const v6 = addresses.filter((a) => family(a) === 6);
  const enis = [
    ...(v4.length === 0 ? [] : await ec2.describeNetworkInterfaces({ ipv4Addresses: v4 })),
    ...(v6.length === 0 ? [] : await ec2.describeNetworkInterfaces({ ipv6Addresses: v6 })),
  ];
  for (const address of addresses) {
    const holder = enis.find((e) => e.ipv4s.includes(address) || e.ipv6s.includes(address));
    result.set(address, holder?.eniId ?? null);
  }
  return result;
}

/** `enis` without the addresses `look` found taken back (`episodeKey`s): what our ENIs hold in fact. */
export function withoutTaken(enis: readonly EniState[], taken: ReadonlySet<string>): EniState[] {
  if (taken.size === 0) return [...enis];
  return enis.map((e) => ({
    ...e,
    ipv4s: e.ipv4s.filter((a) => !taken.has(keyOf(e.eniId, a))),
    ipv6s: e.ipv6s.filter((a) => !taken.has(keyOf(e.eniId, a))),
  }));
}
