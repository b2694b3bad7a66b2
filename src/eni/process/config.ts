import * as z from "zod/mini";
import { emptySelection, type InterfaceSelection } from "../interface-selector.js";
import { anyCidrContains, canonicalCidr, family, hasHostBits, parseCidr, tryCanonical } from "../ip.js";
import type { ElasticIpMapping } from "../types.js";
import { LOG_LEVELS } from "./logger.js";
import {
  checkBackoffRange,
  field,
  type ListItem,
  type SettingValues,
  setting,
  settingError,
} from "./settings.js";

/** Why one item of IPMGR_ALLOWED_CIDRS is refused, with the fix; undefined when it is a pod range. */
function cidrProblem(item: string): string | undefined {
  let prefix: number;
  try {
    prefix = parseCidr(item).prefix;
  } catch {
    return `${JSON.stringify(item)} is not a CIDR; write it like 198.51.100.64/27`;
  }
  if (prefix === 0) {
    return (
      `${JSON.stringify(item)} covers every address and would let multus-ipmgr move any address in the VPC, ` +
      "node addresses included; list only your Multus pod ranges, e.g. 198.51.100.64/27"
    );
  }
  if (hasHostBits(item)) {
    return `${JSON.stringify(item)} has host bits set; did you mean ${canonicalCidr(item)}?`;
  }
  return undefined;
}

/** Linux interface names (IFNAMSIZ 16, so at most 15 bytes) exclude whitespace, "/" and ":". */
const INTERFACE_NAME = /^[^\s/:*]{1,15}$/;

/** Why one item of an interface list is refused; undefined for a name, or a prefix with a trailing `*`. */
function interfacePatternProblem(item: string): string | undefined {
  const name = item.endsWith("*") ? item.slice(0, -1) : item;
  if ((name === "" && item === "*") || (INTERFACE_NAME.test(name) && name !== "." && name !== "..")) {
    return undefined;
  }
  return (
    `${JSON.stringify(item)} is not an interface name or pattern: Linux names have 1 to 15 characters, ` +
    'none of them whitespace, "/" or ":", and a trailing * matches a prefix (e.g. net*)'
  );
}

/** A comma-separated list of interface names and `prefix*` patterns; `emptyMeans`: what the empty list does. */
const interfaceList = (emptyMeans: string) =>
  field.list({
    example: "net1,net2 or net*",
    emptyMeans,
    item: (item) => {
      const problem = interfacePatternProblem(item);
      return problem === undefined ? { value: item } : { problem };
    },
  });

/** AWS region names: us-east-1, eu-west-3, us-gov-west-1, cn-north-1, il-central-1, ... */
const awsRegion = z
  .string()
  .check(z.regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, "expected an AWS region such as us-east-1 or eu-west-3"));

const cidrList = field.list({
  example: "198.51.100.64/27",
  required: "expected at least one CIDR, e.g. 198.51.100.64/27,2001:db8:1::/64",
  item: (item) => {
    const problem = cidrProblem(item);
    return problem === undefined ? { value: canonicalCidr(item) } : { problem };
  },
});

/** EC2's allocation ids: `eipalloc-` and 8 (older) or 17 lowercase hexadecimal digits. */
const ALLOCATION_ID = /^eipalloc-([0-9a-f]{8}|[0-9a-f]{17})$/;
const ELASTIC_IP_EXAMPLE = "198.51.100.80=eipalloc-0123456789abcdef0";

/**
 * One item of IPMGR_ELASTIC_IPS, the mapping it stands for, or why it is refused, with the fix; `before`: the
 * mappings before it (each address and each allocation at most once).
 */
function elasticIpItem(item: string, before: readonly ElasticIpMapping[]): ListItem<ElasticIpMapping> {
  const eq = item.indexOf("=");
  if (eq < 0) {
    return {
      problem: `${JSON.stringify(item)} is not ADDRESS=ALLOCATION_ID; write it like ${ELASTIC_IP_EXAMPLE}`,
    };
  }
  const addressText = item.slice(0, eq).trim();
  const allocationId = item.slice(eq + 1).trim();
  const address = tryCanonical(addressText);
  if (address === undefined) {
    return {
      problem: `${JSON.stringify(addressText)} is not an IP address; write each mapping like ${ELASTIC_IP_EXAMPLE}`,
    };
  }
  if (family(address) === 6) {
    return {
      problem: `${address} is an IPv6 address, and IPv6 addresses have no Elastic IP; map only IPv4 addresses`,
    };
  }
  if (!ALLOCATION_ID.test(allocationId)) {
    return {
      problem:
        `${JSON.stringify(allocationId)} is not an Elastic IP allocation id: eipalloc- followed by 8 or 17 ` +
        "lowercase hexadecimal digits, e.g. eipalloc-0123456789abcdef0 (aws ec2 describe-addresses lists yours)",
    };
  }
  const sameAddress = before.find((m) => m.address === address);
  if (sameAddress !== undefined) {
    return {
      problem: `${address} is mapped twice (to ${sameAddress.allocationId} and ${allocationId}); an address can have one Elastic IP: keep one`,
    };
  }
  const sameAllocation = before.find((m) => m.allocationId === allocationId);
  if (sameAllocation !== undefined) {
    return {
      problem: `${allocationId} is mapped twice (to ${sameAllocation.address} and ${address}); an Elastic IP can follow one address: keep one`,
    };
  }
  return { value: { address, allocationId } };
}

/** Comma-separated ADDRESS=ALLOCATION_ID pairs; each address and each allocation at most once. */
const elasticIpList = field.list({
  example: ELASTIC_IP_EXAMPLE,
  emptyMeans: "no Elastic IP follows an address",
  item: elasticIpItem,
});

/**
 * Settings shared by `init` and `sidecar` (doctor and the bridge read most of them too). Each command's own
 * settings sit beside it: src/init/settings.ts, src/sidecar/settings.ts, src/doctor/settings.ts,
 * src/ipam-whereabouts-bridge/settings.ts.
 */
export const podSettings = {
  allowedCidrs: setting({
    env: "IPMGR_ALLOWED_CIDRS",
    flag: "--allowed-cidrs",
    default: undefined,
    doc: "Comma-separated CIDRs of your Multus pod ranges, written as networks (no host bits set, no /0). Only addresses inside them are ever assigned or released; others are refused.",
    schema: cidrList,
  }),
  interfaces: setting({
    env: "IPMGR_INTERFACES",
    flag: "--interfaces",
    default: "",
    doc: "Comma-separated interface names to manage (a trailing * matches a prefix, e.g. net*). Empty: every interface not excluded.",
    schema: interfaceList("every interface not excluded is managed"),
  }),
  excludeInterfaces: setting({
    env: "IPMGR_EXCLUDE_INTERFACES",
    flag: "--exclude-interfaces",
    default: "lo,eth0",
    doc: "Comma-separated interface names never managed (a trailing * matches a prefix). eth0 belongs to the VPC CNI. lo is never managed, whatever this says.",
    schema: interfaceList("only lo is excluded"),
  }),
  addressSource: setting({
    env: "IPMGR_ADDRESS_SOURCE",
    flag: "--address-source",
    default: "interfaces",
    doc: "Where pod addresses are read: interfaces (the pod's own interfaces) or network-status (the Multus annotation in a downward API file).",
    schema: field.enumOf(["interfaces", "network-status"] as const),
  }),
  networkStatusFile: setting({
    env: "IPMGR_NETWORK_STATUS_FILE",
    flag: "--network-status-file",
    default: "/etc/podinfo/annotations",
    doc: "Downward API annotations file (or a file holding the network-status JSON array), for --address-source network-status.",
    schema: field.text(),
  }),
  region: setting({
    env: "AWS_REGION",
    flag: "--region",
    default: undefined,
    optional: true,
    doc: "AWS region, e.g. us-east-1. Unset: read from IMDS (placement/region).",
    schema: awsRegion,
  }),
  ec2Endpoint: setting({
    env: "AWS_ENDPOINT_URL_EC2",
    flag: "--ec2-endpoint",
    default: undefined,
    optional: true,
    doc: "EC2 endpoint URL, e.g. the simulator's. Unset: the SDK's regional endpoint (it also honours AWS_ENDPOINT_URL).",
    schema: field.url("https://ec2.us-east-1.amazonaws.com"),
  }),
  imdsEndpoint: setting({
    env: "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    flag: "--imds-endpoint",
    default: undefined,
    optional: true,
    doc: "Instance metadata endpoint (IMDSv2). Unset: chosen by AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE.",
    schema: field.url("http://169.254.169.254"),
  }),
  imdsEndpointMode: setting({
    env: "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    flag: "--imds-endpoint-mode",
    default: "IPv4",
    doc: "IMDS endpoint when none is set, as the AWS SDKs read it: IPv4 (http://169.254.169.254) or IPv6 (http://[fd00:ec2::254], for IPv6-only nodes).",
    schema: field.enumOf(["IPv4", "IPv6"] as const),
  }),
  imdsTimeoutMs: setting({
    env: "IPMGR_IMDS_TIMEOUT_MS",
    flag: "--imds-timeout-ms",
    default: "1000",
    unit: "ms",
    doc: "Timeout of one IMDS request. A token request that times out is reported as the hop-limit problem.",
    schema: field.milliseconds(50, 60_000),
  }),
  ec2TimeoutMs: setting({
    env: "IPMGR_EC2_TIMEOUT_MS",
    flag: "--ec2-timeout-ms",
    default: "5000",
    unit: "ms",
    doc: "Timeout of one EC2 request attempt.",
    schema: field.milliseconds(100, 120_000),
  }),
  ec2MaxAttempts: setting({
    env: "IPMGR_EC2_MAX_ATTEMPTS",
    flag: "--ec2-max-attempts",
    default: "8",
    doc: "Attempts per EC2 call for retryable failures (throttling, 5xx, network). The SDK's own retries are off.",
    schema: field.integer(1, 50),
  }),
  ec2RetryBaseMs: setting({
    env: "IPMGR_EC2_RETRY_BASE_MS",
    flag: "--ec2-retry-base-ms",
    default: "200",
    unit: "ms",
    doc: "First backoff delay; doubles per attempt, with full jitter. At most IPMGR_EC2_RETRY_MAX_MS.",
    schema: field.milliseconds(1, 60_000),
  }),
  ec2RetryMaxMs: setting({
    env: "IPMGR_EC2_RETRY_MAX_MS",
    flag: "--ec2-retry-max-ms",
    default: "5000",
    unit: "ms",
    doc: "Cap of one backoff delay.",
    schema: field.milliseconds(1, 300_000),
  }),
  confirmTimeoutMs: setting({
    env: "IPMGR_CONFIRM_TIMEOUT_MS",
    flag: "--confirm-timeout-ms",
    default: "30000",
    unit: "ms",
    doc: "How long to wait for IMDS to show an assignment EC2 accepted (IMDS reflects changes asynchronously).",
    schema: field.milliseconds(0, 600_000),
  }),
  confirmIntervalMs: setting({
    env: "IPMGR_CONFIRM_INTERVAL_MS",
    flag: "--confirm-interval-ms",
    default: "100",
    unit: "ms",
    doc: "Poll interval while confirming through IMDS.",
    schema: field.milliseconds(5, 60_000),
  }),
  logLevel: setting({
    env: "IPMGR_LOG_LEVEL",
    flag: "--log-level",
    default: "info",
    doc: `Log level: ${LOG_LEVELS.join(", ")}. Logs are JSON lines on stdout.`,
    schema: field.enumOf(LOG_LEVELS),
  }),
  terminationLog: setting({
    env: "IPMGR_TERMINATION_LOG",
    flag: "--termination-log",
    default: "/dev/termination-log",
    emptyIsValue: true,
    doc: "File that receives the final error sentence, so that kubectl describe pod shows it. Empty string: none.",
    schema: z.string(),
  }),
  elasticIps: setting({
    env: "IPMGR_ELASTIC_IPS",
    flag: "--elastic-ips",
    default: "",
    doc: `Comma-separated ADDRESS=ALLOCATION_ID pairs, e.g. ${ELASTIC_IP_EXAMPLE}: while our ENI holds the floating IPv4 address, its Elastic IP is kept associated with it (needs ec2:DescribeAddresses and ec2:AssociateAddress). Each address inside IPMGR_ALLOWED_CIDRS, each address and allocation once, no IPv6. Empty: off.`,
    schema: elasticIpList,
  }),
  waitForAddressesMs: setting({
    env: "IPMGR_WAIT_FOR_ADDRESSES_MS",
    flag: "--wait-for-addresses-ms",
    default: "30000",
    unit: "ms",
    doc: "How long to wait at start for the managed interfaces to carry at least one address before it gives up.",
    schema: field.milliseconds(0, 600_000),
  }),
};

/**
 * Settings of the sidecar's table that another command reads too: doctor checks the address events, the
 * bridge serves the same probes on the same port and drains within the same grace (with its own sentence).
 * Here, in the core, so that no command imports another's settings.
 */
export const sidecarSharedSettings = {
  addressEvents: setting({
    env: "IPMGR_ADDRESS_EVENTS",
    flag: "--address-events",
    default: "auto",
    doc: "How address changes are noticed: auto (kernel events through `ip -o monitor address` when the ip command works, else polling), ip-monitor (events required: startup fails without iproute2), poll (polling only).",
    schema: field.enumOf(["auto", "ip-monitor", "poll"] as const),
  }),
  shutdownGraceMs: setting({
    env: "IPMGR_SHUTDOWN_GRACE_MS",
    flag: "--shutdown-grace-ms",
    default: "10000",
    unit: "ms",
    doc: "On SIGTERM, how long the EC2 call in progress (and the release on exit) may take; past it the call is aborted and the sidecar exits 8.",
    schema: field.milliseconds(0, 600_000),
  }),
  httpPort: setting({
    env: "IPMGR_HTTP_PORT",
    flag: "--http-port",
    default: "9180",
    doc: "Port of /healthz, /readyz and /metrics.",
    schema: field.integer(1, 65_535),
  }),
  httpHost: setting({
    env: "IPMGR_HTTP_HOST",
    flag: "--http-host",
    default: "0.0.0.0",
    doc: "Address the HTTP server listens on: an IP address, e.g. 0.0.0.0 (every IPv4 address) or :: (every address).",
    schema: field.ipAddress(),
  }),
};

export type PodConfig = SettingValues<typeof podSettings>;

/**
 * Rules across settings: the interfaces selected are not all excluded, the first EC2 backoff delay is not
 * above its cap, and an Elastic IP can only follow an address multus-ipmgr moves.
 */
export function checkPodConfig(
  config: Pick<
    PodConfig,
    "interfaces" | "excludeInterfaces" | "elasticIps" | "allowedCidrs" | "ec2RetryBaseMs" | "ec2RetryMaxMs"
  >,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): void {
  // Refused at start: otherwise init and the sidecar would wait for addresses in vain, then exit 8.
  const empty = emptySelection(interfaceSelection(config));
  if (empty !== undefined) {
    const blamed = empty.blame === "exclude" ? podSettings.excludeInterfaces : podSettings.interfaces;
    throw settingError(blamed, argv, env, empty.problem);
  }
  checkBackoffRange(
    podSettings.ec2RetryBaseMs,
    podSettings.ec2RetryMaxMs,
    { base: config.ec2RetryBaseMs, cap: config.ec2RetryMaxMs },
    argv,
    env,
  );
  const outside = config.elasticIps.find((m) => !anyCidrContains(config.allowedCidrs, m.address));
  if (outside === undefined) return;
  throw settingError(
    podSettings.elasticIps,
    argv,
    env,
    `${outside.address} is outside IPMGR_ALLOWED_CIDRS (${config.allowedCidrs.join(", ")}), so multus-ipmgr never moves it and its Elastic IP could not follow it; map an address of your pod ranges, or add its range to IPMGR_ALLOWED_CIDRS`,
  );
}

/** The IMDS endpoints the AWS SDKs use when AWS_EC2_METADATA_SERVICE_ENDPOINT is unset, by endpoint mode. */
export const IMDS_ENDPOINT_BY_MODE = {
  IPv4: "http://169.254.169.254",
  IPv6: "http://[fd00:ec2::254]",
} as const;

/** The IMDS endpoint to use: the one set explicitly, else the endpoint mode's (as the AWS SDKs decide). */
export function imdsEndpointOf(config: Pick<PodConfig, "imdsEndpoint" | "imdsEndpointMode">): string {
  return config.imdsEndpoint ?? IMDS_ENDPOINT_BY_MODE[config.imdsEndpointMode];
}

export function interfaceSelection(
  config: Pick<PodConfig, "interfaces" | "excludeInterfaces">,
): InterfaceSelection {
  return { include: config.interfaces, exclude: config.excludeInterfaces };
}
