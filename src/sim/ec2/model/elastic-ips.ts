import { Ec2ModelError } from "../../errors/ec2-model-error.js";
import { bigIntToAddress, cidrContains, mustParseCidr } from "../../ip-math.js";
import type { SimAddress, SimEni, SimState } from "../../sim-state.js";
import type { Topology } from "../../topology.js";
import { eniById } from "./enis.js";

/**
 * EC2's rules for Elastic IPs (VPC domain): allocation from the world's public pool, association with a
 * private IPv4 address of an ENI, disassociation. Each function changes a draft state in place and throws
 * Ec2ModelError before any change it would not make. How associations follow private addresses that move or go:
 * elastic-ip-associations.ts.
 */

/**
 * Real ids are `eipalloc-` and 8 or 17 hex digits; world files use readable ids such as `eipalloc-0web`, so
 * the simulator only calls an id malformed when it lacks the prefix or has other characters (as for ENIs).
 */
const allocationIdPattern = /^eipalloc-[0-9a-z]+$/;

export function checkAllocationId(id: string): string {
  if (!allocationIdPattern.test(id)) {
    throw new Ec2ModelError(
      "InvalidAllocationID.Malformed",
      `Invalid id: "${id}" (expecting "eipalloc-...")`,
    );
  }
  return id;
}

export function allocationNotFound(id: string): Ec2ModelError {
  return new Ec2ModelError("InvalidAllocationID.NotFound", `The allocation ID '${id}' does not exist`);
}

/** The Elastic IP named by `id`, in `state` (a draft for writes). */
export function requireAllocation(state: SimState, id: string): SimAddress {
  const eip = state.addresses.find((a) => a.allocationId === checkAllocationId(id));
  if (eip === undefined) throw allocationNotFound(id);
  return eip;
}

/**
 * The Elastic IPs named by allocation ids (checked) and public IPs (canonical); every one when both are empty.
 * One that does not exist fails the whole call, as in EC2 (`InvalidAllocationID.NotFound`,
 * `InvalidAddress.NotFound`).
 */
export function addressesNamed(
  state: SimState,
  allocationIds: readonly string[],
  publicIps: readonly string[],
): SimAddress[] {
  let addresses = state.addresses;
  if (allocationIds.length > 0) {
    const unknown = allocationIds.find((id) => !addresses.some((a) => a.allocationId === id));
    if (unknown !== undefined) throw allocationNotFound(unknown);
    addresses = addresses.filter((a) => allocationIds.includes(a.allocationId));
  }
  if (publicIps.length > 0) {
    const unknown = publicIps.find((ip) => !state.addresses.some((a) => a.publicIp === ip));
    if (unknown !== undefined)
      throw new Ec2ModelError("InvalidAddress.NotFound", `Address '${unknown}' not found.`);
    addresses = addresses.filter((a) => publicIps.includes(a.publicIp));
  }
  return addresses;
}

/**
 * AllocateAddress: the lowest free public IP of the world's pool (203.0.113.0/24 unless the VPC uses it: see
 * publicIpPoolOf), network and broadcast addresses left out. When the pool is used up: `AddressLimitExceeded`
 * (EC2's code for its per-region quota, 5 by default, which the simulator does not impose).
 */
export function allocateAddress(
  state: SimState,
  topology: Topology,
  nextId: (prefix: string) => string,
  tags: Record<string, string>,
): SimAddress {
  const used = new Set(state.addresses.map((a) => a.publicIp));
  const pool = topology.publicIpPool;
  let publicIp: string | undefined;
  for (let offset = 1n; offset < pool.size - 1n && publicIp === undefined; offset++) {
    const candidate = bigIntToAddress(pool.base + offset, 4);
    if (!used.has(candidate)) publicIp = candidate;
  }
  if (publicIp === undefined) {
    throw new Ec2ModelError("AddressLimitExceeded", "The maximum number of addresses has been reached.");
  }
  const address: SimAddress = {
    allocationId: nextId("eipalloc"),
    publicIp,
    domain: "vpc",
    associationId: null,
    eniId: null,
    privateIp: null,
    tags,
  };
  state.addresses.push(address);
  return address;
}

/** Where an association points: an ENI, or an instance with exactly one ENI. */
export type AssociationTarget = { readonly eniId: string } | { readonly instanceId: string };

export interface AssociateRequest {
  readonly allocationId: string;
  readonly target: AssociationTarget;
  /** Canonical IPv4; the ENI's primary address when absent. */
  readonly privateIp?: string | undefined;
  /** False only when the caller says `AllowReassociation=false`. */
  readonly allowReassociation: boolean;
}

function targetEni(state: SimState, topology: Topology, target: AssociationTarget): SimEni {
  if ("eniId" in target) return eniById(state, target.eniId);
  const { instanceId } = target;
  if (!topology.instances.has(instanceId)) {
    throw new Ec2ModelError("InvalidInstanceID.NotFound", `The instance ID '${instanceId}' does not exist`);
  }
  const enis = state.enis.filter((e) => e.instanceId === instanceId);
  if (enis.length !== 1 || enis[0] === undefined) {
    throw new Ec2ModelError(
      "InvalidInstanceID",
      `There are multiple interfaces attached to instance '${instanceId}'. Please specify an interface ID for the operation instead.`,
    );
  }
  return enis[0];
}

/**
 * AssociateAddress (VPC); returns the association id. As the API reference documents: reassociation is
 * automatic, and `AllowReassociation=false` makes an Elastic IP associated with another ENI or address fail
 * (`Resource.AlreadyAssociated`); the call is idempotent (associating again where it already points is no
 * error); another Elastic IP on the same private address is disassociated from it (it stays allocated); an
 * unknown allocation is `InvalidAllocationID.NotFound`. An address inside an IPv4 prefix delegated to the ENI
 * may be associated (user guide, "Prefix delegation for Amazon EC2 network interfaces": "You can also assign an
 * Elastic IP address to the IP address part of the assigned prefix"), though no call assigned it on its own.
 *
 * Unconfirmed EC2 behaviour, decided here: a private address the ENI neither holds nor covers with one of its
 * prefixes is `InvalidParameterValue`;
 * associating again where it already points keeps the association id (nothing changes); a move gets a new one.
 */
export function associateAddress(
  state: SimState,
  topology: Topology,
  nextId: (prefix: string) => string,
  request: AssociateRequest,
): string {
  const eip = requireAllocation(state, request.allocationId);
  const eni = targetEni(state, topology, request.target);
  let privateIp = request.privateIp;
  if (privateIp === undefined) {
    if (eni.primaryIpv4 === null) {
      throw new Ec2ModelError(
        "InvalidParameterValue",
        `The network interface ${eni.eniId} has no private IPv4 address to associate with.`,
      );
    }
    privateIp = eni.primaryIpv4;
  }
  if (!holdsAddress(eni, privateIp)) {
    throw new Ec2ModelError(
      "InvalidParameterValue",
      `The private IP address ${privateIp} is not assigned to the network interface ${eni.eniId}.`,
    );
  }
  if (eip.associationId !== null && eip.eniId === eni.eniId && eip.privateIp === privateIp) {
    return eip.associationId;
  }
  if (eip.associationId !== null && !request.allowReassociation) {
    throw new Ec2ModelError(
      "Resource.AlreadyAssociated",
      `resource ${eip.allocationId} is already associated with associate-id ${eip.associationId}`,
    );
  }
  for (const other of state.addresses) {
    if (other !== eip && other.eniId === eni.eniId && other.privateIp === privateIp) disassociate(other);
  }
  const associationId = nextId("eipassoc");
  eip.associationId = associationId;
  eip.eniId = eni.eniId;
  eip.privateIp = privateIp;
  return associationId;
}

/** True when `eni` holds the IPv4 `address`, on its own or inside one of its delegated prefixes. */
function holdsAddress(eni: SimEni, address: string): boolean {
  if (eni.ipv4s.includes(address)) return true;
  return eni.ipv4Prefixes.some((prefix) => cidrContains(mustParseCidr(prefix), address));
}

/** DisassociateAddress (VPC); the Elastic IP stays allocated. An unknown id: `InvalidAssociationID.NotFound`. */
export function disassociateAddress(state: SimState, associationId: string): void {
  const eip = state.addresses.find((a) => a.associationId === associationId);
  if (eip === undefined) {
    throw new Ec2ModelError(
      "InvalidAssociationID.NotFound",
      `The association ID '${associationId}' does not exist`,
    );
  }
  disassociate(eip);
}

function disassociate(eip: SimAddress): void {
  eip.associationId = null;
  eip.eniId = null;
  eip.privateIp = null;
}
