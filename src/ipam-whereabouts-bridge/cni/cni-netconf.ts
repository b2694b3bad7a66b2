/**
 * The chained plugin's netconf (its stdin), its prevResult and CNI_ARGS, as the bridge reads them. Pure.
 *
 * The netconf keys the bridge reads: `cniVersion`, `name`, `type`, `socket`, `failOpen`, `deadlineSeconds`
 * (1 to 110, default 30) and `prevResult`; every other key (`ipam` among them) is ignored and never changed.
 * prevResult has the shape of CNI's types/100 (1.0.0) and types/040 (0.3.0, 0.3.1, 0.4.0): `interfaces`
 * ({name, mac, sandbox}) and `ips` ({address as CIDR, gateway, interface: an index into `interfaces`}; the
 * older versions also carry `version`, "4" or "6"). An ip whose interface has a `sandbox` is the pod's.
 * CNI_ARGS is `K=V` pairs separated by `;`, as Multus passes them (IgnoreUnknown, K8S_POD_NAMESPACE,
 * K8S_POD_NAME, K8S_POD_UID, K8S_POD_INFRA_CONTAINER_ID).
 */
import * as z from "zod/mini";
import { tryCanonical } from "../../eni/ip.js";
import { CniCode, SUPPORTED_VERSIONS } from "./cni-result.js";
import { CniError } from "./errors/cni-error.js";

/** How long ADD waits for EC2 when the netconf does not say, in seconds. */
export const DEFAULT_DEADLINE_SECONDS = 30;

const resultInterface = z.object({
  name: z.string(),
  mac: z.optional(z.string()),
  sandbox: z.optional(z.string()),
});

const resultIp = z.object({
  address: z.string(),
  gateway: z.optional(z.string()),
  interface: z.optional(z.int().check(z.minimum(0))),
  version: z.optional(z.enum(["4", "6"])),
});

const prevResultSchema = z.object({
  cniVersion: z.optional(z.string()),
  interfaces: z.optional(z.array(resultInterface)),
  ips: z.optional(z.array(resultIp)),
});

const netconfSchema = z.object({
  cniVersion: z.string(),
  name: z.string(),
  type: z.string(),
  socket: z.optional(z.string()),
  failOpen: z.optional(z.boolean()),
  deadlineSeconds: z.optional(z.int().check(z.minimum(1), z.maximum(110))),
  prevResult: z.optional(z.unknown()),
});

export interface NetConf {
  readonly cniVersion: string;
  readonly name: string;
  readonly type: string;
  readonly failOpen: boolean;
  readonly deadlineSeconds: number;
  /** The prevResult as parsed from the JSON, to pass on unchanged; undefined when absent. */
  readonly rawPrevResult: unknown;
}

/** One address of prevResult on an interface in the pod's sandbox. */
export interface SandboxAddress {
  /** Canonical, without the prefix length. */
  readonly address: string;
  readonly interfaceName: string;
  /** Lowercase. */
  readonly mac: string;
}

/** The netconf from the plugin's stdin; throws a CniError (6: not JSON, 7: a key of the wrong type, 1: a version the plugin does not speak). */
export function parseNetConf(stdin: string): NetConf {
  let json: unknown;
  try {
    json = JSON.parse(stdin);
  } catch (error) {
    throw new CniError(CniCode.decode, "the netconf is not JSON", String(error), { cause: error });
  }
  const parsed = netconfSchema.safeParse(json);
  if (!parsed.success) throw invalid("the netconf", parsed.error.issues);
  const conf = parsed.data;
  if (!SUPPORTED_VERSIONS.includes(conf.cniVersion)) {
    throw new CniError(
      CniCode.incompatibleVersion,
      `the netconf's cniVersion ${JSON.stringify(conf.cniVersion)} is not one multus-ipmgr speaks`,
      `supported: ${SUPPORTED_VERSIONS.join(", ")}`,
    );
  }
  return {
    cniVersion: conf.cniVersion,
    name: conf.name,
    type: conf.type,
    failOpen: conf.failOpen ?? false,
    deadlineSeconds: conf.deadlineSeconds ?? DEFAULT_DEADLINE_SECONDS,
    rawPrevResult: conf.prevResult,
  };
}

/** The addresses of prevResult's ips on sandbox interfaces, each with its interface's MAC; throws 7 when unreadable. */
export function sandboxAddresses(prevResult: unknown): SandboxAddress[] {
  const parsed = prevResultSchema.safeParse(prevResult);
  if (!parsed.success) throw invalid("prevResult", parsed.error.issues);
  const interfaces = parsed.data.interfaces ?? [];
  const out: SandboxAddress[] = [];
  for (const [n, ip] of (parsed.data.ips ?? []).entries()) {
    if (ip.interface === undefined) continue;
    const iface = interfaces[ip.interface];
    if (iface === undefined) {
      throw new CniError(
        CniCode.invalidNetconf,
        `prevResult.ips[${n}] names interface ${ip.interface}, but prevResult lists ${interfaces.length} interfaces`,
      );
    }
    if (iface.sandbox === undefined || iface.sandbox === "") continue;
    const address = tryCanonical(ip.address.split("/")[0] ?? "");
    if (address === undefined) {
      throw new CniError(
        CniCode.invalidNetconf,
        `prevResult.ips[${n}].address is ${JSON.stringify(ip.address)}, which is no address in CIDR form`,
      );
    }
    if (iface.mac === undefined || iface.mac === "") {
      throw new CniError(
        CniCode.invalidNetconf,
        `prevResult's interface ${iface.name} holds ${address} in the sandbox but has no "mac"`,
        "the plugin before multus-ipmgr in the chain (ipvlan) must report the interface's MAC",
      );
    }
    out.push({ address, interfaceName: iface.name, mac: iface.mac.toLowerCase() });
  }
  return out;
}

/** CNI_ARGS as a map; throws 4 for a pair with no `=`. */
export function parseCniArgs(args: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of args.split(";")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    if (eq <= 0) {
      throw new CniError(
        CniCode.invalidEnvironment,
        `CNI_ARGS holds ${JSON.stringify(pair)}, which is no K=V pair`,
        "CNI_ARGS is K=V pairs separated by ';'",
      );
    }
    out.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return out;
}

/** The pod CNI_ARGS names (Multus passes K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID); throws 4 without the first two. */
export function podOfArgs(args: ReadonlyMap<string, string>): {
  namespace: string;
  name: string;
  uid: string | undefined;
} {
  const namespace = args.get("K8S_POD_NAMESPACE") ?? "";
  const name = args.get("K8S_POD_NAME") ?? "";
  if (namespace === "" || name === "") {
    throw new CniError(
      CniCode.invalidEnvironment,
      "CNI_ARGS names no pod (K8S_POD_NAMESPACE and K8S_POD_NAME)",
      "multus-ipmgr runs under Multus, which passes them; the bridge claims the address for that pod",
    );
  }
  const uid = args.get("K8S_POD_UID");
  return { namespace, name, uid: uid === undefined || uid === "" ? undefined : uid };
}

function invalid(what: string, issues: readonly { path: PropertyKey[]; message: string }[]): CniError {
  const issue = issues[0];
  const path = issue === undefined ? "" : issue.path.map(String).join(".");
  return new CniError(
    CniCode.invalidNetconf,
    `${what} is invalid${path === "" ? "" : ` at ${path}`}: ${issue?.message ?? "unknown"}`,
  );
}
