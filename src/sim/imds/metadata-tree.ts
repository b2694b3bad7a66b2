import type { SimEni } from "../sim-state.js";
import type { Topology, TopologyInstance } from "../topology.js";

/**
 * The metadata of one instance as a flat map from a path under `/latest/` to its text. Directories are not
 * stored: a listing is derived from the paths below it. An item that EC2 answers with 404 when empty
 * (local-ipv4s, ipv6s, subnet-ipv6-cidr-blocks, ipv4-prefix, ...) is simply left out.
 */
export function metadataTree(
  instance: TopologyInstance,
  enis: readonly SimEni[],
  topology: Topology,
): Map<string, string> {
  const tree = new Map<string, string>();
  const md = "meta-data";
  const sorted = [...enis].sort((a, b) => (a.deviceIndex ?? 0) - (b.deviceIndex ?? 0));
  const primary = sorted.find((e) => e.deviceIndex === 0);
  tree.set(`${md}/instance-id`, instance.id);
  tree.set(`${md}/instance-type`, instance.instanceType);
  tree.set(`${md}/placement/availability-zone`, instance.availabilityZone);
  tree.set(`${md}/placement/region`, topology.region);
  if (primary !== undefined) {
    tree.set(`${md}/mac`, primary.mac);
    if (primary.primaryIpv4 !== null) tree.set(`${md}/local-ipv4`, primary.primaryIpv4);
  }
  for (const eni of sorted) {
    const base = `${md}/network/interfaces/macs/${eni.mac}`;
    const subnet = topology.subnets.get(eni.subnetId);
    tree.set(`${base}/device-number`, String(eni.deviceIndex));
    tree.set(`${base}/interface-id`, eni.eniId);
    tree.set(`${base}/mac`, eni.mac);
    tree.set(`${base}/network-card`, String(eni.networkCardIndex ?? 0));
    tree.set(`${base}/owner-id`, topology.accountId);
    tree.set(`${base}/subnet-id`, eni.subnetId);
    tree.set(`${base}/vpc-id`, topology.vpc.id);
    tree.set(`${base}/vpc-ipv4-cidr-block`, topology.vpc.cidr.text);
    tree.set(`${base}/vpc-ipv4-cidr-blocks`, topology.vpc.cidr.text);
    if (topology.vpc.ipv6Cidr !== undefined)
      tree.set(`${base}/vpc-ipv6-cidr-blocks`, topology.vpc.ipv6Cidr.text);
    if (subnet !== undefined) {
      tree.set(`${base}/subnet-ipv4-cidr-block`, subnet.cidr.text);
      if (subnet.ipv6Cidr !== undefined) tree.set(`${base}/subnet-ipv6-cidr-blocks`, subnet.ipv6Cidr.text);
    }
    if (eni.ipv4s.length > 0) tree.set(`${base}/local-ipv4s`, eni.ipv4s.join("\n"));
    if (eni.ipv6s.length > 0) tree.set(`${base}/ipv6s`, eni.ipv6s.join("\n"));
    if (eni.ipv4Prefixes.length > 0) tree.set(`${base}/ipv4-prefix`, eni.ipv4Prefixes.join("\n"));
    if (eni.ipv6Prefixes.length > 0) tree.set(`${base}/ipv6-prefix`, eni.ipv6Prefixes.join("\n"));
  }
  tree.set(
    "dynamic/instance-identity/document",
    JSON.stringify(
      {
        accountId: topology.accountId,
        architecture: instance.architecture,
        availabilityZone: instance.availabilityZone,
        billingProducts: null,
        devpayProductCodes: null,
        marketplaceProductCodes: null,
        imageId: instance.imageId,
        instanceId: instance.id,
        instanceType: instance.instanceType,
        kernelId: null,
        pendingTime: instance.launchTime.replace(/\.\d{3}Z$/, "Z"),
        privateIp: primary?.primaryIpv4 ?? null,
        ramdiskId: null,
        region: topology.region,
        version: "2017-09-30",
      },
      null,
      2,
    ),
  );
  return tree;
}

/**
 * The text IMDS answers for `path` (relative to `/latest/`, trailing slash optional), or undefined (404).
 * A directory lists its children one per line, subdirectories ending in `/`, as IMDS does.
 */
export function lookupMetadata(tree: ReadonlyMap<string, string>, path: string): string | undefined {
  const key = path.replace(/\/+$/, "");
  const value = tree.get(key);
  if (value !== undefined) return value;
  const prefix = key === "" ? "" : `${key}/`;
  const children: string[] = [];
  for (const full of tree.keys()) {
    if (!full.startsWith(prefix)) continue;
    const rest = full.slice(prefix.length);
    const slash = rest.indexOf("/");
    const child = slash < 0 ? rest : `${rest.slice(0, slash)}/`;
    if (!children.includes(child)) children.push(child);
  }
  return children.length === 0 ? undefined : children.join("\n");
}
