/**
 * From the node's network namespace: no interface of the node may carry an address of the pod ranges. A
 * Multus ENI's secondary addresses are the pods' (ipvlan interfaces in their namespaces); when the node adds
 * them to the ENI's link too (amazon-ec2-net-utils on Amazon Linux 2023 configures every secondary address
 * EC2 assigns to an ENI it manages), the node answers ARP and neighbour solicitations for them, and traffic
 * meant for the pod ends on the host. Pure.
 */
import { cidrContains } from "../../eni/ip.js";
import type { PodInterface } from "../../eni/types.js";
import { type CheckResult, listText, ok, problem } from "../check.js";

/** The `.network` file that keeps amazon-ec2-net-utils off a Multus ENI (deploy/node/multus-eni.sh writes it). */
const NET_UTILS_FIX =
  "and keep amazon-ec2-net-utils off the Multus ENI for every boot: a systemd-networkd file sorting before its " +
  "70-*.network, matching the ENI's MAC, with DHCP=no and no Address (/etc/systemd/network/10-multus.network, " +
  "as deploy/node/multus-eni.sh writes it)";

/** Each node address inside `allowed` is a problem; none is one ok line. `host`: the node's interfaces. */
export function hostAddressChecks(allowed: readonly string[], host: readonly PodInterface[]): CheckResult[] {
  const found: CheckResult[] = [];
  for (const link of host) {
    for (const address of link.addresses) {
      const cidr = allowed.find((c) => cidrContains(c, address));
      if (cidr === undefined) continue;
      found.push(
        problem(
          "host-address",
          `the node carries ${address} (in ${cidr}, IPMGR_ALLOWED_CIDRS) on ${link.name}: it answers for a pod's address, and that pod's traffic ends on the host.`,
          {
            subject: address,
            fix: `ip address del $(ip -o address show dev ${link.name} to ${address} | awk '{print $4}') dev ${link.name}, ${NET_UTILS_FIX}`,
          },
        ),
      );
    }
  }
  if (found.length > 0) return found;
  return [
    ok(
      "host-address",
      `no interface of the node carries an address of ${listText([...allowed])} (${host.length} interfaces with addresses read).`,
    ),
  ];
}
