import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { cidrContains, isAwsReserved } from "../ip-math.js";
import type { Ec2Handler } from "./ec2-context.js";
import { followReassignment } from "./elastic-ip-associations.js";
import { pickFree, reservedBlocks, usedAddresses } from "./free-addresses.js";
import { canonicalAddresses, instanceOf, requireEni, subnetOf } from "./lookups.js";
import { assignPrefixes, prefixBlocks, prefixHolding, prefixRequestOf, slotsUsed } from "./prefixes.js";
import { itemSet, leaf } from "./xml.js";

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
 *   with or without AllowReassignment: a prefix is never split;
 * - addresses and prefixes in one request are refused with `InvalidParameterCombination`.
 * Prefixes (`Ipv4Prefix.N` or `Ipv4PrefixCount`): see prefixes.ts.
 */
export const assignPrivateIpAddresses: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const requested = params.list("PrivateIpAddress");
  const countText = params.get("SecondaryPrivateIpAddressCount");
  if (requested.length > 0 && countText !== undefined) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "The parameters PrivateIpAddress and SecondaryPrivateIpAddressCount cannot be used together",
    );
  }
  const prefixes = prefixRequestOf(
    params.list("Ipv4Prefix"),
    params.get("Ipv4PrefixCount"),
    () => params.int("Ipv4PrefixCount", 1, 1000),
    4,
    "Ipv4Prefix",
    "Ipv4PrefixCount",
  );
  if (prefixes !== undefined && (requested.length > 0 || countText !== undefined)) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "Private IP addresses and IPv4 prefixes cannot be assigned in the same request",
    );
  }
  const draft = ctx.store.draft();
  const eni = requireEni(params, draft);
  if (requested.length === 0 && countText === undefined && prefixes === undefined) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter PrivateIpAddress or SecondaryPrivateIpAddressCount",
    );
  }
  const subnet = subnetOf(topology, eni.subnetId);
  const instance = instanceOf(topology, eni.instanceId);
  const limit = instance.addressLimit;
  const limitError = (): Ec2ApiError =>
    new Ec2ApiError(
      "PrivateIpAddressLimitExceeded",
      `Number of private addresses will exceed limit. The limit is ${limit} per network interface.`,
    );
  const exceedsLimit = (adding: number): Ec2ApiError | undefined =>
    slotsUsed(eni, 4) + adding > limit ? limitError() : undefined;

  if (prefixes !== undefined) {
    const assigned = assignPrefixes(draft, eni, instance, subnet, 4, prefixes, limitError);
    ctx.store.commit(draft);
    return (
      leaf("networkInterfaceId", eni.eniId) +
      itemSet("assignedPrivateIpAddressesSet", []) +
      itemSet(
        "assignedIpv4PrefixSet",
        assigned.map((p) => leaf("ipv4Prefix", p)),
      )
    );
  }

  let answered: string[];
  if (requested.length > 0) {
    const addresses = canonicalAddresses(requested, 4, "PrivateIpAddress");
    const allowReassignment = params.bool("AllowReassignment");
    for (const address of addresses) {
      if (!cidrContains(subnet.cidr, address)) {
        throw new Ec2ApiError(
          "InvalidParameterValue",
          `Address ${address} does not fall within the subnet's address range (${subnet.cidr.text})`,
        );
      }
      if (isAwsReserved(subnet.cidr, address)) {
        throw new Ec2ApiError(
          "InvalidParameterValue",
          `Address ${address} is in subnet's reserved address range`,
        );
      }
    }
    const adding = addresses.filter((a) => !eni.ipv4s.includes(a));
    for (const address of adding) {
      if (prefixHolding(draft, address) !== undefined) {
        throw new Ec2ApiError("InvalidParameterValue", `Address ${address} is in use.`);
      }
      const holder = draft.enis.find((e) => e.ipv4s.includes(address));
      if (holder === undefined) continue;
      if (holder.primaryIpv4 === address) {
        throw new Ec2ApiError(
          "InvalidParameterValue",
          `Address ${address} is the primary private IP address of a network interface and cannot be reassigned.`,
        );
      }
      if (!allowReassignment) throw new Ec2ApiError("InvalidParameterValue", `Address ${address} is in use.`);
    }
    const tooMany = exceedsLimit(adding.length);
    if (tooMany !== undefined) throw tooMany;
    for (const address of adding) {
      for (const other of draft.enis) other.ipv4s = other.ipv4s.filter((a) => a !== address);
      eni.ipv4s.push(address);
      followReassignment(draft, address, eni.eniId);
    }
    answered = addresses;
  } else {
    const count = params.int("SecondaryPrivateIpAddressCount", 1, 1000) ?? 0;
    const tooMany = exceedsLimit(count);
    if (tooMany !== undefined) throw tooMany;
    const picks = pickFree(
      subnet.cidr,
      usedAddresses(draft),
      [...reservedBlocks(draft, subnet.id, 4), ...prefixBlocks(draft, 4)],
      count,
    );
    if (picks.length < count) {
      throw new Ec2ApiError(
        "InsufficientFreeAddressesInSubnet",
        `The specified subnet ${subnet.id} does not have enough free addresses to satisfy the request.`,
      );
    }
    eni.ipv4s.push(...picks);
    answered = picks;
  }
  ctx.store.commit(draft);
  return (
    leaf("networkInterfaceId", eni.eniId) +
    itemSet(
      "assignedPrivateIpAddressesSet",
      answered.map((a) => leaf("privateIpAddress", a)),
    )
  );
};
