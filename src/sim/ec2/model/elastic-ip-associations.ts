import { cidrContains, mustParseCidr } from "../../ip-math.js";
import type { SimState } from "../../sim-state.js";

/**
 * What happens to Elastic IP associations when private addresses change, as EC2 documents it: "If the private
 * IP address is associated with an Elastic IP address, the Elastic IP address is also reassigned" (a secondary
 * address moved to another ENI with AllowReassignment), and the association ends when its private address is
 * unassigned (the Elastic IP stays allocated), or the prefix that holds it. All change `state` in place (a draft).
 */

/** `address` moved to `toEniId`: an Elastic IP associated with it follows, keeping its association id. */
export function followReassignment(state: SimState, address: string, toEniId: string): void {
  for (const eip of state.addresses) {
    if (eip.associationId !== null && eip.privateIp === address) eip.eniId = toEniId;
  }
}

/** `addresses` were unassigned from `eniId`: the Elastic IPs associated with them are disassociated. */
export function dropAssociations(state: SimState, eniId: string, addresses: readonly string[]): void {
  for (const eip of state.addresses) {
    if (eip.eniId !== eniId || eip.privateIp === null || !addresses.includes(eip.privateIp)) continue;
    eip.associationId = null;
    eip.eniId = null;
    eip.privateIp = null;
  }
}

/** IPv4 `prefixes` were unassigned from `eniId`: the Elastic IPs associated with addresses inside them are disassociated. */
export function dropAssociationsWithin(state: SimState, eniId: string, prefixes: readonly string[]): void {
  const blocks = prefixes.map(mustParseCidr);
  const inside = state.addresses
    .filter((eip) => eip.eniId === eniId && eip.privateIp !== null)
    .map((eip) => eip.privateIp as string)
    .filter((address) => blocks.some((block) => cidrContains(block, address)));
  dropAssociations(state, eniId, inside);
}
