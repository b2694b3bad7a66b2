import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AttachNetwork,
  AttachNetworksProblem,
  parseAttachNetworks,
} from "../src/eni/attach-networks.js";
import { ConfigError } from "../src/eni/errors/config-error.js";
import { ExitCode } from "../src/eni/errors/exit-codes.js";
import { loadBridgeConfig } from "../src/ipam-whereabouts-bridge/settings.js";

const one = {
  name: "eth1",
  deviceIndex: 1,
  subnet: { byZone: { "us-west-2a": "subnet-0a1b" } },
  securityGroups: { ids: ["sg-0c2d"] },
};

function problemOf(value: unknown): string {
  const parsed = parseAttachNetworks(typeof value === "string" ? value : JSON.stringify(value));
  if (!(parsed instanceof AttachNetworksProblem))
    throw new Error(`expected a problem, got ${JSON.stringify(parsed)}`);
  return parsed.problem;
}

describe("IPMGR_BRIDGE_ATTACH_NETWORKS", () => {
  it("fills the defaults: card 0, MTU 9001, SourceDestCheck off", () => {
    expect(parseAttachNetworks(JSON.stringify([one]))).toEqual([
      { ...one, networkCardIndex: 0, mtu: 9001, sourceDestCheck: false },
    ]);
  });

  it("takes subnets and security groups by tags", () => {
    const parsed = parseAttachNetworks(
      JSON.stringify([
        { ...one, subnet: { tags: { multus: "net1" } }, securityGroups: { tags: { multus: "sg" } } },
      ]),
    ) as AttachNetwork[];
    expect(parsed[0]?.subnet).toEqual({ tags: { multus: "net1" } });
    expect(parsed[0]?.securityGroups).toEqual({ tags: { multus: "sg" } });
  });

  it.each([
    ["not JSON", "[{", /is not JSON.*write a list like/],
    ["an empty list", [], /the list/],
    [
      "the primary ENI's slot",
      [{ ...one, deviceIndex: 0 }],
      /network 0 \(eth1\): device 0 of card 0 is the primary ENI/,
    ],
    ["a name given twice", [one, { ...one, deviceIndex: 2 }], /network 1 \(eth1\): the name is given twice/],
    [
      "a slot given twice",
      [one, { ...one, name: "eth2" }],
      /network 1 \(eth2\): card 0 device 1 is given twice/,
    ],
    [
      "a name too long",
      [{ ...one, name: "a-very-long-ifname" }],
      /^0\.name: expected a Linux interface name/,
    ],
    ["a subnet that is no id", [{ ...one, subnet: { byZone: { a: "net-1" } } }], /expected a subnet id/],
    [
      "a security group that is no id",
      [{ ...one, securityGroups: { ids: ["default"] } }],
      /security group id/,
    ],
    ["an unknown key", [{ ...one, mtus: 1500 }], /^0/],
    ["an MTU too large", [{ ...one, mtu: 9216 }], /^0\.mtu/],
  ])("refuses %s, naming where and the fix", (_name, value, message) => {
    expect(problemOf(value)).toMatch(message);
  });

  it("device 0 of a second card is allowed (a card's first ENI)", () => {
    const parsed = parseAttachNetworks(JSON.stringify([{ ...one, deviceIndex: 0, networkCardIndex: 1 }]));
    expect(parsed).not.toBeInstanceOf(AttachNetworksProblem);
  });

  it("accepts every list of distinct names and slots, and keeps their order", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.integer({ min: 1, max: 31 }), fc.integer({ min: 0, max: 15 })), {
          minLength: 1,
          maxLength: 15,
          selector: ([device, card]) => `${card}/${device}`,
        }),
        (slots) => {
          const networks = slots.map(([device, card], i) => ({
            ...one,
            name: `net${i}`,
            deviceIndex: device,
            networkCardIndex: card,
          }));
          const parsed = parseAttachNetworks(JSON.stringify(networks)) as AttachNetwork[];
          expect(parsed.map((n) => n.name)).toEqual(networks.map((n) => n.name));
        },
      ),
    );
  });
});

describe("attach mode's settings", () => {
  const base = { NODE_NAME: "node-a", IPMGR_ALLOWED_CIDRS: "192.0.2.0/24" };
  const load = (env: Record<string, string>) => () => loadBridgeConfig([], { ...base, ...env });

  it("attach mode needs its networks and the cluster's name", () => {
    expect(load({ IPMGR_BRIDGE_ATTACH: "on" })).toThrow(
      /IPMGR_BRIDGE_ATTACH_NETWORKS=\(unset\): IPMGR_BRIDGE_ATTACH=on needs the networks/,
    );
    expect(load({ IPMGR_BRIDGE_ATTACH: "on", IPMGR_BRIDGE_ATTACH_NETWORKS: JSON.stringify([one]) })).toThrow(
      /IPMGR_CLUSTER_NAME=\(unset\): IPMGR_BRIDGE_ATTACH=on needs the cluster's name/,
    );
    expect(
      load({
        IPMGR_BRIDGE_ATTACH: "on",
        IPMGR_BRIDGE_ATTACH_NETWORKS: JSON.stringify([one]),
        IPMGR_CLUSTER_NAME: "prod 1",
      }),
    ).toThrow(/IPMGR_CLUSTER_NAME="prod 1"/);
    const config = load({
      IPMGR_BRIDGE_ATTACH: "on",
      IPMGR_BRIDGE_ATTACH_NETWORKS: JSON.stringify([one]),
      IPMGR_CLUSTER_NAME: "prod-1",
    })();
    expect(config.attach).toBe("on");
  });

  it("refuses networks that do not parse even with attach mode off, with the exit code of a configuration error", () => {
    let error: unknown;
    try {
      load({ IPMGR_BRIDGE_ATTACH_NETWORKS: "[{" })();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe("IPMGR_BRIDGE_ATTACH_NETWORKS");
    expect((error as ConfigError).exitCode).toBe(ExitCode.config);
  });
});

describe("IPMGR_BRIDGE_STARTUP_TAINT", () => {
  const env = { NODE_NAME: "node-a", IPMGR_ALLOWED_CIDRS: "192.0.2.0/24" };
  it("defaults to multus-ipmgr.io/enis-not-ready, and an empty value means no taint handling", () => {
    expect(loadBridgeConfig([], env).startupTaint).toBe("multus-ipmgr.io/enis-not-ready");
    expect(loadBridgeConfig([], { ...env, IPMGR_BRIDGE_STARTUP_TAINT: "" }).startupTaint).toBe("");
  });
});
