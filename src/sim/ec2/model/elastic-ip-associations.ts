import type { SimState } from "../../sim-state.js";

/**
 * What happens to Elastic IP associations when private addresses change, as EC2 documents it: "If the private
 * IP address is associated with an Elastic IP address, the Elastic IP address is also reassigned" (a secondary
 * address moved to another ENI with AllowReassignment), and the association ends when its private address is
 * unassigned (the Elastic IP stays allocated). Both change `state` in place (a draft).
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
