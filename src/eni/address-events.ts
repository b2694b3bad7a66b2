import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { type BackoffPolicy, backoffDelay } from "./backoff.js";
import { AddressEventsUnavailableError } from "./errors/address-events-unavailable-error.js";
import { linkedAbort } from "./linked-abort.js";
import type { Clock } from "./process/clock.js";
import type { Logger } from "./process/logger.js";

/**
 * Something that says "the addresses may have changed, read them again". It carries no addresses on
 * purpose: os.networkInterfaces() stays the one source of truth, so an event we misread can at worst cost
 * one extra read, never a wrong assignment.
 */
export interface AddressEvents {
  /**
   * Whether events arrive now. While false (not started, or the source died and is being restarted) the
   * watcher polls at its normal interval instead of relying on events.
   */
  readonly live: boolean;
  /** Sets the one listener, called on every event and whenever `live` changes. It must not throw. */
  subscribe(listener: () => void): void;
  /** Stops the source for good; resolves once nothing of it is left running. */
  stop(): Promise<void>;
}

/** Starts the monitor process; the default runs node's spawn with stdin ignored and stdout/stderr piped. */
export type SpawnMonitor = (file: string, args: readonly string[]) => ChildProcess;

export interface IpMonitorOptions {
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * The command line, default `ip -o monitor address`. Tests prefix it with `ip netns exec <ns>` to watch
   * a namespace of their own. Any output line counts as one event.
   */
  readonly command?: readonly string[];
  /** Default: node's child_process.spawn. Unit tests inject a fake process. */
  readonly spawn?: SpawnMonitor;
  /**
   * Milliseconds the process must stay up after starting before its events are trusted (`live`). An `ip`
   * that exits within this time on the first start means events are unavailable here. `ip` gives no sign
   * once it has subscribed, so until then the watcher keeps polling at its normal interval. Default 100.
   */
  readonly warmupMs?: number;
  /** Delay before restarting a monitor that exited: 1 s doubling to 30 s (plus up to 25 % jitter) by default. */
  readonly restartBackoff?: BackoffPolicy;
  /** After SIGTERM, milliseconds to wait for the process to exit before SIGKILL. Default 1000. */
  readonly killGraceMs?: number;
  /** Jitter source for the restart backoff, in [0, 1). Default Math.random. */
  readonly random?: () => number;
}

export const DEFAULT_IP_MONITOR_COMMAND: readonly string[] = ["ip", "-o", "monitor", "address"];
export const DEFAULT_WARMUP_MS = 100;
export const DEFAULT_RESTART_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 30_000 };
const DEFAULT_KILL_GRACE_MS = 1_000;
/** How much of a failed monitor's stderr goes into the log and the error message. */
const STDERR_TAIL = 500;

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly error: Error | undefined;
  readonly stderr: string;
}

interface Running {
  readonly child: ChildProcess;
  readonly ended: Promise<Ended>;
}

type Launch =
  | { readonly kind: "live"; readonly run: Running }
  | { readonly kind: "failed"; readonly ended: Ended };

/** Whether this process may do `mode` (fs.constants) on `path`; tests inject the answers. */
export type AccessCheck = (path: string, mode: number) => boolean;

const access: AccessCheck = (path, mode) => {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
};

/**
 * A spawn that failed with EACCES, told in full. A command named without a slash is searched on PATH, and
 * an entry this user may not search (a normal user whose shell kept root's PATH, with /root/bin on it) is
 * skipped; if the command is found nowhere else, spawn answers EACCES, not ENOENT, and names no directory.
 * This names the entries that could not be searched, or the file found that may not be run. Other errors,
 * and an EACCES with nothing to add, come back as they are.
 */
export function explainSpawnError(
  error: Error,
  file: string,
  path: string = process.env.PATH ?? "",
  canAccess: AccessCheck = access,
): Error {
  if ((error as NodeJS.ErrnoException).code !== "EACCES" || file.includes("/")) return error;
  const entries = path.split(delimiter).filter((entry) => entry !== "");
  const unsearchable = entries.filter((entry) => !canAccess(entry, constants.X_OK));
  const notRunnable = entries.filter(
    (entry) =>
      canAccess(entry, constants.X_OK) &&
      canAccess(join(entry, file), constants.F_OK) &&
      !canAccess(join(entry, file), constants.X_OK),
  );
  const who = process.getuid === undefined ? "this user" : `this user (uid ${process.getuid()})`;
  const parts = [
    ...(unsearchable.length === 0
      ? []
      : [
          `the PATH ${unsearchable.length === 1 ? "entry" : "entries"} ${unsearchable.join(", ")} cannot be searched by ${who}`,
        ]),
    ...notRunnable.map((entry) => `${join(entry, file)} on PATH may not be run by ${who}`),
  ];
  if (parts.length === 0) return error;
  const explained = new Error(`${error.message} (${parts.join("; ")})`, { cause: error });
  return Object.assign(explained, { code: "EACCES" });
}

const defaultSpawn: SpawnMonitor = (file, args) => spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] });

/**
 * Address events from the kernel through `ip -o monitor address` (iproute2), which subscribes to the
 * netlink address groups of the namespace it runs in: the pod's, since children inherit it. No privilege
 * is needed, and no native dependency: the well-kept netlink implementation is iproute2 itself.
 *
 * When the process exits later, it is restarted with backoff, warning once per outage; meanwhile `live`
 * is false and the watcher polls. stop() kills it; so does a process exit hook. Should node itself be
 * killed with SIGKILL, `ip` dies of SIGPIPE at its next event, and in Kubernetes with its container.
 */
export class IpMonitor implements AddressEvents {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #command: readonly string[];
  readonly #spawn: SpawnMonitor;
  readonly #warmupMs: number;
  readonly #backoff: BackoffPolicy;
  readonly #killGraceMs: number;
  readonly #random: () => number;
  readonly #stop = new AbortController();
  #listener: (() => void) | undefined;
  #live = false;
  #current: Running | undefined;
  #supervising: Promise<void> | undefined;
  #started = false;
  readonly #killOnExit = (): void => {
    this.#current?.child.kill("SIGKILL");
  };

  constructor(options: IpMonitorOptions) {
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#command = options.command ?? DEFAULT_IP_MONITOR_COMMAND;
    if (this.#command.length === 0) throw new Error("IpMonitor: empty command");
    this.#spawn = options.spawn ?? defaultSpawn;
    this.#warmupMs = options.warmupMs ?? DEFAULT_WARMUP_MS;
    this.#backoff = options.restartBackoff ?? DEFAULT_RESTART_BACKOFF;
    this.#killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
    this.#random = options.random ?? Math.random;
  }

  get live(): boolean {
    return this.#live;
  }

  /** The command line, for logs. */
  get commandLine(): string {
    return this.#command.join(" ");
  }

  subscribe(listener: () => void): void {
    this.#listener = listener;
  }

  /**
   * Starts the monitor; resolves once it has stayed up for the warm-up time (then `live` is true).
   * Rejects with AddressEventsUnavailableError when it cannot be started or exits during the warm-up.
   */
  async start(): Promise<void> {
    if (this.#started) throw new Error("IpMonitor.start called twice");
    this.#started = true;
    process.on("exit", this.#killOnExit);
    const first = await this.#launch();
    if (this.#stop.signal.aborted) return;
    if (first.kind === "failed") {
      process.off("exit", this.#killOnExit);
      throw new AddressEventsUnavailableError(this.commandLine, describeEnd(first.ended), {
        cause: first.ended.error,
      });
    }
    this.#setLive(true);
    this.#supervising = this.#supervise(first.run).catch((error: unknown) => {
      // A bug in the supervisor: the watcher keeps polling, at its normal interval.
      this.#setLive(false);
      this.#logger.error({ err: error }, "address event monitor failed; polling only from now on");
    });
  }

  async stop(): Promise<void> {
    this.#stop.abort(new Error("address events stopped"));
    this.#live = false;
    const current = this.#current;
    if (current !== undefined) await this.#kill(current);
    await this.#supervising;
    process.off("exit", this.#killOnExit);
  }

  /** Restarts the monitor whenever it ends, until stop(). */
  async #supervise(first: Running): Promise<void> {
    const signal = this.#stop.signal;
    let running: Running | undefined = first;
    let restarts = 0;
    let outage = false;
    while (!signal.aborted) {
      if (running !== undefined) {
        const upSince = this.#clock.now();
        const ended = await running.ended;
        if (signal.aborted) return;
        this.#setLive(false);
        // One that ran for a while starts the backoff over; one that keeps dying right away backs off.
        if (this.#clock.now() - upSince >= this.#backoff.maxMs) restarts = 0;
        if (!outage) {
          outage = true;
          this.#logger.warn(
            { command: this.commandLine, reason: describeEnd(ended) },
            "the address event monitor stopped; polling at the normal interval and restarting it with backoff",
          );
        }
        running = undefined;
      }
      restarts++;
      try {
        await this.#clock.sleep(backoffDelay(this.#backoff, restarts, this.#random), signal);
      } catch (error) {
        if (signal.aborted) return;
        throw error;
      }
      const next = await this.#launch();
      if (signal.aborted) return;
      if (next.kind === "failed") {
        this.#logger.debug(
          { reason: describeEnd(next.ended), restarts },
          "address event monitor restart failed",
        );
        continue;
      }
      running = next.run;
      outage = false;
      this.#setLive(true);
      this.#logger.info({ command: this.commandLine }, "the address event monitor runs again");
    }
  }

  /** Spawns the monitor and waits out the warm-up. A monitor that ended in it is reported as failed. */
  async #launch(): Promise<Launch> {
    const [file, ...args] = this.#command;
    let child: ChildProcess;
    const explain = (error: unknown): Error => explainSpawnError(asError(error), file ?? "");
    try {
      child = this.#spawn(file ?? "", args);
    } catch (error) {
      return { kind: "failed", ended: { code: null, signal: null, error: explain(error), stderr: "" } };
    }
    // Never what keeps node alive: an exit of the command for any other reason runs the exit hook.
    child.unref();
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL);
    });
    const ended = new Promise<Ended>((resolve) => {
      // "close", not "exit": by then stderr has been read to the end, and it says why `ip` gave up.
      child.once("close", (code, signal) => resolve({ code, signal, error: undefined, stderr }));
      // A failed spawn (ENOENT, EACCES) or kill; node may or may not also emit "close".
      child.on("error", (error) => resolve({ code: null, signal: null, error: explain(error), stderr }));
    });
    // Any output means "something changed": a chunk, not a parsed line, is the event (a line split across
    // two chunks costs one extra, coalesced read). No node:readline, which would be loaded for this alone.
    child.stdout?.on("data", () => {
      if (this.#current?.child === child) this.#listener?.();
    });
    for (const stream of [child.stdout, child.stderr]) {
      (stream as { unref?: () => void } | null)?.unref?.();
    }
    const run: Running = { child, ended };
    this.#current = run;
    const warm = linkedAbort(this.#stop.signal);
    const early = await Promise.race([
      ended,
      this.#clock.sleep(this.#warmupMs, warm.signal).then(
        () => undefined,
        () => undefined,
      ),
    ]);
    warm.abort();
    warm.dispose();
    if (early !== undefined) {
      this.#current = undefined;
      // An "error" after a successful spawn leaves the process running: make sure it goes.
      child.kill("SIGKILL");
      return { kind: "failed", ended: early };
    }
    if (this.#stop.signal.aborted) await this.#kill(run);
    return { kind: "live", run };
  }

  /** SIGTERM, then SIGKILL after the grace; resolves once the process has gone. */
  async #kill(run: Running): Promise<void> {
    const { child } = run;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const grace = new AbortController();
    const gone = await Promise.race([
      run.ended.then(() => true),
      this.#clock.sleep(this.#killGraceMs, grace.signal).then(
        () => false,
        () => false,
      ),
    ]);
    grace.abort();
    if (!gone) {
      child.kill("SIGKILL");
      await run.ended;
    }
  }

  #setLive(live: boolean): void {
    if (this.#live === live || this.#stop.signal.aborted) return;
    this.#live = live;
    this.#listener?.();
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** "spawn ip ENOENT", "exited with code 1: Object \"monitor\" is unknown", "killed by SIGKILL". */
function describeEnd(ended: Ended): string {
  const stderr = ended.stderr.trim();
  const why =
    ended.error !== undefined
      ? ended.error.message
      : ended.signal !== null
        ? `killed by ${ended.signal}`
        : `exited with code ${ended.code}`;
  return stderr === "" ? why : `${why}: ${stderr}`;
}
