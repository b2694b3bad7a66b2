import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { defaultSecurityGroupIdOf, defaultZoneId } from "./aws-names.js";
import { WorldError } from "./errors/world-error.js";
import { kubeFaultFields, partialFaultsSchema } from "./faults.js";
import { addressesPerEniOf, knownInstanceTypes } from "./instance-limits.js";
import {
  addressFamily,
  bigIntToAddress,
  type Cidr,
  canonicalAddress,
  cidrContains,
  cidrsOverlap,
  cidrWithin,
  isAwsReserved,
  mustParseCidr,
  parseCidr,
} from "./ip-math.js";
import { checkKubernetes, kubernetesSchema } from "./kube/kube-world.js";
import { checkNitroPerType, typeIsNitro } from "./world-nitro.js";

const address = (family: 4 | 6) =>
  z.string().transform((text, ctx) => {
    const canonical = addressFamily(text) === family ? canonicalAddress(text) : undefined;
    if (canonical === undefined) {
      ctx.addIssue({
        code: "custom",
        message: `must be an IPv${family} address such as ${family === 4 ? "198.51.100.10" : "2001:db8::10"}, got ${JSON.stringify(text)}`,
      });
      return z.NEVER;
    }
    return canonical;
  });

const cidr = (family: 4 | 6) =>
  z.string().transform((text, ctx) => {
    const parsed = parseCidr(text);
    const example = family === 4 ? "198.51.100.0/24" : "2001:db8:100::/56";
    if (typeof parsed === "string" || parsed.family !== family) {
      ctx.addIssue({
        code: "custom",
        message: `must be an IPv${family} CIDR block such as ${example}, got ${JSON.stringify(text)}${typeof parsed === "string" ? ` (${parsed})` : ""}`,
      });
      return z.NEVER;
    }
    return parsed.text;
  });

const anyCidr = z.string().transform((text, ctx) => {
  const parsed = parseCidr(text);
  if (typeof parsed === "string") {
    ctx.addIssue({ code: "custom", message: `${JSON.stringify(text)} ${parsed}` });
    return z.NEVER;
  }
  return parsed.text;
});

const id = (prefix: string) =>
  z
    .string()
    .regex(
      new RegExp(`^${prefix}-[0-9a-z]+$`),
      `must look like ${prefix}-0123abcd (lowercase letters and digits after "${prefix}-")`,
    );

/** Tag values: YAML users write `no_manage: true`; EC2 only knows strings. */
const tagValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);

/**
 * The attributes below the addresses are optional: existing world files load unchanged, and topologyOf fills
 * in what EC2 gives an ENI launched with its instance (see TopologyEni for each default).
 */
const eniSchema = z.strictObject({
  id: id("eni"),
  mac: z
    .string()
    .regex(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/, "must be lowercase and colon-separated, e.g. 02:00:00:00:0a:01"),
  deviceIndex: z.number().int().min(0).max(31),
  subnet: id("subnet"),
  /** Optional: an IPv6-only ENI has none. */
  primaryIpv4: address(4).optional(),
  secondaryIpv4s: z.array(address(4)).default([]),
  ipv6s: z.array(address(6)).default([]),
  /** Delegated IPv4 prefixes (/28) the ENI holds at start; Nitro instances only; each takes an address slot. */
  ipv4Prefixes: z.array(cidr(4)).optional(),
  /** Delegated IPv6 prefixes (/80) the ENI holds at start; Nitro instances only; each takes an address slot. */
  ipv6Prefixes: z.array(cidr(6)).optional(),
  tags: z.record(z.string().min(1), tagValue).default({}),
  description: z.string().max(255).optional(),
  /** Ids listed under `securityGroups`, or the VPC's default group. */
  securityGroups: z.array(id("sg")).min(1).max(16).optional(),
  sourceDestCheck: z.boolean().optional(),
  /** The types an ENI attached to an instance can have. */
  interfaceType: z.enum(["interface", "efa", "efa-only", "trunk"]).optional(),
  /** E.g. the account or role that created the ENI on your behalf; EC2 shows it only when set. */
  requesterId: z.string().min(1).optional(),
  requesterManaged: z.boolean().optional(),
  deleteOnTermination: z.boolean().optional(),
});

/** An ISO 8601 time such as 2024-01-01T00:00:00Z, kept in EC2's form (milliseconds, UTC). */
const isoTime = z.string().transform((text, ctx) => {
  const time = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text)
    ? new Date(text)
    : undefined;
  if (time === undefined || Number.isNaN(time.getTime())) {
    ctx.addIssue({
      code: "custom",
      message: `must be an ISO 8601 time such as 2024-01-01T00:00:00Z, got ${JSON.stringify(text)}`,
    });
    return z.NEVER;
  }
  return time.toISOString();
});

const tags = z.record(z.string().min(1), tagValue);

/**
 * One inbound rule of a security group, as AWS CLI users write it: a protocol (`-1` for all, `tcp`, `udp`,
 * `icmp`, `icmpv6`, or a protocol number), ports for tcp and udp (ICMP: type and code, -1 for any), and the
 * sources it admits: IPv4 and IPv6 CIDRs and security groups (by id).
 */
const ingressRuleSchema = z.strictObject({
  protocol: z
    .union([z.string(), z.number()])
    .transform(String)
    .pipe(
      z
        .string()
        .regex(
          /^(-1|tcp|udp|icmp|icmpv6|\d{1,3})$/,
          "must be -1 (all), tcp, udp, icmp, icmpv6 or a protocol number",
        ),
    ),
  fromPort: z.number().int().min(-1).max(65535).optional(),
  toPort: z.number().int().min(-1).max(65535).optional(),
  cidrs: z.array(cidr(4)).default([]),
  ipv6Cidrs: z.array(cidr(6)).default([]),
  groups: z.array(id("sg")).default([]),
  description: z.string().max(255).optional(),
});

const worldObjectSchema = z.strictObject({
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, "must be an AWS region such as us-east-1"),
  accountId: z
    .union([z.string(), z.number()])
    .transform(String)
    .pipe(z.string().regex(/^\d{12}$/, "must be 12 digits (quote it in YAML)"))
    .default("123456789012"),
  vpc: z.strictObject({
    id: id("vpc"),
    cidr: cidr(4),
    ipv6Cidr: cidr(6).optional(),
    /** The id of the VPC's security group named `default`; default `sg-` and the VPC id's suffix. */
    defaultSecurityGroupId: id("sg").optional(),
    /**
     * The default group's inbound rules. Default: the one AWS gives it, all traffic from the group itself.
     */
    defaultSecurityGroupIngress: z.array(ingressRuleSchema).optional(),
  }),
  /**
   * Security groups beside the VPC's default one, for the ENIs' `securityGroups`. `ingress`: their inbound
   * rules; default none, as a new group has.
   */
  securityGroups: z
    .array(
      z.strictObject({
        id: id("sg"),
        name: z.string().min(1).max(255),
        description: z.string().max(255).optional(),
        ingress: z.array(ingressRuleSchema).default([]),
        tags: tags.optional(),
      }),
    )
    .optional(),
  subnets: z
    .array(
      z.strictObject({
        id: id("subnet"),
        cidr: cidr(4),
        ipv6Cidr: cidr(6).optional(),
        availabilityZone: z
          .string()
          .regex(/^[a-z]{2}(-[a-z]+)+-\d+[a-z]$/, "must be a zone such as us-east-1a"),
        /** Default: the region's short form and the zone letter's rank, e.g. use1-az1 for us-east-1a. */
        availabilityZoneId: z
          .string()
          .regex(/^[a-z]+\d+(-[a-z]+\d+)?-az\d+$/, "must be a zone id such as use1-az1")
          .optional(),
        defaultForAz: z.boolean().optional(),
        mapPublicIpOnLaunch: z.boolean().optional(),
        enableDns64: z.boolean().optional(),
        privateDnsNameOptionsOnLaunch: z
          .strictObject({
            hostnameType: z.enum(["ip-name", "resource-name"]).optional(),
            enableResourceNameDnsARecord: z.boolean().optional(),
            enableResourceNameDnsAAAARecord: z.boolean().optional(),
          })
          .optional(),
        tags: tags.optional(),
      }),
    )
    .min(1),
  instances: z
    .array(
      z.strictObject({
        id: id("i"),
        instanceType: z.string().min(1).default("m5.large"),
        /** Overrides the instance type's limit; counts the primary; also bounds IPv6 addresses. */
        ipv4AddressesPerEni: z.number().int().min(1).max(100).optional(),
        /**
         * Built on the Nitro System: takes delegated prefixes. A fact of the instance type (world-nitro.ts): the
         * simulator's table decides for a type it knows, and a world saying otherwise is refused; for another
         * type, every instance that says it must agree. Default: the table's word, else true.
         */
        nitro: z.boolean().optional(),
        architecture: z.enum(["x86_64", "arm64", "i386"]).optional(),
        imageId: id("ami").optional(),
        /** Also the attach time of its ENIs. Default 2024-01-01T00:00:00.000Z, IMDS's pendingTime. */
        launchTime: isoTime.optional(),
        tags: tags.optional(),
        /**
         * An existing network namespace (made by the test) where an attach makes a link with the ENI's MAC,
         * as the kernel shows a hot-plugged ENA device, and a detach removes it (src/sim/hotplug.ts).
         */
        netns: z
          .string()
          .regex(/^[A-Za-z0-9_.-]{1,64}$/, "must be a network namespace name (letters, digits, _ . -)")
          .optional(),
        enis: z.array(eniSchema).min(1),
      }),
    )
    .min(1),
  reservations: z
    .array(
      z.strictObject({
        subnet: id("subnet"),
        cidr: anyCidr,
        type: z.enum(["explicit", "prefix"]),
        description: z.string().optional(),
      }),
    )
    .default([]),
  /** Elastic IPs (VPC domain), each optionally associated with a private IPv4 address of an ENI. */
  elasticIps: z
    .array(
      z.strictObject({
        allocationId: id("eipalloc"),
        /** From the world's public IP pool (publicIpPoolOf: 203.0.113.0/24 unless the VPC uses it). */
        publicIp: address(4),
        association: z.strictObject({ eni: id("eni"), privateIp: address(4) }).optional(),
        tags: tags.optional(),
      }),
    )
    .default([]),
  /**
   * EC2's eventual consistency: for this many milliseconds after CreateNetworkInterface, calls naming the new
   * ENI by id answer InvalidNetworkInterfaceID.NotFound. Default 0.
   */
  ec2ReadLagMs: z.number().int().min(0).max(600_000).default(0),
  /** IMDS's macs/ tree shows an attach or a detach only this many milliseconds later. Default 0. */
  imdsAttachmentLagMs: z.number().int().min(0).max(600_000).default(0),
  imds: z.strictObject({ httpTokens: z.enum(["required", "optional"]).default("required") }).default({
    httpTokens: "required",
  }),
  faults: partialFaultsSchema.optional(),
  /** A simulated Kubernetes API (nodes, pods, NADs, whereabouts pools); served only when present. */
  kubernetes: kubernetesSchema.optional(),
});

type WorldShape = z.output<typeof worldObjectSchema>;
export type IngressRule = z.output<typeof ingressRuleSchema>;

type Problem = (path: (string | number)[], message: string) => void;

/** One id per zone name and one zone name per id, whether set or derived. */
function checkZoneIds(world: WorldShape, problem: Problem): void {
  const idOfZone = zoneIdsOf(world);
  const zoneOfId = new Map<string, string>();
  for (const [zone, zoneId] of idOfZone) {
    const other = zoneOfId.get(zoneId);
    if (other !== undefined) {
      const i = world.subnets.findIndex((s) => s.availabilityZone === zone);
      problem(
        ["subnets", i, "availabilityZoneId"],
        `zones ${other} and ${zone} would both have the id ${zoneId}; set availabilityZoneId on their subnets`,
      );
    }
    zoneOfId.set(zoneId, zone);
  }
  world.subnets.forEach((subnet, i) => {
    const wanted = idOfZone.get(subnet.availabilityZone);
    if (subnet.availabilityZoneId !== undefined && subnet.availabilityZoneId !== wanted) {
      problem(
        ["subnets", i, "availabilityZoneId"],
        `${subnet.availabilityZoneId} differs from ${wanted}, the id another subnet gives ${subnet.availabilityZone}`,
      );
    }
  });
}

/** The VPC's default group and the listed ones, by id; duplicate ids and names are problems. */
function checkSecurityGroups(world: WorldShape, problem: Problem): Set<string> {
  const ids = new Set([world.vpc.defaultSecurityGroupId ?? defaultSecurityGroupIdOf(world.vpc.id)]);
  const names = new Set(["default"]);
  world.securityGroups?.forEach((group, i) => {
    if (ids.has(group.id)) problem(["securityGroups", i, "id"], `duplicate security group id ${group.id}`);
    if (names.has(group.name)) {
      problem(
        ["securityGroups", i, "name"],
        group.name === "default"
          ? "the VPC's own group is named default: set vpc.defaultSecurityGroupId instead"
          : `duplicate security group name ${group.name}`,
      );
    }
    ids.add(group.id);
    names.add(group.name);
  });
  const checkRules = (rules: readonly IngressRule[] | undefined, at: (string | number)[]): void => {
    rules?.forEach((rule, r) => {
      rule.groups.forEach((group, g) => {
        if (!ids.has(group)) problem([...at, r, "groups", g], `unknown security group ${group}`);
      });
      const ported = rule.protocol === "tcp" || rule.protocol === "udp";
      if (
        ported &&
        (rule.fromPort === undefined || rule.toPort === undefined || rule.fromPort > rule.toPort)
      ) {
        problem([...at, r], `a ${rule.protocol} rule needs fromPort and toPort, fromPort at most toPort`);
      }
      if (rule.protocol === "-1" && (rule.fromPort !== undefined || rule.toPort !== undefined)) {
        problem([...at, r], "a rule for all protocols (-1) has no ports");
      }
      if (rule.cidrs.length + rule.ipv6Cidrs.length + rule.groups.length === 0) {
        problem([...at, r], "a rule admits traffic from cidrs, ipv6Cidrs or groups: give at least one");
      }
    });
  };
  checkRules(world.vpc.defaultSecurityGroupIngress, ["vpc", "defaultSecurityGroupIngress"]);
  world.securityGroups?.forEach((group, i) => {
    checkRules(group.ingress, ["securityGroups", i, "ingress"]);
  });
  return ids;
}

/**
 * The id of every zone the subnets use: the first availabilityZoneId a subnet of the zone sets, or the
 * derived one (defaultZoneId).
 */
export function zoneIdsOf(world: Pick<WorldShape, "region" | "subnets">): Map<string, string> {
  const ids = new Map<string, string>();
  for (const subnet of world.subnets) {
    if (subnet.availabilityZoneId !== undefined && !ids.has(subnet.availabilityZone))
      ids.set(subnet.availabilityZone, subnet.availabilityZoneId);
  }
  for (const subnet of world.subnets) {
    if (!ids.has(subnet.availabilityZone))
      ids.set(subnet.availabilityZone, defaultZoneId(world.region, subnet.availabilityZone));
  }
  return ids;
}

/** The documentation ranges public IPs may come from, in order of preference. */
const PUBLIC_IP_RANGES = ["203.0.113.0/24", "198.51.100.0/24", "192.0.2.0/24"] as const;

/**
 * The pool of a world's public addresses: the first documentation range outside its VPC (203.0.113.0/24
 * unless the VPC uses it). AllocateAddress picks from it, and the world's Elastic IPs must lie in it.
 */
export function publicIpPoolOf(vpcCidr: Cidr): Cidr {
  const ranges = PUBLIC_IP_RANGES.map(mustParseCidr);
  return ranges.find((r) => !cidrsOverlap(r, vpcCidr)) ?? (ranges[0] as Cidr);
}

/**
 * Unique allocation ids and public IPs, every public IP in the world's pool (publicIpPoolOf), and each association on a private
 * IPv4 address its ENI holds, with at most one Elastic IP per private address (as EC2 allows).
 */
function checkElasticIps(
  world: WorldShape,
  problem: Problem,
  holders: ReadonlyMap<string, string>,
  prefixes: readonly { readonly block: Cidr; readonly eni: string }[],
): void {
  const pool = publicIpPoolOf(mustParseCidr(world.vpc.cidr));
  const eniIds = new Set(world.instances.flatMap((i) => i.enis.map((e) => e.id)));
  const allocations = new Set<string>();
  const publicIps = new Set<string>();
  const associated = new Map<string, string>();
  world.elasticIps.forEach((eip, i) => {
    const at = (...rest: string[]): (string | number)[] => ["elasticIps", i, ...rest];
    if (allocations.has(eip.allocationId))
      problem(at("allocationId"), `duplicate allocation id ${eip.allocationId}`);
    allocations.add(eip.allocationId);
    if (publicIps.has(eip.publicIp)) problem(at("publicIp"), `duplicate public IP ${eip.publicIp}`);
    publicIps.add(eip.publicIp);
    if (!cidrContains(pool, eip.publicIp)) {
      problem(
        at("publicIp"),
        `${eip.publicIp} is outside ${pool.text}, the documentation range this world's public IPs come from (the first of ${PUBLIC_IP_RANGES.join(", ")} outside the VPC)`,
      );
    }
    const association = eip.association;
    if (association === undefined) return;
    if (!eniIds.has(association.eni)) {
      problem(at("association", "eni"), `unknown ENI ${association.eni}: list it under an instance's enis`);
      return;
    }
    const inPrefix = prefixes.some(
      (p) => p.eni === association.eni && cidrContains(p.block, association.privateIp),
    );
    if (holders.get(association.privateIp) !== association.eni && !inPrefix) {
      problem(
        at("association", "privateIp"),
        `${association.privateIp} is not a private IPv4 address of ${association.eni}: add it to its primaryIpv4 or secondaryIpv4s, or an ipv4Prefixes block holding it`,
      );
    }
    const key = `${association.eni} ${association.privateIp}`;
    const other = associated.get(key);
    if (other !== undefined) {
      problem(
        at("association"),
        `${association.privateIp} on ${association.eni} already has the Elastic IP ${other}`,
      );
    }
    associated.set(key, eip.allocationId);
  });
}

/** Cross-field rules zod cannot express field by field. Each problem is reported with its path. */
function checkConsistency(world: WorldShape, ctx: z.RefinementCtx): void {
  const problem: Problem = (path, message) => {
    ctx.addIssue({ code: "custom", path, message });
  };
  const vpcCidr = mustParseCidr(world.vpc.cidr);
  const vpcIpv6 = world.vpc.ipv6Cidr === undefined ? undefined : mustParseCidr(world.vpc.ipv6Cidr);
  const subnets = new Map<string, { v4: Cidr; v6: Cidr | undefined; az: string }>();
  world.subnets.forEach((subnet, i) => {
    if (subnets.has(subnet.id)) problem(["subnets", i, "id"], `duplicate subnet id ${subnet.id}`);
    const v4 = mustParseCidr(subnet.cidr);
    if (!cidrWithin(v4, vpcCidr))
      problem(["subnets", i, "cidr"], `${subnet.cidr} is outside the VPC ${vpcCidr.text}`);
    const v6 = subnet.ipv6Cidr === undefined ? undefined : mustParseCidr(subnet.ipv6Cidr);
    if (v6 !== undefined && (vpcIpv6 === undefined || !cidrWithin(v6, vpcIpv6))) {
      problem(
        ["subnets", i, "ipv6Cidr"],
        vpcIpv6 === undefined
          ? "the VPC has no ipv6Cidr: add vpc.ipv6Cidr"
          : `${subnet.ipv6Cidr} is outside the VPC ${vpcIpv6.text}`,
      );
    }
    for (const [otherId, other] of subnets) {
      if (cidrsOverlap(v4, other.v4))
        problem(["subnets", i, "cidr"], `${subnet.cidr} overlaps subnet ${otherId}`);
      if (v6 !== undefined && other.v6 !== undefined && cidrsOverlap(v6, other.v6)) {
        problem(["subnets", i, "ipv6Cidr"], `${subnet.ipv6Cidr} overlaps subnet ${otherId}`);
      }
    }
    subnets.set(subnet.id, { v4, v6, az: subnet.availabilityZone });
  });
  checkZoneIds(world, problem);
  const groups = checkSecurityGroups(world, problem);

  const instanceIds = new Set<string>();
  const eniIds = new Set<string>();
  const macs = new Set<string>();
  const addresses = new Map<string, string>();
  const prefixBlocks: { block: Cidr; path: (string | number)[]; eni: string }[] = [];
  world.instances.forEach((instance, i) => {
    if (instanceIds.has(instance.id)) problem(["instances", i, "id"], `duplicate instance id ${instance.id}`);
    instanceIds.add(instance.id);
    const limit = instance.ipv4AddressesPerEni ?? addressesPerEniOf(instance.instanceType);
    if (limit === undefined) {
      problem(
        ["instances", i, "instanceType"],
        `unknown instance type ${instance.instanceType}: set ipv4AddressesPerEni, or use one of ${knownInstanceTypes.join(", ")}`,
      );
    }
    const devices = new Set<number>();
    const zones = new Set<string>();
    instance.enis.forEach((eni, j) => {
      const at = (...rest: (string | number)[]): (string | number)[] => ["instances", i, "enis", j, ...rest];
      if (eniIds.has(eni.id)) problem(at("id"), `duplicate ENI id ${eni.id}`);
      eniIds.add(eni.id);
      if (macs.has(eni.mac)) problem(at("mac"), `duplicate MAC ${eni.mac}`);
      macs.add(eni.mac);
      if (devices.has(eni.deviceIndex))
        problem(at("deviceIndex"), `device index ${eni.deviceIndex} used twice`);
      devices.add(eni.deviceIndex);
      const subnet = subnets.get(eni.subnet);
      if (subnet === undefined) {
        problem(at("subnet"), `unknown subnet ${eni.subnet}: list it under subnets`);
        return;
      }
      zones.add(subnet.az);
      const ipv4s = [...(eni.primaryIpv4 === undefined ? [] : [eni.primaryIpv4]), ...eni.secondaryIpv4s];
      if (eni.primaryIpv4 === undefined && eni.secondaryIpv4s.length > 0) {
        problem(at("primaryIpv4"), "an ENI with secondary IPv4 addresses needs a primaryIpv4");
      }
      const check = (value: string, path: (string | number)[], cidrBlock: Cidr | undefined): void => {
        if (cidrBlock === undefined) {
          problem(path, `${value}: subnet ${eni.subnet} has no ipv6Cidr`);
        } else if (!cidrContains(cidrBlock, value)) {
          problem(path, `${value} is outside subnet ${eni.subnet} (${cidrBlock.text})`);
        } else if (isAwsReserved(cidrBlock, value)) {
          problem(path, `${value} is one of the five addresses AWS reserves in ${cidrBlock.text}`);
        }
        const holder = addresses.get(value);
        if (holder !== undefined) problem(path, `${value} is already held by ${holder}`);
        addresses.set(value, eni.id);
      };
      eni.securityGroups?.forEach((group, k) => {
        if (!groups.has(group))
          problem(at("securityGroups", k), `unknown security group ${group}: list it under securityGroups`);
      });
      if (eni.primaryIpv4 !== undefined) check(eni.primaryIpv4, at("primaryIpv4"), subnet.v4);
      eni.secondaryIpv4s.forEach((a, k) => {
        check(a, at("secondaryIpv4s", k), subnet.v4);
      });
      eni.ipv6s.forEach((a, k) => {
        check(a, at("ipv6s", k), subnet.v6);
      });
      const prefixes = [
        ...(eni.ipv4Prefixes ?? []).map((p, k) => ({
          p,
          path: at("ipv4Prefixes", k),
          length: 28,
          home: subnet.v4,
        })),
        ...(eni.ipv6Prefixes ?? []).map((p, k) => ({
          p,
          path: at("ipv6Prefixes", k),
          length: 80,
          home: subnet.v6,
        })),
      ];
      for (const { p, path, length, home } of prefixes) {
        const block = mustParseCidr(p);
        if (!typeIsNitro(world.instances, instance.instanceType)) {
          problem(
            path,
            `${p}: instance ${instance.id} is not Nitro (${instance.instanceType}), and only Nitro instances take prefixes`,
          );
        } else if (block.prefix !== length) {
          problem(path, `${p} must be a /${length}, the only prefix length EC2 delegates`);
        } else if (home === undefined || !cidrWithin(block, home)) {
          problem(path, `${p} is outside subnet ${eni.subnet}${home === undefined ? "" : ` (${home.text})`}`);
        } else if (
          isAwsReserved(home, bigIntToAddress(block.base, block.family)) ||
          isAwsReserved(home, bigIntToAddress(block.base + block.size - 1n, block.family))
        ) {
          problem(path, `${p} holds addresses AWS reserves in ${home.text} (the first four and the last)`);
        } else {
          prefixBlocks.push({ block, path, eni: eni.id });
        }
      }
      if (
        limit !== undefined &&
        (ipv4s.length + (eni.ipv4Prefixes?.length ?? 0) > limit ||
          eni.ipv6s.length + (eni.ipv6Prefixes?.length ?? 0) > limit)
      ) {
        // Each prefix counts as one address.
        problem(at(), `holds more addresses than the ${limit} per ENI of ${instance.instanceType}`);
      }
    });
    if (!devices.has(0)) problem(["instances", i, "enis"], "needs the primary ENI, with deviceIndex 0");
    if (zones.size > 1) {
      problem(
        ["instances", i, "enis"],
        `ENIs span availability zones ${[...zones].join(", ")}; use one zone`,
      );
    }
  });

  for (const [i, { block, path }] of prefixBlocks.entries()) {
    const address = [...addresses.keys()].find((a) => cidrContains(block, a));
    if (address !== undefined)
      problem(path, `${block.text} overlaps ${address}, held by ${addresses.get(address)}`);
    const other = prefixBlocks.slice(0, i).find((o) => cidrsOverlap(o.block, block));
    if (other !== undefined) problem(path, `${block.text} overlaps the prefix ${other.block.text}`);
  }
  checkElasticIps(world, problem, addresses, prefixBlocks);
  checkNitroPerType(world.instances, problem);

  const reserved: { subnet: string; cidr: Cidr }[] = [];
  world.reservations.forEach((reservation, i) => {
    const subnet = subnets.get(reservation.subnet);
    if (subnet === undefined) {
      problem(["reservations", i, "subnet"], `unknown subnet ${reservation.subnet}: list it under subnets`);
      return;
    }
    const block = mustParseCidr(reservation.cidr);
    const home = block.family === 4 ? subnet.v4 : subnet.v6;
    if (home === undefined || !cidrWithin(block, home)) {
      problem(["reservations", i, "cidr"], `${reservation.cidr} is outside subnet ${reservation.subnet}`);
    }
    if (reserved.some((r) => r.subnet === reservation.subnet && cidrsOverlap(r.cidr, block))) {
      problem(["reservations", i, "cidr"], `${reservation.cidr} overlaps another reservation`);
    }
    reserved.push({ subnet: reservation.subnet, cidr: block });
  });
  checkKubernetes(world, problem);
  if (world.kubernetes === undefined) {
    for (const field of kubeFaultFields) {
      if (world.faults?.[field] !== undefined) {
        problem(["faults", field], "acts on the Kubernetes API: add a kubernetes section, or remove it");
      }
    }
  }
}

const worldSchema = worldObjectSchema.superRefine(checkConsistency);

/** A validated world: addresses canonical, defaults filled in. */
export type World = z.output<typeof worldSchema>;

/** The per-ENI address limit of an instance of a validated world. */
export function addressLimitOf(instance: World["instances"][number]): number {
  return instance.ipv4AddressesPerEni ?? addressesPerEniOf(instance.instanceType) ?? 0;
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    out += typeof part === "number" ? `[${part}]` : `${out === "" ? "" : "."}${String(part)}`;
  }
  return out === "" ? "(top level)" : out;
}

function validate(input: unknown, file: string | undefined): World {
  const result = worldSchema.safeParse(input);
  if (result.success) return result.data;
  throw new WorldError(
    file,
    result.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`),
  );
}

/** Validates a world object. Throws WorldError naming every bad field by its path. */
export function parseWorld(input: unknown): World {
  return validate(input, undefined);
}

/** Reads and validates a world file, JSON when it starts with `{`, YAML otherwise. Throws WorldError. */
export async function loadWorldFile(path: string): Promise<World> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : String(error);
    throw new WorldError(path, [`cannot be read (${reason}); pass an existing file with --world`], {
      cause: error,
    });
  }
  let data: unknown;
  const json = text.trimStart().startsWith("{");
  try {
    data = json ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new WorldError(path, [`is not valid ${json ? "JSON" : "YAML"}: ${(error as Error).message}`], {
      cause: error,
    });
  }
  return validate(data, path);
}
