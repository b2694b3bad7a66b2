import type { NetworkInterfaceInfo } from "node:os";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TimeoutError } from "../src/eni/errors/timeout-error.js";
import { includesLeft, isManagedInterface } from "../src/eni/interface-selector.js";
import type { InterfaceSource } from "../src/eni/interface-source.js";
import { OsInterfaceSource } from "../src/eni/os-interface-source.js";
import type { PodInterface } from "../src/eni/types.js";
import { waitForAddresses } from "../src/eni/wait-for-addresses.js";
import { FakeClock } from "./helpers/fake-clock.js";

function entry(address: string, mac: string): NetworkInterfaceInfo {
  const v6 = address.includes(":");
  return {
    address,
    netmask: v6 ? "ffff:ffff:ffff:ffff::" : "255.255.255.128",
    family: v6 ? "IPv6" : "IPv4",
    mac,
    internal: false,
    cidr: null,
    ...(v6 ? { scopeid: 0 } : {}),
  } as NetworkInterfaceInfo;
}

describe("interface selection", () => {
  it.each([
    [{ include: [], exclude: ["lo", "eth0"] }, "net1", true],
    [{ include: [], exclude: ["lo", "eth0"] }, "eth0", false],
    [{ include: ["net*"], exclude: ["lo", "eth0"] }, "net12", true],
    [{ include: ["net*"], exclude: ["lo", "eth0"] }, "eth1", false],
    [{ include: ["net1"], exclude: ["net1"] }, "net1", false],
    [{ include: [], exclude: ["eth0"] }, "lo", false],
    [{ include: ["lo"], exclude: [] }, "lo", false],
    [{ include: ["l*"], exclude: [] }, "lo", false],
    [{ include: ["l*"], exclude: [] }, "lo1", true],
  ])("%o manages %s: %s", (selection, name, expected) => {
    expect(isManagedInterface(selection, name)).toBe(expected);
  });
});

describe("a selection that manages no interface", () => {
  it.each([
    [{ include: [], exclude: ["lo", "eth0"] }, ["*"]],
    [{ include: [], exclude: ["*"] }, []],
    [{ include: [], exclude: ["eth0", "*"] }, []],
    [{ include: ["net1"], exclude: ["net*"] }, []],
    [{ include: ["eth0"], exclude: ["lo", "eth0"] }, []],
    [{ include: ["lo"], exclude: [] }, []],
    [{ include: ["net*"], exclude: ["net*"] }, []],
    [{ include: ["net1*"], exclude: ["net*"] }, []],
    [{ include: ["n*"], exclude: ["net*"] }, ["n*"]],
    [{ include: ["net*"], exclude: ["net1"] }, ["net*"]],
    [{ include: ["eth0", "net1"], exclude: ["lo", "eth0"] }, ["net1"]],
  ])("%o leaves %o of its include patterns", (selection, left) => {
    expect(includesLeft(selection)).toEqual(left);
  });

  const pattern = fc
    .tuple(fc.string({ unit: fc.constantFrom("l", "o", "n", "e", "t", "1"), maxLength: 4 }), fc.boolean())
    .map(([stem, prefix]) => (prefix ? `${stem}*` : stem))
    .filter((p) => p !== "");

  it("manages no name at all when it leaves no include pattern, and every include name it leaves", () => {
    fc.assert(
      fc.property(
        fc.array(pattern, { maxLength: 3 }),
        fc.array(pattern, { maxLength: 3 }),
        fc.array(
          fc.string({ unit: fc.constantFrom("l", "o", "n", "e", "t", "1"), minLength: 1, maxLength: 5 }),
        ),
        (include, exclude, names) => {
          const selection = { include, exclude };
          const left = includesLeft(selection);
          const candidates = [...names, ...include.map((p) => p.replace(/\*$/, "")), "lo"];
          if (left.length === 0) {
            expect(candidates.filter((name) => isManagedInterface(selection, name))).toEqual([]);
          }
          for (const name of left.filter((p) => !p.endsWith("*"))) {
            expect(isManagedInterface(selection, name)).toBe(true);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("OsInterfaceSource", () => {
  const table = {
    lo: [entry("127.0.0.1", "00:00:00:00:00:00")],
    eth0: [entry("192.0.2.40", "02:aa:00:00:00:01")],
    net1: [
      entry("198.51.100.71", "02:AA:00:00:0A:01"),
      entry("198.51.100.70", "02:AA:00:00:0A:01"),
      entry("2001:db8:100:1:0:0:0:70", "02:AA:00:00:0A:01"),
      entry("fe80::aa:ff:fe00:a01", "02:AA:00:00:0A:01"),
    ],
  };

  it("lists every address of each managed interface, a second (floating) one included", () => {
    const source = new OsInterfaceSource({ include: [], exclude: ["lo", "eth0"] }, () => table);
    expect(source.readSync()).toEqual([
      {
        name: "net1",
        mac: "02:aa:00:00:0a:01",
        addresses: ["198.51.100.70", "198.51.100.71", "2001:db8:100:1::70", "fe80::aa:ff:fe00:a01"],
      },
    ]);
  });
  it("leaves lo out when IPMGR_EXCLUDE_INTERFACES no longer names it: loopback is never a pod interface", () => {
    const source = new OsInterfaceSource({ include: [], exclude: ["eth0"] }, () => table);
    expect(source.readSync().map((i) => i.name)).toEqual(["net1"]);
  });
});

class ScriptedSource implements InterfaceSource {
  reads = 0;
  constructor(private readonly script: PodInterface[][]) {}
  async read(): Promise<PodInterface[]> {
    const snapshot = this.script[Math.min(this.reads, this.script.length - 1)] ?? [];
    this.reads++;
    return snapshot;
  }
}

describe("waiting for the pod's addresses", () => {
  const ready = [{ name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["198.51.100.70"] }];

  it("returns at once when the addresses are there", async () => {
    const source = new ScriptedSource([ready]);
    const clock = new FakeClock();
    await expect(waitForAddresses(source, clock, { timeoutMs: 1000, intervalMs: 100 })).resolves.toEqual(
      ready,
    );
    expect(clock.sleeps).toEqual([]);
  });

  it("waits while an interface has only a link-local address", async () => {
    const source = new ScriptedSource([
      [{ name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["fe80::1"] }],
      [{ name: "net1", mac: "02:aa:00:00:0a:01", addresses: ["fe80::1"] }],
      ready,
    ]);
    const clock = new FakeClock();
    await waitForAddresses(source, clock, { timeoutMs: 1000, intervalMs: 100 });
    expect(source.reads).toBe(3);
  });

  it("gives up after the bounded wait and names what it saw", async () => {
    const source = new ScriptedSource([[{ name: "net1", mac: "02:aa:00:00:0a:01", addresses: [] }]]);
    const error = await waitForAddresses(source, new FakeClock(), { timeoutMs: 500, intervalMs: 100 }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.message).toBe(
      "timed out after 500 ms waiting for the managed pod interfaces to carry addresses. Managed interfaces seen: net1 [no address]. Check the IPAM of the NetworkAttachmentDefinition, or raise IPMGR_WAIT_FOR_ADDRESSES_MS.",
    );
  });

  it("says no managed interface was found when there is none", async () => {
    const error = await waitForAddresses(new ScriptedSource([[]]), new FakeClock(), {
      timeoutMs: 0,
      intervalMs: 100,
    }).catch((e) => e);
    expect(error.message).toContain("No managed interface was found.");
  });
});
