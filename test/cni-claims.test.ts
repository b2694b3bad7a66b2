import { describe, expect, it } from "vitest";
import type { EniState } from "../src/eni/types.js";
import { CniClaims } from "../src/ipam-whereabouts-bridge/cni/cni-claims.js";
import type { CniClaim } from "../src/ipam-whereabouts-bridge/cni/cni-pods.js";
import type { PodInfo } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { silentLogger } from "./helpers/loggers.js";
import { ManualClock } from "./helpers/manual-clock.js";

const eni: EniState = {
  eniId: "eni-0a1",
  mac: "02:00:00:00:01:01",
  deviceIndex: 1,
  subnetId: "subnet-0multus",
  subnetIpv4Cidrs: ["198.51.100.128/25"],
  subnetIpv6Cidrs: [],
  primaryIpv4: "198.51.100.140",
  ipv4s: ["198.51.100.140", "198.51.100.200"],
  ipv6s: [],
  ipv4Prefixes: ["198.51.100.160/28"],
};

const claim = (pod: string, address = "198.51.100.200"): CniClaim => ({
  pod: { namespace: "cnf", name: pod, uid: `uid-${pod}` },
  interfaceName: "net1",
  mac: eni.mac,
  eniId: eni.eniId,
  address,
  network: "multus-ipvlan",
});

/** A pod of the view whose network-status lists `address` on the ENI's MAC. */
const carrier = (name: string, address: string): PodInfo => ({
  namespace: "cnf",
  name,
  uid: `uid-${name}`,
  nodeName: "node",
  deleting: false,
  annotations: {
    "k8s.v1.cni.cncf.io/network-status": JSON.stringify([
      { name: "cnf/multus-ipvlan", interface: "net1", mac: eni.mac, ips: [address] },
    ]),
  },
  containers: [],
});

function claims(): CniClaims {
  return new CniClaims({ clock: new ManualClock(), logger: silentLogger(), nodeName: "node" });
}

const addresses = (c: CniClaims, pods: PodInfo[], may = true) =>
  c.withReleases([], pods, [eni], may).map((r) => `${r.eniId} ${r.address}`);

describe("CniClaims: what a DEL releases", () => {
  it("releases a dropped claim's address once, at the next wave", () => {
    const c = claims();
    c.put("c1 net1", [claim("upf-1")]);
    c.drop("c1 net1");
    expect(addresses(c, [])).toEqual(["eni-0a1 198.51.100.200"]);
    expect(addresses(c, [])).toEqual([]);
  });

  it("does not release when another pod of the node carries the address", () => {
    const c = claims();
    c.put("c1 net1", [claim("upf-1")]);
    c.drop("c1 net1");
    expect(addresses(c, [carrier("upf-2", "198.51.100.200")])).toEqual([]);
  });

  it("releases though its own terminating pod still lists the address", () => {
    const c = claims();
    c.put("c1 net1", [claim("upf-1")]);
    c.drop("c1 net1");
    expect(addresses(c, [carrier("upf-1", "198.51.100.200")])).toEqual(["eni-0a1 198.51.100.200"]);
  });

  it("does not release when another claim carries the address", () => {
    const c = claims();
    c.put("c1 net1", [claim("upf-1")]);
    c.put("c2 net1", [claim("upf-2")]);
    c.drop("c1 net1");
    expect(addresses(c, [])).toEqual([]);
  });

  it("holds the release while the guard holds releases, and makes it after", () => {
    const c = claims();
    c.put("c1 net1", [claim("upf-1")]);
    c.drop("c1 net1");
    expect(addresses(c, [], false)).toEqual([]);
    expect(addresses(c, [])).toEqual(["eni-0a1 198.51.100.200"]);
  });

  it("an ADD again for the address before the wave cancels the release", () => {
    const c = claims();
    c.put("c1 net1", [claim("upf-1")]);
    c.drop("c1 net1");
    c.put("c1 net1", [claim("upf-1")]);
    expect(addresses(c, [])).toEqual([]);
  });

  it("releases nothing for an unknown container, a forgotten claim, an address inside a prefix or one the ENI does not hold", () => {
    const c = claims();
    expect(c.drop("nobody net1")).toEqual([]);
    c.put("c1 net1", [claim("upf-1")]);
    c.forget("c1 net1");
    c.put("c2 net1", [claim("upf-2", "198.51.100.165")]);
    c.drop("c2 net1");
    c.put("c3 net1", [claim("upf-3", "198.51.100.201")]);
    c.drop("c3 net1");
    expect(addresses(c, [])).toEqual([]);
  });

  it("never releases a wave's own release twice", () => {
    const c = claims();
    c.put("c1 net1", [claim("upf-1")]);
    c.drop("c1 net1");
    const own = { eniId: eni.eniId, address: "198.51.100.200", family: 4 as const, reason: "grace passed" };
    expect(c.withReleases([own], [], [eni], true)).toEqual([own]);
  });
});
