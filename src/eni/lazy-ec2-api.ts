import type {
  Ec2Api,
  ElasticIpFilter,
  NetworkInterfaceFilter,
  PermissionProbe,
  PermissionVerdict,
} from "./ec2-api.js";
import type { CreateNetworkInterfaceRequest, EniTagFilter } from "./ec2-eni-lifecycle-api.js";
import type {
  Ec2ElasticIp,
  Ec2InstanceType,
  Ec2NetworkInterface,
  Ec2SecurityGroup,
  Ec2Subnet,
  SubnetCidrReservation,
} from "./types.js";

/**
 * An Ec2Api that loads the real one on its first call, once (concurrent first calls share the load).
 * A run that needs no EC2 call never parses the AWS SDK: pass
 * `() => import("./ec2-client.js").then((m) => m.createEc2Api(options))`.
 * A failed load is not cached: the next call tries again.
 */
export class LazyEc2Api implements Ec2Api {
  private loading: Promise<Ec2Api> | undefined;

  constructor(private readonly load: () => Promise<Ec2Api>) {}

  /** Whether the real adapter has been requested. */
  get loaded(): boolean {
    return this.loading !== undefined;
  }

  /**
   * Starts loading now, without waiting: for a caller that will probably need EC2 soon and has I/O to wait
   * on meanwhile. A failure here is not reported; the next call loads again and reports it.
   */
  warmUp(): void {
    this.api().catch(() => undefined);
  }

  private api(): Promise<Ec2Api> {
    // A failed load is forgotten, so that a later call tries again; the caller still gets the rejection.
    this.loading ??= this.load().catch((err: unknown) => {
      this.loading = undefined;
      throw err;
    });
    return this.loading;
  }

  async assignPrivateIpv4(
    eniId: string,
    addresses: readonly string[],
    allowReassignment: boolean,
  ): Promise<void> {
    return (await this.api()).assignPrivateIpv4(eniId, addresses, allowReassignment);
  }

  async unassignPrivateIpv4(eniId: string, addresses: readonly string[]): Promise<void> {
    return (await this.api()).unassignPrivateIpv4(eniId, addresses);
  }

  async assignIpv6(eniId: string, addresses: readonly string[]): Promise<void> {
    return (await this.api()).assignIpv6(eniId, addresses);
  }

  async unassignIpv6(eniId: string, addresses: readonly string[]): Promise<void> {
    return (await this.api()).unassignIpv6(eniId, addresses);
  }

  async assignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return (await this.api()).assignIpv4Prefixes(eniId, prefixes);
  }

  async unassignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return (await this.api()).unassignIpv4Prefixes(eniId, prefixes);
  }

  async assignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return (await this.api()).assignIpv6Prefixes(eniId, prefixes);
  }

  async unassignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return (await this.api()).unassignIpv6Prefixes(eniId, prefixes);
  }

  async describeNetworkInterfaces(filter: NetworkInterfaceFilter): Promise<Ec2NetworkInterface[]> {
    return (await this.api()).describeNetworkInterfaces(filter);
  }

  async describeInstanceType(instanceType: string): Promise<Ec2InstanceType | undefined> {
    return (await this.api()).describeInstanceType(instanceType);
  }

  async describeSubnets(subnetIds: readonly string[]): Promise<Ec2Subnet[]> {
    return (await this.api()).describeSubnets(subnetIds);
  }

  async describeSecurityGroups(groupIds: readonly string[]): Promise<Ec2SecurityGroup[]> {
    return (await this.api()).describeSecurityGroups(groupIds);
  }

  async describeVpcSubnets(vpcId: string): Promise<Ec2Subnet[]> {
    return (await this.api()).describeVpcSubnets(vpcId);
  }

  async getSubnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]> {
    return (await this.api()).getSubnetCidrReservations(subnetId);
  }

  async createSubnetCidrReservation(
    subnetId: string,
    cidr: string,
    type: "explicit" | "prefix",
    description: string,
    tags: Readonly<Record<string, string>>,
  ): Promise<SubnetCidrReservation> {
    return (await this.api()).createSubnetCidrReservation(subnetId, cidr, type, description, tags);
  }

  async deleteSubnetCidrReservation(reservationId: string): Promise<void> {
    return (await this.api()).deleteSubnetCidrReservation(reservationId);
  }

  async probePermission(probe: PermissionProbe): Promise<PermissionVerdict> {
    return (await this.api()).probePermission(probe);
  }

  async describeElasticIps(filter: ElasticIpFilter): Promise<Ec2ElasticIp[]> {
    return (await this.api()).describeElasticIps(filter);
  }

  async associateElasticIp(
    allocationId: string,
    eniId: string,
    privateIp: string,
    allowReassociation: boolean,
  ): Promise<string> {
    return (await this.api()).associateElasticIp(allocationId, eniId, privateIp, allowReassociation);
  }

  async createNetworkInterface(request: CreateNetworkInterfaceRequest): Promise<Ec2NetworkInterface> {
    return (await this.api()).createNetworkInterface(request);
  }

  async attachNetworkInterface(
    eniId: string,
    instanceId: string,
    deviceIndex: number,
    networkCardIndex: number,
  ): Promise<string> {
    return (await this.api()).attachNetworkInterface(eniId, instanceId, deviceIndex, networkCardIndex);
  }

  async deleteNetworkInterface(eniId: string): Promise<void> {
    return (await this.api()).deleteNetworkInterface(eniId);
  }

  async setDeleteOnTermination(
    eniId: string,
    attachmentId: string,
    deleteOnTermination: boolean,
  ): Promise<void> {
    return (await this.api()).setDeleteOnTermination(eniId, attachmentId, deleteOnTermination);
  }

  async setSourceDestCheck(eniId: string, sourceDestCheck: boolean): Promise<void> {
    return (await this.api()).setSourceDestCheck(eniId, sourceDestCheck);
  }

  async describeInstanceEnis(instanceId: string): Promise<Ec2NetworkInterface[]> {
    return (await this.api()).describeInstanceEnis(instanceId);
  }

  async describeEnisByTags(filter: EniTagFilter): Promise<Ec2NetworkInterface[]> {
    return (await this.api()).describeEnisByTags(filter);
  }

  async describeSubnetsByTags(vpcId: string, tags: Readonly<Record<string, string>>): Promise<Ec2Subnet[]> {
    return (await this.api()).describeSubnetsByTags(vpcId, tags);
  }

  async describeSecurityGroupsByTags(
    vpcId: string,
    tags: Readonly<Record<string, string>>,
  ): Promise<Ec2SecurityGroup[]> {
    return (await this.api()).describeSecurityGroupsByTags(vpcId, tags);
  }
}
