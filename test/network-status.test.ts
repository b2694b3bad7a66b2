import { describe, expect, it } from "vitest";
import {
  extractNetworkStatusJson,
  NetworkStatusError,
  parseNetworkStatus,
} from "../src/eni/network-status.js";

const selection = { include: [], exclude: ["lo", "eth0"] };

const status = JSON.stringify(
  [
    {
      name: "aws-cni",
      interface: "eth0",
      ips: ["192.0.2.40"],
      mac: "02:aa:00:00:00:01",
      default: true,
      dns: {},
    },
    {
      name: "cnf/ipvlan-a",
      interface: "net1",
      ips: ["198.51.100.70", "2001:DB8:100:1:0:0:0:70"],
      mac: "02:AA:00:00:0A:01",
      dns: {},
    },
    { name: "cnf/ipvlan-b", ips: ["203.0.113.9"], dns: {} },
  ],
  null,
  2,
);

describe("Multus network-status", () => {
  it("reads the annotation out of a downward API annotations file (Go-quoted value)", () => {
    const file = `kubernetes.io/config.seen="2026-11-23T00:00:00Z"\nk8s.v1.cni.cncf.io/network-status=${JSON.stringify(status)}\n`;
    expect(extractNetworkStatusJson(file)).toBe(status);
  });

  it("reads the pre-3.x networks-status annotation too", () => {
    const file = `k8s.v1.cni.cncf.io/networks-status=${JSON.stringify(status)}\n`;
    expect(extractNetworkStatusJson(file)).toBe(status);
  });

  it("says nothing is there yet when the annotation is missing (kubelet refreshes the file late)", () => {
    expect(extractNetworkStatusJson('kubernetes.io/config.seen="x"\n')).toBeUndefined();
  });

  it("takes a file that is itself the JSON array", () => {
    expect(extractNetworkStatusJson(`  ${status}\n`)).toBe(status.trim());
  });

  it("keeps Multus interfaces with a MAC, lowercases the MAC and canonicalises addresses", () => {
    expect(parseNetworkStatus(status, selection, "file")).toEqual([
      { name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["198.51.100.70", "2001:db8:100:1::70"] },
    ]);
  });

  it("drops the default network and excluded interfaces", () => {
    const only = parseNetworkStatus(status, { include: ["net2"], exclude: [] }, "file");
    expect(only).toEqual([]);
  });

  it("accepts addresses written with a prefix length", () => {
    const withPrefix = JSON.stringify([
      { interface: "net1", mac: "02:aa:00:00:0a:01", ips: ["198.51.100.70/25"] },
    ]);
    expect(parseNetworkStatus(withPrefix, selection, "file")[0]?.addresses).toEqual(["198.51.100.70"]);
  });

  it("names the file and the bad entry when an address is not an IP", () => {
    const bad = JSON.stringify([{ interface: "net1", mac: "02:aa:00:00:0a:01", ips: ["not-an-ip"] }]);
    expect(() => parseNetworkStatus(bad, selection, "/etc/podinfo/annotations")).toThrow(
      new NetworkStatusError(
        "/etc/podinfo/annotations",
        'interface net1 lists "not-an-ip", not an IP address',
      ),
    );
  });

  it("refuses JSON that is not a list", () => {
    expect(() => parseNetworkStatus('{"interface":"net1"}', selection, "f")).toThrow(NetworkStatusError);
  });
});
