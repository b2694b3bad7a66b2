import { EC2Client, type EC2ServiceException } from "@aws-sdk/client-ec2";
import type { Ec2Api } from "../../src/eni/ec2-api.js";
import { createEc2Api, type Ec2ApiOptions } from "../../src/eni/ec2-client.js";
import { ImdsClient, type ImdsClientOptions } from "../../src/eni/imds-client.js";
import {
  loadWorldFile,
  parseWorld,
  type SimulatorHandle,
  type SimulatorOptions,
  startSimulator,
  type World,
} from "../../src/sim/index.js";
import { silentLogger } from "./loggers.js";

/** Static credentials: the simulator accepts any. */
export const credentials = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "not-a-secret" };
/** Retry backoff short enough for tests (5 ms base, 50 ms cap). */
export const fastRetry = { baseDelayMs: 5, maxDelayMs: 50 };

interface EniExtras {
  secondaryIpv4s?: string[];
  ipv6s?: string[];
  ipv4Prefixes?: string[];
  ipv6Prefixes?: string[];
  tags?: Record<string, string>;
}

export interface StandardWorldOptions {
  /** Secondary IPv4s, IPv6s and tags of eni-0b. Default: none. */
  eni0b?: EniExtras;
  /** Whether i-1 has eni-0c. Default true. */
  eni0c?: boolean;
  /** i-1's IPv4 limit per ENI. Default: that of m5.large. */
  ipv4AddressesPerEni?: number;
  /** Instances after i-1, in world-file form. Default: none. */
  moreInstances?: unknown[];
  /** Subnet CIDR reservations, in world-file form. Default: none. */
  reservations?: unknown[];
  /** Elastic IPs, in world-file form. Default: none. */
  elasticIps?: unknown[];
}

/**
 * The small world of the adapter tests, in us-east-1, VPC vpc-1 (198.51.100.0/24, 2001:db8::/56):
 * - subnet-a 198.51.100.0/25 with IPv6 2001:db8::/64, subnet-b 198.51.100.128/25 without IPv6, both us-east-1a;
 * - instance i-1 (m5.large) with eni-0a (MAC 02:00:00:00:0a:01, device 0, subnet-a, 198.51.100.10),
 *   eni-0b (MAC 02:00:00:00:0b:01, device 1, subnet-a, 198.51.100.20) and
 *   eni-0c (MAC 02:00:00:00:0c:01, device 2, subnet-b, 198.51.100.140).
 */
export function standardWorld(options: StandardWorldOptions = {}): World {
  const enis: unknown[] = [
    {
      id: "eni-0a",
      mac: "02:00:00:00:0a:01",
      deviceIndex: 0,
      subnet: "subnet-a",
      primaryIpv4: "198.51.100.10",
    },
    {
      id: "eni-0b",
      mac: "02:00:00:00:0b:01",
      deviceIndex: 1,
      subnet: "subnet-a",
      primaryIpv4: "198.51.100.20",
      ...options.eni0b,
    },
  ];
  if (options.eni0c ?? true) {
    enis.push({
      id: "eni-0c",
      mac: "02:00:00:00:0c:01",
      deviceIndex: 2,
      subnet: "subnet-b",
      primaryIpv4: "198.51.100.140",
    });
  }
  return parseWorld({
    region: "us-east-1",
    vpc: { id: "vpc-1", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8::/56" },
    subnets: [
      { id: "subnet-a", cidr: "198.51.100.0/25", ipv6Cidr: "2001:db8::/64", availabilityZone: "us-east-1a" },
      { id: "subnet-b", cidr: "198.51.100.128/25", availabilityZone: "us-east-1a" },
    ],
    instances: [
      {
        id: "i-1",
        instanceType: "m5.large",
        ...(options.ipv4AddressesPerEni === undefined
          ? {}
          : { ipv4AddressesPerEni: options.ipv4AddressesPerEni }),
        enis,
      },
      ...(options.moreInstances ?? []),
    ],
    reservations: options.reservations ?? [],
    elasticIps: options.elasticIps ?? [],
  });
}

/** The AWS SDK's own client on the simulator's EC2 endpoint, one attempt per call (no SDK retries). */
export function ec2ClientFor(sim: SimulatorHandle): EC2Client {
  return new EC2Client({ endpoint: sim.ec2Endpoint, region: "us-east-1", credentials, maxAttempts: 1 });
}

/** Starts the simulator on a world or a world file, with an SDK client on it. */
export async function startWithEc2(
  world: World | string,
  options: SimulatorOptions = {},
): Promise<{ sim: SimulatorHandle; ec2: EC2Client }> {
  const sim = await startSimulator(typeof world === "string" ? await loadWorldFile(world) : world, options);
  return { sim, ec2: ec2ClientFor(sim) };
}

/** Undoes startWithEc2. */
export async function stopWithEc2(sim: SimulatorHandle, ec2: EC2Client): Promise<void> {
  ec2.destroy();
  await sim.close();
}

/** The EC2 error a call fails with, as the SDK parsed it; throws when the call succeeds. */
export async function ec2Failure(
  promise: Promise<unknown>,
): Promise<{ code: string; message: string; status: number }> {
  try {
    await promise;
  } catch (error) {
    const e = error as EC2ServiceException;
    return { code: e.name, message: e.message, status: e.$metadata.httpStatusCode ?? 0 };
  }
  throw new Error("expected the call to fail");
}

/** Our EC2 adapter on the simulator, with short retry backoff and a silent logger unless `options` say. */
export function ec2ApiFor(sim: SimulatorHandle, options: Partial<Ec2ApiOptions> = {}): Ec2Api {
  return createEc2Api({
    region: "us-east-1",
    endpoint: sim.ec2Endpoint,
    credentials,
    retry: fastRetry,
    logger: silentLogger(),
    ...options,
  });
}

/** The simulator's IMDS endpoint for one instance. */
export function imdsEndpointOf(sim: SimulatorHandle, instanceId: string): string {
  const url = sim.imdsEndpoints[instanceId];
  if (url === undefined) throw new Error(`no IMDS endpoint for ${instanceId}`);
  return url;
}

/** Our IMDS client on the simulator's IMDS of one instance. */
export function imdsFor(
  sim: SimulatorHandle,
  instanceId: string,
  options: Omit<ImdsClientOptions, "endpoint"> = {},
): ImdsClient {
  return new ImdsClient({ endpoint: imdsEndpointOf(sim, instanceId), ...options });
}
