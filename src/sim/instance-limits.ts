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
  // Two network cards (instance-limits' networkOf), for attach mode's NetworkCardIndex.
  "c6in.32xlarge": { addressesPerEni: 50, nitro: true },
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

/** DescribeInstanceTypes' NetworkInfo: ENIs per instance, and per network card (index from 0). */
export interface InstanceNetwork {
  readonly maxNetworkInterfaces: number;
  readonly networkCards: readonly { readonly index: number; readonly maxNetworkInterfaces: number }[];
}

/**
 * `MaximumNetworkInterfaces` of the types in the table above, from the EC2 user guide's "Maximum IP addresses
 * per network interface" table (the same page as the address limits); each has one network card. c6in.32xlarge
 * is the one type with two cards (8 ENIs each: "Network cards", EC2 user guide), for NetworkCardIndex.
 */
const enisPerType: Readonly<Record<string, number>> = {
  "t3.nano": 2,
  "t3.micro": 2,
  "t3.small": 3,
  "t3.medium": 3,
  "t3.large": 3,
  "t3.xlarge": 4,
  "m5.large": 3,
  "m5.xlarge": 4,
  "m5.2xlarge": 4,
  "m5.4xlarge": 8,
  "m6i.large": 3,
  "m6i.xlarge": 4,
  "c5.large": 3,
  "c5.xlarge": 4,
  "c5.2xlarge": 4,
  "c5.4xlarge": 8,
  "c6i.large": 3,
  "c6i.xlarge": 4,
  "r5.large": 3,
  "r5.xlarge": 4,
  "t2.micro": 2,
  "t2.small": 3,
  "t2.medium": 3,
  "t2.large": 3,
  "m4.large": 2,
  "m4.xlarge": 4,
  "c4.large": 3,
  "c4.xlarge": 4,
  "r4.large": 3,
};

const multiCard: Readonly<Record<string, InstanceNetwork>> = {
  "c6in.32xlarge": {
    maxNetworkInterfaces: 16,
    networkCards: [
      { index: 0, maxNetworkInterfaces: 8 },
      { index: 1, maxNetworkInterfaces: 8 },
    ],
  },
};

/**
 * The network limits of an instance type. A type the simulator does not know gets 3 ENIs on one card (its
 * choice: the smallest common limit of a current type that takes Multus ENIs).
 */
export function networkOf(instanceType: string): InstanceNetwork {
  if (Object.hasOwn(multiCard, instanceType)) return multiCard[instanceType] as InstanceNetwork;
  const max = Object.hasOwn(enisPerType, instanceType) ? (enisPerType[instanceType] ?? 3) : 3;
  return { maxNetworkInterfaces: max, networkCards: [{ index: 0, maxNetworkInterfaces: max }] };
}

/** Known types that are not built on the Nitro System, for the fix of a world that wants one. */
export const xenInstanceTypes: readonly string[] = knownInstanceTypes.filter((t) => nitroOf(t) === false);
