/**
 * The EC2 adapter: the only module that sends EC2 calls and loads @aws-sdk/client-ec2 at run time (ec2-shapes.ts
 * maps the SDK's answers to our types, importing only its types). Load it with
 * `await import("./ec2-client.js")` (see LazyEc2Api) so that runs without EC2 calls never parse the SDK.
 *
 * Idempotency: EC2's codes for "already assigned to this ENI" and "not assigned to this ENI" are not
 * confirmed (InvalidParameterValue family), so we do not guess from codes. When an assign or unassign is
 * refused, we re-read the ENI: if it is already in the wanted state the call is a success; if only part of
 * the addresses still needs the change, we repeat the call once with that part (EC2 is all or nothing, so the
 * first refusal may have come from the part already done); otherwise the refusal stands.
 * A subnet CIDR reservation that is already gone counts as deleted. An AssociateAddress refused with
 * Resource.AlreadyAssociated re-reads the Elastic IP: already pointing at the wanted ENI and address (our own
 * earlier attempt, applied before its answer was lost) is success.
 */
import {
  type _InstanceType,
  AssignIpv6AddressesCommand,
  AssignPrivateIpAddressesCommand,
  AssociateAddressCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  CreateSubnetCidrReservationCommand,
  DeleteNetworkInterfaceCommand,
  DeleteSubnetCidrReservationCommand,
  DescribeAddressesCommand,
  DescribeInstanceTypesCommand,
  type DescribeInstanceTypesCommandOutput,
  DescribeNetworkInterfacesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type DescribeSubnetsCommandInput,
  EC2Client,
  type EC2ClientConfig,
  type Filter,
  GetSubnetCidrReservationsCommand,
  ModifyNetworkInterfaceAttributeCommand,
  type ModifyNetworkInterfaceAttributeCommandInput,
  UnassignIpv6AddressesCommand,
  UnassignPrivateIpAddressesCommand,
} from "@aws-sdk/client-ec2";
import type {
  Ec2Api,
  Ec2CallObserver,
  ElasticIpFilter,
  NetworkInterfaceFilter,
  PermissionProbe,
  PermissionVerdict,
} from "./ec2-api.js";
import type { CreateNetworkInterfaceRequest, EniTagFilter } from "./ec2-eni-lifecycle-api.js";
import { createInstrument, type Instrument } from "./ec2-instrumentation.js";
import {
  tagFilters,
  toElasticIp,
  toNetworkInterface,
  toReservation,
  toSecurityGroup,
  toSubnet,
} from "./ec2-shapes.js";
import { Ec2Error } from "./errors/ec2-error.js";
import { canonicalAddressText } from "./ip.js";
import type { Clock } from "./process/clock.js";
import type { Logger } from "./process/logger.js";
import type { RetryOptions } from "./retry.js";
import type {
  Ec2ElasticIp,
  Ec2InstanceType,
  Ec2NetworkInterface,
  Ec2SecurityGroup,
  Ec2Subnet,
  IpFamily,
  SubnetCidrReservation,
} from "./types.js";

export interface Ec2ApiOptions {
  /** AWS region, e.g. `eu-west-1`. Required: the adapter never guesses it. */
  readonly region: string;
  /**
   * EC2 endpoint URL. Default: none, so that the SDK applies `AWS_ENDPOINT_URL_EC2`, then `AWS_ENDPOINT_URL`,
   * then the regional endpoint.
   */
  readonly endpoint?: string;
  /** Static credentials or a provider. Default: the SDK's chain (env, IRSA/Pod Identity, IMDS). */
  readonly credentials?: EC2ClientConfig["credentials"];
  /** Timeout of each HTTP attempt, in milliseconds (connection included). Default 5000. */
  readonly requestTimeoutMs?: number;
  /** Our retry policy (the SDK itself makes one attempt). Defaults: 8 attempts, 200 ms base, 5000 ms cap. */
  readonly retry?: RetryOptions;
  /**
   * One line per call: info for a write that succeeded, debug for a read; debug per retry and per failure,
   * which the caller reports (the thrown Ec2Error carries the sentence).
   */
  readonly logger: Logger;
  /** Receives one record per call, after retries. */
  readonly observer?: Ec2CallObserver;
  /** Cancels calls and backoff waits. */
  readonly signal?: AbortSignal;
  /** Measures durations and sleeps between retries. Default: the system clock. */
  readonly clock?: Clock;
  /** `MaxResults` of the paged reads (DescribeNetworkInterfaces, GetSubnetCidrReservations), 5 to 1000. Default 1000. */
  readonly pageSize?: number;
}

const RESERVATION_GONE = "InvalidSubnetCidrReservationID.NotFound";
const ENI_GONE = "InvalidNetworkInterfaceID.NotFound";
/** EC2's answer to a DryRun call the caller is allowed to make. */
const DRY_RUN_ALLOWED = "DryRunOperation";

/** Follows NextToken to the end: `page` sends one request (with the token after the first), `items` maps it. */
async function allPages<Page extends { NextToken?: string | undefined }, T>(
  page: (token: string | undefined) => Promise<Page>,
  items: (page: Page) => readonly T[],
): Promise<T[]> {
  const out: T[] = [];
  let token: string | undefined;
  do {
    const answer = await page(token);
    out.push(...items(answer));
    token = answer.NextToken === "" ? undefined : answer.NextToken;
  } while (token !== undefined);
  return out;
}

const pageToken = (token: string | undefined) => (token === undefined ? {} : { NextToken: token });

const ALREADY_ASSOCIATED = "Resource.AlreadyAssociated";

/** Builds EC2 filters; `add` answers false for an empty list, which matches nothing. */
function filterBuilder(): {
  filters: Filter[];
  add: (name: string, values: readonly string[] | undefined) => boolean;
} {
  const filters: Filter[] = [];
  const add = (name: string, values: readonly string[] | undefined): boolean => {
    if (values === undefined) return true;
    if (values.length === 0) return false;
    filters.push({ Name: name, Values: [...values] });
    return true;
  };
  return { filters, add };
}

/** EC2 filters for a NetworkInterfaceFilter, or undefined when a field is an empty list (matches nothing). */
function filtersOf(filter: NetworkInterfaceFilter): Filter[] | undefined {
  const { filters, add } = filterBuilder();
  const ok = [
    add("attachment.instance-id", filter.instanceId === undefined ? undefined : [filter.instanceId]),
    add("network-interface-id", filter.eniIds),
    add(
      "mac-address",
      filter.macs?.map((m) => m.toLowerCase()),
    ),
    add("addresses.private-ip-address", filter.ipv4Addresses?.map(canonicalAddressText)),
    add("ipv6-addresses.ipv6-address", filter.ipv6Addresses?.map(canonicalAddressText)),
    add("subnet-id", filter.subnetIds),
  ].every(Boolean);
  return ok ? filters : undefined;
}

/** A write EC2 answered without what it makes: reported as unavailable, with what to check. */
function emptyAnswer(
  operation: string,
  eniId: string | undefined,
  requestId: string | undefined,
  target: string,
  what: string,
): Ec2Error {
  return new Ec2Error(
    { operation, code: "EmptyResponse", requestId, eniId, kind: "unavailable" },
    `EC2 ${operation} on ${target} answered without ${what} (request id ${requestId ?? "none"}); ` +
      "check the instance's ENIs before retrying.",
  );
}

class Ec2ApiClient implements Ec2Api {
  constructor(
    private readonly client: EC2Client,
    private readonly instrument: Instrument,
    private readonly logger: Logger,
    private readonly pageSize: number,
  ) {}

  async assignPrivateIpv4(
    eniId: string,
    addresses: readonly string[],
    allowReassignment: boolean,
  ): Promise<void> {
    await this.idempotent(4, "held", eniId, addresses, (subset) =>
      this.instrument("AssignPrivateIpAddresses", { eniId, addresses: subset }, (sendOptions) =>
        this.client.send(
          new AssignPrivateIpAddressesCommand({
            NetworkInterfaceId: eniId,
            PrivateIpAddresses: [...subset],
            AllowReassignment: allowReassignment,
          }),
          sendOptions,
        ),
      ),
    );
  }

  async unassignPrivateIpv4(eniId: string, addresses: readonly string[]): Promise<void> {
    await this.idempotent(4, "released", eniId, addresses, (subset) =>
      this.instrument("UnassignPrivateIpAddresses", { eniId, addresses: subset }, (sendOptions) =>
        this.client.send(
          new UnassignPrivateIpAddressesCommand({
            NetworkInterfaceId: eniId,
            PrivateIpAddresses: [...subset],
          }),
          sendOptions,
        ),
      ),
    );
  }

  async assignIpv6(eniId: string, addresses: readonly string[]): Promise<void> {
    await this.idempotent(6, "held", eniId, addresses, (subset) =>
      this.instrument("AssignIpv6Addresses", { eniId, addresses: subset }, (sendOptions) =>
        this.client.send(
          new AssignIpv6AddressesCommand({ NetworkInterfaceId: eniId, Ipv6Addresses: [...subset] }),
          sendOptions,
        ),
      ),
    );
  }

  async unassignIpv6(eniId: string, addresses: readonly string[]): Promise<void> {
    await this.idempotent(6, "released", eniId, addresses, (subset) =>
      this.instrument("UnassignIpv6Addresses", { eniId, addresses: subset }, (sendOptions) =>
        this.client.send(
          new UnassignIpv6AddressesCommand({ NetworkInterfaceId: eniId, Ipv6Addresses: [...subset] }),
          sendOptions,
        ),
      ),
    );
  }

  async assignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    await this.idempotent(
      4,
      "held",
      eniId,
      prefixes,
      (subset) =>
        this.instrument("AssignPrivateIpAddresses", { eniId, addresses: subset }, (sendOptions) =>
          this.client.send(
            new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4Prefixes: [...subset] }),
            sendOptions,
          ),
        ),
      "prefixes",
    );
  }

  async unassignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    await this.idempotent(
      4,
      "released",
      eniId,
      prefixes,
      (subset) =>
        this.instrument("UnassignPrivateIpAddresses", { eniId, addresses: subset }, (sendOptions) =>
          this.client.send(
            new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4Prefixes: [...subset] }),
            sendOptions,
          ),
        ),
      "prefixes",
    );
  }

  async assignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    await this.idempotent(
      6,
      "held",
      eniId,
      prefixes,
      (subset) =>
        this.instrument("AssignIpv6Addresses", { eniId, addresses: subset }, (sendOptions) =>
          this.client.send(
            new AssignIpv6AddressesCommand({ NetworkInterfaceId: eniId, Ipv6Prefixes: [...subset] }),
            sendOptions,
          ),
        ),
      "prefixes",
    );
  }

  async unassignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    await this.idempotent(
      6,
      "released",
      eniId,
      prefixes,
      (subset) =>
        this.instrument("UnassignIpv6Addresses", { eniId, addresses: subset }, (sendOptions) =>
          this.client.send(
            new UnassignIpv6AddressesCommand({ NetworkInterfaceId: eniId, Ipv6Prefixes: [...subset] }),
            sendOptions,
          ),
        ),
      "prefixes",
    );
  }

  async describeNetworkInterfaces(filter: NetworkInterfaceFilter): Promise<Ec2NetworkInterface[]> {
    const filters = filtersOf(filter);
    if (filters === undefined) return [];
    const eniId = filter.eniIds?.length === 1 ? filter.eniIds[0] : undefined;
    return allPages(
      (token) =>
        this.instrument("DescribeNetworkInterfaces", { eniId }, (sendOptions) =>
          this.client.send(
            new DescribeNetworkInterfacesCommand({
              ...(filters.length > 0 ? { Filters: filters } : {}),
              MaxResults: this.pageSize,
              ...pageToken(token),
            }),
            sendOptions,
          ),
        ),
      (page) => (page.NetworkInterfaces ?? []).map(toNetworkInterface),
    );
  }

  async describeInstanceType(instanceType: string): Promise<Ec2InstanceType | undefined> {
    let result: DescribeInstanceTypesCommandOutput;
    try {
      result = await this.instrument("DescribeInstanceTypes", { target: instanceType }, (sendOptions) =>
        this.client.send(
          // The SDK types the names as an enum of the types it knew when built; EC2 takes any string.
          new DescribeInstanceTypesCommand({ InstanceTypes: [instanceType as _InstanceType] }),
          sendOptions,
        ),
      );
    } catch (err) {
      if (err instanceof Ec2Error && err.code === "InvalidInstanceType") return undefined;
      throw err;
    }
    const found = (result.InstanceTypes ?? []).find((t) => t.InstanceType === instanceType);
    if (found === undefined) return undefined;
    const network = found.NetworkInfo;
    return {
      instanceType,
      hypervisor: found.Hypervisor,
      ipv4AddressesPerEni: network?.Ipv4AddressesPerInterface,
      ...(network?.MaximumNetworkInterfaces === undefined
        ? {}
        : { maxNetworkInterfaces: network.MaximumNetworkInterfaces }),
      ...(network?.NetworkCards === undefined
        ? {}
        : {
            networkCards: network.NetworkCards.map((c) => ({
              index: c.NetworkCardIndex ?? 0,
              maxNetworkInterfaces: c.MaximumNetworkInterfaces ?? 0,
            })),
          }),
    };
  }

  async describeSubnets(subnetIds: readonly string[]): Promise<Ec2Subnet[]> {
    if (subnetIds.length === 0) return [];
    return this.#subnets({ SubnetIds: [...subnetIds] }, subnetIds.join(", "));
  }

  async describeVpcSubnets(vpcId: string): Promise<Ec2Subnet[]> {
    return this.#subnets(
      { Filters: [{ Name: "vpc-id", Values: [vpcId] }], MaxResults: this.pageSize },
      vpcId,
    );
  }

  #subnets(input: DescribeSubnetsCommandInput, target: string): Promise<Ec2Subnet[]> {
    return allPages(
      (token) =>
        this.instrument("DescribeSubnets", { target }, (sendOptions) =>
          this.client.send(new DescribeSubnetsCommand({ ...input, ...pageToken(token) }), sendOptions),
        ),
      (page) => (page.Subnets ?? []).map(toSubnet),
    );
  }

  async describeSecurityGroups(groupIds: readonly string[]): Promise<Ec2SecurityGroup[]> {
    if (groupIds.length === 0) return [];
    const target = groupIds.join(", ");
    const result = await this.instrument("DescribeSecurityGroups", { target }, (sendOptions) =>
      this.client.send(new DescribeSecurityGroupsCommand({ GroupIds: [...groupIds] }), sendOptions),
    );
    return (result.SecurityGroups ?? []).map(toSecurityGroup);
  }

  async getSubnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]> {
    return allPages(
      (token) =>
        this.instrument("GetSubnetCidrReservations", { target: subnetId }, (sendOptions) =>
          this.client.send(
            new GetSubnetCidrReservationsCommand({
              SubnetId: subnetId,
              MaxResults: this.pageSize,
              ...pageToken(token),
            }),
            sendOptions,
          ),
        ),
      (page) =>
        [...(page.SubnetIpv4CidrReservations ?? []), ...(page.SubnetIpv6CidrReservations ?? [])].map(
          toReservation,
        ),
    );
  }

  async createSubnetCidrReservation(
    subnetId: string,
    cidr: string,
    type: "explicit" | "prefix",
    description: string,
    tags: Readonly<Record<string, string>>,
  ): Promise<SubnetCidrReservation> {
    const tagList = Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
    const result = await this.instrument(
      "CreateSubnetCidrReservation",
      { target: `${subnetId} (${cidr})` },
      (sendOptions) =>
        this.client.send(
          new CreateSubnetCidrReservationCommand({
            SubnetId: subnetId,
            Cidr: cidr,
            ReservationType: type,
            Description: description,
            ...(tagList.length > 0
              ? { TagSpecifications: [{ ResourceType: "subnet-cidr-reservation", Tags: tagList }] }
              : {}),
          }),
          sendOptions,
        ),
    );
    if (result.SubnetCidrReservation === undefined) {
      throw new Ec2Error(
        {
          operation: "CreateSubnetCidrReservation",
          code: "EmptyResponse",
          requestId: result.$metadata.requestId,
          eniId: undefined,
          kind: "unavailable",
        },
        `EC2 CreateSubnetCidrReservation on ${subnetId} (${cidr}) answered without a reservation ` +
          `(request id ${result.$metadata.requestId ?? "none"}); check the subnet's reservations before retrying.`,
      );
    }
    return toReservation(result.SubnetCidrReservation);
  }

  async deleteSubnetCidrReservation(reservationId: string): Promise<void> {
    try {
      await this.instrument("DeleteSubnetCidrReservation", { target: reservationId }, (sendOptions) =>
        this.client.send(
          new DeleteSubnetCidrReservationCommand({ SubnetCidrReservationId: reservationId }),
          sendOptions,
        ),
      );
    } catch (err) {
      if (!(err instanceof Ec2Error) || err.code !== RESERVATION_GONE) throw err;
      this.logger.info(
        { reservationId },
        "subnet CIDR reservation already gone; treating the delete as done",
      );
    }
  }

  async createNetworkInterface(request: CreateNetworkInterfaceRequest): Promise<Ec2NetworkInterface> {
    const tagList = Object.entries(request.tags).map(([Key, Value]) => ({ Key, Value }));
    const target = `subnet ${request.subnetId} (client token ${request.clientToken})`;
    const result = await this.instrument("CreateNetworkInterface", { target }, (sendOptions) =>
      this.client.send(
        new CreateNetworkInterfaceCommand({
          SubnetId: request.subnetId,
          Groups: [...request.securityGroupIds],
          Description: request.description,
          ClientToken: request.clientToken,
          ...(tagList.length > 0
            ? { TagSpecifications: [{ ResourceType: "network-interface", Tags: tagList }] }
            : {}),
          ...(request.ipv4Prefixes === undefined || request.ipv4Prefixes.length === 0
            ? {}
            : { Ipv4Prefixes: request.ipv4Prefixes.map((p) => ({ Ipv4Prefix: p })) }),
          ...(request.ipv6Prefixes === undefined || request.ipv6Prefixes.length === 0
            ? {}
            : { Ipv6Prefixes: request.ipv6Prefixes.map((p) => ({ Ipv6Prefix: p })) }),
        }),
        sendOptions,
      ),
    );
    if (result.NetworkInterface?.NetworkInterfaceId === undefined) {
      throw emptyAnswer("CreateNetworkInterface", undefined, result.$metadata.requestId, target, "an ENI");
    }
    return toNetworkInterface(result.NetworkInterface);
  }

  async attachNetworkInterface(
    eniId: string,
    instanceId: string,
    deviceIndex: number,
    networkCardIndex: number,
  ): Promise<string> {
    const target = `${instanceId} device ${deviceIndex} card ${networkCardIndex}`;
    const result = await this.instrument(
      "AttachNetworkInterface",
      { eniId, target, retryNotFound: true },
      (sendOptions) =>
        this.client.send(
          new AttachNetworkInterfaceCommand({
            NetworkInterfaceId: eniId,
            InstanceId: instanceId,
            DeviceIndex: deviceIndex,
            NetworkCardIndex: networkCardIndex,
          }),
          sendOptions,
        ),
    );
    if (result.AttachmentId === undefined || result.AttachmentId === "") {
      throw emptyAnswer(
        "AttachNetworkInterface",
        eniId,
        result.$metadata.requestId,
        target,
        "an attachment id",
      );
    }
    return result.AttachmentId;
  }

  async deleteNetworkInterface(eniId: string): Promise<void> {
    try {
      await this.instrument("DeleteNetworkInterface", { eniId }, (sendOptions) =>
        this.client.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: eniId }), sendOptions),
      );
    } catch (err) {
      if (!(err instanceof Ec2Error) || err.code !== ENI_GONE) throw err;
      this.logger.info({ eniId }, "ENI already gone; treating the delete as done");
    }
  }

  async setDeleteOnTermination(
    eniId: string,
    attachmentId: string,
    deleteOnTermination: boolean,
  ): Promise<void> {
    await this.#modify(eniId, `DeleteOnTermination=${deleteOnTermination}`, {
      Attachment: { AttachmentId: attachmentId, DeleteOnTermination: deleteOnTermination },
    });
  }

  async setSourceDestCheck(eniId: string, sourceDestCheck: boolean): Promise<void> {
    await this.#modify(eniId, `SourceDestCheck=${sourceDestCheck}`, {
      SourceDestCheck: { Value: sourceDestCheck },
    });
  }

  /** ModifyNetworkInterfaceAttribute with one attribute (EC2 takes one per call). */
  async #modify(
    eniId: string,
    target: string,
    attribute: Omit<ModifyNetworkInterfaceAttributeCommandInput, "NetworkInterfaceId">,
  ): Promise<void> {
    await this.instrument(
      "ModifyNetworkInterfaceAttribute",
      { eniId, target, retryNotFound: true },
      (sendOptions) =>
        this.client.send(
          new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: eniId, ...attribute }),
          sendOptions,
        ),
    );
  }

  async describeInstanceEnis(instanceId: string): Promise<Ec2NetworkInterface[]> {
    return this.describeNetworkInterfaces({ instanceId });
  }

  async describeEnisByTags(filter: EniTagFilter): Promise<Ec2NetworkInterface[]> {
    const filters = [
      ...tagFilters(filter.tags),
      ...(filter.status === undefined ? [] : [{ Name: "status", Values: [filter.status] }]),
      ...(filter.vpcId === undefined ? [] : [{ Name: "vpc-id", Values: [filter.vpcId] }]),
    ];
    return allPages(
      (token) =>
        this.instrument("DescribeNetworkInterfaces", { target: "ENIs by tags" }, (sendOptions) =>
          this.client.send(
            new DescribeNetworkInterfacesCommand({
              ...(filters.length > 0 ? { Filters: filters } : {}),
              MaxResults: this.pageSize,
              ...pageToken(token),
            }),
            sendOptions,
          ),
        ),
      (page) => (page.NetworkInterfaces ?? []).map(toNetworkInterface),
    );
  }

  async describeSubnetsByTags(vpcId: string, tags: Readonly<Record<string, string>>): Promise<Ec2Subnet[]> {
    return this.#subnets(
      { Filters: [{ Name: "vpc-id", Values: [vpcId] }, ...tagFilters(tags)], MaxResults: this.pageSize },
      `${vpcId} by tags`,
    );
  }

  async describeSecurityGroupsByTags(
    vpcId: string,
    tags: Readonly<Record<string, string>>,
  ): Promise<Ec2SecurityGroup[]> {
    const filters = [{ Name: "vpc-id", Values: [vpcId] }, ...tagFilters(tags)];
    return allPages(
      (token) =>
        this.instrument("DescribeSecurityGroups", { target: `${vpcId} by tags` }, (sendOptions) =>
          this.client.send(
            new DescribeSecurityGroupsCommand({
              Filters: filters,
              MaxResults: this.pageSize,
              ...pageToken(token),
            }),
            sendOptions,
          ),
        ),
      (page) => (page.SecurityGroups ?? []).map(toSecurityGroup),
    );
  }

  async probePermission(probe: PermissionProbe): Promise<PermissionVerdict> {
    try {
      await this.#dryRun(probe);
    } catch (err) {
      if (err instanceof Ec2Error && err.code === DRY_RUN_ALLOWED) return { allowed: true };
      if (err instanceof Ec2Error && err.kind === "permission" && err.code !== "CredentialsProviderError") {
        return { allowed: false, refusal: err };
      }
      throw err;
    }
    // EC2 never runs a DryRun call; an answer without the DryRunOperation error means the endpoint ignored it.
    throw new Ec2Error(
      {
        operation: probe.action,
        code: "DryRunIgnored",
        requestId: undefined,
        eniId: undefined,
        kind: "refused",
      },
      `EC2 ${probe.action} with DryRun succeeded instead of answering DryRunOperation: the endpoint ` +
        "does not honour DryRun, so the permission could not be probed.",
    );
  }

  /** Sends the probe's request with DryRun=true; every request is the one the real call would send. */
  async #dryRun(probe: PermissionProbe): Promise<void> {
    switch (probe.action) {
      case "DescribeNetworkInterfaces":
        await this.instrument(probe.action, {}, (o) =>
          this.client.send(new DescribeNetworkInterfacesCommand({ DryRun: true, MaxResults: 5 }), o),
        );
        return;
      case "GetSubnetCidrReservations":
        await this.instrument(probe.action, { target: probe.subnetId }, (o) =>
          this.client.send(
            new GetSubnetCidrReservationsCommand({ SubnetId: probe.subnetId, DryRun: true, MaxResults: 5 }),
            o,
          ),
        );
        return;
      case "CreateNetworkInterface": {
        const { request } = probe;
        const Tags = Object.entries(request.tags).map(([Key, Value]) => ({ Key, Value }));
        await this.instrument(probe.action, { target: `subnet ${request.subnetId}` }, (o) =>
          this.client.send(
            new CreateNetworkInterfaceCommand({
              DryRun: true,
              SubnetId: request.subnetId,
              Groups: [...request.securityGroupIds],
              Description: request.description,
              TagSpecifications: [{ ResourceType: "network-interface", Tags }],
            }),
            o,
          ),
        );
        return;
      }
      case "AttachNetworkInterface":
        await this.instrument(probe.action, { eniId: probe.eniId, target: probe.instanceId }, (o) =>
          this.client.send(
            new AttachNetworkInterfaceCommand({
              DryRun: true,
              NetworkInterfaceId: probe.eniId,
              InstanceId: probe.instanceId,
              DeviceIndex: probe.deviceIndex,
              NetworkCardIndex: probe.networkCardIndex,
            }),
            o,
          ),
        );
        return;
      case "DeleteNetworkInterface":
        await this.instrument(probe.action, { eniId: probe.eniId }, (o) =>
          this.client.send(
            new DeleteNetworkInterfaceCommand({ DryRun: true, NetworkInterfaceId: probe.eniId }),
            o,
          ),
        );
        return;
      case "ModifyNetworkInterfaceAttribute":
        await this.instrument(probe.action, { eniId: probe.eniId }, (o) =>
          this.client.send(
            new ModifyNetworkInterfaceAttributeCommand({
              DryRun: true,
              NetworkInterfaceId: probe.eniId,
              SourceDestCheck: { Value: probe.sourceDestCheck },
            }),
            o,
          ),
        );
        return;
    }
  }

  async describeElasticIps(filter: ElasticIpFilter): Promise<Ec2ElasticIp[]> {
    const { filters, add } = filterBuilder();
    const ok = [
      add("allocation-id", filter.allocationIds),
      add("network-interface-id", filter.eniIds),
      add("private-ip-address", filter.privateIps?.map(canonicalAddressText)),
    ].every(Boolean);
    if (!ok) return [];
    const target =
      filter.allocationIds === undefined ? undefined : `Elastic IP ${filter.allocationIds.join(", ")}`;
    const out = await this.instrument(
      "DescribeAddresses",
      {
        ...(target === undefined ? {} : { target }),
        ...(filter.eniIds?.length === 1 ? { eniId: filter.eniIds[0] } : {}),
        ...(filter.privateIps === undefined ? {} : { addresses: filter.privateIps }),
      },
      (sendOptions) =>
        this.client.send(
          new DescribeAddressesCommand(filters.length > 0 ? { Filters: filters } : {}),
          sendOptions,
        ),
    );
    return (out.Addresses ?? []).map(toElasticIp);
  }

  async associateElasticIp(
    allocationId: string,
    eniId: string,
    privateIp: string,
    allowReassociation: boolean,
  ): Promise<string> {
    const address = canonicalAddressText(privateIp);
    try {
      const out = await this.instrument(
        "AssociateAddress",
        { eniId, addresses: [address], target: `Elastic IP ${allocationId}` },
        (sendOptions) =>
          this.client.send(
            new AssociateAddressCommand({
              AllocationId: allocationId,
              NetworkInterfaceId: eniId,
              PrivateIpAddress: address,
              AllowReassociation: allowReassociation,
            }),
            sendOptions,
          ),
      );
      return out.AssociationId ?? "";
    } catch (err) {
      if (!(err instanceof Ec2Error) || err.code !== ALREADY_ASSOCIATED) throw err;
      let current: Ec2ElasticIp | undefined;
      try {
        [current] = await this.describeElasticIps({ allocationIds: [allocationId] });
      } catch (readErr) {
        const readMessage = readErr instanceof Error ? readErr.message : String(readErr);
        throw new Ec2Error(
          { operation: err.operation, code: err.code, requestId: err.requestId, eniId, kind: err.kind },
          err.message,
          {
            cause: new AggregateError(
              [err, readErr],
              `refused, and the Elastic IP could not be re-read: ${readMessage}`,
            ),
          },
        );
      }
      const association = current?.association;
      if (association?.eniId !== eniId || association.privateIp !== address) throw err;
      this.logger.info(
        { allocationId, eniId, address, associationId: association.associationId },
        "EC2 refused AssociateAddress but the Elastic IP already points at this ENI and address; treating it as done",
      );
      return association.associationId;
    }
  }

  /**
   * Runs an assign (`held`) or unassign (`released`); on a refusal re-reads the ENI and treats the wanted
   * state as success, or repeats once with the addresses still to change. See the module comment.
   */
  private async idempotent(
    family: IpFamily,
    want: "held" | "released",
    eniId: string,
    addresses: readonly string[],
    call: (subset: readonly string[]) => Promise<unknown>,
    kind: "addresses" | "prefixes" = "addresses",
  ): Promise<void> {
    const wanted = addresses.map(canonicalAddressText);
    if (wanted.length === 0) return;
    try {
      await call(wanted);
      return;
    } catch (err) {
      if (!(err instanceof Ec2Error) || err.kind !== "refused") throw err;
      const remaining = await this.stillToChange(family, want, eniId, wanted, err, kind);
      if (remaining.length === 0) {
        this.logger.info(
          { eniId, addresses: wanted, code: err.code },
          `EC2 refused the call but the ENI already has the ${kind} ${want}; treating it as done`,
        );
        return;
      }
      if (remaining.length === wanted.length) throw err;
      await call(remaining);
    }
  }

  private async stillToChange(
    family: IpFamily,
    want: "held" | "released",
    eniId: string,
    wanted: readonly string[],
    refusal: Ec2Error,
    kind: "addresses" | "prefixes",
  ): Promise<readonly string[]> {
    let enis: Ec2NetworkInterface[];
    try {
      enis = await this.describeNetworkInterfaces({ eniIds: [eniId] });
    } catch (readErr) {
      // The refusal is the error the caller must see; the read's failure goes in its cause, by message too,
      // because log serializers do not show an AggregateError's members and the wrapper logs it at debug only.
      const readMessage = readErr instanceof Error ? readErr.message : String(readErr);
      throw new Ec2Error(
        {
          operation: refusal.operation,
          code: refusal.code,
          requestId: refusal.requestId,
          eniId,
          kind: refusal.kind,
        },
        refusal.message,
        {
          cause: new AggregateError(
            [refusal, readErr],
            `refused, and the ENI could not be re-read: ${readMessage}`,
          ),
        },
      );
    }
    const eni = enis[0];
    if (eni === undefined) return wanted;
    const held = new Set(
      kind === "prefixes"
        ? ((family === 4 ? eni.ipv4Prefixes : eni.ipv6Prefixes) ?? [])
        : family === 4
          ? eni.ipv4s
          : eni.ipv6s,
    );
    return wanted.filter((a) => (want === "held" ? !held.has(a) : held.has(a)));
  }
}

/** Builds the EC2 adapter. The SDK makes one attempt per call; retries are ours (see retry.ts). */
export function createEc2Api(options: Ec2ApiOptions): Ec2Api {
  const requestTimeoutMs = options.requestTimeoutMs ?? 5000;
  const client = new EC2Client({
    region: options.region,
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    maxAttempts: 1,
    requestHandler: {
      requestTimeout: requestTimeoutMs,
      connectionTimeout: Math.min(requestTimeoutMs, 3000),
      throwOnRequestTimeout: true,
    },
  });
  const instrument = createInstrument({
    logger: options.logger,
    observer: options.observer,
    retry: options.retry,
    clock: options.clock,
    signal: options.signal,
  });
  return new Ec2ApiClient(client, instrument, options.logger, options.pageSize ?? 1000);
}
