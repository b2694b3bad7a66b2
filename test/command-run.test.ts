/** What the commands' entrypoints share: --help, the failure report, and the shutdown signals. */
import { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ConfigError } from "../src/eni/errors/config-error.js";
import { ExitCode } from "../src/eni/errors/exit-codes.js";
import { CommandRun, printHelpIfAsked } from "../src/eni/process/command-run.js";
import { type SignalSource, shutdownSignals, untilFirstSignal } from "../src/eni/process/shutdown-signals.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

/** A logger whose JSON lines land in `lines`. */
function capturingLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe("printHelpIfAsked", () => {
  it.each([
    [["--help"], true],
    [["-h"], true],
    [["--log-level", "debug", "--help"], true],
    [[], false],
    [["--log-level", "debug"], false],
    [["--helpful"], false],
  ])("%j: %s", (argv, asked) => {
    const written: string[] = [];
    let built = 0;
    const help = (): string => {
      built++;
      return "usage: multus-ipmgr x\n";
    };
    expect(printHelpIfAsked(argv, help, (text) => written.push(text))).toBe(asked);
    expect(written).toEqual(asked ? ["usage: multus-ipmgr x\n"] : []);
    // The help is built only when it is printed: no start-up work otherwise.
    expect(built).toBe(asked ? 1 : 0);
  });
});

describe("CommandRun", () => {
  const dirs: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const dir of dirs.splice(0)) removeTempDir(dir);
  });

  it.each([
    [{}, "/dev/termination-log"],
    [{ IPMGR_TERMINATION_LOG: "" }, ""],
    [{ IPMGR_TERMINATION_LOG: "/tmp/ipmgr-termination" }, "/tmp/ipmgr-termination"],
  ])(
    "before the configuration has loaded, the termination log is IPMGR_TERMINATION_LOG or its default: %j",
    (env, expected) => {
      expect(new CommandRun("init", env).terminationLog).toBe(expected);
    },
  );

  it("reports a failure on stderr, in the log and in the termination log the configuration named, with its exit code", () => {
    const dir = makeTempDir("ipmgr-cli-");
    dirs.push(dir);
    const stderr: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((text) => {
      stderr.push(String(text));
      return true;
    });
    const { logger, lines } = capturingLogger();
    const run = new CommandRun("sidecar", { IPMGR_TERMINATION_LOG: "" });
    run.terminationLog = join(dir, "termination-log");
    run.logger = logger;
    const error = new ConfigError("IPMGR_ALLOWED_CIDRS", undefined, "set it");
    expect(run.fail(error)).toBe(ExitCode.config);
    expect(stderr).toEqual(["multus-ipmgr sidecar: IPMGR_ALLOWED_CIDRS=(unset): set it\n"]);
    expect(readFileSync(join(dir, "termination-log"), "utf8")).toBe("IPMGR_ALLOWED_CIDRS=(unset): set it\n");
    expect(lines).toMatchObject([
      { level: 50, exitCode: ExitCode.config, msg: "IPMGR_ALLOWED_CIDRS=(unset): set it" },
    ]);
  });

  it("reports an error of no class of ours as unexpected, with the internal exit code, and no termination log when it is empty", () => {
    const stderr: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((text) => {
      stderr.push(String(text));
      return true;
    });
    const { logger } = capturingLogger();
    const run = new CommandRun("bridge", { IPMGR_TERMINATION_LOG: "" });
    run.logger = logger;
    expect(run.fail(new Error("boom"))).toBe(ExitCode.internal);
    expect(stderr).toEqual(["multus-ipmgr bridge: unexpected error: boom\n"]);
  });

  it("lets the first signal through and, on a second, logs it and exits at once with 128 + its number", async () => {
    const emitter = new EventEmitter();
    const exits: number[] = [];
    const { logger, lines } = capturingLogger();
    const run = new CommandRun("sidecar", {});
    const signals = run.shutdownSignals((code) => exits.push(code), emitter as unknown as SignalSource);
    run.logger = logger;
    emitter.emit("SIGTERM", "SIGTERM");
    expect(await signals.first).toBe("SIGTERM");
    expect(exits).toEqual([]);
    emitter.emit("SIGINT", "SIGINT");
    expect(exits).toEqual([130]);
    expect(lines).toMatchObject([
      { level: 40, signal: "SIGINT", exitCode: 130, msg: "second signal: exiting at once" },
    ]);
    signals.dispose();
    expect(emitter.listenerCount("SIGTERM") + emitter.listenerCount("SIGINT")).toBe(0);
  });

  it("exits on a second signal before any logger exists", async () => {
    const emitter = new EventEmitter();
    const exits: number[] = [];
    const signals = new CommandRun("bridge", {}).shutdownSignals(
      (code) => exits.push(code),
      emitter as unknown as SignalSource,
    );
    emitter.emit("SIGINT", "SIGINT");
    expect(await signals.first).toBe("SIGINT");
    emitter.emit("SIGTERM", "SIGTERM");
    expect(exits).toEqual([143]);
    signals.dispose();
  });
});

describe("shutdownSignals", () => {
  it("resolves on the first signal and asks for an immediate exit (143 or 130) on the second", async () => {
    const emitter = new EventEmitter();
    const seconds: [string, number][] = [];
    const signals = shutdownSignals(
      (signal, code) => seconds.push([signal, code]),
      emitter as unknown as SignalSource,
    );
    emitter.emit("SIGTERM", "SIGTERM");
    expect(await signals.first).toBe("SIGTERM");
    emitter.emit("SIGINT", "SIGINT");
    emitter.emit("SIGTERM", "SIGTERM");
    expect(seconds).toEqual([
      ["SIGINT", 130],
      ["SIGTERM", 143],
    ]);
    signals.dispose();
    expect(emitter.listenerCount("SIGTERM")).toBe(0);
  });
});

describe("untilFirstSignal", () => {
  const never = new Promise<never>(() => undefined);

  it("returns the first signal while the loop runs", async () => {
    await expect(untilFirstSignal(never, { first: Promise.resolve("SIGINT") }, "the loop")).resolves.toBe(
      "SIGINT",
    );
  });

  it("throws the loop's failure when it fails first", async () => {
    const failure = new Error("IMDS is gone");
    await expect(untilFirstSignal(Promise.reject(failure), { first: never }, "the loop")).rejects.toBe(
      failure,
    );
  });

  it("throws an error naming the loop when it returns before any signal", async () => {
    await expect(untilFirstSignal(Promise.resolve(), { first: never }, "the wave loop")).rejects.toThrow(
      "the wave loop stopped without a signal",
    );
  });
});
