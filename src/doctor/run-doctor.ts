/**
 * `multus-ipmgr doctor`: reads what init and the sidecar read (IMDS, the pod's interfaces, EC2), changes
 * nothing, and turns what it finds into check results. Each step runs only when what it needs is there;
 * otherwise its checks are `skipped`, naming the earlier check to fix first.
 */

import { Ec2Error } from "../eni/errors/ec2-error.js";
import { IpmgrError } from "../eni/errors/ipmgr-error.js";
import type { Imds } from "../eni/imds.js";
import { type InterfaceSelection, isManagedInterface } from "../eni/interface-selector.js";
import { family } from "../eni/ip.js";
import { plan } from "../eni/planner.js";
import { type UnknownVariable, unknownVariableSentence } from "../eni/process/known-variables.js";
import type { ReconcileDeps } from "../eni/reconcile.js";
import type {
  Ec2NetworkInterface,
  EniState,
  Plan,
  PodInterface,
  SubnetCidrReservation,
} from "../eni/types.js";
import { type CheckResult, errorSentence, listText, problem, skipped, warn } from "./check.js";
import { addressChecks } from "./checks/addresses.js";
import { allowedCidrChecks, allowedInSubnets, multusSubnets, overlapChecks } from "./checks/allowed-cidrs.js";
import { capacityChecks } from "./checks/capacity.js";
import { eniTagChecks, NO_MANAGE_TAG } from "./checks/eni-tags.js";
import { imdsCheck } from "./checks/imds.js";
import { eniMatchChecks, interfacesCheck, linkChecks } from "./checks/interfaces.js";
import { type AddressEventsMode, ipCommandCheck } from "./checks/ip-command.js";
import { nodeLinkChecks, onHostNetwork, rpFilterChecks } from "./checks/node-links.js";
import { unprobeablePermissionCheck } from "./checks/permissions.js";
import { nodeSliceChecks } from "./checks/prefixes.js";
import { reservationChecks } from "./checks/reservations.js";
import { securityGroupChecks } from "./checks/security-groups.js";
import { ec2Fix } from "./ec2-fix.js";
import type { ImdsProbe } from "./imds-probe.js";
import { readInstance } from "./instance-read.js";
import type { IpCommandProbe } from "./ip-command-probe.js";
import type { LinkInfo, LinkSource } from "./links.js";
import { type MultusEni, multusEnisOf, secondaryEnisOf } from "./multus-enis.js";
import { type NodeSlicesWanted, nodeSlicesOf, prefixResults } from "./prefix-results.js";
import { attempt, blocked, probeReadPermissions } from "./read-permissions.js";
import type { RpFilterSource } from "./rp-filter.js";

/** The raw IMDS getter (ImdsClient's): an absolute path's text, undefined on 404. */
export interface ImdsReader {
  get(path: string): Promise<string | undefined>;
}

/** What init takes, plus the probes only doctor makes. */
export interface DoctorDeps extends ReconcileDeps {
  readonly imds: Imds & ImdsReader;
  readonly imdsProbe: ImdsProbe;
  readonly links: LinkSource;
  readonly ipCommand: IpCommandProbe;
  /** The IPv4 reverse-path filter, for the node checks on the host network; absent: those are skipped. */
  readonly rpFilter?: RpFilterSource;
  /**
   * This node's whereabouts slices (a NodeSlicePool list from the Kubernetes API), or why they cannot be read
   * (no Kubernetes API, no NODE_NAME): the node-slice check is then skipped with that sentence.
   */
  readonly nodeSlices?: NodeSlicesWanted;
}

export interface DoctorOptions {
  /** IPMGR_ALLOWED_CIDRS, canonical; undefined when it is not set. */
  readonly allowedCidrs: readonly string[] | undefined;
  /** AWS_REGION as configured; undefined: EC2 is asked in the instance's region. */
  readonly region: string | undefined;
  /** IPMGR_ADDRESS_SOURCE. */
  readonly addressSource: "interfaces" | "network-status";
  readonly networkStatusFile: string;
  readonly selection: InterfaceSelection;
  readonly addressEvents: AddressEventsMode;
  /** IPMGR_* variables of the environment that no command reads (known-variables.ts); default none. */
  readonly unknownVariables?: readonly UnknownVariable[];
}

const SEE_INTERFACES = "not checked: no managed pod interface (see interfaces).";
const SEE_ENI_MATCH = "not checked: no managed interface sits on an ENI of this instance (see eni-match).";

export { readIdentity } from "./instance-read.js";
export { attempt, blocked } from "./read-permissions.js";

const SEE_CONFIG = "not checked: IPMGR_ALLOWED_CIDRS is not set (see config).";
const SEE_EC2 = "not checked: EC2 could not be asked (see ec2, permission or instance).";
const SEE_DESCRIBE = "not checked: ec2:DescribeNetworkInterfaces is denied (see permission).";

/**
 * Runs every check, in the order they are reported: the pod's own configuration and links first (no AWS
 * needed), then IMDS, then EC2. Changes nothing in EC2 or on the node.
 */
export async function runDoctor(deps: DoctorDeps, options: DoctorOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const add = (...r: CheckResult[]): void => {
    results.push(...r);
  };
  const allowed = options.allowedCidrs;
  if (allowed === undefined) {
    add(
      problem(
        "config",
        "IPMGR_ALLOWED_CIDRS is not set: init and the sidecar refuse to start without it (exit 2), and doctor cannot check the pod ranges.",
        {
          fix: "run doctor in the container that runs init or the sidecar (kubectl exec -c <container>), or pass --allowed-cidrs",
        },
      ),
    );
  }

  add(...unknownVariableChecks(options.unknownVariables ?? []));

  // The pod: its managed interfaces and their links.
  const interfaces = await attempt("interfaces", add, () => deps.interfaces.read());
  const managed = interfaces ?? [];
  const allLinks = await listLinks(deps);
  if (interfaces !== undefined) {
    add(interfacesCheck(interfaces, interfaceContext(options, allLinks)));
  }
  const linkNames = [
    ...new Set([
      ...managed.map((i) => i.name),
      ...(allLinks ?? []).filter((name) => isManagedInterface(options.selection, name)),
    ]),
  ].sort();
  const links = new Map<string, LinkInfo | undefined>();
  for (const name of linkNames) links.set(name, await deps.links.read(name));
  add(...linkChecks(linkNames, managed, links));

  // IMDS: the token (hop limit), the instance, its ENIs.
  const probe = await deps.imdsProbe.probe();
  let instanceId = probe.kind === "token-timeout" ? probe.instanceId : undefined;
  if (probe.kind !== "ok" && instanceId === undefined && options.region !== undefined && managed.length > 0) {
    instanceId = await instanceIdByMac(deps, managed);
  }
  add(
    imdsCheck(probe, { endpoint: deps.imdsProbe.endpoint, timeoutMs: deps.imdsProbe.timeoutMs, instanceId }),
  );
  const { identity, enis, noEnis } = await readInstance(deps.imds, probe.kind === "ok", options.region, add);
  const noInterfaces = managed.length === 0 ? SEE_INTERFACES : undefined;
  const matchBlocked = blocked(noEnis, noInterfaces);
  if (matchBlocked !== undefined) add(skipped("eni-match", matchBlocked));
  else if (enis !== undefined) add(...eniMatchChecks(managed, enis));
  const multus: MultusEni[] = enis === undefined ? [] : multusEnisOf(managed, enis);
  const noMultus = blocked(matchBlocked, multus.length === 0 ? SEE_ENI_MATCH : undefined);
  const noConfig = allowed === undefined ? SEE_CONFIG : undefined;
  const planned =
    enis === undefined || allowed === undefined
      ? undefined
      : plan({ interfaces: managed, enis, policy: { allowedCidrs: allowed } });
  const subnets = multusSubnets(enis === undefined ? [] : secondaryEnisOf(managed, enis));
  const ranges = allowed === undefined ? [] : allowedInSubnets(allowed, subnets);

  // EC2: permissions first (DryRun), then the reads they allow.
  const region = options.region ?? identity?.region;
  const { noRegion, describe, reservationVerdicts } = await probeReadPermissions(
    deps.ec2,
    region,
    identity,
    ranges.map((r) => r.subnet.subnetId),
    unprobeablePermissionCheck,
    add,
  );
  const noEc2 = blocked(noRegion, describe === undefined ? SEE_EC2 : undefined);
  const noDescribe = blocked(noEc2, describe?.allowed === false ? SEE_DESCRIBE : undefined);

  const addressesBlocked = blocked(noConfig, noInterfaces, noEnis);
  if (addressesBlocked !== undefined || planned === undefined) {
    add(skipped("addresses", addressesBlocked ?? SEE_CONFIG));
  } else {
    const holders =
      noDescribe === undefined ? await attempt("addresses", add, () => holdersOf(deps, planned)) : undefined;
    add(...addressChecks(planned, holders));
  }

  const tagBlocked = blocked(noMultus, noDescribe);
  let described: Ec2NetworkInterface[] | undefined;
  if (tagBlocked !== undefined) add(skipped("eni-tag", tagBlocked));
  else {
    described = await attempt("eni-tag", add, () =>
      deps.ec2.describeNetworkInterfaces({ eniIds: multus.map((m) => m.eni.eniId) }),
    );
    if (described !== undefined) add(...eniTagChecks(multus, described));
  }
  if (tagBlocked !== undefined) add(skipped("security-group", tagBlocked));
  else if (described !== undefined) add(...(await securityGroupResults(deps, multus, described)));

  if (enis !== undefined && allLinks !== undefined) {
    add(...(await nodeResults(deps, enis, allLinks, noDescribe === undefined)));
  }

  const capacityBlocked = blocked(
    noMultus,
    noConfig,
    identity === undefined ? "not checked: the instance type is unknown (see instance)." : undefined,
  );
  if (capacityBlocked !== undefined || identity === undefined || planned === undefined) {
    add(skipped("capacity", capacityBlocked ?? SEE_CONFIG));
  } else {
    add(...capacityChecks(identity.instanceType, multus, planned));
  }

  const cidrBlocked = blocked(noConfig, noEnis);
  if (cidrBlocked !== undefined || allowed === undefined)
    add(skipped("allowed-cidr", cidrBlocked ?? SEE_CONFIG));
  else add(...allowedCidrChecks(allowed, subnets));
  const noRanges =
    cidrBlocked === undefined && ranges.length === 0
      ? "not checked: no allowed CIDR lies in a subnet of this node's secondary ENIs (see allowed-cidr)."
      : undefined;

  const overlapBlocked = blocked(cidrBlocked, noRanges, noDescribe);
  if (overlapBlocked !== undefined) add(skipped("address-overlap", overlapBlocked));
  else {
    const subnetIds = [...new Set(ranges.map((r) => r.subnet.subnetId))];
    const inSubnets = await attempt("address-overlap", add, () =>
      deps.ec2.describeNetworkInterfaces({ subnetIds }),
    );
    if (inSubnets !== undefined) {
      add(...overlapChecks(ranges, inSubnets, new Set(multus.map((m) => m.eni.eniId))));
    }
  }

  const readable = ranges.filter((r) => reservationVerdicts.get(r.subnet.subnetId)?.allowed === true);
  const reservationBlocked = blocked(
    cidrBlocked,
    noRanges,
    noEc2,
    readable.length < ranges.length
      ? "not checked: ec2:GetSubnetCidrReservations is denied (see permission)."
      : undefined,
  );
  // Prefix mode: this node's slices first (the other prefix checks name them).
  const secondary = enis === undefined ? [] : secondaryEnisOf(managed, enis).map((m) => m.eni);
  const slices = await nodeSlicesOf(deps);
  if (reservationBlocked !== undefined) add(skipped("reservation", reservationBlocked));
  else {
    const reservations = await attempt("reservation", add, () => reservationsOf(deps, readable));
    if (reservations !== undefined) add(...reservationChecks(readable, reservations));
  }
  add(
    ...(await prefixResults(
      deps,
      identity?.instanceType,
      noEc2,
      blocked(noEnis, noDescribe),
      secondary,
      slices.slices,
    )),
  );
  if (noEnis !== undefined && slices.slices !== undefined) add(skipped("node-slice", noEnis));
  else add(...nodeSliceChecks(slices.slices, slices.why, secondary));

  const watchesEvents = options.addressSource === "interfaces" && options.addressEvents !== "poll";
  const ipCommand = watchesEvents ? await deps.ipCommand.probe() : undefined;
  add(ipCommandCheck(ipCommand, options.addressEvents, options.addressSource));
  return results;
}

/** A `config` problem per IPMGR_* variable of the environment that no command reads. */
export function unknownVariableChecks(unknown: readonly UnknownVariable[]): CheckResult[] {
  return unknown.map((u) =>
    problem("config", unknownVariableSentence(u), {
      subject: u.name,
      fix:
        u.suggestion === undefined
          ? `remove ${u.name} from the container's env, or rename it to the variable you meant (docs/configuration.md)`
          : `rename ${u.name} to ${u.suggestion} in the container's env`,
    }),
  );
}

/**
 * The node checks, when doctor runs in the node's network namespace (the bridge's host-network pod): each
 * Multus ENI's link up, and the reverse-path filter on it not strict. The Multus ENIs are the secondary ENIs
 * tagged no_manage (one DescribeNetworkInterfaces), or every secondary ENI when EC2 cannot say. Nothing in a
 * pod's namespace.
 */
async function nodeResults(
  deps: DoctorDeps,
  enis: readonly EniState[],
  linkNames: readonly string[],
  canDescribe: boolean,
): Promise<CheckResult[]> {
  const links = (await Promise.all(linkNames.map((name) => deps.links.read(name)))).filter(
    (l): l is LinkInfo => l !== undefined,
  );
  if (!onHostNetwork(links, enis)) return [];
  const secondary = enis.filter((e) => e.deviceIndex > 0);
  let multus = secondary;
  if (canDescribe && secondary.length > 0) {
    try {
      const described = await deps.ec2.describeNetworkInterfaces({ eniIds: secondary.map((e) => e.eniId) });
      const tagged = new Set(described.filter((e) => e.tags[NO_MANAGE_TAG] === "true").map((e) => e.eniId));
      multus = secondary.filter((e) => tagged.has(e.eniId));
    } catch (error) {
      if (!(error instanceof IpmgrError)) throw error;
      deps.logger.warn({ err: error }, "could not read the ENIs' tags: checking every secondary ENI's link");
    }
  }
  if (multus.length === 0) {
    return [
      skipped("node-link", `not checked: this node has no secondary ENI tagged ${NO_MANAGE_TAG}=true.`, {
        fix: "attach a Multus ENI tagged no_manage (see Node prerequisites)",
      }),
    ];
  }
  const results = nodeLinkChecks(multus, links);
  if (deps.rpFilter === undefined) return results;
  const values = new Map<string, number | undefined>([["all", await deps.rpFilter.read("all")]]);
  for (const link of links) values.set(link.name, await deps.rpFilter.read(link.name));
  return [...results, ...rpFilterChecks(multus, links, values)];
}

/**
 * The security-group check: one DescribeSecurityGroups for the groups of the Multus ENIs. A denied read is a
 * warning (init and the sidecar do not need it), as for the reservations.
 */
async function securityGroupResults(
  deps: DoctorDeps,
  multus: readonly MultusEni[],
  described: readonly Ec2NetworkInterface[],
): Promise<CheckResult[]> {
  const ids = [...new Set(described.flatMap((e) => e.securityGroupIds ?? []))].sort();
  try {
    return securityGroupChecks(multus, described, await deps.ec2.describeSecurityGroups(ids));
  } catch (error) {
    if (!(error instanceof Ec2Error)) throw error;
    if (error.kind === "permission") {
      return [
        warn(
          "security-group",
          `ec2:DescribeSecurityGroups is denied, so the groups of the Multus ENIs (${listText(ids)}) cannot be checked: ${errorSentence(error)}`,
          {
            fix: "grant ec2:DescribeSecurityGroups (deploy/iam/iam-policy-pod.json has it), or read the rules with aws ec2 describe-security-groups --group-ids ...",
          },
        ),
      ];
    }
    return [problem("security-group", errorSentence(error), { fix: ec2Fix(error) })];
  }
}

/** The pod's links, to name them in a problem and to find managed links the interface read leaves out. */
async function listLinks(deps: DoctorDeps): Promise<string[] | undefined> {
  try {
    return await deps.links.names();
  } catch (error) {
    // Without sysfs the checks still run on what the interface read found; the log says why.
    deps.logger.warn({ err: error }, "could not list the pod's links in /sys/class/net");
    return undefined;
  }
}

function interfaceContext(options: DoctorOptions, allLinks: readonly string[] | undefined) {
  return {
    selection: options.selection,
    source: options.addressSource === "interfaces" ? "the pod's interfaces" : options.networkStatusFile,
    allLinks,
  };
}

/** Where EC2 says the pod's addresses that their ENI lacks are now. */
async function holdersOf(deps: DoctorDeps, planned: Plan): Promise<Map<string, Ec2NetworkInterface>> {
  const satisfied = new Set(planned.satisfied);
  const missing = planned.placements.map((p) => p.address).filter((a) => !satisfied.has(a));
  const holders = new Map<string, Ec2NetworkInterface>();
  if (missing.length === 0) return holders;
  const ipv4 = missing.filter((a) => family(a) === 4);
  const ipv6 = missing.filter((a) => family(a) === 6);
  const found = [
    ...(ipv4.length > 0 ? await deps.ec2.describeNetworkInterfaces({ ipv4Addresses: ipv4 }) : []),
    ...(ipv6.length > 0 ? await deps.ec2.describeNetworkInterfaces({ ipv6Addresses: ipv6 }) : []),
  ];
  for (const eni of found) {
    for (const address of [...eni.ipv4s, ...eni.ipv6s])
      if (missing.includes(address)) holders.set(address, eni);
  }
  return holders;
}

export async function reservationsOf(
  deps: Pick<DoctorDeps, "ec2">,
  ranges: readonly { subnet: { subnetId: string } }[],
): Promise<Map<string, SubnetCidrReservation[]>> {
  const out = new Map<string, SubnetCidrReservation[]>();
  for (const subnetId of new Set(ranges.map((r) => r.subnet.subnetId))) {
    out.set(subnetId, await deps.ec2.getSubnetCidrReservations(subnetId));
  }
  return out;
}

/**
 * This instance's id from EC2, by the MAC of a pod interface (an ENI's attachment names its instance), for the
 * hop-limit fix when IMDS cannot say it. Best effort: any failure only leaves the id out of the command.
 */
async function instanceIdByMac(
  deps: DoctorDeps,
  interfaces: readonly PodInterface[],
): Promise<string | undefined> {
  try {
    const enis = await deps.ec2.describeNetworkInterfaces({ macs: interfaces.map((i) => i.mac) });
    return enis.find((e) => e.instanceId !== undefined)?.instanceId;
  } catch (error) {
    if (!(error instanceof IpmgrError)) throw error;
    deps.logger.debug({ err: error }, "could not learn the instance id from EC2 by MAC");
    return undefined;
  }
}
