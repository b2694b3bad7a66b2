/**
 * The links agent's pass, pure (src/ipam-whereabouts-bridge/links/link-pass.ts): what it does for a given IMDS
 * view and link list, case by case, then as properties over generated nodes.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LinkAddress, NodeLink } from "../src/ipam-whereabouts-bridge/links/link-ops.js";
import {
  type EniSlot,
  isKeptAddress,
  type LinkNetwork,
  type LinkPlan,
  type LinkStep,
  networkdFileName,
  networkdFileText,
  type PassOptions,
  planLinks,
} from "../src/ipam-whereabouts-bridge/links/link-pass.js";

const MAC = "02:00:00:00:0b:01";
const OTHER_MAC = "02:00:00:00:0c:01";
const NET: LinkNetwork = { name: "multus1", deviceIndex: 1, networkCardIndex: 0, mtu: 9001 };
const ENI: EniSlot = { mac: MAC, deviceIndex: 1, networkCardIndex: 0 };
const NETWORKD_FILE = networkdFileName("multus1");
const OFF: PassOptions = { networkd: false, networkdFiles: new Map() };
const ON: PassOptions = { networkd: true, networkdFiles: new Map() };
const WRITTEN: PassOptions = {
  networkd: true,
  networkdFiles: new Map([[NETWORKD_FILE, networkdFileText("multus1", MAC)]]),
};

const v4 = (cidr: string): LinkAddress => {
  const [local = "", length = "32"] = cidr.split("/");
  return { family: "inet", local, prefixLength: Number(length), scope: "global" };
};
const v6 = (cidr: string, scope = "global"): LinkAddress => {
  const [local = "", length = "128"] = cidr.split("/");
  return { family: "inet6", local, prefixLength: Number(length), scope };
};
const LINK_LOCAL = v6("fe80::ff:fe00:b01/64", "link");

function link(name: string, overrides: Partial<NodeLink> = {}): NodeLink {
  return { name, mac: MAC, mtu: 1500, up: false, addresses: [], rpFilter: 1, ...overrides };
}
const READY_LINK = link("multus1", { mtu: 9001, up: true, addresses: [LINK_LOCAL], rpFilter: 0 });
const ETH0 = link("eth0", { mac: "02:00:00:00:00:01", up: true, addresses: [v4("192.0.2.10/24")] });

function only(plans: LinkPlan[]): LinkPlan {
  expect(plans).toHaveLength(1);
  return plans[0] as LinkPlan;
}

describe("planLinks, case by case", () => {
  it("waits, with no step, while IMDS shows no ENI at the network's slot", () => {
    const plan = only(planLinks([NET], [], [ETH0], ON));
    expect(plan.steps).toEqual([]);
    expect(plan.report).toEqual({
      network: "multus1",
      deviceIndex: 1,
      networkCardIndex: 0,
      state: "waiting",
      detail:
        "IMDS shows no ENI at network card 0, device 1 yet (the bridge attaches it; IMDS follows EC2 within seconds)",
    });
  });

  it("does not take an ENI of another network card for the network's slot", () => {
    const plan = only(planLinks([NET], [{ ...ENI, networkCardIndex: 1 }], [link("ens6")], OFF));
    expect(plan.report.state).toBe("waiting");
    expect(plan.steps).toEqual([]);
  });

  it("writes the networkd file as soon as IMDS gives the MAC, and waits for the link", () => {
    const plan = only(planLinks([NET], [ENI], [ETH0], ON));
    expect(plan.steps).toEqual([
      { kind: "networkd", file: "10-multus-ipmgr-multus1.network", text: networkdFileText("multus1", MAC) },
    ]);
    expect(plan.report).toMatchObject({ mac: MAC, state: "waiting" });
    expect(plan.report.detail).toBe(
      `no link in /sys/class/net has the MAC ${MAC} of the ENI at network card 0, device 1 yet (the kernel adds it once the attachment completes)`,
    );
  });

  it("writes a networkd file that matches the MAC and says Unmanaged=yes", () => {
    expect(networkdFileText("multus1", MAC)).toBe(
      "# Written by multus-ipmgr links for the Multus network multus1: its link is the links agent's, not systemd-networkd's.\n" +
        `[Match]\nMACAddress=${MAC}\n\n[Link]\nUnmanaged=yes\n`,
    );
  });

  it("renames the kernel's ens6 (down first), sets MTU, up, removes every address but IPv6 link-local, rp_filter 0", () => {
    const ens6 = link("ens6", {
      up: true,
      addresses: [v4("203.0.113.5/32"), v6("2001:db8::5/128"), LINK_LOCAL],
    });
    const plan = only(planLinks([NET], [ENI], [ETH0, ens6], WRITTEN));
    expect(plan.steps).toEqual<LinkStep[]>([
      { kind: "down", link: "ens6" },
      { kind: "rename", from: "ens6", to: "multus1" },
      { kind: "mtu", link: "multus1", mtu: 9001 },
      { kind: "up", link: "multus1" },
      { kind: "delete-address", link: "multus1", cidr: "203.0.113.5/32" },
      { kind: "delete-address", link: "multus1", cidr: "2001:db8::5/128" },
      { kind: "rp-filter", link: "multus1" },
    ]);
    expect(plan.report).toEqual({
      network: "multus1",
      deviceIndex: 1,
      networkCardIndex: 0,
      mac: MAC,
      state: "ready",
      detail: "multus1: MTU 9001, up, no address, rp_filter 0",
    });
  });

  it("renames a link that is down without setting it down", () => {
    const plan = only(planLinks([NET], [ENI], [link("ens6", { mtu: 9001, rpFilter: 0 })], OFF));
    expect(plan.steps).toEqual([
      { kind: "rename", from: "ens6", to: "multus1" },
      { kind: "up", link: "multus1" },
    ]);
  });

  it("takes no step for a link already named, sized, up, bare and unfiltered", () => {
    const plan = only(planLinks([NET], [ENI], [ETH0, READY_LINK], WRITTEN));
    expect(plan.steps).toEqual([]);
    expect(plan.report.state).toBe("ready");
  });

  it("only sets up a link that is right but down", () => {
    const plan = only(planLinks([NET], [ENI], [{ ...READY_LINK, up: false }], WRITTEN));
    expect(plan.steps).toEqual([{ kind: "up", link: "multus1" }]);
  });

  it("writes the networkd file again when its text differs, and none when networkd is off", () => {
    const stale: PassOptions = { networkd: true, networkdFiles: new Map([[NETWORKD_FILE, "[Match]\n"]]) };
    expect(only(planLinks([NET], [ENI], [READY_LINK], stale)).steps.map((s) => s.kind)).toEqual(["networkd"]);
    expect(only(planLinks([NET], [ENI], [READY_LINK], OFF)).steps).toEqual([]);
  });

  it("fails, touching no link, when the network's name is taken by another link", () => {
    const taken = link("multus1", { mac: OTHER_MAC, up: true });
    const plan = only(planLinks([NET], [ENI], [link("ens6"), taken], WRITTEN));
    expect(plan.steps).toEqual([]);
    expect(plan.report).toMatchObject({ state: "failed", mac: MAC });
    expect(plan.report.detail).toBe(
      `the ENI's link ens6 cannot be renamed to multus1: another link (MAC ${OTHER_MAC}) has that name; rename or remove it, or give the network another name in IPMGR_BRIDGE_ATTACH_NETWORKS`,
    );
  });

  it("fails, touching no link, when several links carry the ENI's MAC and none has the network's name", () => {
    const plan = only(planLinks([NET], [ENI], [link("ens6"), link("ens6.100")], WRITTEN));
    expect(plan.steps).toEqual([]);
    expect(plan.report.detail).toBe(
      `the links ens6, ens6.100 all have the MAC ${MAC} of the ENI at network card 0, device 1; rename the one that is the ENI to multus1, or remove the others`,
    );
  });

  it("takes the link with the network's name among several with the ENI's MAC (a VLAN on it shares the MAC)", () => {
    const plan = only(planLinks([NET], [ENI], [READY_LINK, link("multus1.100", { up: true })], WRITTEN));
    expect(plan.steps).toEqual([]);
    expect(plan.report.state).toBe("ready");
  });

  it("keeps IPv6 link-local only", () => {
    expect(isKeptAddress(LINK_LOCAL)).toBe(true);
    expect(isKeptAddress(v6("febf::1/64", "link"))).toBe(true);
    expect(isKeptAddress(v6("fec0::1/64"))).toBe(false);
    expect(isKeptAddress(v4("169.254.1.1/16"))).toBe(false);
    expect(isKeptAddress(v6("2001:db8::1/64"))).toBe(false);
  });

  it("plans each network apart, in the order given", () => {
    const net2: LinkNetwork = { name: "multus2", deviceIndex: 2, networkCardIndex: 0, mtu: 1500 };
    const plans = planLinks([NET, net2], [ENI], [READY_LINK], OFF);
    expect(plans.map((p) => [p.report.network, p.report.state])).toEqual([
      ["multus1", "ready"],
      ["multus2", "waiting"],
    ]);
  });
});

/** Applies steps to a model of the node, as the kernel and the filesystem would. */
function apply(links: NodeLink[], files: Map<string, string>, steps: readonly LinkStep[]): NodeLink[] {
  let next = links;
  const change = (name: string, f: (l: NodeLink) => NodeLink): void => {
    expect(
      next.some((l) => l.name === name),
      `step on a link that does not exist: ${name}`,
    ).toBe(true);
    next = next.map((l) => (l.name === name ? f(l) : l));
  };
  for (const step of steps) {
    switch (step.kind) {
      case "networkd":
        files.set(step.file, step.text);
        break;
      case "down":
        change(step.link, (l) => ({ ...l, up: false }));
        break;
      case "rename":
        expect(next.find((l) => l.name === step.from)?.up, "renamed while up").toBe(false);
        expect(
          next.some((l) => l.name === step.to),
          "renamed onto a taken name",
        ).toBe(false);
        change(step.from, (l) => ({ ...l, name: step.to }));
        break;
      case "mtu":
        change(step.link, (l) => ({ ...l, mtu: step.mtu }));
        break;
      case "up":
        change(step.link, (l) => ({ ...l, up: true }));
        break;
      case "delete-address":
        change(step.link, (l) => ({
          ...l,
          addresses: l.addresses.filter((a) => `${a.local}/${a.prefixLength}` !== step.cidr),
        }));
        break;
      case "rp-filter":
        change(step.link, (l) => ({ ...l, rpFilter: 0 }));
        break;
    }
  }
  return next;
}

const NAMES = ["multus1", "multus2", "eth1", "ens6", "ens7", "ens8", "eth0", "vlan9"] as const;
const MACS = ["02:00:00:00:0b:01", "02:00:00:00:0b:02", "02:00:00:00:0b:03", "02:00:00:00:00:01"] as const;
const addressArb = fc.oneof(
  fc.constant(v4("203.0.113.5/32")),
  fc.constant(v4("198.51.100.9/24")),
  fc.constant(v6("2001:db8::9/64")),
  fc.constant(LINK_LOCAL),
);
const nodeArb = fc
  .record({
    networks: fc.uniqueArray(
      fc.record({
        name: fc.constantFrom("multus1", "multus2", "eth1"),
        deviceIndex: fc.integer({ min: 1, max: 3 }),
      }),
      { minLength: 1, maxLength: 3, selector: (n) => n.name },
    ),
    enis: fc.uniqueArray(
      fc.record({ mac: fc.constantFrom(...MACS.slice(0, 3)), deviceIndex: fc.integer({ min: 1, max: 3 }) }),
      { maxLength: 3, selector: (e) => e.mac },
    ),
    links: fc.uniqueArray(
      fc.record({
        name: fc.constantFrom(...NAMES),
        mac: fc.constantFrom(...MACS),
        mtu: fc.constantFrom(1500, 9001),
        up: fc.boolean(),
        addresses: fc.uniqueArray(addressArb, { maxLength: 3, selector: (a) => a.local }),
        rpFilter: fc.constantFrom(0, 1, 2, undefined),
      }),
      { maxLength: 6, selector: (l) => l.name },
    ),
    networkd: fc.boolean(),
  })
  .map(({ networks, enis, links, networkd }) => ({
    networks: networks
      .filter((n, i) => networks.findIndex((m) => m.deviceIndex === n.deviceIndex) === i)
      .map((n): LinkNetwork => ({ ...n, networkCardIndex: 0, mtu: 9001 })),
    enis: enis
      .filter((e, i) => enis.findIndex((f) => f.deviceIndex === e.deviceIndex) === i)
      .map((e): EniSlot => ({ ...e, networkCardIndex: 0 })),
    links: links as NodeLink[],
    networkd,
  }));

describe("planLinks, properties", () => {
  it("touches no link but the one that carries a network's ENI MAC", () => {
    fc.assert(
      fc.property(nodeArb, ({ networks, enis, links, networkd }) => {
        const plans = planLinks(networks, enis, links, { networkd, networkdFiles: new Map() });
        plans.forEach((plan) => {
          const mac = plan.report.mac;
          for (const step of plan.steps) {
            if (step.kind === "networkd") continue;
            const target = step.kind === "rename" ? step.from : step.link;
            const before = links.find((l) => l.name === target);
            // The link is the ENI's, by its old name, or the name it was just given.
            expect(before === undefined ? target === plan.report.network : before.mac === mac).toBe(true);
          }
        });
      }),
    );
  });

  it("never removes an IPv6 link-local address, and leaves no other address on a ready link", () => {
    fc.assert(
      fc.property(nodeArb, ({ networks, enis, links, networkd }) => {
        const files = new Map<string, string>();
        const plans = planLinks(networks, enis, links, { networkd, networkdFiles: files });
        for (const plan of plans) {
          for (const step of plan.steps) {
            if (step.kind === "delete-address") expect(step.cidr.startsWith("fe80:")).toBe(false);
          }
        }
      }),
    );
  });

  it("a pass applied leaves every ready network's link named, sized, up, bare, rp_filter 0; the next pass has no step", () => {
    fc.assert(
      fc.property(nodeArb, ({ networks, enis, links, networkd }) => {
        const files = new Map<string, string>();
        const first = planLinks(networks, enis, links, { networkd, networkdFiles: files });
        let after = links;
        for (const plan of first) after = apply(after, files, plan.steps);
        for (const plan of first.filter((p) => p.report.state === "ready")) {
          const network = networks.find((n) => n.name === plan.report.network);
          const l = after.find((x) => x.name === plan.report.network);
          expect(l).toMatchObject({ mac: plan.report.mac, mtu: network?.mtu, up: true, rpFilter: 0 });
          expect(l?.addresses.every(isKeptAddress)).toBe(true);
        }
        const second = planLinks(networks, enis, after, { networkd, networkdFiles: files });
        // A network whose link a sibling's rename moved may change (two networks' names swapped), never a ready one.
        for (const [i, plan] of second.entries()) {
          if (first[i]?.report.state === "ready") {
            expect(plan.steps).toEqual([]);
            expect(plan.report).toEqual(first[i]?.report);
          }
        }
      }),
    );
  });
});
