import { describe, expect, it } from "vitest";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import type { Placement, PlanAction } from "../src/eni/types.js";
import { RefusedAddresses } from "../src/ipam-whereabouts-bridge/waves/refused-addresses.js";
import type { Wave } from "../src/ipam-whereabouts-bridge/waves/wave-plan.js";

const NOW = 1_700_000_000_000;
const ENI = "eni-0a1";
const inUse = (address: string) =>
  new Ec2Error(
    {
      operation: "AssignPrivateIpAddresses",
      code: "InvalidParameterValue",
      requestId: undefined,
      eniId: ENI,
      kind: "refused",
    },
    `Address ${address} is in use.`,
  );
const assign4 = (...addresses: string[]): PlanAction => ({
  kind: "assign-ipv4",
  eniId: ENI,
  addresses,
  allowReassignment: true,
});
const placement = (address: string, pod: string): Placement =>
  ({ address, eniId: ENI, interfaceName: `cnf/${pod}/net1`, mac: "02:00:00:00:01:01" }) as Placement;
const wave = (actions: PlanAction[], placements: Placement[]): Wave => ({
  actions,
  placements,
  refusals: [],
});

/** Learned: 198.51.100.209 refused once (next try 1 to 1.25 s later). */
function learned(): RefusedAddresses {
  const r = new RefusedAddresses({ baseMs: 1_000, maxMs: 60_000 });
  r.learn([{ action: assign4("198.51.100.209"), error: inUse("198.51.100.209") }], NOW);
  return r;
}

describe("RefusedAddresses", () => {
  it("holds a refused address back from the batch before its time, refused with its Event's sentence", () => {
    const r = learned();
    const w = r.holdBack(
      wave(
        [assign4("198.51.100.196", "198.51.100.209")],
        [placement("198.51.100.196", "a"), placement("198.51.100.209", "b")],
      ),
      NOW + 500,
    );
    expect(w.actions).toEqual([assign4("198.51.100.196")]);
    expect(w.placements.map((p) => p.address)).toEqual(["198.51.100.196"]);
    expect(w.refusals).toEqual([
      {
        address: "198.51.100.209",
        interfaceName: "cnf/b/net1",
        reason: "ec2-refused",
        detail: `address 198.51.100.209 on cnf/b/net1 was not assigned to ENI ${ENI}: Address 198.51.100.209 is in use.`,
      },
    ]);
    const nextAt = r.nextAt() ?? 0;
    expect(nextAt).toBeGreaterThanOrEqual(NOW + 1_000);
    expect(nextAt).toBeLessThanOrEqual(NOW + 1_250);
  });

  it("asks a refused address again alone once due, right after the batch it came from", () => {
    const w = learned().holdBack(
      wave(
        [assign4("198.51.100.196", "198.51.100.209", "198.51.100.210")],
        [placement("198.51.100.209", "b")],
      ),
      NOW + 1_250,
    );
    expect(w.actions).toEqual([assign4("198.51.100.196", "198.51.100.210"), assign4("198.51.100.209")]);
    expect(w.refusals).toEqual([]);
    expect(w.placements.map((p) => p.address)).toEqual(["198.51.100.209"]);
  });

  it("backs off further with each refusal, up to the cap, and forgets what retain drops", () => {
    const r = new RefusedAddresses({ baseMs: 1_000, maxMs: 4_000 });
    const failed = [{ action: assign4("198.51.100.209"), error: inUse("198.51.100.209") }];
    const waits = [1, 2, 3, 4].map(() => {
      r.learn(failed, NOW);
      return (r.nextAt() ?? 0) - NOW;
    });
    expect(waits.map((ms) => Math.floor(ms / 1_000))).toEqual([1, 2, 4, 4]);
    // A refused batch of several addresses teaches nothing: only an address refused alone is known refused.
    r.learn([{ action: assign4("198.51.100.196", "198.51.100.197"), error: inUse("198.51.100.196") }], NOW);
    r.retain((key) => key !== `${ENI} 198.51.100.209`);
    expect(r.nextAt()).toBeUndefined();
  });

  it("drops the IPv6 move of an address it holds back", () => {
    const r = new RefusedAddresses();
    const assign6: PlanAction = { kind: "assign-ipv6", eniId: ENI, addresses: ["2001:db8:100:2::9"] };
    r.learn([{ action: assign6, error: inUse("2001:db8:100:2::9") }], NOW);
    const move: PlanAction = {
      kind: "unassign-ipv6",
      eniId: "eni-0b1",
      addresses: ["2001:db8:100:2::9"],
      reason: "move",
    };
    expect(r.holdBack(wave([move, assign6], []), NOW).actions).toEqual([]);
  });
});
