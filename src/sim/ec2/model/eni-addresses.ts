import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import { cidrContains, isAwsReserved } from "../../ip-math.js";
import type { SimState } from "../../sim-state.js";
import type { Topology } from "../../topology.js";
import { dropAssociations, dropAssociationsWithin, followReassignment } from "./elastic-ip-associations.js";
import { addressHostOf, eniById, subnetOf } from "./enis.js";
import { pickFree, reservedBlocks, usedAddresses } from "./free-addresses.js";
import {
  assignPrefixes,
  type PrefixRequest,
  prefixBlocks,
  prefixHolding,
  slotsUsed,
  unassignPrefixes,
} from "./prefixes.js";

/**
 * EC2's rules for the addresses and prefixes of an ENI: the four assign/unassign calls, on a draft of the
 * account state (the caller commits it; a refusal throws Ec2ModelError before anything it would commit).
 * Requests come parsed: addresses canonical and de-duplicated, prefixes canonical CIDRs.
 */

/** What one assign asks for: named addresses, a count for EC2 to pick, or prefixes (see prefixes.ts). */
export type AssignRequest =
  | { readonly addresses: readonly string[] }
  | { readonly count: number }
  | { readonly prefixes: PrefixRequest };

/** The ENI and what the answer lists: addresses (named ones as given, counted ones as picked), or prefixes. */
export interface AssignResult {
  readonly eniId: string;
  readonly addresses: readonly string[];
  readonly prefixes: readonly string[];
}

/**
 * AssignPrivateIpAddresses. All or nothing: every address is checked against the draft before any moves.
 *
 * Unconfirmed EC2 behaviour, decided here:
 * - an address this ENI already holds counts as assigned (success, listed in the answer, no change);
 * - an address held by another ENI without AllowReassignment: `InvalidParameterValue` "Address X is in use.";
 * - with AllowReassignment, another ENI's primary address is refused with `InvalidParameterValue`;
 * - an Elastic IP associated with a reassigned address moves with it (documented), keeping its association id
 *   (undocumented);
 * - addresses inside a subnet CIDR reservation (either type) may be assigned by name; only automatic
 *   picks avoid them;
 * - an address inside a delegated prefix (any ENI's, this one's included) is refused like an address in use,
 *   with or without AllowReassignment: a prefix is never split.
 */
export function assignPrivateIps(
  state: SimState,
  topology: Topology,
  eniId: string,
  request: AssignRequest,
  allowReassignment = false,
): AssignResult {
  const eni = eniById(state, eniId);
  const subnet = subnetOf(topology, eni.subnetId);
  const instance = addressHostOf(topology, eni);
  const limit = instance.addressLimit;
  const limitError = (): Ec2ModelError =>
    new Ec2ModelError(
      "PrivateIpAddressLimitExceeded",
      `Number of private addresses will exceed limit. The limit is ${limit} per network interface.`,
    );
  const checkLimit = (adding: number): void => {
    if (slotsUsed(eni, 4) + adding > limit) throw limitError();
  };

  if ("prefixes" in request) {
    const prefixes = assignPrefixes(state, eni, instance, subnet, 4, request.prefixes, limitError);
    return { eniId: eni.eniId, addresses: [], prefixes };
  }
  if ("count" in request) {
    checkLimit(request.count);
    const picks = pickFree(
      subnet.cidr,
      usedAddresses(state),
      [...reservedBlocks(state, subnet.id, 4), ...prefixBlocks(state, 4)],
      request.count,
    );
    if (picks.length < request.count) throw subnetFull(subnet.id);
    eni.ipv4s.push(...picks);
    return { eniId: eni.eniId, addresses: picks, prefixes: [] };
  }
  const { addresses } = request;
  for (const address of addresses) {
    if (!cidrContains(subnet.cidr, address)) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Address ${address} does not fall within the subnet's address range (${subnet.cidr.text})`,
      );
    }
    if (isAwsReserved(subnet.cidr, address)) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Address ${address} is in subnet's reserved address range`,
      );
    }
  }
  const adding = addresses.filter((a) => !eni.ipv4s.includes(a));
  for (const address of adding) {
    if (prefixHolding(state, address) !== undefined) {
      throw new Ec2ModelError("InvalidParameterValue", `Address ${address} is in use.`);
    }
    const holder = state.enis.find((e) => e.ipv4s.includes(address));
    if (holder === undefined) continue;
    if (holder.primaryIpv4 === address) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Address ${address} is the primary private IP address of a network interface and cannot be reassigned.`,
      );
    }
    if (!allowReassignment) throw new Ec2ModelError("InvalidParameterValue", `Address ${address} is in use.`);
  }
  checkLimit(adding.length);
  for (const address of adding) {
    for (const other of state.enis) other.ipv4s = other.ipv4s.filter((a) => a !== address);
    eni.ipv4s.push(address);
    followReassignment(state, address, eni.eniId);
  }
  return { eniId: eni.eniId, addresses, prefixes: [] };
}

/**
 * UnassignPrivateIpAddresses, all or nothing. Unconfirmed EC2 behaviour, decided here: the primary address
 * and an address the ENI does not hold are both refused with `InvalidParameterValue` (callers that treat
 * "already gone" as success must check the ENI first, or accept that code). An Elastic IP associated with an
 * unassigned address loses its association (documented). Prefixes are unassigned the same way (a prefix the
 * ENI does not hold: `InvalidParameterValue`), and an Elastic IP associated with an address inside one loses its
 * association too (decided here, as for an address); addresses and prefixes may come in one request.
 */
export function unassignPrivateIps(
  state: SimState,
  eniId: string,
  addresses: readonly string[],
  prefixes: readonly string[],
): void {
  const eni = eniById(state, eniId);
  if (prefixes.length > 0) unassignPrefixes(eni, 4, prefixes);
  for (const address of addresses) {
    if (address === eni.primaryIpv4) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Address ${address} is the primary private IP address of ${eni.eniId} and cannot be unassigned.`,
      );
    }
  }
  const missing = addresses.filter((a) => !eni.ipv4s.includes(a));
  if (missing.length > 0) throw notAssigned(eni.eniId, missing);
  eni.ipv4s = eni.ipv4s.filter((a) => !addresses.includes(a));
  dropAssociations(state, eni.eniId, addresses);
  dropAssociationsWithin(state, eni.eniId, prefixes);
}

/**
 * AssignIpv6Addresses, all or nothing. EC2 has no reassignment for IPv6: an address held by another ENI is
 * refused. Unconfirmed EC2 behaviour, decided here: that refusal is `InvalidParameterValue`
 * "Address X is in use." (the holder is not named, as EC2 does not name it); an address this ENI already
 * holds counts as assigned; going over the per-ENI limit is `InvalidParameterValue` too; an address inside a
 * delegated prefix (any ENI's) is in use.
 */
export function assignIpv6s(
  state: SimState,
  topology: Topology,
  eniId: string,
  request: AssignRequest,
): AssignResult {
  const eni = eniById(state, eniId);
  const subnet = subnetOf(topology, eni.subnetId);
  const block = subnet.ipv6Cidr;
  if (block === undefined) {
    throw new Ec2ModelError("InvalidParameterValue", `Subnet ${subnet.id} has no IPv6 CIDR block`);
  }
  const instance = addressHostOf(topology, eni);
  const limit = instance.addressLimit;
  const limitError = (): Ec2ModelError =>
    new Ec2ModelError(
      "InvalidParameterValue",
      `Number of IPv6 addresses will exceed limit. The limit is ${limit} per network interface.`,
    );
  const checkLimit = (adding: number): void => {
    if (slotsUsed(eni, 6) + adding > limit) throw limitError();
  };

  if ("prefixes" in request) {
    const prefixes = assignPrefixes(state, eni, instance, subnet, 6, request.prefixes, limitError);
    return { eniId: eni.eniId, addresses: [], prefixes };
  }
  if ("count" in request) {
    checkLimit(request.count);
    const picks = pickFree(
      block,
      usedAddresses(state),
      [...reservedBlocks(state, subnet.id, 6), ...prefixBlocks(state, 6)],
      request.count,
    );
    if (picks.length < request.count) throw subnetFull(subnet.id);
    eni.ipv6s.push(...picks);
    return { eniId: eni.eniId, addresses: picks, prefixes: [] };
  }
  const { addresses } = request;
  for (const address of addresses) {
    if (!cidrContains(block, address)) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Address ${address} does not fall within the subnet's IPv6 address range (${block.text})`,
      );
    }
    if (isAwsReserved(block, address)) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `Address ${address} is in subnet's reserved address range`,
      );
    }
  }
  const adding = addresses.filter((a) => !eni.ipv6s.includes(a));
  for (const address of adding) {
    if (state.enis.some((e) => e.ipv6s.includes(address)) || prefixHolding(state, address) !== undefined) {
      throw new Ec2ModelError("InvalidParameterValue", `Address ${address} is in use.`);
    }
  }
  checkLimit(adding.length);
  eni.ipv6s.push(...adding);
  return { eniId: eni.eniId, addresses, prefixes: [] };
}

/**
 * UnassignIpv6Addresses, all or nothing. Unconfirmed EC2 behaviour, decided here: an address the ENI does
 * not hold is refused with `InvalidParameterValue`, like UnassignPrivateIpAddresses; so is a prefix it does
 * not hold.
 */
export function unassignIpv6s(
  state: SimState,
  eniId: string,
  addresses: readonly string[],
  prefixes: readonly string[],
): void {
  const eni = eniById(state, eniId);
  if (prefixes.length > 0) unassignPrefixes(eni, 6, prefixes);
  const missing = addresses.filter((a) => !eni.ipv6s.includes(a));
  if (missing.length > 0) throw notAssigned(eni.eniId, missing);
  eni.ipv6s = eni.ipv6s.filter((a) => !addresses.includes(a));
}

function subnetFull(subnetId: string): Ec2ModelError {
  return new Ec2ModelError(
    "InsufficientFreeAddressesInSubnet",
    `The specified subnet ${subnetId} does not have enough free addresses to satisfy the request.`,
  );
}

function notAssigned(eniId: string, missing: readonly string[]): Ec2ModelError {
  return new Ec2ModelError(
    "InvalidParameterValue",
    `Some of the specified addresses are not assigned to interface ${eniId}: ${missing.join(", ")}`,
  );
}
