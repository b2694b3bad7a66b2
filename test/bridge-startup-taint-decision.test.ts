/**
 * The startup taint's decision (src/ipam-whereabouts-bridge/startup-taint/taint-decision.ts), pure: the
 * cases one by one, and properties: it never takes the taint off while a network is not ready, and puts it
 * back when a network it needs is lost.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LinkReport, LinkStatus } from "../src/ipam-whereabouts-bridge/node/link-status.js";
import {
  decideTaint,
  LINK_STATUS_STALE_MS,
  type NetworkAttachReport,
  type TaintInputs,
} from "../src/ipam-whereabouts-bridge/startup-taint/taint-decision.js";

const NOW = Date.parse("2026-11-27T10:00:10.000Z");
const KEY = "multus-ipmgr.io/enis-not-ready";

function link(network: string, state: LinkReport["state"] = "ready", mac = "02:00:00:00:01:01"): LinkReport {
  return {
    network,
    deviceIndex: 1,
    networkCardIndex: 0,
    mac,
    state,
    detail: state === "ready" ? "up" : "its link has not appeared in /sys/class/net",
  };
}
function status(links: LinkReport[], ageMs = 500): LinkStatus {
  return { version: 1, writtenAt: new Date(NOW - ageMs).toISOString(), links };
}
function input(over: Partial<TaintInputs> = {}): TaintInputs {
  return {
    networks: [{ network: "multus0", attached: true, mac: "02:00:00:00:01:01" }],
    links: status([link("multus0")]),
    slicesHeld: undefined,
    taintOn: true,
    taintKey: KEY,
    now: NOW,
    startedAt: NOW - 60_000,
    staleAfterMs: LINK_STATUS_STALE_MS,
    ...over,
  };
}

describe("decideTaint", () => {
  const cases: [string, Partial<TaintInputs>, string, string][] = [
    [
      "every network attached and its link ready: the taint comes off",
      {},
      "remove",
      `every network's ENI is attached and its link ready (multus0): the taint ${KEY} comes off`,
    ],
    [
      "in prefix mode, the slices held too",
      { slicesHeld: true },
      "remove",
      `every network's ENI is attached and its link ready (multus0), and the node's slices are held: the taint ${KEY} comes off`,
    ],
    [
      "ready with the taint off: nothing to do",
      { taintOn: false },
      "keep",
      `every network is ready (multus0); the taint ${KEY} is off`,
    ],
    [
      "the ENI not attached yet: it stays on",
      { networks: [{ network: "multus0", attached: false }] },
      "keep",
      `the taint ${KEY} stays on: network multus0: its ENI is not attached (EC2)`,
    ],
    [
      "attach mode has not looked yet",
      { networks: undefined },
      "keep",
      `the taint ${KEY} stays on: attach mode has not read the instance's ENIs from EC2 yet`,
    ],
    [
      "the link waiting",
      { links: status([link("multus0", "waiting")]) },
      "keep",
      `the taint ${KEY} stays on: network multus0: its link is waiting (its link has not appeared in /sys/class/net)`,
    ],
    [
      "the link not reported",
      { links: status([link("other")]) },
      "keep",
      `the taint ${KEY} stays on: network multus0: the links agent reports no link`,
    ],
    [
      "a stale status file is as none",
      { links: status([link("multus0")], 6_001) },
      "keep",
      `the taint ${KEY} stays on: the links agent's status file is 6001 ms old, stale after 6000 ms (the agent is not running)`,
    ],
    [
      "the link of another MAC",
      { links: status([link("multus0", "ready", "02:00:00:00:09:09")]) },
      "keep",
      `the taint ${KEY} stays on: network multus0: its link has MAC 02:00:00:00:09:09, not the attached ENI's 02:00:00:00:01:01`,
    ],
    [
      "prefix mode's slices not held",
      { slicesHeld: false },
      "keep",
      `the taint ${KEY} stays on: prefix mode: the node's slices are not held as prefixes yet`,
    ],
    [
      "a ready network lost (ENI detached): the taint goes back on",
      { taintOn: false, networks: [{ network: "multus0", attached: false }] },
      "add",
      `the taint ${KEY} goes back on: network multus0: its ENI is not attached (EC2)`,
    ],
    [
      "the link lost: back on",
      { taintOn: false, links: status([link("multus0", "failed")]) },
      "add",
      `the taint ${KEY} goes back on: network multus0: its link is failed (its link has not appeared in /sys/class/net)`,
    ],
    [
      "the agent stopped writing: back on",
      { taintOn: false, links: status([link("multus0")], 10_000) },
      "add",
      `the taint ${KEY} goes back on: the links agent's status file is 10000 ms old, stale after 6000 ms (the agent is not running)`,
    ],
    [
      "a bridge just started on a healthy node, the agent's first report not come: waits, taint off",
      { taintOn: false, links: undefined, startedAt: NOW - 1_000 },
      "keep",
      `the taint ${KEY} is off and stays off while waiting: the links agent has not written its status file yet`,
    ],
    [
      "no report long after the start: back on",
      { taintOn: false, links: undefined, startedAt: NOW - 7_000 },
      "add",
      `the taint ${KEY} goes back on: the links agent's status file is absent or unreadable after 7000 ms (the agent is not running)`,
    ],
    [
      "attach mode not looked yet, taint off: waits",
      { taintOn: false, networks: undefined },
      "keep",
      `the taint ${KEY} is off and stays off while waiting: attach mode has not read the instance's ENIs from EC2 yet`,
    ],
    [
      "two problems, both named",
      {
        networks: [
          { network: "multus0", attached: true },
          { network: "multus1", attached: false },
        ],
        links: status([link("multus0", "waiting")]),
      },
      "keep",
      `the taint ${KEY} stays on: network multus1: its ENI is not attached (EC2); network multus0: its link is waiting (its link has not appeared in /sys/class/net)`,
    ],
  ];
  it.each(cases)("%s", (_, over, action, reason) => {
    expect(decideTaint(input(over))).toMatchObject({ action, reason });
  });

  const name = fc.constantFrom("multus0", "multus1", "multus2");
  const arbitraryInputs = fc.record({
    networks: fc.option(
      fc.uniqueArray(
        fc.record({
          network: name,
          attached: fc.boolean(),
          mac: fc.constantFrom("02:00:00:00:01:01", "02:00:00:00:01:02"),
        }),
        { selector: (n) => n.network, maxLength: 3 },
      ),
      { nil: undefined },
    ),
    links: fc.option(
      fc.record({
        links: fc.array(
          fc.record({
            network: name,
            state: fc.constantFrom("ready" as const, "waiting" as const, "failed" as const),
            mac: fc.constantFrom("02:00:00:00:01:01", "02:00:00:00:01:02"),
          }),
          { maxLength: 4 },
        ),
        ageMs: fc.integer({ min: -1_000, max: 20_000 }),
      }),
      { nil: undefined },
    ),
    slicesHeld: fc.constantFrom(true, false, undefined),
    taintOn: fc.boolean(),
    sinceStartMs: fc.integer({ min: 0, max: 20_000 }),
  });
  const toInputs = (a: typeof arbitraryInputs extends fc.Arbitrary<infer T> ? T : never): TaintInputs =>
    input({
      networks: a.networks,
      links:
        a.links === undefined
          ? undefined
          : status(
              a.links.links.map((l) => link(l.network, l.state, l.mac)),
              a.links.ageMs,
            ),
      slicesHeld: a.slicesHeld,
      taintOn: a.taintOn,
      startedAt: NOW - a.sinceStartMs,
    });
  /** Every network's ENI attached and its link ready, in a fresh report, the slices held when asked. */
  const allReady = (i: TaintInputs): boolean =>
    i.networks !== undefined &&
    i.slicesHeld !== false &&
    i.networks.every((n: NetworkAttachReport) => {
      const fresh = i.links !== undefined && NOW - Date.parse(i.links.writtenAt) <= LINK_STATUS_STALE_MS;
      const l = fresh ? i.links?.links.find((x) => x.network === n.network) : undefined;
      return n.attached && l?.state === "ready" && l.mac === n.mac;
    });

  it("never takes the taint off while a network is not ready", () => {
    fc.assert(
      fc.property(arbitraryInputs, (a) => {
        const i = toInputs(a);
        const d = decideTaint(i);
        if (d.action === "remove") expect(allReady(i)).toBe(true);
        if (!allReady(i)) expect(d.action).not.toBe("remove");
      }),
    );
  });

  it("puts the taint back when an attached network's ENI or link is lost", () => {
    fc.assert(
      fc.property(arbitraryInputs, (a) => {
        const i = toInputs({ ...a, taintOn: false });
        const lost =
          i.networks !== undefined &&
          (i.networks.some((n) => !n.attached) ||
            (i.links !== undefined &&
              NOW - Date.parse(i.links.writtenAt) <= LINK_STATUS_STALE_MS &&
              i.networks.some(
                (n) => n.attached && i.links?.links.find((l) => l.network === n.network)?.state !== "ready",
              )));
        if (lost) expect(decideTaint(i).action).toBe("add");
      }),
    );
  });

  it("changes only what differs: off when ready and on, on when lost and off, else nothing", () => {
    fc.assert(
      fc.property(arbitraryInputs, (a) => {
        const d = decideTaint(toInputs(a));
        if (d.action === "remove") expect(a.taintOn).toBe(true);
        if (d.action === "add") expect(a.taintOn).toBe(false);
        expect(d.ready).toBe(allReady(toInputs(a)));
      }),
    );
  });
});
