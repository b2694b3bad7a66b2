import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ExitCode } from "../src/eni/errors/exit-codes.js";
import { NetworkStatusError } from "../src/eni/errors/network-status-error.js";
import {
  extractNetworkStatusJson,
  type NetworkStatusContext,
  parseNetworkStatus,
} from "../src/eni/network-status.js";
import { NetworkStatusSource } from "../src/eni/network-status-source.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const selection = { include: [], exclude: ["lo", "eth0"] };
const localInterfaces = new Set(["lo", "eth0", "net1"]);
const context = (source = "file"): NetworkStatusContext => ({ selection, source, localInterfaces });

/** The message of the NetworkStatusError the parse throws; fails when it throws something else or nothing. */
function refusal(json: string, source = "/etc/podinfo/annotations"): string {
  try {
    parseNetworkStatus(json, context(source));
  } catch (error) {
    if (!(error instanceof NetworkStatusError)) throw error;
    expect(error.exitCode).toBe(ExitCode.config);
    return error.message;
  }
  throw new Error("expected a NetworkStatusError");
}

const MALFORMED_FIX =
  "Multus writes a JSON list of entries with string fields name, interface and mac, a list of strings ips " +
  "and a boolean default: correct the annotation (or the file), or set IPMGR_ADDRESS_SOURCE=interfaces";

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
    expect(parseNetworkStatus(status, context())).toEqual([
      { name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["198.51.100.70", "2001:db8:100:1::70"] },
    ]);
  });

  it("drops the default network and excluded interfaces", () => {
    const only = parseNetworkStatus(status, { ...context(), selection: { include: ["net2"], exclude: [] } });
    expect(only).toEqual([]);
  });

  it("accepts addresses written with a prefix length", () => {
    const withPrefix = JSON.stringify([
      { interface: "net1", mac: "02:aa:00:00:0a:01", ips: ["198.51.100.70/25"] },
    ]);
    expect(parseNetworkStatus(withPrefix, context())[0]?.addresses).toEqual(["198.51.100.70"]);
  });

  it("names the file and the bad entry when an address is not an IP", () => {
    const bad = JSON.stringify([{ interface: "net1", mac: "02:aa:00:00:0a:01", ips: ["not-an-ip"] }]);
    expect(refusal(bad)).toBe(
      '/etc/podinfo/annotations: network-status entry 0 (interface net1): "ips" lists "not-an-ip", not an IP address; ' +
        MALFORMED_FIX,
    );
  });

  it("refuses a malformed entry in one sentence naming the entry (index from 0, name, interface) and the field", () => {
    const bad = JSON.stringify([
      { name: "aws-cni", interface: "eth0", ips: ["192.0.2.40"], mac: "02:aa:00:00:00:01", default: true },
      { name: "cnf/ipvlan-a", interface: "net1", ips: ["198.51.100.70"], mac: "02:aa:00:00:0a:01" },
      { name: "default/macvlan", interface: "net1", ips: "198.51.100.71" },
    ]);
    const message = refusal(bad);
    expect(message).toBe(
      '/etc/podinfo/annotations: network-status entry 2 ("default/macvlan", interface net1): "ips" must be a list of strings; ' +
        MALFORMED_FIX,
    );
    expect(message).not.toContain("\n");
  });

  it.each<[unknown, string]>([
    [{ interface: "net1", mac: 2 }, 'network-status entry 0 (interface net1): "mac" must be a string'],
    [{ name: "x", default: "yes" }, 'network-status entry 0 ("x"): "default" must be true or false'],
    [{ name: 7 }, 'network-status entry 0: "name" must be a string'],
    [{ interface: ["net1"] }, 'network-status entry 0: "interface" must be a string'],
    [{ ips: [1] }, 'network-status entry 0: "ips" must be a list of strings'],
    ["net1", "network-status entry 0 is a string, not an object"],
    [null, "network-status entry 0 is null, not an object"],
  ])("refuses the entry %j", (entry, problem) => {
    expect(refusal(JSON.stringify([entry]), "f")).toBe(`f: ${problem}; ${MALFORMED_FIX}`);
  });

  it("refuses text that is not JSON, with the same fix", () => {
    expect(refusal("[{", "f")).toBe(`f: network-status is not valid JSON; ${MALFORMED_FIX}`);
  });

  it("refuses JSON that is not a list, saying what it is", () => {
    expect(refusal('{"interface":"net1"}', "f")).toBe(
      `f: network-status is an object, not a list of network entries; ${MALFORMED_FIX}`,
    );
    expect(refusal('"net1"', "f")).toBe(
      `f: network-status is a string, not a list of network entries; ${MALFORMED_FIX}`,
    );
  });

  it("refuses a managed interface without a MAC at once, naming the entry", () => {
    const noMac = JSON.stringify([{ name: "cnf/ipvlan-a", interface: "net1", ips: ["198.51.100.70"] }]);
    expect(refusal(noMac)).toBe(
      '/etc/podinfo/annotations: network-status entry 0 ("cnf/ipvlan-a", interface net1) has no "mac", and ENIs ' +
        "are matched by MAC; set IPMGR_ADDRESS_SOURCE=interfaces to read the MAC from the interface itself, " +
        "or exclude the interface with IPMGR_EXCLUDE_INTERFACES",
    );
  });

  it("refuses a managed entry whose mac is not a MAC at once (exit 2), naming the entry, not as an unknown ENI", () => {
    const json = JSON.stringify([
      { name: "cnf/ipvlan-a", interface: "net1", ips: ["198.51.100.70"], mac: "zz:zz" },
    ]);
    expect(refusal(json)).toBe(
      '/etc/podinfo/annotations: network-status entry 0 ("cnf/ipvlan-a", interface net1): "mac" is "zz:zz", ' +
        "not a MAC address (six pairs of hex digits separated by colons, e.g. 02:00:00:00:0a:01), so no ENI " +
        "can match it; correct the annotation (or the file), or set IPMGR_ADDRESS_SOURCE=interfaces to read " +
        "the MAC from the interface itself",
    );
  });

  it("still skips without a word entries without an interface, default entries and excluded interfaces", () => {
    const json = JSON.stringify([
      { name: "aws-cni", ips: ["192.0.2.40"], default: true },
      { name: "other", interface: "net7", ips: ["192.0.2.41"], default: true },
      { name: "cnf/ipvlan-b", ips: ["203.0.113.9"] },
      { name: "excluded", interface: "eth0", ips: ["192.0.2.42"] },
    ]);
    expect(parseNetworkStatus(json, context())).toEqual([]);
  });

  it.each<[string, unknown]>([
    ["without ips (a network without IPAM, an L2 attachment)", { name: "cnf/l2", interface: "net3" }],
    ["with an empty ips list", { name: "cnf/l2", interface: "net3", ips: [], mac: "02:aa:00:00:0a:03" }],
    ["with a link-local IPv6 address only", { name: "cnf/l2", interface: "net3", ips: ["fe80::3/64"] }],
    ["with a link-local IPv4 address only", { name: "cnf/l2", interface: "net1", ips: ["169.254.7.1"] }],
  ])("skips an entry %s, on an interface the pod may not even list, and tells why", (_, l2) => {
    const json = JSON.stringify([
      { name: "cnf/ipvlan-a", interface: "net1", ips: ["198.51.100.70"], mac: "02:aa:00:00:0a:01" },
      l2,
    ]);
    const skipped: unknown[] = [];
    const interfaces = parseNetworkStatus(json, { ...context(), onSkipped: (e) => skipped.push(e) });
    expect(interfaces).toEqual([{ name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["198.51.100.70"] }]);
    const entry = l2 as { interface: string; ips?: string[] };
    expect(skipped).toEqual([
      {
        interfaceName: entry.interface,
        entry: `network-status entry 1 ("cnf/l2", interface ${entry.interface})`,
        addresses: (entry.ips ?? []).map((ip) => ip.split("/")[0]),
      },
    ]);
  });

  it("still refuses an address-less entry's bad address, and keeps a link-local address beside a unicast one", () => {
    const bad = JSON.stringify([{ interface: "net3", ips: ["fe80::3", "nope"] }]);
    expect(refusal(bad)).toContain('"ips" lists "nope", not an IP address');
    const both = JSON.stringify([
      { interface: "net1", mac: "02:aa:00:00:0a:01", ips: ["fe80::1", "198.51.100.70"] },
    ]);
    expect(parseNetworkStatus(both, context())[0]?.addresses).toEqual(["198.51.100.70", "fe80::1"]);
  });

  it("refuses an entry naming an interface the pod does not have, naming it and the pod's interfaces", () => {
    const json = JSON.stringify([
      { name: "cnf/ipvlan-a", interface: "net3", ips: ["198.51.100.70"], mac: "02:aa:00:00:0a:01" },
    ]);
    expect(refusal(json)).toBe(
      '/etc/podinfo/annotations: network-status entry 0 ("cnf/ipvlan-a", interface net3): this pod has no ' +
        "interface net3 with an address (it has: eth0, lo, net1), so nothing here carries the entry's " +
        "addresses; the file describes another pod or is out of date: check IPMGR_NETWORK_STATUS_FILE and " +
        "the downward API volume (fieldPath: metadata.annotations)",
    );
  });
});

describe("NetworkStatusSource", () => {
  let dir: string | undefined;
  afterEach(() => {
    removeTempDir(dir);
    dir = undefined;
  });

  function fileWith(text: string): string {
    dir = makeTempDir("ipmgr-podinfo-");
    const path = join(dir, "annotations");
    writeFileSync(path, text);
    return path;
  }

  it("checks the file's interfaces against the pod's, read through the function it is given", async () => {
    const status = JSON.stringify([
      { name: "cnf/ipvlan-a", interface: "net1", ips: ["198.51.100.70"], mac: "02:aa:00:00:0a:01" },
    ]);
    const path = fileWith(`k8s.v1.cni.cncf.io/network-status=${JSON.stringify(status)}\n`);
    const here = new NetworkStatusSource(path, selection, () => new Set(["lo", "eth0", "net1"]));
    expect(await here.read()).toEqual([
      { name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["198.51.100.70"] },
    ]);
    const elsewhere = new NetworkStatusSource(path, selection, () => new Set(["lo", "eth0"]));
    await expect(elsewhere.read()).rejects.toThrow(
      `${path}: network-status entry 0 ("cnf/ipvlan-a", interface net1): this pod has no interface net1 with an address (it has: eth0, lo)`,
    );
  });

  it("refuses at once a file holding a JSON object, instead of waiting for an annotation", async () => {
    const path = fileWith('{"name":"cnf/ipvlan-a","interface":"net1","mac":"02:aa:00:00:0a:01"}\n');
    const source = new NetworkStatusSource(path, selection, () => localInterfaces);
    await expect(source.read()).rejects.toThrow(
      `${path}: network-status is an object, not a list of network entries`,
    );
  });

  it("reads a file as the kubelet's %q writes it, \\x7f and \\U0001xxxx escapes included", async () => {
    // JSON.stringify(status) for this content, with %q's escapes where JSON's differ: DEL and U+E0001.
    const path = fileWith(
      'k8s.v1.cni.cncf.io/network-status="[{\\"name\\":\\"cnf/a\\x7fb\\U000e0001\\",\\"interface\\":\\"net1\\",' +
        '\\"ips\\":[\\"198.51.100.70\\"],\\"mac\\":\\"02:aa:00:00:0a:01\\"}]"\n',
    );
    const source = new NetworkStatusSource(path, selection, () => localInterfaces);
    expect(await source.read()).toEqual([
      { name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["198.51.100.70"] },
    ]);
  });

  it("refuses an annotation line the kubelet would not write, saying where (exit 2)", async () => {
    const path = fileWith('k8s.v1.cni.cncf.io/network-status="[\\q]"\n');
    const source = new NetworkStatusSource(path, selection, () => localInterfaces);
    const error = await source.read().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(NetworkStatusError);
    expect((error as NetworkStatusError).exitCode).toBe(ExitCode.config);
    expect((error as NetworkStatusError).message).toBe(
      `${path}: the k8s.v1.cni.cncf.io/network-status annotation is not a quoted string: \\q at character 2 ` +
        'is not an escape Go knows; the kubelet writes each annotation as key="value", the value quoted as ' +
        "Go's %q does: correct what wrote the file, or set IPMGR_ADDRESS_SOURCE=interfaces",
    );
  });

  it("reports nothing yet while the annotation is missing from the file (kubelet refreshes it late)", async () => {
    const path = fileWith('kubernetes.io/config.seen="x"\n');
    expect(await new NetworkStatusSource(path, selection, () => localInterfaces).read()).toEqual([]);
  });

  it("refuses at once a file that does not exist, naming it and the downward API volume to add (exit 2)", async () => {
    dir = makeTempDir("ipmgr-podinfo-");
    for (const path of [join(dir, "annotations"), join(dir, "podinfo", "annotations")]) {
      const missing = new NetworkStatusSource(path, selection, () => localInterfaces);
      const error = await missing.read().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(NetworkStatusError);
      expect((error as NetworkStatusError).exitCode).toBe(ExitCode.config);
      expect((error as Error).message).toBe(
        `${path}: the file does not exist, and the downward API writes it before any container starts; add a ` +
          "downwardAPI volume with the item {path: annotations, fieldRef: {fieldPath: metadata.annotations}} and " +
          `mount it at ${dirname(path)} (as deploy/overlays/init/deployment-init-network-status.yaml does), or point ` +
          "IPMGR_NETWORK_STATUS_FILE at the file where it is mounted, or set IPMGR_ADDRESS_SOURCE=interfaces",
      );
    }
  });

  it("says once at debug level which entries it skipped for want of an address, not at every read", async () => {
    const status = JSON.stringify([
      { name: "cnf/ipvlan-a", interface: "net1", ips: ["198.51.100.70"], mac: "02:aa:00:00:0a:01" },
      { name: "cnf/l2", interface: "net3" },
    ]);
    const path = fileWith(`k8s.v1.cni.cncf.io/network-status=${JSON.stringify(status)}\n`);
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const source = new NetworkStatusSource(path, selection, () => localInterfaces, logger);
    for (let i = 0; i < 3; i++) {
      expect(await source.read()).toEqual([
        { name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["198.51.100.70"] },
      ]);
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 20,
      interface: "net3",
      addresses: [],
      msg: 'network-status entry 1 ("cnf/l2", interface net3) has no unicast address (a network without IPAM, or link-local only): nothing to assign, skipped',
    });
  });
});
