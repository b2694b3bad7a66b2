import { mkdirSync, writeFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { hostInterfaceMacs } from "../src/ipam-whereabouts-bridge/node/host-interface-macs.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

let dir: string | undefined;
afterEach(() => {
  removeTempDir(dir);
  dir = undefined;
});

/** A /sys/class/net of our own: name → content of its `address` file (undefined: no such file). */
function sysClassNet(interfaces: Record<string, string | undefined>): string {
  dir = makeTempDir("ipmgr-sysnet-");
  for (const [name, address] of Object.entries(interfaces)) {
    mkdirSync(join(dir, name));
    if (address !== undefined) writeFileSync(join(dir, name, "address"), address);
  }
  return dir;
}

describe("hostInterfaceMacs: the node's interfaces by name, from /sys/class/net", () => {
  it("lists an interface that carries no address (a Multus ENI brought up bare), in lowercase", () => {
    const macs = hostInterfaceMacs(sysClassNet({ eth1: "02:00:00:00:0A:01\n", eth0: "02:00:00:00:0a:00\n" }));
    expect(macs.get("eth1")).toBe("02:00:00:00:0a:01");
    expect(macs.get("eth0")).toBe("02:00:00:00:0a:00");
    // No interface of that name carries an address on this machine: os.networkInterfaces() could not list it.
    expect(networkInterfaces().eth1?.find((a) => a.mac === "02:00:00:00:0a:01")).toBeUndefined();
  });

  it("leaves out interfaces without a MAC (loopback, tunnels) and unreadable address files", () => {
    const macs = hostInterfaceMacs(
      sysClassNet({ lo: "00:00:00:00:00:00\n", tun0: "\n", sit0: "00:00:00:00\n", gone: undefined }),
    );
    for (const name of ["lo", "tun0", "sit0", "gone"]) expect(macs.has(name), name).toBe(false);
  });

  it("falls back to os.networkInterfaces() where there is no sysfs", () => {
    const macs = hostInterfaceMacs("/nonexistent/sys/class/net");
    for (const [name, addresses] of Object.entries(networkInterfaces())) {
      const mac = addresses?.find((a) => a.mac !== "00:00:00:00:00:00")?.mac;
      if (mac !== undefined) expect(macs.get(name)).toBe(mac.toLowerCase());
      else expect(macs.has(name)).toBe(false);
    }
  });
});
