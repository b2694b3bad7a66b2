/**
 * An in-memory Ec2EniLifecycleApi for attach mode's unit tests: our own port, with the EC2 rules the
 * executor meets (ClientToken idempotency, device index in use, the attachment limit, NotFound while a new
 * ENI is not yet readable, IncorrectState, deleting an attached ENI refused), and faults to inject. The
 * simulator (src/sim/) is the one that speaks EC2's protocol; this one answers in the port's terms.
 */
import type {
  CreateNetworkInterfaceRequest,
  Ec2EniLifecycleApi,
  EniTagFilter,
} from "../../src/eni/ec2-eni-lifecycle-api.js";
import { Ec2Error, type Ec2ErrorKind } from "../../src/eni/errors/ec2-error.js";
import type {
  Ec2EniAttachment,
  Ec2NetworkInterface,
  Ec2SecurityGroup,
  Ec2Subnet,
} from "../../src/eni/types.js";

export interface MemoryInstance {
  readonly availabilityZone: string;
  /** ENIs the instance takes in all; default 8. */
  readonly maxEnis?: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export function ec2Error(operation: string, code: string, kind: Ec2ErrorKind, eniId?: string): Ec2Error {
  return new Ec2Error(
    { operation, code, requestId: undefined, eniId, kind },
    `EC2 ${operation} failed: ${code}`,
  );
}

export class MemoryEniLifecycle implements Ec2EniLifecycleApi {
  readonly enis = new Map<string, Mutable<Ec2NetworkInterface>>();
  readonly instances = new Map<string, MemoryInstance>();
  readonly subnets: Ec2Subnet[] = [];
  readonly securityGroups: (Ec2SecurityGroup & { vpcId: string; tags: Record<string, string> })[] = [];
  readonly subnetTags = new Map<string, Record<string, string>>();
  /** Every call, as `Operation target`. */
  readonly calls: string[] = [];
  /** Calls naming a new ENI by id answer NotFound this many times after its create (EC2's read lag). */
  notFoundAfterCreate = 0;
  readonly #lagging = new Map<string, number>();
  readonly #tokens = new Map<string, { eniId: string; params: string }>();
  readonly #faults: { operation: string; error: Ec2Error }[] = [];
  #next = 1;
  #made = 0;

  /** The next call of `operation` fails with `error` (queued in order). */
  failNext(operation: string, error: Ec2Error): void {
    this.#faults.push({ operation, error });
  }

  /** An ENI put in place by the test: attached at (card, device) of `instanceId`, or available. */
  put(
    eni: Partial<Ec2NetworkInterface> & { eniId: string },
    at?: {
      instanceId: string;
      deviceIndex: number;
      networkCardIndex?: number;
      deleteOnTermination?: boolean;
    },
  ): Ec2NetworkInterface {
    const subnet = this.subnets.find((s) => s.subnetId === (eni.subnetId ?? this.subnets[0]?.subnetId));
    const made: Mutable<Ec2NetworkInterface> = {
      mac: `02:00:00:00:${String(this.#next++).padStart(2, "0")}:99`,
      subnetId: subnet?.subnetId ?? "subnet-0a",
      vpcId: subnet?.vpcId ?? "vpc-0a",
      instanceId: undefined,
      deviceIndex: undefined,
      primaryIpv4: undefined,
      ipv4s: [],
      ipv6s: [],
      tags: {},
      status: "available",
      sourceDestCheck: true,
      ...(subnet === undefined ? {} : { availabilityZone: subnet.availabilityZone }),
      ...eni,
    };
    this.enis.set(eni.eniId, made);
    if (at !== undefined) {
      this.#attachNow(made, at.instanceId, at.deviceIndex, at.networkCardIndex ?? 0);
      if (at.deleteOnTermination !== undefined)
        made.attachment = {
          ...(made.attachment as Ec2EniAttachment),
          deleteOnTermination: at.deleteOnTermination,
        };
    }
    return { ...made };
  }

  /** Someone detaches the ENI by hand. */
  detach(eniId: string): void {
    const eni = this.#known("DetachNetworkInterface", eniId);
    delete eni.attachment;
    eni.instanceId = undefined;
    eni.deviceIndex = undefined;
    eni.status = "available";
  }

  #fault(operation: string, target: string): void {
    this.calls.push(`${operation} ${target}`.trim());
    const i = this.#faults.findIndex((f) => f.operation === operation);
    if (i >= 0) {
      const [fault] = this.#faults.splice(i, 1);
      if (fault !== undefined) throw fault.error;
    }
  }

  #known(operation: string, eniId: string): Mutable<Ec2NetworkInterface> {
    const lag = this.#lagging.get(eniId) ?? 0;
    if (lag > 0) {
      if (lag === 1) this.#lagging.delete(eniId);
      else this.#lagging.set(eniId, lag - 1);
      throw ec2Error(operation, "InvalidNetworkInterfaceID.NotFound", "refused", eniId);
    }
    const eni = this.enis.get(eniId);
    if (eni === undefined) throw ec2Error(operation, "InvalidNetworkInterfaceID.NotFound", "refused", eniId);
    return eni;
  }

  #attachNow(
    eni: Mutable<Ec2NetworkInterface>,
    instanceId: string,
    deviceIndex: number,
    networkCardIndex: number,
  ): string {
    const attachmentId = `eni-attach-${eni.eniId.slice(4)}-${this.#next++}`;
    eni.attachment = {
      attachmentId,
      instanceId,
      deviceIndex,
      networkCardIndex,
      status: "attached",
      deleteOnTermination: false,
    };
    eni.instanceId = instanceId;
    eni.deviceIndex = deviceIndex;
    eni.status = "in-use";
    return attachmentId;
  }

  async createNetworkInterface(request: CreateNetworkInterfaceRequest): Promise<Ec2NetworkInterface> {
    this.#fault("CreateNetworkInterface", request.subnetId);
    const params = JSON.stringify([
      request.subnetId,
      request.securityGroupIds,
      request.description,
      request.tags,
    ]);
    const seen = this.#tokens.get(request.clientToken);
    if (seen !== undefined) {
      if (seen.params !== params)
        throw ec2Error("CreateNetworkInterface", "IdempotentParameterMismatch", "refused");
      // EC2 answers the first call's ENI, even one deleted since.
      const eni = this.enis.get(seen.eniId);
      return eni === undefined ? { ...this.#ghost(seen.eniId, request) } : { ...eni };
    }
    const subnet = this.subnets.find((s) => s.subnetId === request.subnetId);
    if (subnet === undefined) throw ec2Error("CreateNetworkInterface", "InvalidSubnetID.NotFound", "refused");
    this.#made += 1;
    const eniId = `eni-${String(this.#made).padStart(4, "0")}`;
    const made = this.put({
      eniId,
      subnetId: subnet.subnetId,
      tags: { ...request.tags },
      securityGroupIds: [...request.securityGroupIds],
    });
    this.#tokens.set(request.clientToken, { eniId, params });
    if (this.notFoundAfterCreate > 0) this.#lagging.set(eniId, this.notFoundAfterCreate);
    return made;
  }

  /** The description a token keeps of an ENI deleted since. */
  #ghost(eniId: string, request: CreateNetworkInterfaceRequest): Ec2NetworkInterface {
    return {
      eniId,
      mac: "02:00:00:00:00:00",
      subnetId: request.subnetId,
      vpcId: "vpc-0a",
      instanceId: undefined,
      deviceIndex: undefined,
      primaryIpv4: undefined,
      ipv4s: [],
      ipv6s: [],
      tags: { ...request.tags },
      status: "available",
      sourceDestCheck: true,
    };
  }

  async attachNetworkInterface(
    eniId: string,
    instanceId: string,
    deviceIndex: number,
    networkCardIndex: number,
  ): Promise<string> {
    this.#fault("AttachNetworkInterface", `${eniId} ${instanceId} ${networkCardIndex}/${deviceIndex}`);
    const eni = this.#known("AttachNetworkInterface", eniId);
    const instance = this.instances.get(instanceId);
    if (instance === undefined)
      throw ec2Error("AttachNetworkInterface", "InvalidInstanceID.NotFound", "refused", eniId);
    if (eni.attachment !== undefined)
      throw ec2Error("AttachNetworkInterface", "InvalidNetworkInterface.InUse", "refused", eniId);
    const onInstance = [...this.enis.values()].filter((e) => e.attachment?.instanceId === instanceId);
    if (
      onInstance.some(
        (e) =>
          e.attachment?.deviceIndex === deviceIndex && e.attachment.networkCardIndex === networkCardIndex,
      )
    )
      throw ec2Error("AttachNetworkInterface", "InvalidParameterValue", "refused", eniId);
    if (onInstance.length >= (instance.maxEnis ?? 8))
      throw ec2Error("AttachNetworkInterface", "AttachmentLimitExceeded", "refused", eniId);
    if (eni.availabilityZone !== undefined && eni.availabilityZone !== instance.availabilityZone)
      throw ec2Error("AttachNetworkInterface", "InvalidParameterCombination", "refused", eniId);
    return this.#attachNow(eni, instanceId, deviceIndex, networkCardIndex);
  }

  async deleteNetworkInterface(eniId: string): Promise<void> {
    this.#fault("DeleteNetworkInterface", eniId);
    const eni = this.enis.get(eniId);
    if (eni === undefined) return;
    if (eni.attachment !== undefined)
      throw ec2Error("DeleteNetworkInterface", "InvalidNetworkInterface.InUse", "refused", eniId);
    this.enis.delete(eniId);
  }

  async setDeleteOnTermination(eniId: string, attachmentId: string, value: boolean): Promise<void> {
    this.#fault("ModifyNetworkInterfaceAttribute", `${eniId} DeleteOnTermination=${value}`);
    const eni = this.#known("ModifyNetworkInterfaceAttribute", eniId);
    if (eni.attachment?.attachmentId !== attachmentId)
      throw ec2Error("ModifyNetworkInterfaceAttribute", "InvalidAttachmentID.NotFound", "refused", eniId);
    eni.attachment = { ...eni.attachment, deleteOnTermination: value };
  }

  async setSourceDestCheck(eniId: string, value: boolean): Promise<void> {
    this.#fault("ModifyNetworkInterfaceAttribute", `${eniId} SourceDestCheck=${value}`);
    this.#known("ModifyNetworkInterfaceAttribute", eniId).sourceDestCheck = value;
  }

  async describeInstanceEnis(instanceId: string): Promise<Ec2NetworkInterface[]> {
    this.#fault("DescribeNetworkInterfaces", `instance ${instanceId}`);
    return [...this.enis.values()]
      .filter((e) => e.attachment?.instanceId === instanceId)
      .map((e) => ({ ...e }));
  }

  async describeEnisByTags(filter: EniTagFilter): Promise<Ec2NetworkInterface[]> {
    this.#fault("DescribeNetworkInterfaces", "by tags");
    return [...this.enis.values()]
      .filter(
        (e) =>
          Object.entries(filter.tags).every(([k, v]) => e.tags[k] === v) &&
          (filter.status === undefined || e.status === filter.status) &&
          (filter.vpcId === undefined || e.vpcId === filter.vpcId) &&
          !this.#lagging.has(e.eniId),
      )
      .map((e) => ({ ...e }));
  }

  async describeSubnetsByTags(vpcId: string, tags: Readonly<Record<string, string>>): Promise<Ec2Subnet[]> {
    this.#fault("DescribeSubnets", vpcId);
    return this.subnets.filter(
      (s) =>
        s.vpcId === vpcId &&
        Object.entries(tags).every(([k, v]) => this.subnetTags.get(s.subnetId)?.[k] === v),
    );
  }

  async describeSecurityGroupsByTags(
    vpcId: string,
    tags: Readonly<Record<string, string>>,
  ): Promise<Ec2SecurityGroup[]> {
    this.#fault("DescribeSecurityGroups", vpcId);
    return this.securityGroups.filter(
      (g) => g.vpcId === vpcId && Object.entries(tags).every(([k, v]) => g.tags[k] === v),
    );
  }
}
