import { createHash } from "node:crypto";
import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import type { SimEni, SimState } from "../../sim-state.js";
import type { Topology } from "../../topology.js";
import { addressHostOf, eniNotFound } from "./enis.js";
import { pickFree, reservedBlocks, usedAddresses } from "./free-addresses.js";
import { assignPrefixes, type PrefixRequest, prefixBlocks } from "./prefixes.js";
import { requireSubnet } from "./subnets.js";

/**
 * CreateNetworkInterface (EC2 API reference, API_CreateNetworkInterface): an ENI in a subnet, detached
 * (status `available`), with a primary IPv4 address EC2 picks from the subnet, a MAC, the security groups
 * given (the VPC's default group when none), the tags of its TagSpecifications, and optionally delegated
 * prefixes. `ClientToken` makes the call idempotent (Ensuring idempotency in Amazon EC2 API requests): the
 * same token with the same parameters answers the ENI the first call made; with other parameters,
 * `IdempotentParameterMismatch`.
 *
 * Decided here where EC2 documents nothing: the primary address is the lowest free one (as pickFree); a token
 * whose ENI was deleted since still answers that ENI as it was made (EC2 keeps a token's answer for a while);
 * an unknown security group is `InvalidGroup.NotFound`, as for other calls naming a group.
 */
export interface CreateEniRequest {
  readonly subnetId: string;
  /** Empty: the VPC's default group. */
  readonly securityGroupIds: readonly string[];
  readonly description: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly clientToken: string | undefined;
  /** The parameters that make two requests "the same" for ClientToken: canonical text. */
  readonly fingerprint: string;
  readonly ipv4Prefixes: PrefixRequest | undefined;
  readonly ipv6Prefixes: PrefixRequest | undefined;
}

export interface CreateEniResult {
  readonly eni: SimEni;
  /** True when a ClientToken answered an ENI made before: nothing new was made. */
  readonly repeated: boolean;
}

/** A locally administered MAC from the ENI id (as EC2's `02:` and `0a:` ones), unique in the state. */
function macFor(state: SimState, eniId: string): string {
  const taken = new Set(state.enis.map((e) => e.mac));
  for (let n = 0; ; n++) {
    const hex = createHash("sha256").update(`${eniId}/${n}`).digest("hex").slice(0, 10);
    const mac = `02:${hex.match(/../g)?.join(":")}`;
    if (!taken.has(mac)) return mac;
  }
}

function repeatOf(state: SimState, request: CreateEniRequest): CreateEniResult | undefined {
  if (request.clientToken === undefined) return undefined;
  const record = state.clientTokens.find((t) => t.token === request.clientToken);
  if (record === undefined) return undefined;
  if (record.fingerprint !== request.fingerprint) {
    throw new Ec2ModelError(
      "IdempotentParameterMismatch",
      "Arguments on this idempotent request are inconsistent with arguments used in previous request(s).",
    );
  }
  const current = state.enis.find((e) => e.eniId === record.eniId);
  return { eni: current ?? record.created, repeated: true };
}

export function createEni(
  state: SimState,
  topology: Topology,
  nextId: (prefix: string) => string,
  now: number,
  request: CreateEniRequest,
): CreateEniResult {
  const repeat = repeatOf(state, request);
  if (repeat !== undefined) return repeat;
  const subnet = requireSubnet(topology, request.subnetId);
  const defaultGroup = [...topology.securityGroups.keys()][0] as string;
  const groups = request.securityGroupIds.length === 0 ? [defaultGroup] : [...request.securityGroupIds];
  const unknown = groups.find((g) => !topology.securityGroups.has(g));
  if (unknown !== undefined) {
    throw new Ec2ModelError("InvalidGroup.NotFound", `The security group '${unknown}' does not exist`);
  }
  const reserved = [...reservedBlocks(state, subnet.id, 4), ...prefixBlocks(state, 4)];
  const [primary] = pickFree(subnet.cidr, usedAddresses(state), reserved, 1);
  if (primary === undefined) {
    throw new Ec2ModelError(
      "InsufficientFreeAddressesInSubnet",
      `There are not enough free addresses in subnet '${subnet.id}' to satisfy the requested number of network interfaces.`,
    );
  }
  const eniId = nextId("eni");
  const eni: SimEni = {
    eniId,
    mac: macFor(state, eniId),
    instanceId: null,
    deviceIndex: null,
    networkCardIndex: null,
    attachmentId: null,
    attachTime: null,
    deleteOnTermination: false,
    subnetId: subnet.id,
    primaryIpv4: primary,
    ipv4s: [primary],
    ipv6s: [],
    ipv4Prefixes: [],
    ipv6Prefixes: [],
    tags: { ...request.tags },
    description: request.description,
    securityGroupIds: groups,
    sourceDestCheck: true,
    createdAt: now,
  };
  state.enis.push(eni);
  const limitError = (limit: number): Ec2ModelError =>
    new Ec2ModelError(
      "PrivateIpAddressLimitExceeded",
      `Number of private addresses will exceed limit. The limit is ${limit} per network interface.`,
    );
  const host = addressHostOf(topology, eni);
  if (request.ipv4Prefixes !== undefined)
    assignPrefixes(state, eni, host, subnet, 4, request.ipv4Prefixes, limitError);
  if (request.ipv6Prefixes !== undefined)
    assignPrefixes(state, eni, host, subnet, 6, request.ipv6Prefixes, limitError);
  if (request.clientToken !== undefined) {
    state.clientTokens.push({
      token: request.clientToken,
      fingerprint: request.fingerprint,
      eniId,
      created: structuredClone(eni),
    });
  }
  return { eni, repeated: false };
}

/**
 * EC2's eventual consistency after CreateNetworkInterface: for `lagMs` after an ENI was made, a call naming it
 * by id answers `InvalidNetworkInterfaceID.NotFound` (EC2 API reference, "Eventual consistency in the Amazon
 * EC2 API": "a resource you just created might not be visible to later calls for a short time").
 */
export function hideFresh(state: SimState, ids: readonly string[], now: number, lagMs: number): void {
  if (lagMs <= 0) return;
  for (const id of ids) {
    const eni = state.enis.find((e) => e.eniId === id);
    if (eni?.createdAt !== null && eni?.createdAt !== undefined && now - eni.createdAt < lagMs) {
      throw eniNotFound(id);
    }
  }
}
