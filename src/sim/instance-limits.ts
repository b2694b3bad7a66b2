/**
 * What the simulator knows of an instance type: private IPv4 addresses per ENI (the primary counted), from the
 * EC2 user guide's "IP addresses per network interface per instance type" table, and whether the type is built
 * on the Nitro System (DescribeInstanceTypes' `hypervisor`: `nitro`, or `xen` for the older generations), which
 * decides prefix delegation. Both are facts of the type, never of one instance. The same address number bounds
 * IPv6 addresses. Only common types: a world file names others with `ipv4AddressesPerEni` (and `nitro`).
 * Kept apart from the table our commands use (src/eni/instance-limits.ts) on purpose: the simulator mirrors
 * EC2 on its own, so a mistake in ours shows as a disagreement (test/doctor-checks.test.ts) instead of
 * being copied into the expectations.
 */
const types: Readonly<Record<string, { readonly addressesPerEni: number; readonly nitro: boolean }>> = {
  "t3.nano": { addressesPerEni: 2, nitro: true },
  "t3.micro": { addressesPerEni: 2, nitro: true },
  "t3.small": { addressesPerEni: 4, nitro: true },
  "t3.medium": { addressesPerEni: 6, nitro: true },
  "t3.large": { addressesPerEni: 12, nitro: true },
  "t3.xlarge": { addressesPerEni: 15, nitro: true },
  "m5.large": { addressesPerEni: 10, nitro: true },
  "m5.xlarge": { addressesPerEni: 15, nitro: true },
  "m5.2xlarge": { addressesPerEni: 15, nitro: true },
  "m5.4xlarge": { addressesPerEni: 30, nitro: true },
  "m6i.large": { addressesPerEni: 10, nitro: true },
  "m6i.xlarge": { addressesPerEni: 15, nitro: true },
  "c5.large": { addressesPerEni: 10, nitro: true },
  "c5.xlarge": { addressesPerEni: 15, nitro: true },
  "c5.2xlarge": { addressesPerEni: 15, nitro: true },
  "c5.4xlarge": { addressesPerEni: 30, nitro: true },
  "c6i.large": { addressesPerEni: 10, nitro: true },
  "c6i.xlarge": { addressesPerEni: 15, nitro: true },
  "r5.large": { addressesPerEni: 10, nitro: true },
  "r5.xlarge": { addressesPerEni: 15, nitro: true },
  // Xen types, for worlds where EC2 refuses prefixes.
  "t2.micro": { addressesPerEni: 2, nitro: false },
  "t2.small": { addressesPerEni: 4, nitro: false },
  "t2.medium": { addressesPerEni: 6, nitro: false },
  "t2.large": { addressesPerEni: 12, nitro: false },
  "m4.large": { addressesPerEni: 10, nitro: false },
  "m4.xlarge": { addressesPerEni: 15, nitro: false },
  "c4.large": { addressesPerEni: 10, nitro: false },
  "c4.xlarge": { addressesPerEni: 15, nitro: false },
  "r4.large": { addressesPerEni: 10, nitro: false },
};

/** Addresses per ENI for a known instance type, or undefined. */
export function addressesPerEniOf(instanceType: string): number | undefined {
  return Object.hasOwn(types, instanceType) ? types[instanceType]?.addressesPerEni : undefined;
}

/** Whether a known instance type is built on the Nitro System, or undefined for a type not in the table. */
export function nitroOf(instanceType: string): boolean | undefined {
  return Object.hasOwn(types, instanceType) ? types[instanceType]?.nitro : undefined;
}

export const knownInstanceTypes: readonly string[] = Object.keys(types);

/** Known types that are not built on the Nitro System, for the fix of a world that wants one. */
export const xenInstanceTypes: readonly string[] = knownInstanceTypes.filter((t) => nitroOf(t) === false);
