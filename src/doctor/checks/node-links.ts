/**
 * From the node's network namespace (doctor in the bridge's host-network pod): each Multus ENI's link on
 * the node must be up, or its pods' ipvlan interfaces have no carrier, and the IPv4 reverse-path filter
 * must not be strict on it. Pure.
 */
import type { EniState } from "../../eni/types.js";
import { type CheckResult, ok, problem } from "../check.js";
import type { LinkInfo } from "../links.js";

/** The node's links by lowercase MAC (several links may share one: the first, in name order, is the ENI's). */
export function linkByMac(links: readonly LinkInfo[]): Map<string, LinkInfo> {
  const out = new Map<string, LinkInfo>();
  for (const link of [...links].sort((a, b) => a.name.localeCompare(b.name))) {
    if (link.mac !== undefined && !out.has(link.mac)) out.set(link.mac, link);
  }
  return out;
}

/**
 * Whether doctor runs in the node's network namespace: a link carries the MAC of the primary ENI (device 0).
 * In a pod, eth0 is a veth with a MAC of its own, and an ipvlan interface carries its parent's MAC, never
 * device 0's (the VPC CNI's).
 */
export function onHostNetwork(links: readonly LinkInfo[], enis: readonly EniState[]): boolean {
  const primary = enis.find((e) => e.deviceIndex === 0)?.mac.toLowerCase();
  return primary !== undefined && links.some((l) => l.mac === primary);
}

const label = (eni: EniState, link: LinkInfo | undefined): string =>
  link === undefined
    ? `${eni.eniId} (device ${eni.deviceIndex})`
    : `${eni.eniId} (${link.name}, device ${eni.deviceIndex})`;

/** Each Multus ENI's link on the node: present, administratively up, and with carrier. */
export function nodeLinkChecks(multus: readonly EniState[], links: readonly LinkInfo[]): CheckResult[] {
  const byMac = linkByMac(links);
  return multus.map((eni) => {
    const subject = eni.eniId;
    const link = byMac.get(eni.mac.toLowerCase());
    if (link === undefined) {
      return problem(
        "node-link",
        `no link of this node carries the MAC ${eni.mac} of ${label(eni, undefined)}: the ENI is attached, but the node has not brought it in.`,
        {
          subject,
          fix: "check the node's user data (the step that brings the Multus ENIs up), or detach and attach the ENI",
        },
      );
    }
    const up = `ip link set dev ${link.name} up (in the node's user data, for every boot: the VPC CNI does not configure ENIs tagged no_manage)`;
    if (!link.adminUp) {
      return problem(
        "node-link",
        `${label(eni, link)} is administratively down: its pods' ipvlan interfaces have no carrier and carry nothing.`,
        { subject, fix: up },
      );
    }
    if (link.operState !== "up" && link.operState !== "unknown") {
      return problem(
        "node-link",
        `${label(eni, link)} is up but its operational state is ${link.operState}.`,
        {
          subject,
          fix: `check the ENI's attachment (aws ec2 describe-network-interfaces --network-interface-ids ${eni.eniId}); ${up}`,
        },
      );
    }
    return ok(
      "node-link",
      `${label(eni, link)} is up (operstate ${link.operState}${link.mtu === undefined ? "" : `, MTU ${link.mtu}`}).`,
      {
        subject,
      },
    );
  });
}

/**
 * The reverse-path filter on each Multus ENI's link: the kernel uses the larger of the link's value and
 * `all`'s. Strict (1) drops a packet arriving on the link whose source the node routes out another way,
 * as it routes the Multus subnet (no route, no address on the link: out of eth0, by default), so pod
 * traffic is dropped; 0 (as the AWS Multus guide sets it) and loose (2) let it through.
 */
export function rpFilterChecks(
  multus: readonly EniState[],
  links: readonly LinkInfo[],
  values: ReadonlyMap<string, number | undefined>,
): CheckResult[] {
  const byMac = linkByMac(links);
  const all = values.get("all") ?? 0;
  return multus.flatMap((eni) => {
    const link = byMac.get(eni.mac.toLowerCase());
    if (link === undefined) return [];
    const own = values.get(link.name) ?? 0;
    const effective = Math.max(own, all);
    const setting = `net.ipv4.conf.${link.name}.rp_filter=${own}, net.ipv4.conf.all.rp_filter=${all}`;
    const subject = eni.eniId;
    if (effective === 1) {
      const fix =
        all === 1
          ? `sysctl -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.${link.name}.rp_filter=0`
          : `sysctl -w net.ipv4.conf.${link.name}.rp_filter=0`;
      return [
        problem(
          "rp-filter",
          `${link.name} (${eni.eniId}) filters strictly (${setting}; the kernel takes the larger): a packet arriving on it from an address the node routes another way is dropped.`,
          {
            subject,
            fix: `${fix}, and the same in the node's user data (a file in /etc/sysctl.d/) for every boot`,
          },
        ),
      ];
    }
    const how = effective === 0 ? "off" : "loose";
    return [
      ok("rp-filter", `${link.name} (${eni.eniId}): reverse-path filtering is ${how} (${setting}).`, {
        subject,
      }),
    ];
  });
}
