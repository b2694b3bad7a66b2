/**
 * Private IPv4 addresses per ENI (the primary counted) by instance type, from the EC2 user guide's table
 * "IP addresses per network interface per instance type"
 * (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/AvailableIpPerENI.html). The same number bounds the
 * IPv6 addresses of an ENI on these types.
 *
 * Not the whole table: the families EKS worker nodes commonly run on (general purpose, compute and memory
 * optimized, Intel, AMD and Graviton, generation 5 and later, and the burstable t3, t3a, t4g). On these the
 * limit follows the size alone, with one exception. Any other type is unknown: doctor reports its check as
 * not done, the bridge does not bound a wave by the ENIs' room. Neither calls DescribeInstanceTypes, so that
 * they need no IAM action for it.
 *
 * The simulator has its own table (src/sim/instance-limits.ts), written from the same user guide page and
 * not derived from this one, so that a mistake here shows as a disagreement in test/doctor-checks.test.ts.
 */

const FAMILIES: ReadonlySet<string> = new Set([
  "m5",
  "m5a",
  "m5n",
  "m5zn",
  "m6a",
  "m6g",
  "m6i",
  "m6in",
  "m7a",
  "m7g",
  "m7i",
  "m7i-flex",
  "m8g",
  "c5",
  "c5a",
  "c5n",
  "c6a",
  "c6g",
  "c6gn",
  "c6i",
  "c6in",
  "c7a",
  "c7g",
  "c7gn",
  "c7i",
  "c7i-flex",
  "c8g",
  "r5",
  "r5a",
  "r5n",
  "r6a",
  "r6g",
  "r6i",
  "r7a",
  "r7g",
  "r7i",
  "r8g",
]);

const BURSTABLE_FAMILIES: ReadonlySet<string> = new Set(["t3", "t3a", "t4g"]);

/** m, c and r families: the limit by size. */
const BY_SIZE: Readonly<Record<string, number>> = {
  medium: 4,
  large: 10,
  xlarge: 15,
  "2xlarge": 15,
  "3xlarge": 30,
  "4xlarge": 30,
  "6xlarge": 30,
  "8xlarge": 30,
  "9xlarge": 30,
  "12xlarge": 30,
  "16xlarge": 50,
  "18xlarge": 50,
  "24xlarge": 50,
  "32xlarge": 50,
  "48xlarge": 50,
  metal: 50,
  "metal-24xl": 50,
  "metal-48xl": 50,
};

/** t3, t3a, t4g. */
const BURSTABLE_BY_SIZE: Readonly<Record<string, number>> = {
  nano: 2,
  micro: 2,
  small: 4,
  medium: 6,
  large: 12,
  xlarge: 15,
  "2xlarge": 15,
};

const EXCEPTIONS: Readonly<Record<string, number>> = { "m5zn.12xlarge": 50 };

/** Addresses per ENI of `instanceType` (e.g. 10 for m5.large), or undefined when the type is not known here. */
export function addressesPerEniOf(instanceType: string): number | undefined {
  const exception = EXCEPTIONS[instanceType];
  if (exception !== undefined) return exception;
  const dot = instanceType.indexOf(".");
  if (dot < 0) return undefined;
  const family = instanceType.slice(0, dot);
  const size = instanceType.slice(dot + 1);
  if (FAMILIES.has(family)) return Object.hasOwn(BY_SIZE, size) ? BY_SIZE[size] : undefined;
  if (BURSTABLE_FAMILIES.has(family)) {
    return Object.hasOwn(BURSTABLE_BY_SIZE, size) ? BURSTABLE_BY_SIZE[size] : undefined;
  }
  return undefined;
}

/** The families this table knows, for the message of an unknown type. */
export const KNOWN_FAMILIES: readonly string[] = [...FAMILIES, ...BURSTABLE_FAMILIES];
