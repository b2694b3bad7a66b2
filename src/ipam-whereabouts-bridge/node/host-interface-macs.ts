/**
 * The node's network interfaces and their MACs, as the bridge (on the host network) sees them: what prefix
 * mode needs to turn a NAD's `master` (eth1) into the MAC, then the ENI.
 *
 * Read from /sys/class/net, which lists every interface: a Multus ENI brought up without an address (as
 * deploy/node/multus-eni.sh does, and as the install guide asks) among them. os.networkInterfaces() lists only
 * interfaces that carry an address, so it would miss exactly that ENI; it is still read, for a system where
 * /sys is not mounted.
 */
import { readdirSync, readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";

const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;
const NO_MAC = "00:00:00:00:00:00";

/** Interface name → lowercase MAC. Interfaces without a MAC (loopback, tunnels) are left out. */
export function hostInterfaceMacs(sysClassNet = "/sys/class/net"): ReadonlyMap<string, string> {
  const macs = new Map<string, string>();
  for (const name of listDirectory(sysClassNet)) {
    const mac = readMac(join(sysClassNet, name, "address"));
    if (mac !== undefined) macs.set(name, mac);
  }
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (macs.has(name)) continue;
    const mac = addresses?.find((a) => a.mac !== NO_MAC)?.mac.toLowerCase();
    if (mac !== undefined && MAC.test(mac)) macs.set(name, mac);
  }
  return macs;
}

function listDirectory(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return []; // no sysfs here: os.networkInterfaces() alone
  }
}

function readMac(path: string): string | undefined {
  try {
    const mac = readFileSync(path, "utf8").trim().toLowerCase();
    return MAC.test(mac) && mac !== NO_MAC ? mac : undefined;
  } catch {
    return undefined; // the interface went away between the listing and the read
  }
}
