/**
 * Which of this node's ENIs are Multus ENIs, the ones the bridge manages: by device index when configured,
 * else those tagged no_manage=true. Tags come from EC2 (IMDS does not show them): read at once when an ENI
 * not seen before appears, and again every TAG_RESYNC_INTERVAL_MS (± a quarter, so that a fleet restarted
 * together spreads its reads) in case a tag changed on an ENI already known.
 */
import type { Ec2Api } from "../../eni/ec2-api.js";
import type { EniState } from "../../eni/types.js";

/** The tag that marks an ENI the VPC CNI must leave alone: a Multus ENI. */
export const NO_MANAGE_TAG = "node.k8s.amazonaws.com/no_manage";

/**
 * How often the tags of known ENIs are read again: 10 minutes. Each read is one DescribeNetworkInterfaces
 * on the account's describe bucket (refill 20 a second): 5,000 nodes make about 8 a second, where reading at
 * every resync (60 s) made 83 and throttled every describe of the account.
 */
export const TAG_RESYNC_INTERVAL_MS = 600_000;

export class MultusEnis {
  #tagged: Set<string> | undefined;
  #untagged = new Set<string>();
  #nextReadAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly ec2: Ec2Api,
    /** Device indexes of the Multus ENIs; empty: the ENIs tagged no_manage=true. */
    private readonly deviceIndexes: readonly number[],
    /** [0, 1): spreads the tag reads. */
    private readonly random: () => number = Math.random,
  ) {}

  /** The ids of the Multus ENIs among `enis` at `now` (ms); may read the tags (EC2 DescribeNetworkInterfaces). */
  async ids(enis: readonly EniState[], now: number): Promise<Set<string>> {
    if (this.deviceIndexes.length > 0) {
      return new Set(enis.filter((e) => this.deviceIndexes.includes(e.deviceIndex)).map((e) => e.eniId));
    }
    const known = this.#tagged;
    const unknown =
      known === undefined || enis.some((e) => !known.has(e.eniId) && !this.#untagged.has(e.eniId));
    if (unknown || now >= this.#nextReadAt) {
      const described = await this.ec2.describeNetworkInterfaces({ eniIds: enis.map((e) => e.eniId) });
      this.#tagged = new Set(described.filter((e) => e.tags[NO_MANAGE_TAG] === "true").map((e) => e.eniId));
      this.#untagged = new Set(described.filter((e) => e.tags[NO_MANAGE_TAG] !== "true").map((e) => e.eniId));
      this.#nextReadAt = now + TAG_RESYNC_INTERVAL_MS * (0.75 + 0.5 * this.random());
    }
    return new Set(this.#tagged);
  }
}
