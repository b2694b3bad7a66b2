/**
 * The instance metadata we read. Implemented by ImdsClient (imds-client.ts) over IMDSv2.
 * Every getter reads `/latest/meta-data/...`; the network ones take a MAC (lowercase, colons).
 * IMDS reflects EC2 assignments asynchronously: callers that confirm a change poll.
 */
export interface Imds {
  /** `instance-id` */
  instanceId(): Promise<string>;
  /** `placement/region` */
  region(): Promise<string>;
  /** `network/interfaces/macs/`: the MACs of the ENIs attached to this instance. */
  macs(): Promise<string[]>;
  /** `network/interfaces/macs/MAC/interface-id` */
  interfaceId(mac: string): Promise<string>;
  /** `network/interfaces/macs/MAC/device-number` */
  deviceNumber(mac: string): Promise<number>;
  /** `network/interfaces/macs/MAC/vpc-id` */
  vpcId(mac: string): Promise<string>;
  /** `network/interfaces/macs/MAC/subnet-id` */
  subnetId(mac: string): Promise<string>;
  /** `network/interfaces/macs/MAC/subnet-ipv4-cidr-block`; empty when IMDS says 404. */
  subnetIpv4Cidrs(mac: string): Promise<string[]>;
  /** `network/interfaces/macs/MAC/subnet-ipv6-cidr-blocks`; empty when IMDS says 404. */
  subnetIpv6Cidrs(mac: string): Promise<string[]>;
  /** `network/interfaces/macs/MAC/local-ipv4s`, canonical; first is the primary; empty on 404 (IPv6-only ENI). */
  localIpv4s(mac: string): Promise<string[]>;
  /** `network/interfaces/macs/MAC/ipv6s`, canonical; empty on 404. */
  ipv6s(mac: string): Promise<string[]>;
  /** `network/interfaces/macs/MAC/ipv4-prefix`: delegated /28 prefixes, canonical; empty on 404 (none). */
  ipv4Prefixes(mac: string): Promise<string[]>;
  /** `network/interfaces/macs/MAC/ipv6-prefix`: delegated /80 prefixes, canonical; empty on 404 (none). */
  ipv6Prefixes(mac: string): Promise<string[]>;
}
