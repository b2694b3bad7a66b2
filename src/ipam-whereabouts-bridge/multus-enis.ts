/**
 * Which of this node's ENIs are Multus ENIs, the ones the bridge manages: by device index when configured,
 * else those tagged no_manage=true. Tags come from EC2 (IMDS does not show them), read again when an ENI
 * not seen before appears, or when the caller asks for a resync.
 */
import type { Ec2Api } from "../eni/ec2-api.js";
import type { EniState } from "../eni/types.js";

/** The tag that marks an ENI the VPC CNI must leave alone: a Multus ENI. */
export const NO_MANAGE_TAG = "node.k8s.amazonaws.com/no_manage";

export class MultusEnis {
  #tagged: Set<string> | undefined;
  #untagged = new Set<string>();

  constructor(
    private readonly ec2: Ec2Api,
    /** Device indexes of the Multus ENIs; empty: the ENIs tagged no_manage=true. */
    private readonly deviceIndexes: readonly number[],
  ) {}

  /** The ids of the Multus ENIs among `enis`; `resync` reads the tags again (EC2 DescribeNetworkInterfaces). */
  async ids(enis: readonly EniState[], resync: boolean): Promise<Set<string>> {
    if (this.deviceIndexes.length > 0) {
      return new Set(enis.filter((e) => this.deviceIndexes.includes(e.deviceIndex)).map((e) => e.eniId));
    }
    const known = this.#tagged;
    const unknown =
      known === undefined || enis.some((e) => !known.has(e.eniId) && !this.#untagged.has(e.eniId));
    if (unknown || resync) {
      const described = await this.ec2.describeNetworkInterfaces({ eniIds: enis.map((e) => e.eniId) });
      this.#tagged = new Set(described.filter((e) => e.tags[NO_MANAGE_TAG] === "true").map((e) => e.eniId));
      this.#untagged = new Set(described.filter((e) => e.tags[NO_MANAGE_TAG] !== "true").map((e) => e.eniId));
    }
    return new Set(this.#tagged);
  }
}
