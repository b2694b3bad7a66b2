/**
 * The links agent's passes (links-agent.ts) against the simulator's IMDS, on an in-memory node (LinkOps):
 * a step that fails, an IMDS that does not answer, the status file, and the log said once per change.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LinkCommandError } from "../src/eni/errors/link-command-error.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import { systemClock } from "../src/eni/process/clock.js";
import type { LinkOps, NodeLink } from "../src/ipam-whereabouts-bridge/links/link-ops.js";
import { LinksAgent } from "../src/ipam-whereabouts-bridge/links/links-agent.js";
import { parseLinkStatus } from "../src/ipam-whereabouts-bridge/node/link-status.js";
import { type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { closedPortUrl } from "./helpers/closed-port.js";
import { captureLogger } from "./helpers/loggers.js";
import { imdsFor, standardWorld } from "./helpers/sim-fixtures.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const MAC = "02:00:00:00:0b:01";
const NETWORKS = [
  { name: "multus1", deviceIndex: 1, networkCardIndex: 0, mtu: 9001 },
  { name: "multus2", deviceIndex: 5, networkCardIndex: 0, mtu: 9001 },
];

/** The node's links in memory; `refuse` makes the named operation fail as `ip` would. */
class MemoryLinks implements LinkOps {
  links: NodeLink[];
  files = new Map<string, string>();
  refuse: string | undefined;
  constructor(links: NodeLink[]) {
    this.links = links;
  }
  async listLinks() {
    return this.links.map(({ rpFilter: _, ...listed }) => listed);
  }
  async readRpFilter(name: string) {
    return this.links.find((l) => l.name === name)?.rpFilter;
  }
  #change(name: string, op: string, f: (l: NodeLink) => NodeLink): Promise<void> {
    if (this.refuse === op) {
      const command = ["ip", "link", "set", "dev", name, op];
      return Promise.reject(
        new LinkCommandError(
          command,
          "RTNETLINK answers: Device or resource busy",
          `${command.join(" ")} failed: RTNETLINK answers: Device or resource busy`,
        ),
      );
    }
    this.links = this.links.map((l) => (l.name === name ? f(l) : l));
    return Promise.resolve();
  }
  setDown(name: string) {
    return this.#change(name, "down", (l) => ({ ...l, up: false }));
  }
  rename(from: string, to: string) {
    return this.#change(from, "name", (l) => ({ ...l, name: to }));
  }
  setMtu(name: string, mtu: number) {
    return this.#change(name, "mtu", (l) => ({ ...l, mtu }));
  }
  setUp(name: string) {
    return this.#change(name, "up", (l) => ({ ...l, up: true }));
  }
  deleteAddress(name: string, cidr: string) {
    return this.#change(name, "del", (l) => ({
      ...l,
      addresses: l.addresses.filter((a) => `${a.local}/${a.prefixLength}` !== cidr),
    }));
  }
  setRpFilter(name: string, value: number) {
    return this.#change(name, "rp_filter", (l) => ({ ...l, rpFilter: value }));
  }
  async readNetworkdFile(file: string) {
    return this.files.get(file);
  }
  async writeNetworkdFile(file: string, text: string) {
    this.files.set(file, text);
  }
}

let sim: SimulatorHandle | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
  removeTempDir(dir);
  dir = undefined;
});

function agentOn(imds: ImdsClient, links: MemoryLinks) {
  dir = makeTempDir("ipmgr-node-");
  const statusFile = join(dir, "links.json");
  const { logger, lines } = captureLogger();
  const agent = new LinksAgent(
    { imds, ops: links, clock: systemClock, logger },
    { networks: NETWORKS, statusFile, intervalMs: 50, networkd: true },
  );
  const written = () => parseLinkStatus(readFileSync(statusFile, "utf8"));
  return { agent, lines, written, statusDir: dir };
}

const ENS6: NodeLink = { name: "ens6", mac: MAC, mtu: 1500, up: true, addresses: [], rpFilter: 1 };

describe("LinksAgent", () => {
  it("reports a refused step as failed with the command's words, once in the log, and ready once it works", async () => {
    sim = await startSimulator(standardWorld());
    const links = new MemoryLinks([ENS6]);
    links.refuse = "name";
    const { agent, lines, written, statusDir } = agentOn(imdsFor(sim, "i-1"), links);
    await agent.passAndReport();
    await agent.passAndReport();
    const failed = written();
    expect(typeof failed === "string" ? failed : failed.links).toEqual([
      {
        network: "multus1",
        deviceIndex: 1,
        networkCardIndex: 0,
        mac: MAC,
        state: "failed",
        detail:
          "could not rename ens6 to multus1: ip link set dev ens6 name failed: RTNETLINK answers: Device or resource busy; retried at the next pass",
      },
      {
        network: "multus2",
        deviceIndex: 5,
        networkCardIndex: 0,
        state: "waiting",
        detail:
          "IMDS shows no ENI at network card 0, device 5 yet (the bridge attaches it; IMDS follows EC2 within seconds)",
      },
    ]);
    expect(lines.filter((l) => l.msg === "link of network multus1: failed")).toHaveLength(1);
    // Set down before the refused rename: the next pass renames and sets it up.
    expect(links.links[0]).toMatchObject({ name: "ens6", up: false });
    links.refuse = undefined;
    await agent.passAndReport();
    const ready = written();
    expect(typeof ready === "string" ? ready : ready.links[0]?.state).toBe("ready");
    expect(links.links).toEqual([{ ...ENS6, name: "multus1", mtu: 9001, rpFilter: 0 }]);
    expect([...links.files.keys()]).toEqual(["10-multus-ipmgr-multus1.network"]);
    expect(lines.filter((l) => l.msg === "link of network multus1: ready")).toHaveLength(1);
    // Written whole: no temp file stays beside it.
    expect(readdirSync(statusDir)).toEqual(["links.json"]);
  });

  it("reports every network failed, naming IMDS, when IMDS does not answer, and still writes the file", async () => {
    const imds = new ImdsClient({ endpoint: await closedPortUrl(), requestTimeoutMs: 200 });
    const { agent, written } = agentOn(imds, new MemoryLinks([ENS6]));
    await agent.passAndReport();
    const status = written();
    if (typeof status === "string") throw new Error(status);
    expect(status.links.map((l) => l.state)).toEqual(["failed", "failed"]);
    expect(status.links[0]?.detail).toMatch(/^IMDS could not be read: /);
  });

  it("stops between passes when its signal aborts", async () => {
    sim = await startSimulator(standardWorld());
    const { agent, written } = agentOn(imdsFor(sim, "i-1"), new MemoryLinks([ENS6]));
    const stop = new AbortController();
    const running = agent.run(stop.signal);
    await expect.poll(() => readdirSync(dir ?? "").includes("links.json")).toBe(true);
    stop.abort();
    await running;
    expect(typeof written()).toBe("object");
  });
});
