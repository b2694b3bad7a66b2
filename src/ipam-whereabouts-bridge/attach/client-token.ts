/**
 * The ClientToken of attach mode's CreateNetworkInterface: EC2 answers a create whose token it has seen with
 * the ENI the first call made, so a create whose answer was lost (the bridge killed, a timeout) makes no
 * second ENI. The token is derived, not random, so that a restarted bridge asks with the same one:
 * "multus-ipmgr-" + the first 40 hex digits of sha256(`${instanceId}/${networkCardIndex}/${deviceIndex}/${generation}`),
 * 53 characters (EC2 takes up to 64).
 *
 * The generation of a slot starts at 0 and is raised when the ENI its token answered is known deleted: EC2
 * would otherwise answer the deleted ENI again for as long as it remembers the token.
 */
import { createHash } from "node:crypto";

export const CLIENT_TOKEN_PREFIX = "multus-ipmgr-";

/** A network's place on the instance: its network card and its device index on that card. */
export interface AttachSlot {
  readonly networkCardIndex: number;
  readonly deviceIndex: number;
}

export function clientToken(instanceId: string, slot: AttachSlot, generation: number): string {
  const digest = createHash("sha256")
    .update(`${instanceId}/${slot.networkCardIndex}/${slot.deviceIndex}/${generation}`)
    .digest("hex");
  return `${CLIENT_TOKEN_PREFIX}${digest.slice(0, 40)}`;
}

/** "card/device", the key of a slot in maps and logs. */
export function slotKey(slot: AttachSlot): string {
  return `${slot.networkCardIndex}/${slot.deviceIndex}`;
}

/**
 * The generation of each slot of one instance, for the life of the process (a restart starts at 0 again:
 * the ENI a generation-0 token answers is then found deleted once more, and the generation raised).
 */
export class SlotTokens {
  readonly #generations = new Map<string, number>();
  /** Per slot, the ENIs a token answered that were then not found after every retry. */
  readonly #lost = new Map<string, Set<string>>();
  /** Per slot, the ENI its current token answered, and whether EC2 has shown it attached since. */
  readonly #answered = new Map<string, { eniId: string; seen: boolean }>();

  constructor(private readonly instanceId: string) {}

  generation(slot: AttachSlot): number {
    return this.#generations.get(slotKey(slot)) ?? 0;
  }

  token(slot: AttachSlot): string {
    return clientToken(this.instanceId, slot, this.generation(slot));
  }

  /** The ENI the slot's token answered is deleted (by us, after a refused attach): the next create uses a new token. */
  deleted(slot: AttachSlot): void {
    this.#generations.set(slotKey(slot), this.generation(slot) + 1);
    this.#answered.delete(slotKey(slot));
  }

  /** A create with the slot's current token answered `eniId`. */
  answered(slot: AttachSlot, eniId: string): void {
    this.#answered.set(slotKey(slot), { eniId, seen: false });
  }

  /** EC2 showed `eniId` attached at the slot, or accepted its attach there. */
  seenAttached(slot: AttachSlot, eniId: string): void {
    const answered = this.#answered.get(slotKey(slot));
    if (answered?.eniId === eniId) answered.seen = true;
  }

  /**
   * The slot is free: if the ENI its token answered was seen attached and is now in none of `present` (the
   * instance's ENIs, our available ones), it was deleted by someone: the generation is raised, and its id
   * returned. An ENI never seen attached may only be one EC2 does not show yet: it keeps the token.
   */
  goneUnlessIn(slot: AttachSlot, present: ReadonlySet<string>): string | undefined {
    const answered = this.#answered.get(slotKey(slot));
    if (answered === undefined || !answered.seen || present.has(answered.eniId)) return undefined;
    this.deleted(slot);
    return answered.eniId;
  }

  /** EC2 kept answering NotFound for the ENI the token answered, after every retry. */
  lost(slot: AttachSlot, eniId: string): void {
    const key = slotKey(slot);
    const set = this.#lost.get(key) ?? new Set<string>();
    set.add(eniId);
    this.#lost.set(key, set);
  }

  /**
   * Whether `eniId`, answered by the slot's token now, is one an earlier pass lost: EC2 answers the token
   * with an ENI that no describe shows and no call finds, so it is known deleted.
   */
  answeredLost(slot: AttachSlot, eniId: string): boolean {
    return this.#lost.get(slotKey(slot))?.has(eniId) ?? false;
  }
}
