import type { InterfaceSelection } from "../../eni/interface-selector.js";
import type { EniState, PodInterface } from "../../eni/types.js";
import { type CheckResult, listText, ok, problem, warn } from "../check.js";
import type { LinkInfo } from "../links.js";

export interface InterfaceContext {
  readonly selection: InterfaceSelection;
  /** `interfaces` or the network-status file it was read from. */
  readonly source: string;
  /** Every link of the pod, when known: named in the problem so the user sees what exists. */
  readonly allLinks: readonly string[] | undefined;
}

function selectionText(selection: InterfaceSelection): string {
  const include = selection.include.length === 0 ? "(all)" : selection.include.join(",");
  return `IPMGR_INTERFACES=${include}, IPMGR_EXCLUDE_INTERFACES=${selection.exclude.join(",")}`;
}

/** Whether the pod has managed interfaces with addresses. */
export function interfacesCheck(interfaces: readonly PodInterface[], context: InterfaceContext): CheckResult {
  if (interfaces.length === 0) {
    const links = context.allLinks === undefined ? "" : `; this pod's links: ${context.allLinks.join(", ")}`;
    return problem(
      "interfaces",
      `no managed interface with an address (read from ${context.source}; ${selectionText(context.selection)}${links}): ` +
        "init would wait IPMGR_WAIT_FOR_ADDRESSES_MS and exit 8.",
      {
        fix:
          "check that Multus attached the network (the pod's k8s.v1.cni.cncf.io/network-status annotation lists it) " +
          "and that IPMGR_INTERFACES names its interface (net1 unless the NetworkAttachmentDefinition request names another)",
      },
    );
  }
  const list = interfaces.map((i) => `${i.name} (MAC ${i.mac}: ${i.addresses.join(", ")})`);
  return ok("interfaces", `managed, read from ${context.source}: ${list.join("; ")}.`);
}

/**
 * Per managed link (a pod interface, or a link of the pod that the selection names): up, carrier, MTU, from
 * sysfs. Node's os.networkInterfaces() leaves out links that are down or have no carrier, so such a link is
 * missing from the interface read altogether: its addresses are never seen, and init waits for them.
 */
export function linkChecks(
  names: readonly string[],
  interfaces: readonly PodInterface[],
  links: ReadonlyMap<string, LinkInfo | undefined>,
): CheckResult[] {
  return names.map((name) => {
    const subject = name;
    const iface = interfaces.find((i) => i.name === name);
    const link = links.get(name);
    if (link === undefined) {
      return problem("link", `there is no link ${name} in this pod's network namespace (/sys/class/net).`, {
        subject,
        fix: "the network-status file names an interface this pod does not have: check IPMGR_NETWORK_STATUS_FILE",
      });
    }
    const mtu = link.mtu === undefined ? "" : `, MTU ${link.mtu}`;
    const unseen =
      iface === undefined
        ? "; the pod's interface read leaves out such links, so init sees none of its addresses"
        : "";
    if (!link.adminUp) {
      return problem(
        "link",
        `${name} is administratively down (operstate ${link.operState}${mtu})${unseen}.`,
        {
          subject,
          fix: `the CNI plugin brings it up; recreate the pod, or run ip link set dev ${name} up in it (needs NET_ADMIN)`,
        },
      );
    }
    if (link.operState === "down" || link.operState === "lowerlayerdown") {
      return problem(
        "link",
        `${name} is up but has no carrier (operstate ${link.operState}${mtu}): its parent interface on the node, the Multus ENI, is down, so no packet leaves the pod${unseen}.`,
        {
          subject,
          fix:
            "on the node, bring the Multus ENI's interface up (ip link set dev <parent> up); ENIs tagged " +
            "node.k8s.amazonaws.com/no_manage=true are not configured by the VPC CNI, so the node's user data must do it",
        },
      );
    }
    if (iface === undefined) {
      return ok("link", `${name} is up (operstate ${link.operState}${mtu}) and carries no address yet.`, {
        subject,
      });
    }
    if (link.mac !== undefined && link.mac !== iface.mac) {
      return warn(
        "link",
        `${name} has MAC ${link.mac} locally but ${iface.mac} in the network-status file.`,
        {
          subject,
          fix: "the network-status file is stale or names another pod's interface; check IPMGR_NETWORK_STATUS_FILE",
        },
      );
    }
    return ok("link", `${name} is up (operstate ${link.operState}${mtu}).`, { subject });
  });
}

/** Per managed interface: the ENI whose MAC it carries, as the planner matches them. */
export function eniMatchChecks(
  interfaces: readonly PodInterface[],
  enis: readonly EniState[],
): CheckResult[] {
  const byMac = new Map(enis.map((e) => [e.mac.toLowerCase(), e]));
  return interfaces.map((iface) => {
    const subject = iface.name;
    const mac = iface.mac.toLowerCase();
    const eni = byMac.get(mac);
    if (eni === undefined) {
      return problem(
        "eni-match",
        `${iface.name} has MAC ${mac}, which matches no ENI of this instance (ENI MACs: ${listText(
          enis.map((e) => e.mac),
        )}); init and the sidecar refuse its addresses and exit 7.`,
        {
          subject,
          fix:
            "with ipvlan the pod interface carries its parent ENI's MAC: make the NetworkAttachmentDefinition's master " +
            "the Multus ENI's interface on the node (macvlan and bridge give the pod a MAC of its own, which no ENI has), " +
            "or leave this interface out with IPMGR_EXCLUDE_INTERFACES",
        },
      );
    }
    const where = `${eni.eniId} (device ${eni.deviceIndex}, ${eni.subnetId}, ${listText([
      ...eni.subnetIpv4Cidrs,
      ...eni.subnetIpv6Cidrs,
    ])})`;
    if (eni.deviceIndex === 0) {
      return warn(
        "eni-match",
        `${iface.name} (MAC ${mac}) sits on ${where}, the instance's primary ENI, which the VPC CNI manages: its own pod addresses share that ENI.`,
        {
          subject,
          fix: "attach a secondary ENI tagged node.k8s.amazonaws.com/no_manage=true and make it the NetworkAttachmentDefinition's master",
        },
      );
    }
    return ok("eni-match", `${iface.name} (MAC ${mac}) is on ${where}.`, { subject });
  });
}
