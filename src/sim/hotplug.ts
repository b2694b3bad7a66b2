import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { Topology } from "./topology.js";

const run = promisify(execFile);

/** An attach or a detach EC2 committed, as the hot-plug stand-in hears of it. */
export type AttachmentEvent =
  | {
      readonly kind: "attach";
      readonly instanceId: string;
      readonly mac: string;
      readonly deviceIndex: number;
      readonly networkCardIndex: number;
    }
  | { readonly kind: "detach"; readonly instanceId: string; readonly mac: string };

/**
 * The kernel name an ENA device hot-plugged at this slot gets on a current Linux with predictable names:
 * `ens5` for device 0, `ens6` for device 1, ... (PCI slot 5 + device index). A card above 0 adds `n<card>`
 * (the simulator's choice: real names there depend on the PCI layout of the type).
 */
export function kernelNameOf(deviceIndex: number, networkCardIndex: number): string {
  return `ens${5 + deviceIndex}${networkCardIndex > 0 ? `n${networkCardIndex}` : ""}`;
}

/**
 * The hot-plug stand-in. When EC2 attaches an ENI to an instance whose world entry names `netns`, a link with
 * the ENI's MAC appears in that namespace under the kernel's name, down and without addresses: a veth pair
 * (`NAME` with the MAC, its peer `NAME-p`), since dummy, ipvlan and vlan links need modules a test host may
 * lack. A detach removes the link found by MAC (an agent may have renamed it); its peer goes with it.
 * Commands run one at a time, in EC2's order. A failing `ip` is written to the error log and never fails the
 * EC2 call that caused it.
 */
export class Hotplug {
  readonly #netnsOf: ReadonlyMap<string, string>;
  readonly #errorLog: (line: string) => void;
  #queue: Promise<void> = Promise.resolve();

  constructor(topology: Topology, errorLog: (line: string) => void) {
    const netnsOf = new Map<string, string>();
    for (const instance of topology.instances.values()) {
      if (instance.netns !== undefined) netnsOf.set(instance.id, instance.netns);
    }
    this.#netnsOf = netnsOf;
    this.#errorLog = errorLog;
  }

  /** Queues the link change of one committed attach or detach; nothing for an instance without netns. */
  readonly heard = (event: AttachmentEvent): void => {
    const netns = this.#netnsOf.get(event.instanceId);
    if (netns === undefined) return;
    this.#queue = this.#queue.then(() => this.#apply(netns, event));
  };

  /** Resolves when every queued change is done (close() waits for it). */
  async settled(): Promise<void> {
    await this.#queue;
  }

  async #apply(netns: string, event: AttachmentEvent): Promise<void> {
    try {
      if (event.kind === "attach") {
        const name = kernelNameOf(event.deviceIndex, event.networkCardIndex);
        await run("ip", [
          "-n",
          netns,
          "link",
          "add",
          name,
          "address",
          event.mac,
          "type",
          "veth",
          "peer",
          "name",
          `${name}-p`,
        ]);
      } else {
        const name = await this.#linkWithMac(netns, event.mac);
        if (name === undefined) {
          this.#errorLog(`hotplug: no link with MAC ${event.mac} in netns ${netns} to remove on detach`);
          return;
        }
        await run("ip", ["-n", netns, "link", "del", name]);
      }
    } catch (error) {
      this.#errorLog(
        `hotplug: ${event.kind} of ${event.mac} in netns ${netns} failed: ${(error as Error).message.trim()}`,
      );
    }
  }

  async #linkWithMac(netns: string, mac: string): Promise<string | undefined> {
    const { stdout } = await run("ip", ["-n", netns, "-j", "link", "show"]);
    const links = JSON.parse(stdout) as { ifname: string; address?: string }[];
    return links.find((l) => l.address?.toLowerCase() === mac)?.ifname;
  }
}
