/**
 * Attach mode's description of a node's Multus networks (IPMGR_BRIDGE_ATTACH_NETWORKS): for each, the ENI the
 * bridge makes and attaches, and the link the links agent brings up for it. Parsed once, here in the core, for
 * the bridge, the links agent and doctor (which checks the permissions and limits these networks need), so
 * that all read the same JSON the same way.
 */
import * as z from "zod/mini";

/** Tags every ENI attach mode makes carries from its creation (TagSpecifications), and nothing else. */
export const ATTACH_TAGS = {
  /** The VPC CNI leaves an ENI with this tag alone. */
  noManage: "node.k8s.amazonaws.com/no_manage",
  /** The cluster (IPMGR_CLUSTER_NAME): the IAM policy's condition and the orphan sweep's selector. */
  cluster: "multus-ipmgr.io/cluster",
  /** The instance the ENI was made for. */
  instance: "multus-ipmgr.io/instance-id",
  /** The network's `name`. */
  network: "multus-ipmgr.io/network",
} as const;

/** A Linux interface name: 1 to 15 bytes, no slash, colon or whitespace, not "." or "..". */
const IFNAME = /^(?!\.{1,2}$)[^\s/:]{1,15}$/;

const tagSelector = z.record(z.string().check(z.minLength(1)), z.string());

const subnetSchema = z.union([
  z.strictObject({
    /** A subnet id per availability zone name, e.g. {"us-west-2a": "subnet-0123"}: the node's zone picks. */
    byZone: z.record(
      z.string().check(z.minLength(1)),
      z.string().check(z.regex(/^subnet-[0-9a-f]+$/, "expected a subnet id like subnet-0123abcd")),
    ),
  }),
  z.strictObject({
    /** Tags every candidate subnet carries; the one in the node's zone (and VPC) is taken, and it must be one. */
    tags: tagSelector,
  }),
]);

const securityGroupsSchema = z.union([
  z.strictObject({
    ids: z
      .array(z.string().check(z.regex(/^sg-[0-9a-f]+$/, "expected a security group id like sg-0123abcd")))
      .check(z.minLength(1), z.maxLength(16)),
  }),
  /** Every security group of the node's VPC carrying all these tags (at least one must). */
  z.strictObject({ tags: tagSelector }),
]);

const networkSchema = z.strictObject({
  /** The interface's name on the node: the NADs' `master` (e.g. eth1 or multus1). */
  name: z
    .string()
    .check(z.regex(IFNAME, "expected a Linux interface name: 1 to 15 characters, no / : or space")),
  /** The ENI's device index on its network card: 1 or more (0 on card 0 is the primary ENI). */
  deviceIndex: z.number().check(z.int(), z.minimum(0), z.maximum(31)),
  /** The network card (instance types with several cards): 0 unless the type has more than one. */
  networkCardIndex: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(15)), 0),
  subnet: subnetSchema,
  securityGroups: securityGroupsSchema,
  /** The link's MTU; ENIs carry up to 9001 inside a VPC. */
  mtu: z._default(z.number().check(z.int(), z.minimum(576), z.maximum(9001)), 9001),
  /** EC2's source/destination check on the ENI; off by default (a CNF may forward). */
  sourceDestCheck: z._default(z.boolean(), false),
});

export type AttachNetwork = z.infer<typeof networkSchema>;

const networksSchema = z.array(networkSchema).check(z.minLength(1), z.maxLength(15));

/** The configuration could not be read; `problem` names the network (by position and name) and the fix. */
export class AttachNetworksProblem {
  constructor(readonly problem: string) {}
}

/**
 * Parses IPMGR_BRIDGE_ATTACH_NETWORKS' JSON. Besides the schema: names unique, (card, device) pairs unique,
 * and never device 0 of card 0 (the primary ENI, which the VPC CNI owns).
 */
export function parseAttachNetworks(text: string): readonly AttachNetwork[] | AttachNetworksProblem {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return new AttachNetworksProblem(
      `is not JSON (${(error as Error).message}); write a list like [{"name":"eth1","deviceIndex":1,"subnet":{"byZone":{"us-west-2a":"subnet-0123"}},"securityGroups":{"ids":["sg-0123"]}}]`,
    );
  }
  const parsed = networksSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue?.path.length ? issue.path.join(".") : "the list";
    return new AttachNetworksProblem(
      `${at}: ${issue?.message ?? "invalid"}; see docs/attach-mode.md for the shape`,
    );
  }
  const networks = parsed.data;
  const names = new Set<string>();
  const slots = new Set<string>();
  for (const [i, network] of networks.entries()) {
    const where = `network ${i} (${network.name})`;
    if (network.deviceIndex === 0 && network.networkCardIndex === 0) {
      return new AttachNetworksProblem(
        `${where}: device 0 of card 0 is the primary ENI, owned by the VPC CNI; give a device index of 1 or more`,
      );
    }
    if (names.has(network.name)) {
      return new AttachNetworksProblem(
        `${where}: the name is given twice; every network needs its own interface name`,
      );
    }
    const slot = `${network.networkCardIndex}/${network.deviceIndex}`;
    if (slots.has(slot)) {
      return new AttachNetworksProblem(
        `${where}: card ${network.networkCardIndex} device ${network.deviceIndex} is given twice; every network needs its own device index`,
      );
    }
    names.add(network.name);
    slots.add(slot);
  }
  return networks;
}
