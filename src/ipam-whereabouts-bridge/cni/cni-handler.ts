/**
 * What the bridge does for each request of the chained plugin (docs/cni-plugin.md):
 *
 * - ADD: the addresses of prevResult's sandbox interfaces, each on the node's Multus ENI with its
 *   interface's MAC, become claims the next wave assigns; the answer (prevResult, unchanged) comes once the
 *   ENI holds each address or a delegated prefix of that ENI covers it, as the waves know it. Past the
 *   netconf's deadlineSeconds: code 11, naming the address, the ENI and the last cause.
 * - DEL: the claims go, their addresses are released at the next wave unless another pod or claim carries
 *   them (cni-claims.ts). Always exit 0.
 * - CHECK: one DescribeNetworkInterfaces of the pod's ENIs; code 101 when one no longer holds its address.
 */
import type { Ec2Api } from "../../eni/ec2-api.js";
import { coveringPrefix } from "../../eni/ip.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { BridgeMetrics } from "../telemetry/metrics.js";
import { type CniClaims, heldBy } from "./cni-claims.js";
import {
  parseCniArgs,
  parseNetConf,
  podOfArgs,
  type SandboxAddress,
  sandboxAddresses,
} from "./cni-netconf.js";
import type { CniClaim } from "./cni-pods.js";
import type { CniRequest } from "./cni-request.js";
import {
  asCniError,
  type CniAnswer,
  CniCode,
  EMPTY_SUCCESS,
  errorAnswer,
  passThrough,
} from "./cni-result.js";
import { CniError } from "./errors/cni-error.js";

export interface CniHandlerDeps {
  readonly claims: CniClaims;
  readonly ec2: Pick<Ec2Api, "describeNetworkInterfaces">;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Pick<BridgeMetrics, "cniRequest" | "cniAdd">;
}

/** The answer to one request; never throws. */
export async function answerCniRequest(request: CniRequest, deps: CniHandlerDeps): Promise<CniAnswer> {
  const { clock, logger, metrics } = deps;
  const started = clock.now();
  let answer: CniAnswer;
  let outcome: "ok" | "try-again" | "error" = "ok";
  try {
    if (request.command === "DEL") answer = del(request, deps);
    else if (deps.claims.stopping) throw stoppingError();
    else if (request.command === "ADD") answer = await add(request, deps);
    else answer = await check(request, deps);
  } catch (error) {
    const cniError = asCniError(error);
    if (cniError.code === CniCode.internal) logger.error({ err: error }, "a CNI request failed unexpectedly");
    else
      logger.warn(
        { command: request.command, containerId: request.containerId, code: cniError.code },
        cniError.message,
      );
    outcome = cniError.code === CniCode.tryAgainLater ? "try-again" : "error";
    answer = errorAnswer(cniError, versionOf(request.stdin));
  }
  metrics.cniRequest(request.command, outcome);
  if (request.command === "ADD" && outcome === "ok") metrics.cniAdd(clock.now() - started);
  return answer;
}

export function stoppingError(): CniError {
  return new CniError(
    CniCode.tryAgainLater,
    "the bridge is stopping",
    "kubelet retries the sandbox; the bridge's next start (or its replacement) answers",
  );
}

async function add(request: CniRequest, deps: CniHandlerDeps): Promise<CniAnswer> {
  const { claims, clock } = deps;
  const conf = parseNetConf(request.stdin);
  if (conf.rawPrevResult === undefined) {
    throw new CniError(
      CniCode.invalidNetconf,
      "ADD has no prevResult: multus-ipmgr is a chained plugin",
      "put it after ipvlan in the conflist's plugins",
    );
  }
  const addresses = sandboxAddresses(conf.rawPrevResult);
  if (addresses.length === 0) return passThrough(conf.rawPrevResult);
  const pod = podOfArgs(parseCniArgs(request.args));
  const deadlineAt = clock.now() + conf.deadlineSeconds * 1000;
  const list: CniClaim[] = [];
  for (const a of addresses) {
    const eni = await multusEniFor(a, deadlineAt, deps);
    list.push({
      pod,
      interfaceName: a.interfaceName,
      mac: a.mac,
      eniId: eni,
      address: a.address,
      network: conf.name,
    });
  }
  const key = `${request.containerId} ${request.ifname}`;
  claims.put(key, list);
  for (;;) {
    if (claims.stopping) throw stoppingError();
    const last = claims.last;
    const unheld = list.find(
      (c) => last === undefined || heldBy(last.held, c.eniId, c.address) === undefined,
    );
    if (unheld === undefined) return passThrough(conf.rawPrevResult);
    // A pod the bridge leaves alone is not waited for: its sidecar, which starts only after ADD, places it.
    if (claims.skipped(pod)) {
      claims.forget(key);
      return passThrough(conf.rawPrevResult);
    }
    if (!(await untilNextWave(deadlineAt, deps))) {
      if (claims.stopping) throw stoppingError();
      throw new CniError(
        CniCode.tryAgainLater,
        `EC2 did not confirm address ${unheld.address} on ENI ${unheld.eniId} within ${conf.deadlineSeconds} s: ${claims.causeOf(unheld.eniId, unheld.address)}`,
        "the bridge keeps the claim and keeps assigning it; kubelet retries the sandbox",
      );
    }
  }
}

/** The node's Multus ENI with the address's MAC; a wave is waited for when the last one did not show it. */
async function multusEniFor(a: SandboxAddress, deadlineAt: number, deps: CniHandlerDeps): Promise<string> {
  const { claims } = deps;
  const known = claims.multusEniOf(a.mac);
  if (known !== undefined) return known.eniId;
  // An ENI attached since the last wave (or no wave yet): the next wave reads the node's ENIs again.
  if (!(await untilNextWave(deadlineAt, deps)) || claims.stopping) {
    if (claims.stopping) throw stoppingError();
    throw new CniError(
      CniCode.tryAgainLater,
      `the bridge has not read this node's ENIs in time to place ${a.address} (MAC ${a.mac})`,
      claims.causeOf("", a.address),
    );
  }
  const found = claims.multusEniOf(a.mac);
  if (found !== undefined) return found.eniId;
  const macs = claims.multusMacs();
  throw new CniError(
    CniCode.notMultusEni,
    `interface ${a.interfaceName} has MAC ${a.mac}, which is the MAC of no Multus ENI of this node (Multus ENIs: ${macs.join(", ") || "none"})`,
    "with ipvlan the pod interface carries its master's MAC: make the NetworkAttachmentDefinition's master a Multus ENI (tagged node.k8s.amazonaws.com/no_manage=true, or in IPMGR_BRIDGE_DEVICE_INDEXES)",
  );
}

/** Waits for the end of the next wave; false when the deadline (ms since the epoch) came first. */
async function untilNextWave(deadlineAt: number, deps: CniHandlerDeps): Promise<boolean> {
  const { clock, claims } = deps;
  const remaining = deadlineAt - clock.now();
  if (remaining <= 0) return false;
  const timer = new AbortController();
  try {
    return await Promise.race([
      claims.nextWave().then(() => true),
      clock.sleep(remaining, timer.signal).then(
        () => false,
        () => true,
      ),
    ]);
  } finally {
    timer.abort();
  }
}

function del(request: CniRequest, deps: CniHandlerDeps): CniAnswer {
  try {
    const dropped = deps.claims.drop(`${request.containerId} ${request.ifname}`);
    deps.logger.debug(
      { containerId: request.containerId, ifname: request.ifname, claims: dropped.length },
      "CNI DEL",
    );
  } catch (error) {
    // DEL never fails (the CNI spec): the view-based release catches up with what this one missed.
    deps.logger.error({ err: error, containerId: request.containerId }, "CNI DEL failed; answered 0");
  }
  return EMPTY_SUCCESS;
}

async function check(request: CniRequest, deps: CniHandlerDeps): Promise<CniAnswer> {
  const conf = parseNetConf(request.stdin);
  if (conf.cniVersion.startsWith("0.3.")) {
    throw new CniError(
      CniCode.incompatibleVersion,
      `CHECK is not part of cniVersion ${conf.cniVersion}`,
      "CHECK came with 0.4.0",
    );
  }
  if (conf.rawPrevResult === undefined) {
    throw new CniError(
      CniCode.invalidNetconf,
      "CHECK has no prevResult",
      "the runtime passes the ADD's result",
    );
  }
  const addresses = sandboxAddresses(conf.rawPrevResult);
  if (addresses.length === 0) return EMPTY_SUCCESS;
  const placed = addresses.map((a) => {
    const eni = deps.claims.multusEniOf(a.mac);
    if (eni === undefined) {
      throw new CniError(
        CniCode.notMultusEni,
        `interface ${a.interfaceName} has MAC ${a.mac}, which is the MAC of no Multus ENI of this node (Multus ENIs: ${deps.claims.multusMacs().join(", ") || "none"})`,
      );
    }
    return { ...a, eniId: eni.eniId };
  });
  const described = await deps.ec2.describeNetworkInterfaces({
    eniIds: [...new Set(placed.map((p) => p.eniId))],
  });
  for (const p of placed) {
    const eni = described.find((e) => e.eniId === p.eniId);
    const prefixes = [...(eni?.ipv4Prefixes ?? []), ...(eni?.ipv6Prefixes ?? [])];
    const held =
      eni !== undefined &&
      ([...eni.ipv4s, ...eni.ipv6s].includes(p.address) || coveringPrefix(prefixes, p.address) !== undefined);
    if (!held) {
      throw new CniError(
        CniCode.addressNotHeld,
        `EC2 no longer holds address ${p.address} on ENI ${p.eniId} (interface ${p.interfaceName})`,
        "another ENI took it (two pods with one address?); the bridge assigns it again at its next wave if the pod still carries it",
      );
    }
  }
  return EMPTY_SUCCESS;
}

/** The netconf's cniVersion for an error answer, when the stdin is JSON that names one. */
function versionOf(stdin: string): string | undefined {
  try {
    const json: unknown = JSON.parse(stdin);
    if (
      typeof json === "object" &&
      json !== null &&
      "cniVersion" in json &&
      typeof json.cniVersion === "string"
    )
      return json.cniVersion;
  } catch {
    // Not JSON: the error answer then speaks 1.0.0.
    return undefined;
  }
  return undefined;
}
