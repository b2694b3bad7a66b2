import { TimeoutError } from "./errors/timeout-error.js";
import type { InterfaceSource } from "./interface-source.js";
import { addressKind } from "./ip.js";
import type { Clock } from "./process/clock.js";
import type { PodInterface } from "./types.js";

function hasUsableAddress(iface: PodInterface): boolean {
  return iface.addresses.some((a) => addressKind(a) === "unicast");
}

/**
 * Waits until at least one managed interface exists and every managed interface carries a unicast address.
 * Multus finishes CNI ADD before init containers start, so this normally returns on the first read; the
 * wait covers IPAMs that configure addresses late, and the network-status file that kubelet refreshes late.
 */
export async function waitForAddresses(
  source: InterfaceSource,
  clock: Clock,
  options: { timeoutMs: number; intervalMs: number; signal?: AbortSignal },
): Promise<PodInterface[]> {
  const deadline = clock.now() + options.timeoutMs;
  for (;;) {
    const interfaces = await source.read();
    if (interfaces.length > 0 && interfaces.every(hasUsableAddress)) return interfaces;
    if (clock.now() >= deadline) {
      const seen = interfaces.map((i) => `${i.name} [${i.addresses.join(" ") || "no address"}]`).join(", ");
      throw new TimeoutError(
        "the managed pod interfaces to carry addresses",
        options.timeoutMs,
        interfaces.length === 0
          ? "No managed interface was found. Check that the pod has its Multus annotation, and IPMGR_INTERFACES / IPMGR_EXCLUDE_INTERFACES."
          : `Managed interfaces seen: ${seen}. Check the IPAM of the NetworkAttachmentDefinition, or raise IPMGR_WAIT_FOR_ADDRESSES_MS.`,
      );
    }
    await clock.sleep(options.intervalMs, options.signal);
  }
}
