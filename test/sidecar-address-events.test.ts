/**
 * The address event source: `ip -o monitor address` supervised (restart with backoff, kill on stop), with a
 * fake process for the timing, real processes for the failures, and the real `ip` in a network namespace
 * this test creates; and the IPMGR_ADDRESS_EVENTS mode selection.
 */
import type { ChildProcess } from "node:child_process";
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { constants, mkdirSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { explainSpawnError, IpMonitor, type SpawnMonitor } from "../src/eni/address-events.js";
import { AddressEventsUnavailableError } from "../src/eni/errors/address-events-unavailable-error.js";
import { ConfigError } from "../src/eni/errors/config-error.js";
import { systemClock } from "../src/eni/process/clock.js";
import { startAddressEvents } from "../src/sidecar/address-events-mode.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { captureLogger, captureRawLogger, silentLogger } from "./helpers/loggers.js";
import { flush } from "./helpers/manual-clock.js";
import { labUnavailableReason, NS_PREFIX } from "./helpers/netns.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const run = promisify(execFile);

/**
 * What spawn answers for a command that is not on PATH: ENOENT, or EACCES when an entry of PATH cannot be
 * searched by this user (a normal user whose shell kept root's PATH); then the entry is named.
 */
const MISSING =
  /spawn ipmgr-test-no-such-command (ENOENT|EACCES \(the PATH entr(y|ies) \S.* cannot be searched by this user \(uid \d+\)\))/;

/** A stand-in for the `ip` child: the test writes its output and decides when and how it ends. */
class FakeChild extends EventEmitter {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly pid = 4242;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  readonly kills: string[] = [];
  ignoreSigterm = false;

  unref(): void {
    // The real one lets node exit; nothing to do here.
  }

  kill(signal: NodeJS.Signals = "SIGTERM"): boolean {
    this.kills.push(signal);
    if (signal === "SIGTERM" && this.ignoreSigterm) return true;
    this.end(null, signal);
    return true;
  }

  end(code: number | null, signal: NodeJS.Signals | null, stderr = ""): void {
    if (this.exitCode !== null || this.signalCode !== null) return;
    this.exitCode = code;
    this.signalCode = signal;
    if (stderr !== "") this.stderr.write(stderr);
    this.stdout.end();
    this.stderr.end();
    setImmediate(() => this.emit("close", code, signal));
  }
}

/** A spawn that plays `script` in order: a FakeChild, or an error thrown at spawn time. */
function scriptedSpawn(script: ("ok" | Error)[]): {
  spawn: SpawnMonitor;
  children: FakeChild[];
  calls: () => number;
} {
  const children: FakeChild[] = [];
  let calls = 0;
  const spawn: SpawnMonitor = () => {
    const step = script[Math.min(calls, script.length - 1)] ?? "ok";
    calls++;
    if (step instanceof Error) throw step;
    const child = new FakeChild();
    children.push(child);
    return child as unknown as ChildProcess;
  };
  return { spawn, children, calls: () => calls };
}

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const noJitter = () => 0;

describe("IpMonitor with a fake process", () => {
  it("calls the listener on every output line once live", async () => {
    const { spawn, children } = scriptedSpawn(["ok"]);
    const monitor = new IpMonitor({ clock: new FakeClock(), logger: silentLogger(), spawn });
    await monitor.start();
    expect(monitor.live).toBe(true);
    let events = 0;
    monitor.subscribe(() => events++);
    children[0]?.stdout.write("3: net1    inet 198.51.100.80/25 scope global net1\\ ...\n");
    children[0]?.stdout.write("Deleted 3: net1    inet 198.51.100.80/25 scope global net1\\ ...\n");
    await flush();
    expect(events).toBe(2);
    await monitor.stop();
  });

  it("restarts a monitor that exited with backoff 1 s, 2 s, 4 s, warning once per outage", async () => {
    const clock = new FakeClock();
    const { logger, lines } = captureLogger();
    const spawnFailure = Object.assign(new Error("spawn ip EAGAIN"), { code: "EAGAIN" });
    const { spawn, children, calls } = scriptedSpawn(["ok", spawnFailure, spawnFailure, "ok"]);
    const monitor = new IpMonitor({ clock, logger, spawn, random: noJitter });
    await monitor.start();
    const liveness: boolean[] = [];
    monitor.subscribe(() => liveness.push(monitor.live));

    children[0]?.end(1, null, "Cannot open netlink socket");
    await eventually(() => calls() === 4 && monitor.live, "monitor restarted");
    expect(clock.sleeps).toEqual([100, 1000, 2000, 4000, 100]);
    expect(liveness).toEqual([false, true]);
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.reason).toBe("exited with code 1: Cannot open netlink socket");
    expect(lines.filter((l) => l.msg === "the address event monitor runs again")).toHaveLength(1);
    await monitor.stop();
  });

  it("caps the restart delay at 30 s", async () => {
    const clock = new FakeClock();
    let monitor: IpMonitor | undefined;
    let stopping: Promise<void> | undefined;
    let calls = 0;
    const first = new FakeChild();
    const spawn: SpawnMonitor = () => {
      calls++;
      if (calls === 1) return first as unknown as ChildProcess;
      if (calls === 9) stopping = monitor?.stop();
      throw new Error("spawn ip EAGAIN");
    };
    monitor = new IpMonitor({ clock, logger: silentLogger(), spawn, random: noJitter });
    await monitor.start();
    first.end(1, null);
    await eventually(() => stopping !== undefined, "eight restarts");
    await stopping;
    expect(clock.sleeps).toEqual([100, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });

  it("stops the monitor with SIGTERM, never restarts it, and removes its exit hook", async () => {
    const hooks = process.listenerCount("exit");
    const { spawn, children, calls } = scriptedSpawn(["ok"]);
    const monitor = new IpMonitor({ clock: new FakeClock(), logger: silentLogger(), spawn });
    await monitor.start();
    expect(process.listenerCount("exit")).toBe(hooks + 1);
    await monitor.stop();
    await flush();
    expect(children[0]?.kills[0]).toBe("SIGTERM");
    expect(calls()).toBe(1);
    expect(monitor.live).toBe(false);
    expect(process.listenerCount("exit")).toBe(hooks);
  });

  it("kills a monitor that ignores SIGTERM with SIGKILL after the grace", async () => {
    const { spawn, children } = scriptedSpawn(["ok"]);
    const clock = new FakeClock();
    const monitor = new IpMonitor({ clock, logger: silentLogger(), spawn, killGraceMs: 1000 });
    await monitor.start();
    const child = children[0];
    if (child === undefined) throw new Error("no child");
    child.ignoreSigterm = true;
    await monitor.stop();
    expect(child.kills).toEqual(["SIGTERM", "SIGKILL"]);
    expect(clock.sleeps.at(-1)).toBe(1000);
  });
});

describe("IpMonitor with real processes", () => {
  it("reports a missing command as unavailable (ENOENT)", async () => {
    const monitor = new IpMonitor({
      clock: systemClock,
      logger: silentLogger(),
      command: ["ipmgr-test-no-such-command", "monitor"],
    });
    const error = await monitor.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AddressEventsUnavailableError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^cannot watch address events with "ipmgr-test-no-such-command monitor": ${MISSING.source}$`,
      ),
    );
    expect(monitor.live).toBe(false);
  });

  it.skipIf(process.getuid?.() !== 0)(
    "reports a command that PATH hides from this user as unavailable too (EACCES; spawned as nobody, so root only)",
    async () => {
      const dir = makeTempDir("ipmgr-path-");
      try {
        const locked = join(dir, "locked");
        mkdirSync(locked, { mode: 0o700 });
        const monitor = new IpMonitor({
          clock: systemClock,
          logger: silentLogger(),
          command: ["ipmgr-test-no-such-command", "monitor"],
          spawn: (file, args) =>
            spawn(file, args, {
              uid: 65534,
              gid: 65534,
              env: { PATH: locked },
              stdio: ["ignore", "pipe", "pipe"],
            }),
        });
        const error = await monitor.start().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(AddressEventsUnavailableError);
        expect((error as AddressEventsUnavailableError).reason).toMatch(
          /^spawn ipmgr-test-no-such-command EACCES/,
        );
        expect(monitor.live).toBe(false);
      } finally {
        removeTempDir(dir);
      }
    },
  );
});

describe("explainSpawnError", () => {
  const eacces = () => Object.assign(new Error("spawn ip EACCES"), { code: "EACCES" });
  /** A file system where `/root/bin` cannot be searched and `/opt/bin/ip` exists but may not be run. */
  const fs = (path: string, mode: number): boolean => {
    if (path === "/root/bin") return false;
    if (path === "/opt/bin/ip") return mode === constants.F_OK;
    return !path.endsWith("/ip");
  };
  const uid = process.getuid?.();

  it("names the PATH entry that could not be searched", () => {
    const explained = explainSpawnError(eacces(), "ip", "/root/bin:/usr/local/bin:/usr/bin", fs);
    expect(explained.message).toBe(
      `spawn ip EACCES (the PATH entry /root/bin cannot be searched by this user (uid ${uid}))`,
    );
    expect((explained as NodeJS.ErrnoException).code).toBe("EACCES");
    expect(explained.cause).toBeInstanceOf(Error);
  });

  it("names a command found on PATH that may not be run", () => {
    expect(explainSpawnError(eacces(), "ip", "/usr/bin:/opt/bin", fs).message).toBe(
      `spawn ip EACCES (/opt/bin/ip on PATH may not be run by this user (uid ${uid}))`,
    );
  });

  it("leaves ENOENT, a command with a slash, and an EACCES it cannot explain as they are", () => {
    const enoent = Object.assign(new Error("spawn ip ENOENT"), { code: "ENOENT" });
    expect(explainSpawnError(enoent, "ip", "/root/bin", fs)).toBe(enoent);
    const withSlash = eacces();
    expect(explainSpawnError(withSlash, "/root/bin/ip", "/root/bin", fs)).toBe(withSlash);
    const unexplained = eacces();
    expect(explainSpawnError(unexplained, "ip", "/usr/bin", fs)).toBe(unexplained);
  });

  it("reports a monitor that exits during the warm-up as unavailable, with its stderr", async () => {
    const monitor = new IpMonitor({
      clock: systemClock,
      logger: silentLogger(),
      command: ["sh", "-c", "echo 'Object \"monitor\" is unknown' >&2; exit 255"],
      warmupMs: 5_000,
    });
    const error = await monitor.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AddressEventsUnavailableError);
    expect((error as AddressEventsUnavailableError).reason).toBe(
      'exited with code 255: Object "monitor" is unknown',
    );
  });
});

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`ip monitor namespace tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== undefined)("IpMonitor: the real ip monitor in a network namespace", () => {
  let ns: string | undefined;
  let monitor: IpMonitor | undefined;

  afterEach(async () => {
    await monitor?.stop();
    monitor = undefined;
    if (ns !== undefined) await run("ip", ["netns", "del", ns]).catch(() => undefined);
    ns = undefined;
  });

  it("calls the listener when an address is added to or removed from an interface in its namespace", async () => {
    // The ipmt-<pid>- prefix lets netns.ts's stale-lab cleanup remove it after a crash.
    const name = `${NS_PREFIX}${process.pid}-${randomBytes(3).toString("hex")}-ev`;
    await run("ip", ["netns", "add", name]);
    ns = name;
    await run("ip", ["-n", name, "link", "add", "v0", "type", "veth", "peer", "name", "v1"]);
    await run("ip", ["-n", name, "link", "set", "v0", "up"]);
    const current = new IpMonitor({
      clock: systemClock,
      logger: silentLogger(),
      command: ["ip", "netns", "exec", name, "ip", "-o", "monitor", "address"],
    });
    monitor = current;
    await current.start();
    let events = 0;
    current.subscribe(() => events++);

    await run("ip", ["-n", name, "addr", "add", "198.51.100.5/24", "dev", "v0"]);
    await eventually(() => events >= 1, "an event for the added address");
    const afterAdd = events;
    await run("ip", ["-n", name, "addr", "del", "198.51.100.5/24", "dev", "v0"]);
    await eventually(() => events > afterAdd, "an event for the removed address");
    await run("ip", ["-n", name, "addr", "add", "2001:db8::5/64", "dev", "v0", "nodad"]);
    await eventually(() => events > afterAdd + 1, "an event for an IPv6 address");
    expect(current.live).toBe(true);

    await current.stop();
    const { stdout } = await run("ip", ["netns", "pids", name]);
    expect(stdout.trim()).toBe("");
  });
});

describe("startAddressEvents (IPMGR_ADDRESS_EVENTS)", () => {
  const base = { clock: systemClock, pollIntervalMs: 50, fallbackPollMs: 1000, watchesInterfaces: true };
  const missing = ["ipmgr-test-no-such-command"];

  it("auto falls back to polling when ip is missing, and says so once", async () => {
    const { logger, lines } = captureLogger();
    const events = await startAddressEvents({ ...base, logger, mode: "auto", command: missing });
    expect(events).toBeUndefined();
    expect(lines).toHaveLength(1);
    expect(lines[0]?.addressEvents).toBe("poll");
    expect(String(lines[0]?.msg)).toMatch(
      new RegExp(`^watching pod addresses by polling every 50 ms: .*${MISSING.source}`),
    );
  });

  it("auto uses ip monitor when it runs, and logs the mode once", async () => {
    const { logger, lines } = captureLogger();
    const { spawn } = scriptedSpawn(["ok"]);
    const events = await startAddressEvents({ ...base, logger, mode: "auto", spawn, clock: new FakeClock() });
    expect(events?.live).toBe(true);
    expect(lines.map((l) => l.msg)).toEqual([
      'watching pod addresses through "ip -o monitor address" events, with a safety-net poll every 1000 ms',
    ]);
    await events?.stop();
  });

  it("names the monitor's command line monitorCommand, leaving the logger's own command field alone", async () => {
    const { logger, raw } = captureRawLogger({ command: "sidecar" });
    const { spawn } = scriptedSpawn(["ok"]);
    const events = await startAddressEvents({ ...base, logger, mode: "auto", spawn, clock: new FakeClock() });
    expect(raw).toHaveLength(1);
    expect(raw[0]?.match(/"command":/g)).toHaveLength(1);
    expect(JSON.parse(raw[0] ?? "")).toMatchObject({
      command: "sidecar",
      addressEvents: "ip-monitor",
      monitorCommand: "ip -o monitor address",
      fallbackPollMs: 1000,
    });
    await events?.stop();
  });

  it("ip-monitor refuses to start without ip, naming the variable and the fix", async () => {
    const error = await startAddressEvents({
      ...base,
      logger: silentLogger(),
      mode: "ip-monitor",
      command: missing,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(
      new RegExp(
        `^IPMGR_ADDRESS_EVENTS="ip-monitor": cannot run "ipmgr-test-no-such-command" \\(${MISSING.source}\\)\\. Install iproute2 in the image, or set IPMGR_ADDRESS_EVENTS=auto to poll when it is missing$`,
      ),
    );
  });

  it("poll never starts a process", async () => {
    const spawn: SpawnMonitor = () => {
      throw new Error("poll mode must not spawn");
    };
    const { logger, lines } = captureLogger();
    expect(await startAddressEvents({ ...base, logger, mode: "poll", spawn })).toBeUndefined();
    expect(lines.map((l) => l.msg)).toEqual(["watching pod addresses by polling every 50 ms"]);
  });

  it("refuses ip-monitor with the network-status address source, and polls there in auto", async () => {
    const spawn: SpawnMonitor = () => {
      throw new Error("no events for the network-status file");
    };
    const options = { ...base, logger: silentLogger(), spawn, watchesInterfaces: false };
    expect(await startAddressEvents({ ...options, mode: "auto" })).toBeUndefined();
    const error = await startAddressEvents({ ...options, mode: "ip-monitor" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as ConfigError).message).toBe(
      'IPMGR_ADDRESS_EVENTS="ip-monitor": interface events need IPMGR_ADDRESS_SOURCE=interfaces; with the network-status file set IPMGR_ADDRESS_EVENTS=auto or poll',
    );
  });
});
