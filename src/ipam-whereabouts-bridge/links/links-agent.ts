/**
 * The links agent's loop (`multus-ipmgr links`): every interval, one pass. A pass reads the ENIs IMDS shows
 * and the node's links, plans each network (link-pass.ts), takes the steps through LinkOps, and writes the
 * status file the bridge reads. A step that fails makes its network `failed` for this pass, and the next
 * pass plans again from what it finds: nothing is remembered between passes but what was logged.
 */
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import {
  LINK_STATUS_VERSION,
  type LinkReport,
  type LinkStatus,
  serializeLinkStatus,
} from "../node/link-status.js";
import { writeFileAtomically } from "./atomic-file.js";
import { readEniSlots, type SlotImds } from "./eni-slots.js";
import type { LinkOps, NodeLink } from "./link-ops.js";
import {
  describeStep,
  type EniSlot,
  type LinkNetwork,
  type LinkPlan,
  type LinkStep,
  networkdFileName,
  planLinks,
} from "./link-pass.js";

export interface LinksAgentDeps {
  readonly imds: SlotImds;
  readonly ops: LinkOps;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface LinksAgentOptions {
  readonly networks: readonly LinkNetwork[];
  /** IPMGR_BRIDGE_LINK_STATUS_FILE */
  readonly statusFile: string;
  /** IPMGR_LINKS_INTERVAL_MS */
  readonly intervalMs: number;
  /** Whether to write systemd-networkd files (IPMGR_LINKS_NETWORKD_DIR not empty). */
  readonly networkd: boolean;
}

/** What a pass plans from. */
interface Observation {
  readonly slots: readonly EniSlot[];
  readonly links: readonly NodeLink[];
  /** Our networkd files' text, by file name. */
  readonly networkdFiles: ReadonlyMap<string, string>;
}

export class LinksAgent {
  readonly #deps: LinksAgentDeps;
  readonly #options: LinksAgentOptions;
  /** Each network's last reported state and detail, so that a state is logged once, when it changes. */
  readonly #lastReport = new Map<string, string>();
  #lastPassFailure: string | undefined;

  constructor(deps: LinksAgentDeps, options: LinksAgentOptions) {
    this.#deps = deps;
    this.#options = options;
  }

  /**
   * Passes until `signal` aborts; resolves then, once the pass in progress has ended (it is not cut: a link
   * is never left renamed but down). A pass that fails is logged and the loop goes on.
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.passAndReport();
      try {
        await this.#deps.clock.sleep(this.#options.intervalMs, signal);
      } catch (error) {
        if (signal.aborted) return;
        throw error;
      }
    }
  }

  /** One pass and its status file; a failure to write the file is logged (once per distinct failure). */
  async passAndReport(): Promise<LinkStatus | undefined> {
    try {
      const status = await this.pass();
      await writeFileAtomically(this.#options.statusFile, serializeLinkStatus(status));
      if (this.#lastPassFailure !== undefined) this.#deps.logger.info("the links agent's pass works again");
      this.#lastPassFailure = undefined;
      return status;
    } catch (error) {
      const message = (error as Error).message;
      if (message !== this.#lastPassFailure) {
        this.#deps.logger.error(
          { err: error, statusFile: this.#options.statusFile },
          "links pass failed; retrying every interval",
        );
      }
      this.#lastPassFailure = message;
      return undefined;
    }
  }

  /** Observes, plans, applies; returns the report of every network. Writes nothing but the links and networkd. */
  async pass(): Promise<LinkStatus> {
    const { networks } = this.#options;
    const observed = await this.#observe();
    const reports =
      typeof observed === "string"
        ? networks.map(
            (n): LinkReport => ({
              network: n.name,
              deviceIndex: n.deviceIndex,
              networkCardIndex: n.networkCardIndex,
              state: "failed",
              detail: observed,
            }),
          )
        : await Promise.all(
            planLinks(networks, observed.slots, observed.links, {
              networkd: this.#options.networkd,
              networkdFiles: observed.networkdFiles,
            }).map((plan) => this.#apply(plan)),
          );
    for (const report of reports) this.#logChange(report);
    return {
      version: LINK_STATUS_VERSION,
      writtenAt: new Date(this.#deps.clock.now()).toISOString(),
      links: reports,
    };
  }

  /** What the pass plans from, or why it could not be read (every network is then `failed` with it). */
  async #observe(): Promise<string | Observation> {
    const { ops, imds } = this.#deps;
    let slots: readonly EniSlot[];
    try {
      slots = await readEniSlots(imds);
    } catch (error) {
      return `IMDS could not be read: ${(error as Error).message}`;
    }
    let links: readonly NodeLink[];
    try {
      const listed = await ops.listLinks();
      const enis = new Set(slots.map((s) => s.mac.toLowerCase()));
      links = await Promise.all(
        listed.map(
          async (l): Promise<NodeLink> => ({
            ...l,
            rpFilter: enis.has(l.mac) ? await ops.readRpFilter(l.name) : undefined,
          }),
        ),
      );
    } catch (error) {
      return `the node's links could not be listed: ${(error as Error).message}`;
    }
    const networkdFiles = new Map<string, string>();
    if (this.#options.networkd) {
      for (const network of this.#options.networks) {
        const file = networkdFileName(network.name);
        try {
          const text = await ops.readNetworkdFile(file);
          if (text !== undefined) networkdFiles.set(file, text);
        } catch (error) {
          return `the systemd-networkd file ${file} could not be read: ${(error as Error).message}`;
        }
      }
    }
    return { slots, links, networkdFiles };
  }

  /** Takes a network's steps in order; the first that fails ends them and makes the report `failed`. */
  async #apply(plan: LinkPlan): Promise<LinkReport> {
    for (const step of plan.steps) {
      try {
        await this.#take(step);
      } catch (error) {
        return {
          ...plan.report,
          state: "failed",
          detail: `could not ${describeStep(step)}: ${(error as Error).message}; retried at the next pass`,
        };
      }
      this.#logStep(plan.report.network, step);
    }
    return plan.report;
  }

  #take(step: LinkStep): Promise<void> {
    const { ops } = this.#deps;
    switch (step.kind) {
      case "networkd":
        return ops.writeNetworkdFile(step.file, step.text);
      case "down":
        return ops.setDown(step.link);
      case "rename":
        return ops.rename(step.from, step.to);
      case "mtu":
        return ops.setMtu(step.link, step.mtu);
      case "up":
        return ops.setUp(step.link);
      case "delete-address":
        return ops.deleteAddress(step.link, step.cidr);
      case "rp-filter":
        return ops.setRpFilter(step.link, 0);
    }
  }

  #logStep(network: string, step: LinkStep): void {
    if (step.kind === "delete-address") {
      // The alias problem: amazon-ec2-net-utils puts an ENI's secondary IPv4s on its link as /32s, which
      // would make the host answer for pod addresses.
      this.#deps.logger.warn(
        { network, link: step.link, address: step.cidr },
        "removed an address from the Multus ENI's link: it carries no address (something on the node put it there, e.g. amazon-ec2-net-utils' /32 aliases of the ENI's secondary IPv4s)",
      );
      return;
    }
    this.#deps.logger.info({ network, step: step.kind }, describeStep(step));
  }

  #logChange(report: LinkReport): void {
    const key = `${report.state}\n${report.mac ?? ""}\n${report.detail}`;
    if (this.#lastReport.get(report.network) === key) return;
    this.#lastReport.set(report.network, key);
    const fields = { network: report.network, mac: report.mac, state: report.state, detail: report.detail };
    const message = `link of network ${report.network}: ${report.state}`;
    if (report.state === "failed") this.#deps.logger.warn(fields, message);
    else this.#deps.logger.info(fields, message);
  }
}
