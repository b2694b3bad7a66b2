import type { PodInterface } from "../../src/eni/types.js";
import type { SimCall, SimulatorHandle, SimulatorOptions, World } from "../../src/sim/index.js";

/**
 * The training run behind dist/cli.cjs.cache. V8's code cache holds the bytecode of the functions compiled
 * before it is written; a cache written after loading the modules only holds their top-level code, and every
 * function a start calls is compiled again at each start. So write-code-cache.ts first runs `init` once, a
 * fresh pod start (one IPv4 and one IPv6 address: TRAINING_CALLS), against a simulator started in the same
 * process, and writes the cache after it. Measured (`npm run bench --
 * startup`, against a cache of the loaded modules): a fresh start's CPU time 83 → 72 ms on Node 20 and
 * 101 → 90 ms on Node 24; peak RSS unchanged.
 */

/** The simulator as dist/sim.mjs exports it (src/sim/bundle.ts). */
export interface SimulatorLibrary {
  parseWorld(raw: unknown): World;
  startSimulator(world: World, options?: SimulatorOptions): Promise<SimulatorHandle>;
}

/** The CLI's bundle as write-code-cache.ts runs it: src/cli/start.ts. */
export interface TrainableBundle {
  train(argv: readonly string[], pod: readonly PodInterface[]): Promise<number>;
}

/** The training run did not go as a pod start goes: the cache would not be what it claims to be. */
export class CodeCacheTrainingError extends Error {
  override readonly name = "CodeCacheTrainingError";
}

const INSTANCE = "i-0000000000000c0de";
const MAC = "02:00:00:00:c0:01";

/** One node, its second ENI carrying the pod's Multus interface (documentation ranges only). */
export const TRAINING_WORLD = {
  region: "us-east-1",
  vpc: { id: "vpc-0000000000000c0de", cidr: "198.51.100.0/24", ipv6Cidr: "2001:db8:100::/56" },
  subnets: [
    { id: "subnet-0000000000000c0d0", cidr: "198.51.100.128/25", availabilityZone: "us-east-1a" },
    {
      id: "subnet-0000000000000c0d1",
      cidr: "198.51.100.0/26",
      ipv6Cidr: "2001:db8:100:1::/64",
      availabilityZone: "us-east-1a",
    },
  ],
  instances: [
    {
      id: INSTANCE,
      instanceType: "m5.large",
      enis: [
        {
          id: "eni-0000000000000c0d0",
          mac: "02:00:00:00:c0:00",
          deviceIndex: 0,
          subnet: "subnet-0000000000000c0d0",
          primaryIpv4: "198.51.100.140",
        },
        {
          id: "eni-0000000000000c0d1",
          mac: MAC,
          deviceIndex: 1,
          subnet: "subnet-0000000000000c0d1",
          primaryIpv4: "198.51.100.11",
        },
      ],
    },
  ],
} as const;

export const TRAINING_POD: readonly PodInterface[] = [
  { name: "net1", mac: MAC, addresses: ["198.51.100.40", "2001:db8:100:1::40"] },
];

/**
 * The calls a fresh start of TRAINING_POD makes, sorted: one assignment per family, and the look-up of the
 * IPv6 address's holder that precedes an IPv6 assignment (IPv6 has no reassignment).
 */
export const TRAINING_CALLS = [
  "AssignIpv6Addresses",
  "AssignPrivateIpAddresses",
  "DescribeNetworkInterfaces",
] as const;

/** Why the calls are not those of a fresh start; undefined when they are. */
export function trainingCallsMismatch(
  calls: readonly Pick<SimCall, "action" | "outcome">[],
): string | undefined {
  const seen = calls.map((c) => `${c.action} ${c.outcome}`).sort();
  const expected = TRAINING_CALLS.map((action) => `${action} ok`);
  if (seen.length === expected.length && seen.every((line, i) => line === expected[i])) return undefined;
  return `expected one accepted call of each of ${TRAINING_CALLS.join(", ")}; saw ${seen.length === 0 ? "none" : seen.join(", ")}`;
}

/**
 * Runs `init` in `bundle` once, a fresh pod start against a simulator of TRAINING_WORLD (from `simulator`),
 * with static credentials in the environment for the time of the run. Throws CodeCacheTrainingError unless
 * it exits 0 after exactly TRAINING_CALLS. Returns what ran, for the cache's stamp and the build log.
 * `logLevel`: init's, by default `info` as in a pod, so that the cache holds the writing of its log lines.
 */
export async function trainInit(
  bundle: TrainableBundle,
  simulator: SimulatorLibrary,
  logLevel = "info",
): Promise<string> {
  const errors: string[] = [];
  const sim = await simulator.startSimulator(simulator.parseWorld(TRAINING_WORLD), {
    errorLog: (line) => errors.push(line),
  });
  const credentials = { AWS_ACCESS_KEY_ID: "AKIDCODECACHE", AWS_SECRET_ACCESS_KEY: "code-cache-training" };
  const saved = Object.fromEntries(Object.keys(credentials).map((k) => [k, process.env[k]]));
  Object.assign(process.env, credentials);
  try {
    const code = await bundle.train(
      [
        "--allowed-cidrs=198.51.100.32/27,2001:db8:100:1::/64",
        `--imds-endpoint=${sim.imdsEndpoints[INSTANCE]}`,
        `--ec2-endpoint=${sim.ec2Endpoint}`,
        "--termination-log=",
        `--log-level=${logLevel}`,
        // Generous: a multi-platform build runs this under emulation, several times slower.
        "--imds-timeout-ms=10000",
        "--ec2-timeout-ms=30000",
      ],
      TRAINING_POD,
    );
    const calls = sim.calls();
    if (errors.length > 0) throw new CodeCacheTrainingError(`the simulator failed: ${errors.join("; ")}`);
    if (code !== 0) {
      throw new CodeCacheTrainingError(`init exited ${code} (its log is above); the cache was not written`);
    }
    const mismatch = trainingCallsMismatch(calls);
    if (mismatch !== undefined) throw new CodeCacheTrainingError(`${mismatch}; the cache was not written`);
    // The calls are TRAINING_CALLS (checked above), named in that order whatever order they came in.
    return `a fresh start of init (${TRAINING_CALLS.join(", ")})`;
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    await sim.close();
  }
}
