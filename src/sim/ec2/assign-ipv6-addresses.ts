import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { cidrContains, isAwsReserved } from "../ip-math.js";
import type { Ec2Handler } from "./ec2-context.js";
import { pickFree, reservedBlocks, usedAddresses } from "./free-addresses.js";
import { canonicalAddresses, instanceOf, requireEni, subnetOf } from "./lookups.js";
import { assignPrefixes, prefixBlocks, prefixHolding, prefixRequestOf, slotsUsed } from "./prefixes.js";
import { escapeXml, itemSet, leaf } from "./xml.js";

/**
 * AssignIpv6Addresses, all or nothing. EC2 has no reassignment for IPv6: an address held by another ENI is
 * refused. Unconfirmed EC2 behaviour, decided here: that refusal is `InvalidParameterValue`
 * "Address X is in use." (the holder is not named, as EC2 does not name it); an address this ENI already
 * holds counts as assigned; going over the per-ENI limit is `InvalidParameterValue` too; an address inside a
 * delegated prefix (any ENI's) is in use; addresses and prefixes in one request: `InvalidParameterCombination`.
 * Prefixes (`Ipv6Prefix.N` or `Ipv6PrefixCount`): see prefixes.ts.
 */
export const assignIpv6Addresses: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const requested = params.list("Ipv6Addresses");
  const countText = params.get("Ipv6AddressCount");
  if (requested.length > 0 && countText !== undefined) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "The parameters Ipv6Addresses and Ipv6AddressCount cannot be used together",
    );
  }
  const prefixes = prefixRequestOf(
    params.list("Ipv6Prefix"),
    params.get("Ipv6PrefixCount"),
    () => params.int("Ipv6PrefixCount", 1, 1000),
    6,
    "Ipv6Prefix",
    "Ipv6PrefixCount",
  );
  if (prefixes !== undefined && (requested.length > 0 || countText !== undefined)) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "IPv6 addresses and IPv6 prefixes cannot be assigned in the same request",
    );
  }
  const draft = ctx.store.draft();
  const eni = requireEni(params, draft);
  if (requested.length === 0 && countText === undefined && prefixes === undefined) {
    throw new Ec2ApiError(
      "MissingParameter",
      "The request must contain the parameter Ipv6Addresses or Ipv6AddressCount",
    );
  }
  const subnet = subnetOf(topology, eni.subnetId);
  const block = subnet.ipv6Cidr;
  if (block === undefined) {
    throw new Ec2ApiError("InvalidParameterValue", `Subnet ${subnet.id} has no IPv6 CIDR block`);
  }
  const instance = instanceOf(topology, eni.instanceId);
  const limit = instance.addressLimit;
  const limitError = (): Ec2ApiError =>
    new Ec2ApiError(
      "InvalidParameterValue",
      `Number of IPv6 addresses will exceed limit. The limit is ${limit} per network interface.`,
    );
  const checkLimit = (adding: number): void => {
    if (slotsUsed(eni, 6) + adding > limit) throw limitError();
  };

  if (prefixes !== undefined) {
    const assigned = assignPrefixes(draft, eni, instance, subnet, 6, prefixes, limitError);
    ctx.store.commit(draft);
    return (
      itemSet("assignedIpv6Addresses", []) +
      itemSet("assignedIpv6PrefixSet", assigned.map(escapeXml)) +
      leaf("networkInterfaceId", eni.eniId)
    );
  }

  let answered: string[];
  if (requested.length > 0) {
    const addresses = canonicalAddresses(requested, 6, "Ipv6Addresses");
    for (const address of addresses) {
      if (!cidrContains(block, address)) {
        throw new Ec2ApiError(
          "InvalidParameterValue",
          `Address ${address} does not fall within the subnet's IPv6 address range (${block.text})`,
        );
      }
      if (isAwsReserved(block, address)) {
        throw new Ec2ApiError(
          "InvalidParameterValue",
          `Address ${address} is in subnet's reserved address range`,
        );
      }
    }
    const adding = addresses.filter((a) => !eni.ipv6s.includes(a));
    for (const address of adding) {
      if (draft.enis.some((e) => e.ipv6s.includes(address)) || prefixHolding(draft, address) !== undefined) {
        throw new Ec2ApiError("InvalidParameterValue", `Address ${address} is in use.`);
      }
    }
    checkLimit(adding.length);
    eni.ipv6s.push(...adding);
    answered = addresses;
  } else {
    const count = params.int("Ipv6AddressCount", 1, 1000) ?? 0;
    checkLimit(count);
    const picks = pickFree(
      block,
      usedAddresses(draft),
      [...reservedBlocks(draft, subnet.id, 6), ...prefixBlocks(draft, 6)],
      count,
    );
    if (picks.length < count) {
      throw new Ec2ApiError(
        "InsufficientFreeAddressesInSubnet",
        `The specified subnet ${subnet.id} does not have enough free addresses to satisfy the request.`,
      );
    }
    eni.ipv6s.push(...picks);
    answered = picks;
  }
  ctx.store.commit(draft);
  return itemSet("assignedIpv6Addresses", answered.map(escapeXml)) + leaf("networkInterfaceId", eni.eniId);
};
