/**
 * A NAD whose spec.config loses its whereabouts range by a typo (issue 27: the keeper deleted the range's
 * subnet CIDR reservation within 7 s, with input_problems at 0, while a pod carried an address of it): the
 * bridge and its reservations loop in create mode, in process, against the simulator. No
 * DeleteSubnetCidrReservation while a pod carries an address of the range; the NAD reported (Event, metric);
 * and, for a NAD that reads but names no range, the reservation goes once no pod carries an address in it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../src/eni/process/clock.js";
import { createLogger } from "../src/eni/process/logger.js";
import { Bridge } from "../src/ipam-whereabouts-bridge/bridge.js";
import { createKubeApi } from "../src/ipam-whereabouts-bridge/kube/kube-client.js";
import {
  RESERVATION_TAG,
  RESERVATION_TAG_VALUE,
  ReservationKeeper,
} from "../src/ipam-whereabouts-bridge/reservations/reservation-keeper.js";
import { ReservationsLoop } from "../src/ipam-whereabouts-bridge/reservations/reservations-loop.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { PodEventReporter } from "../src/ipam-whereabouts-bridge/telemetry/pod-events.js";
import type { SimulatorHandle } from "../src/sim/index.js";
import { tempKubeconfig } from "./helpers/kube-proxy.js";
import { eventually, kubeEndpointOf, kubeWorld, NODE_A, startKubeSim } from "./helpers/kube-worlds.js";
import { ec2ApiFor, imdsFor } from "./helpers/sim-fixtures.js";

const RANGE = "198.51.100.192/27";
const INTERVAL_MS = 200;
const NAD_PATH = "/apis/k8s.cni.cncf.io/v1/namespaces/cnf/network-attachment-definitions/multus-ipvlan";
const IPVLAN = { cniVersion: "0.3.1", type: "ipvlan", master: "eth1" };

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Harness {
  readonly sim: SimulatorHandle;
  readonly metrics: BridgeMetrics;
  /** The reservations loop's /readyz lines. */
  lines(): string[];
  reserved(): string[];
  deletes(): number;
}

/**
 * The kube world (upf-0 on NODE_A carrying 198.51.100.193 of the NAD's range, no IPPool record: only its
 * network-status says so) with a bridge and its reservations loop in create mode, once the range is reserved.
 * `nadConfig` replaces the NAD's spec.config from the start; `before` runs before the bridge starts.
 */
async function start(
  nadConfig?: unknown,
  before: (sim: SimulatorHandle) => Promise<unknown> = async () => undefined,
): Promise<Harness> {
  const nads =
    nadConfig === undefined
      ? {}
      : { networkAttachmentDefinitions: [{ namespace: "cnf", name: "multus-ipvlan", config: nadConfig }] };
  const sim = await startKubeSim(kubeWorld({ ipPools: [], ...nads }));
  cleanups.push(() => sim.close());
  await before(sim);
  const kubeconfig = await tempKubeconfig(kubeEndpointOf(sim));
  cleanups.push(kubeconfig.remove);
  const logger = createLogger("silent");
  const kube = createKubeApi({
    kubeconfig: kubeconfig.path,
    clock: systemClock,
    logger,
    watchTimeoutSeconds: 300,
    requestTimeoutMs: 5_000,
    restartBaseMs: 50,
    restartMaxMs: 400,
    component: "multus-ipmgr-bridge",
    host: NODE_A,
  });
  cleanups.push(() => kube.close());
  const metrics = new BridgeMetrics();
  const events = new PodEventReporter(kube, systemClock, logger, metrics, {
    repeatIntervalMs: 60_000,
    perSecond: 100,
    burst: 100,
  });
  const ec2 = ec2ApiFor(sim);
  const bridge = new Bridge(
    {
      kube,
      imds: imdsFor(sim, "i-0a", { clock: systemClock }),
      ec2,
      clock: systemClock,
      logger,
      metrics,
      events,
    },
    {
      nodeName: NODE_A,
      allowedCidrs: [RANGE],
      deviceIndexes: [],
      waveWindowMs: 50,
      releaseGraceMs: 500,
      releaseDryRun: false,
      resyncIntervalMs: 60_000,
      retry: { baseMs: 50, maxMs: 500 },
      recentMemoryMs: 2_000,
      addressesPerEni: 50,
      watchSilenceMs: 60_000,
    },
  );
  const keeper = new ReservationKeeper(
    { kube, ec2, clock: systemClock, logger, metrics },
    {
      mode: "create",
      leaseNamespace: "kube-system",
      leaseName: "multus-ipmgr-reservations",
      leaseDurationMs: 60_000,
      identity: "bridge-a",
      vpcId: undefined,
    },
  );
  const reservations = new ReservationsLoop(keeper, bridge, {
    intervalMs: INTERVAL_MS,
    clock: systemClock,
    logger,
  });
  await bridge.start();
  const stop = new AbortController();
  const loops = Promise.all([bridge.run(stop.signal), reservations.run(stop.signal)]);
  cleanups.push(async () => {
    stop.abort();
    await loops;
    await events.flush();
  });
  const reserved = () => sim.state().reservations.map((r) => r.cidr);
  await eventually(() => reserved().includes(RANGE), `${RANGE} reserved`);
  await eventually(() => bridge.lastDesired !== undefined, "a wave run");
  return {
    sim,
    metrics,
    lines: () => reservations.lines(),
    reserved,
    deletes: () => sim.calls().filter((c) => c.action === "DeleteSubnetCidrReservation").length,
  };
}

async function patchNadConfig(sim: SimulatorHandle, config: string): Promise<void> {
  const response = await fetch(`${kubeEndpointOf(sim)}${NAD_PATH}`, {
    method: "PATCH",
    headers: { "content-type": "application/merge-patch+json" },
    body: JSON.stringify({ spec: { config } }),
  });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
}

const nadProblems = async (h: Harness): Promise<boolean> =>
  (await h.metrics.text())
    .split("\n")
    .includes('multus_ipmgr_bridge_input_problems{kind="NetworkAttachmentDefinition"} 1');

const nadEvent = (h: Harness): boolean =>
  (h.sim.state().kubernetes?.events ?? []).some((e) => {
    const event = e as { reason?: string; involvedObject?: { kind?: string; name?: string } };
    return (
      event.reason === "NetworkConfigUnreadable" &&
      event.involvedObject?.kind === "NetworkAttachmentDefinition" &&
      event.involvedObject.name === "multus-ipvlan"
    );
  });

describe("a NAD whose whereabouts range is lost to a typo", () => {
  it.each<[string, unknown, "goes" | "stays"]>([
    ["spec.config empty", "", "goes"],
    ['"type": "whereabout"', { ...IPVLAN, ipam: { type: "whereabout", range: RANGE } }, "goes"],
    ["the ipam block removed", IPVLAN, "goes"],
    [
      "ipRanges spelt ipRange",
      { ...IPVLAN, ipam: { type: "whereabouts", ipRange: [{ range: RANGE }] } },
      "stays",
    ],
  ])(
    "with %s: no DeleteSubnetCidrReservation while a pod carries an address of the range, and the NAD reported",
    async (_what, config, afterPods) => {
      const h = await start();
      await patchNadConfig(h.sim, typeof config === "string" ? config : JSON.stringify(config));
      await eventually(() => nadProblems(h), "input_problems counting the NAD");
      await eventually(() => nadEvent(h), "a NetworkConfigUnreadable Event on the NAD");
      // Ten reservation passes on: a wait to show that nothing happens.
      await sleep(INTERVAL_MS * 10);
      expect(h.deletes()).toBe(0);
      expect(h.reserved()).toContain(RANGE);

      // The pod gone: a NAD that reads but names no range has changed for good; one that cannot be read has not.
      h.sim.kubernetes?.deletePod("cnf", "upf-0", 0);
      if (afterPods === "goes") {
        await eventually(() => !h.reserved().includes(RANGE), `${RANGE} no longer reserved`);
        expect(h.deletes()).toBe(1);
        await eventually(async () => !(await nadProblems(h)), "the NAD no longer counted as a problem");
      } else {
        await sleep(INTERVAL_MS * 10);
        expect(h.deletes()).toBe(0);
        expect(h.reserved()).toContain(RANGE);
      }
    },
  );
});

describe("a bridge started after a typo took the NAD's range", () => {
  it("deletes no reservation of ours over the range while a pod carries an address in it, though it never saw the range", async () => {
    const h = await start({ ...IPVLAN, ipam: { type: "whereabout", range: RANGE } }, (sim) =>
      ec2ApiFor(sim).createSubnetCidrReservation(
        "subnet-0multus",
        RANGE,
        "explicit",
        `multus-ipmgr: whereabouts range ${RANGE} of NAD cnf/multus-ipvlan`,
        { [RESERVATION_TAG]: RESERVATION_TAG_VALUE },
      ),
    );
    await eventually(
      () => h.lines().some((l) => l.includes("a pod carries 198.51.100.193 in it")),
      "the kept reservation on /readyz",
    );
    // Ten reservation passes on: a wait to show that nothing happens.
    await sleep(INTERVAL_MS * 10);
    expect(h.deletes()).toBe(0);
    expect(h.reserved()).toEqual([RANGE]);

    h.sim.kubernetes?.deletePod("cnf", "upf-0", 0);
    await eventually(() => h.reserved().length === 0, `${RANGE} no longer reserved`);
    expect(h.deletes()).toBe(1);
  });
});
