/**
 * The bridge's reading of a pod's network-status entries: an entry that names addresses and cannot be read
 * whole makes the pod unreadable (its addresses are unknown), never one attachment short; an entry that
 * names none is skipped without a word. Pure; the bridge's holding of releases on it against the simulator:
 * test/bridge-view-trust.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { PodInfo } from "../src/ipam-whereabouts-bridge/kube/kube-api.js";
import { podNetworks } from "../src/ipam-whereabouts-bridge/state/pod-networks.js";

const MAC = "02:00:00:00:01:01";
const ANNOTATION = "k8s.v1.cni.cncf.io/network-status";

function podWith(entry: Record<string, unknown>): PodInfo {
  return {
    namespace: "cnf",
    name: "upf-0",
    uid: "uid-upf-0",
    nodeName: "node-a",
    deleting: false,
    annotations: {
      [ANNOTATION]: JSON.stringify([
        { name: "aws-cni", interface: "eth0", ips: ["198.51.100.11"], default: true },
        { name: "cnf/multus-ipvlan", interface: "net1", ips: ["198.51.100.200"], mac: MAC },
        entry,
      ]),
    },
    containers: [{ name: "app", image: "upf:1", args: [] }],
  };
}

const READABLE = {
  network: "cnf/multus-ipvlan",
  interfaceName: "net1",
  mac: MAC,
  addresses: ["198.51.100.200"],
};
const entry2 = `pod cnf/upf-0: ${ANNOTATION} entry 2`;

describe("pod networks: an entry that names addresses is read whole or makes the pod unreadable", () => {
  it.each<[string, Record<string, unknown>, string]>([
    [
      "without mac",
      { name: "cnf/multus-b", interface: "net2", ips: ["198.51.100.201"] },
      `${entry2} (network "cnf/multus-b") lists addresses ["198.51.100.201"] on net2 but names no "mac", so the ENI they belong on is unknown`,
    ],
    [
      "with an empty mac",
      { name: "cnf/multus-b", interface: "net2", ips: ["198.51.100.201"], mac: " " },
      `${entry2} (network "cnf/multus-b") lists addresses ["198.51.100.201"] on net2 but names no "mac", so the ENI they belong on is unknown`,
    ],
    [
      "with a mac that is not a string",
      { name: "cnf/multus-b", interface: "net2", ips: ["198.51.100.201"], mac: 2 },
      `${entry2} (network "cnf/multus-b") lists addresses ["198.51.100.201"] on net2 but names no "mac", so the ENI they belong on is unknown`,
    ],
    [
      "without interface",
      { name: "cnf/multus-b", ips: ["198.51.100.201"], mac: MAC },
      `${entry2} (network "cnf/multus-b") lists addresses ["198.51.100.201"] but names no "interface"`,
    ],
    [
      "with ips as a string",
      { name: "cnf/multus-b", interface: "net2", ips: "198.51.100.201", mac: MAC },
      `${entry2} (network "cnf/multus-b") has "ips" "198.51.100.201", which is not a list of addresses`,
    ],
    [
      "with ips as an object, and no name",
      { interface: "net2", ips: { v4: "198.51.100.201" }, mac: MAC },
      `${entry2} has "ips" {"v4":"198.51.100.201"}, which is not a list of addresses`,
    ],
    [
      "with ips as a string and no mac",
      { name: "cnf/multus-b", interface: "net2", ips: "" },
      `${entry2} (network "cnf/multus-b") has "ips" "", which is not a list of addresses`,
    ],
  ])("an entry %s: the pod is unreadable, the readable entries still count", (_what, entry, problem) => {
    const networks = podNetworks(podWith(entry));
    expect(networks.problems).toEqual([problem]);
    expect(networks.attachments).toEqual([READABLE]);
  });

  it.each<[string, Record<string, unknown>]>([
    ["without ips, interface or mac", { name: "cnf/plain" }],
    ["with no ips and no mac", { name: "cnf/plain", interface: "net2" }],
    ["with ips null and no mac", { name: "cnf/plain", interface: "net2", ips: null }],
    ["with an empty ips list and no mac", { name: "cnf/plain", interface: "net2", ips: [] }],
    ["with an empty ips list and no interface", { name: "cnf/plain", ips: [], mac: MAC }],
    ["of the default network without mac", { interface: "eth1", ips: ["198.51.100.12"], default: true }],
  ])("an entry %s names no address: skipped without a word", (_what, entry) => {
    const networks = podNetworks(podWith(entry));
    expect(networks.problems).toEqual([]);
    expect(networks.attachments).toEqual([READABLE]);
  });

  it("reads an entry with a mac and an interface but no ips as an attachment without addresses", () => {
    const networks = podNetworks(podWith({ name: "cnf/plain", interface: "net2", mac: "02:00:00:00:01:0A" }));
    expect(networks.problems).toEqual([]);
    expect(networks.attachments).toEqual([
      READABLE,
      { network: "cnf/plain", interfaceName: "net2", mac: "02:00:00:00:01:0a", addresses: [] },
    ]);
  });
});
