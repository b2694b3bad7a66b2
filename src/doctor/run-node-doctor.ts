/**
 * `multus-ipmgr doctor --profile node`: the checks that matter in the bridge's pod, in the node's network
 * namespace (the chart's `helm test`). What the bridge needs of the node: IMDS from the host network, its IAM
 * (DryRun where EC2 offers it; in attach mode also what making the node's Multus ENIs needs), the node's Multus ENIs (tagged no_manage, their links up, rp_filter not
 * strict, no pod address on the host), the allowed CIDRs against their subnets, the reservations over them,
 * and this node's whereabouts slices held as prefixes. No pod check: the bridge's pod has no pod interface.
 */

import type { PermissionVerdict } from "../eni/ec2-api.js";
import type { InterfaceSource } from "../eni/interface-source.js";
import type { UnknownVariable } from "../eni/process/known-variables.js";
import type { Ec2NetworkInterface, EniState } from "../eni/types.js";
import { type AttachDoctorOptions, attachResults } from "./attach-results.js";
import { type CheckResult, listText, problem, skipped } from "./check.js";
import {
  allowedCidrChecks,
  allowedInSubnets,
  type MultusSubnet,
  multusSubnets,
  overlapChecks,
} from "./checks/allowed-cidrs.js";
import { eniTagChecks } from "./checks/eni-tags.js";
import { hostAddressChecks } from "./checks/host-addresses.js";
import { nodeImdsCheck } from "./checks/imds.js";
import { multusEniCheck, multusEnisOf } from "./checks/node-enis.js";
import { nodeLinkChecks, rpFilterChecks } from "./checks/node-links.js";
import { bridgeUnprobeableCheck } from "./checks/permissions.js";
import { nodeSliceChecks } from "./checks/prefixes.js";
import { reservationChecks } from "./checks/reservations.js";
import type { InstanceIdentity } from "./identity.js";
import { readInstance } from "./instance-read.js";
import type { LinkInfo } from "./links.js";
import type { MultusEni } from "./multus-enis.js";
import { nodeSlicesOf, prefixResults } from "./prefix-results.js";
import { probeReadPermissions } from "./read-permissions.js";
import type { RpFilterSource } from "./rp-filter.js";
import { attempt, blocked, type DoctorDeps, reservationsOf, unknownVariableChecks } from "./run-doctor.js";

/** What the node profile reads: doctor's IMDS, EC2, links and slices, the node's addresses, its rp_filter. */
export interface NodeDoctorDeps
  extends Pick<DoctorDeps, "imds" | "imdsProbe" | "ec2" | "links" | "logger" | "nodeSlices"> {
  /** Every interface of the node with its addresses (os.networkInterfaces() in the host's namespace). */
  readonly hostInterfaces: InterfaceSource;
  readonly rpFilter: RpFilterSource;
}

export interface NodeDoctorOptions {
  /** The bridge's IPMGR_ALLOWED_CIDRS, canonical; undefined when it is not set. */
  readonly allowedCidrs: readonly string[] | undefined;
  /** AWS_REGION as configured; undefined: EC2 is asked in the instance's region. */
  readonly region: string | undefined;
  readonly unknownVariables?: readonly UnknownVariable[];
  /** The bridge's attach settings; undefined or off: no attach row. */
  readonly attach?: AttachDoctorOptions;
}

/** The pod profile's checks this one leaves out, said once so that nobody looks for them. */
export const POD_CHECKS = [
  "interfaces",
  "link",
  "eni-match",
  "addresses",
  "security-group",
  "capacity",
  "ip-command",
] as const;

const SEE_CONFIG = "not checked: IPMGR_ALLOWED_CIDRS is not set (see config).";
const SEE_EC2 = "not checked: EC2 could not be asked (see ec2, permission or instance).";
const SEE_DESCRIBE = "not checked: ec2:DescribeNetworkInterfaces is denied (see permission).";
const SEE_MULTUS = "not checked: this node has no Multus ENI (see multus-eni).";

/** Runs the node checks, in the order they are reported. Changes nothing in EC2 or on the node. */
export async function runNodeDoctor(
  deps: NodeDoctorDeps,
  options: NodeDoctorOptions,
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const add: Add = (...r) => {
    results.push(...r);
  };
  add(...configChecks(options));
  const node = await instanceResults(deps, options, add);
  const access = await permissionResults(deps, options, node, add);
  await attachResults(deps.ec2, options.attach, node.identity, access.noEc2, add);
  const multus = await multusResults(deps, options.allowedCidrs, node, access, add);
  await rangeResults(deps, options.allowedCidrs, multus, access, add);
  // Prefix mode: this node's whereabouts slices, held as delegated prefixes by its Multus ENIs.
  const slices = await nodeSlicesOf(deps);
  const { noEc2, noDescribe } = access;
  add(
    ...(await prefixResults(
      deps,
      node.identity?.instanceType,
      noEc2,
      noDescribe,
      multus.enis,
      slices.slices,
    )),
  );
  if (node.noEnis !== undefined && slices.slices !== undefined) add(skipped("node-slice", node.noEnis));
  else add(...nodeSliceChecks(slices.slices, slices.why, multus.enis));
  return results;
}

type Add = (...r: CheckResult[]) => void;
type Range = { readonly cidr: string; readonly subnet: MultusSubnet };

/** What IMDS told: the instance, its secondary ENIs, the pod ranges in their subnets, or why not. */
interface NodeRead {
  readonly identity: InstanceIdentity | undefined;
  readonly secondary: readonly EniState[];
  /** The allowed CIDRs inside a secondary ENI's subnet. */
  readonly planned: readonly Range[];
  readonly noImds: string | undefined;
  readonly noEnis: string | undefined;
}

/** What EC2 lets the bridge's role do, or why it cannot be asked. */
interface Access {
  readonly noEc2: string | undefined;
  /** Why DescribeNetworkInterfaces cannot be sent (no ENIs, no EC2, denied), if so. */
  readonly noDescribe: string | undefined;
  readonly reservationVerdicts: ReadonlyMap<string, PermissionVerdict>;
}

interface MultusRead {
  readonly enis: readonly EniState[];
  /** Why the node's Multus ENIs are unknown or none, if so. */
  readonly noMultus: string | undefined;
}

/** The bridge's configuration, and the one line saying the pod checks are not made. */
function configChecks(options: NodeDoctorOptions): CheckResult[] {
  return [
    ...(options.allowedCidrs === undefined
      ? [
          problem(
            "config",
            "IPMGR_ALLOWED_CIDRS is not set: the bridge refuses to start without it (exit 2), and doctor cannot tell the node's Multus ENIs and pod ranges.",
            { fix: "run doctor in the bridge's container (it has the variable), or pass --allowed-cidrs" },
          ),
        ]
      : []),
    ...unknownVariableChecks(options.unknownVariables ?? []),
    skipped(
      "pod",
      `not checked in the node profile: ${listText([...POD_CHECKS])} are about a pod's own interfaces (doctor --profile pod in the pod's container).`,
    ),
  ];
}

/** IMDS from the host network (no hop limit in the way): the token, the instance, its ENIs. */
async function instanceResults(
  deps: NodeDoctorDeps,
  options: NodeDoctorOptions,
  add: Add,
): Promise<NodeRead> {
  const probe = await deps.imdsProbe.probe();
  const { endpoint, timeoutMs } = deps.imdsProbe;
  add(nodeImdsCheck(probe, { endpoint, timeoutMs, instanceId: undefined }));
  const { noImds, identity, enis, noEnis } = await readInstance(
    deps.imds,
    probe.kind === "ok",
    options.region,
    add,
  );
  const secondary = (enis ?? []).filter((e) => e.deviceIndex > 0);
  const allowed = options.allowedCidrs;
  const planned = allowed === undefined ? [] : allowedInSubnets(allowed, multusSubnets(secondary.map(alone)));
  return { identity, secondary, planned, noImds, noEnis };
}

/** The bridge's permissions that EC2 can probe with DryRun, and the four it cannot. */
async function permissionResults(
  deps: NodeDoctorDeps,
  options: NodeDoctorOptions,
  node: NodeRead,
  add: Add,
): Promise<Access> {
  const { identity } = node;
  const region = options.region ?? identity?.region;
  const { noRegion, describe, reservationVerdicts } = await probeReadPermissions(
    deps.ec2,
    region,
    identity,
    node.planned.map((r) => r.subnet.subnetId),
    bridgeUnprobeableCheck,
    add,
  );
  const noEc2 = blocked(noRegion, describe === undefined ? SEE_EC2 : undefined);
  const noDescribe = blocked(node.noEnis, noEc2, describe?.allowed === false ? SEE_DESCRIBE : undefined);
  return { noEc2, noDescribe, reservationVerdicts };
}

/**
 * The node's Multus ENIs (secondary ENIs tagged no_manage or in a subnet of the allowed CIDRs), each with its
 * tag, its link and rp_filter; then the node's addresses against the pod ranges.
 */
async function multusResults(
  deps: NodeDoctorDeps,
  allowed: readonly string[] | undefined,
  node: NodeRead,
  access: Access,
  add: Add,
): Promise<MultusRead> {
  const { secondary } = node;
  const { noDescribe } = access;
  let described: Ec2NetworkInterface[] | undefined;
  if (noDescribe === undefined && secondary.length > 0) {
    described = await attempt("multus-eni", add, () =>
      deps.ec2.describeNetworkInterfaces({ eniIds: secondary.map((e) => e.eniId) }),
    );
  }
  const multus = multusEnisOf(secondary, described, node.planned);
  const unknown = blocked(node.noEnis, noConfigOrTags(allowed, described, noDescribe));
  if (unknown !== undefined && multus.length === 0) add(skipped("multus-eni", unknown));
  else add(multusEniCheck(multus, secondary));
  const noMultus = multus.length === 0 ? blocked(unknown, SEE_MULTUS) : undefined;

  if (noMultus !== undefined) add(skipped("eni-tag", noMultus));
  else if (described !== undefined) add(...eniTagChecks(multus.map(alone), described));
  else
    add(skipped("eni-tag", noDescribe ?? "not checked: the ENIs' tags could not be read (see multus-eni)."));

  const links = await hostLinks(deps);
  if (noMultus !== undefined) add(skipped("node-link", noMultus));
  else {
    add(...nodeLinkChecks(multus, links));
    const values = new Map<string, number | undefined>([["all", await deps.rpFilter.read("all")]]);
    for (const link of links) values.set(link.name, await deps.rpFilter.read(link.name));
    add(...rpFilterChecks(multus, links, values));
  }
  if (allowed === undefined) add(skipped("host-address", SEE_CONFIG));
  else {
    const host = await attempt("host-address", add, () => deps.hostInterfaces.read());
    if (host !== undefined) add(...hostAddressChecks(allowed, host));
  }
  return { enis: multus, noMultus };
}

/** The pod ranges against the Multus subnets, the addresses other ENIs hold there, and the reservations. */
async function rangeResults(
  deps: NodeDoctorDeps,
  allowed: readonly string[] | undefined,
  multus: MultusRead,
  access: Access,
  add: Add,
): Promise<void> {
  const subnets = multusSubnets(multus.enis.map(alone));
  const ranges = allowed === undefined ? [] : allowedInSubnets(allowed, subnets);
  const cidrBlocked = blocked(allowed === undefined ? SEE_CONFIG : undefined, multus.noMultus);
  if (cidrBlocked !== undefined || allowed === undefined)
    add(skipped("allowed-cidr", cidrBlocked ?? SEE_CONFIG));
  else add(...allowedCidrChecks(allowed, subnets));
  const noRanges =
    cidrBlocked === undefined && ranges.length === 0
      ? "not checked: no allowed CIDR lies in a subnet of this node's Multus ENIs (see allowed-cidr)."
      : undefined;
  const overlapBlocked = blocked(cidrBlocked, noRanges, access.noDescribe);
  if (overlapBlocked !== undefined) add(skipped("address-overlap", overlapBlocked));
  else {
    const subnetIds = [...new Set(ranges.map((r) => r.subnet.subnetId))];
    const inSubnets = await attempt("address-overlap", add, () =>
      deps.ec2.describeNetworkInterfaces({ subnetIds }),
    );
    if (inSubnets !== undefined)
      add(...overlapChecks(ranges, inSubnets, new Set(multus.enis.map((e) => e.eniId))));
  }
  const readable = ranges.filter((r) => access.reservationVerdicts.get(r.subnet.subnetId)?.allowed === true);
  const reservationBlocked = blocked(
    cidrBlocked,
    noRanges,
    access.noEc2,
    readable.length < ranges.length
      ? "not checked: ec2:GetSubnetCidrReservations is denied (see permission)."
      : undefined,
  );
  if (reservationBlocked !== undefined) add(skipped("reservation", reservationBlocked));
  else {
    const reservations = await attempt("reservation", add, () => reservationsOf(deps, readable));
    if (reservations !== undefined) add(...reservationChecks(readable, reservations));
  }
}

/** An ENI as a MultusEni with no pod interface on it (the checks shared with the pod profile take those). */
const alone = (eni: EniState): MultusEni => ({ eni, interfaces: [] });

/** Why the Multus ENIs may be incomplete: neither the allowed CIDRs nor the tags could tell them. */
function noConfigOrTags(
  allowed: readonly string[] | undefined,
  described: readonly Ec2NetworkInterface[] | undefined,
  noDescribe: string | undefined,
): string | undefined {
  if (allowed !== undefined || described !== undefined) return undefined;
  return blocked(noDescribe, SEE_CONFIG);
}

/** The node's links; without sysfs the link checks have nothing to read, and the log says why. */
async function hostLinks(deps: NodeDoctorDeps): Promise<LinkInfo[]> {
  try {
    const names = await deps.links.names();
    const links = await Promise.all(names.map((name) => deps.links.read(name)));
    return links.filter((l): l is LinkInfo => l !== undefined);
  } catch (error) {
    deps.logger.warn({ err: error }, "could not list the node's links in /sys/class/net");
    return [];
  }
}
