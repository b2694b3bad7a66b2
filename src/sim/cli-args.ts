import { misspellingOf } from "../eni/process/known-variables.js";
import { nearestName } from "../eni/process/nearest-name.js";
import { UsageError } from "./errors/usage-error.js";
import { canonicalAddress } from "./ip-math.js";

/** The parsed flags of `multus-ipmgr sim`. */
export interface SimArgs {
  /** Path of the world file (YAML or JSON). */
  readonly world: string;
  readonly host: string;
  readonly ec2Port: number;
  readonly controlPort: number;
  readonly imdsPortBase: number;
  /** Port of the Kubernetes API (worlds with a `kubernetes` section). */
  readonly kubePort: number;
  /** Where to write a kubeconfig for the Kubernetes API, or undefined. */
  readonly kubeconfig: string | undefined;
  /** Log every request to stderr. */
  readonly verbose: boolean;
}

export type ParsedSimArgs = { readonly kind: "help" } | { readonly kind: "run"; readonly args: SimArgs };

export const simUsage = `usage: multus-ipmgr sim --world FILE [flags]

Runs a local EC2 Query API and one IMDSv2 endpoint per instance (and a Kubernetes API when the world has a
kubernetes section), then prints one JSON line:
{"ready":true,"ec2":"http://H:P","control":"http://H:P","imds":{"i-...":"http://H:P"},"kubernetes":"http://H:P"}

flags (environment variable in brackets):
  --world FILE           world file, YAML or JSON (required) [IPMGR_SIM_WORLD]
  --host ADDRESS         listen address, default 127.0.0.1 [IPMGR_SIM_HOST]
  --ec2-port N           EC2 port, default 0 (a free port) [IPMGR_SIM_EC2_PORT]
  --control-port N       control API port, default 0 [IPMGR_SIM_CONTROL_PORT]
  --imds-port-base N     IMDS port of the first instance, +1 for each next one; default 0 (free ports)
                         [IPMGR_SIM_IMDS_PORT_BASE]
  --kube-port N          Kubernetes API port, default 0 [IPMGR_SIM_KUBE_PORT]
  --kubeconfig FILE      write a kubeconfig for the Kubernetes API to FILE before the ready line
                         [IPMGR_SIM_KUBECONFIG]
  --verbose              log every request to stderr
  --help                 show this help`;

const flags: Readonly<Record<string, string>> = {
  "--world": "IPMGR_SIM_WORLD",
  "--host": "IPMGR_SIM_HOST",
  "--ec2-port": "IPMGR_SIM_EC2_PORT",
  "--control-port": "IPMGR_SIM_CONTROL_PORT",
  "--imds-port-base": "IPMGR_SIM_IMDS_PORT_BASE",
  "--kube-port": "IPMGR_SIM_KUBE_PORT",
  "--kubeconfig": "IPMGR_SIM_KUBECONFIG",
};

function didYouMean(name: string): string {
  const near = nearestName(name, [...Object.keys(flags), "--verbose", "--help"]);
  return near === undefined ? "" : `did you mean ${near}? `;
}

function port(flag: string, text: string | undefined): number {
  if (text === undefined || text === "") return 0;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value > 65_535) {
    throw new UsageError(
      flag,
      `${flag} ${JSON.stringify(text)} is not a port number; pass an integer from 0 to 65535 (0 picks a free port).`,
    );
  }
  return value;
}

/** Parses flags (`--flag value` or `--flag=value`), falling back to the environment. Throws UsageError. */
export function parseSimArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedSimArgs {
  const given = new Map<string, string>();
  let verbose = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--help" || arg === "-h") return { kind: "help" };
    if (arg === "--verbose") {
      verbose = true;
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (flags[name] === undefined) {
      throw new UsageError(
        name,
        `unknown flag ${JSON.stringify(arg)}; ${didYouMean(name)}the flags are ${[...Object.keys(flags), "--verbose", "--help"].join(", ")}.`,
      );
    }
    let value: string | undefined;
    if (eq > 0) {
      value = arg.slice(eq + 1);
    } else {
      value = argv[i + 1];
      i += 1;
    }
    if (value === undefined || value.startsWith("--")) {
      throw new UsageError(
        name,
        `${name} needs a value, e.g. ${name}=${name === "--world" ? "world.yaml" : "0"}.`,
      );
    }
    given.set(name, value);
  }
  const read = (flag: string): string | undefined => given.get(flag) ?? env[flags[flag] as string];
  const world = read("--world");
  if (world === undefined || world === "") {
    const misspelt = misspellingOf("IPMGR_SIM_WORLD", env);
    const hint = misspelt === undefined ? "" : ` (${misspelt} is set: did you mean IPMGR_SIM_WORLD?)`;
    throw new UsageError(
      "--world",
      `--world is missing; pass the world file (YAML or JSON), e.g. --world examples/world-demo.yaml, or set IPMGR_SIM_WORLD${hint}.`,
    );
  }
  const host = read("--host") || "127.0.0.1";
  // A host name would be looked up, and fail late with a resolver error; the listen address is an address.
  if (canonicalAddress(host) === undefined) {
    throw new UsageError(
      "--host",
      `--host ${JSON.stringify(host)} is not an IP address; pass the address to listen on, e.g. 127.0.0.1 (the default), 0.0.0.0 or ::1.`,
    );
  }
  return {
    kind: "run",
    args: {
      world,
      host,
      ec2Port: port("--ec2-port", read("--ec2-port")),
      controlPort: port("--control-port", read("--control-port")),
      imdsPortBase: port("--imds-port-base", read("--imds-port-base")),
      kubePort: port("--kube-port", read("--kube-port")),
      kubeconfig: read("--kubeconfig") || undefined,
      verbose,
    },
  };
}

/**
 * Checks that every instance of the world gets an IMDS port: the Nth (from 0) listens on base + N.
 * @throws UsageError when the last one would be past 65535.
 */
export function checkImdsPorts(args: SimArgs, instanceCount: number): void {
  const last = args.imdsPortBase + instanceCount - 1;
  if (args.imdsPortBase === 0 || last <= 65_535) return;
  throw new UsageError(
    "--imds-port-base",
    `--imds-port-base ${args.imdsPortBase} gives the world's ${instanceCount} instances the ports ${args.imdsPortBase} to ${last}, ` +
      `past 65535; pass at most ${65_536 - instanceCount}, or 0 for free ports.`,
  );
}

/**
 * Checks that the flags about the Kubernetes API have one to apply to.
 * @throws UsageError when --kubeconfig or --kube-port is given for a world without a `kubernetes` section.
 */
export function checkKubeFlags(args: SimArgs, worldHasKubernetes: boolean): void {
  if (worldHasKubernetes) return;
  const flag =
    args.kubeconfig !== undefined ? "--kubeconfig" : args.kubePort !== 0 ? "--kube-port" : undefined;
  if (flag === undefined) return;
  throw new UsageError(
    flag,
    `${flag} is given but the world file ${args.world} has no kubernetes section, so no Kubernetes API runs; ` +
      "add one (kubernetes: {} serves an empty cluster) or drop the flag.",
  );
}

/**
 * A listen error as the flags to change, or undefined for an error that is not about them. Node's message
 * names the address and port.
 */
export function listenUsageError(error: unknown): UsageError | undefined {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE" || code === "EACCES") {
    return new UsageError(
      "--ec2-port",
      `cannot listen (${(error as Error).message}); pick other ports (--ec2-port, --control-port, ` +
        "--imds-port-base, --kube-port; 0 picks free ones).",
    );
  }
  if (code === "EADDRNOTAVAIL" || code === "EAFNOSUPPORT") {
    return new UsageError(
      "--host",
      `cannot listen (${(error as Error).message}); pass an address of this machine with --host, e.g. 127.0.0.1.`,
    );
  }
  return undefined;
}
