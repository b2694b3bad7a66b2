/**
 * Private IPv4 addresses per ENI (the primary counted), by instance type, from the EC2 user guide's
 * "IP addresses per network interface per instance type" table. The same number bounds IPv6 addresses.
 * Only common types: a world file names others with `ipv4AddressesPerEni`.
 * Kept apart from the table our commands use (src/eni/instance-limits.ts) on purpose: the simulator mirrors
 * EC2 on its own, so a mistake in ours shows as a disagreement (test/doctor-checks.test.ts) instead of
 * being copied into the expectations.
 */
const addressesPerEni: Readonly<Record<string, number>> = {
  "t3.nano": 2,
  "t3.micro": 2,
  "t3.small": 4,
  "t3.medium": 6,
  "t3.large": 12,
  "t3.xlarge": 15,
  "m5.large": 10,
  "m5.xlarge": 15,
  "m5.2xlarge": 15,
  "m5.4xlarge": 30,
  "m6i.large": 10,
  "m6i.xlarge": 15,
  "c5.large": 10,
  "c5.xlarge": 15,
  "c5.2xlarge": 15,
  "c5.4xlarge": 30,
  "c6i.large": 10,
  "c6i.xlarge": 15,
  "r5.large": 10,
  "r5.xlarge": 15,
};

/** Addresses per ENI for a known instance type, or undefined. */
export function addressesPerEniOf(instanceType: string): number | undefined {
  return addressesPerEni[instanceType];
}

export const knownInstanceTypes: readonly string[] = Object.keys(addressesPerEni);
