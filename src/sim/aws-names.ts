/** Names EC2 derives from others: zone ids, private DNS names, default security group ids. */

const directions: Readonly<Record<string, string>> = {
  north: "n",
  south: "s",
  east: "e",
  west: "w",
  central: "c",
  northeast: "ne",
  northwest: "nw",
  southeast: "se",
  southwest: "sw",
};

/** `us-east-1` gives `use1`, `ap-southeast-2` `apse2`, `us-gov-west-1` `usgw1`: the prefix of zone ids. */
export function regionShortName(region: string): string {
  const parts = region.split("-");
  const first = parts[0] ?? "";
  const last = parts.at(-1) ?? "";
  const middle = parts.slice(1, -1).map((word) => directions[word] ?? word.slice(0, 1));
  return `${first}${middle.join("")}${last}`;
}

/**
 * A zone id for a zone name: `us-east-1a` gives `use1-az1`, `us-east-1c` `use1-az3`. Real accounts map
 * names to ids at random; the world file can set the id where a test cares.
 */
export function defaultZoneId(region: string, zone: string): string {
  const letter = zone.slice(-1);
  return `${regionShortName(region)}-az${letter.charCodeAt(0) - "a".charCodeAt(0) + 1}`;
}

/** `ip-198-51-100-10.ec2.internal` in us-east-1, `ip-198-51-100-10.<region>.compute.internal` elsewhere. */
export function ipName(address: string, region: string): string {
  return `ip-${address.replaceAll(".", "-")}.${internalDomain(region)}`;
}

/** The resource-name hostname of an instance: `i-0123.ec2.internal` (us-east-1) or `i-0123.<region>.compute.internal`. */
export function resourceName(instanceId: string, region: string): string {
  return `${instanceId}.${internalDomain(region)}`;
}

function internalDomain(region: string): string {
  return region === "us-east-1" ? "ec2.internal" : `${region}.compute.internal`;
}

/** The id the world gives the VPC's `default` security group unless it names one: `vpc-0two` gives `sg-0two`. */
export function defaultSecurityGroupIdOf(vpcId: string): string {
  return `sg-${vpcId.slice("vpc-".length)}`;
}
