/**
 * `multus-ipmgr sim` as a process (the built entry), for the tests and benches that need it apart from
 * their own event loop: started with the given arguments, its ready line parsed, its stderr collected.
 * (test/sim-process.test.ts does the same by hand on purpose: it is docs/sim.md's example for other projects.)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";

/** The ready line: the endpoints the simulator serves. */
export interface SimReady {
  readonly ready: true;
  readonly ec2: string;
  readonly control: string;
  readonly imds: Record<string, string>;
  /** Only with a `kubernetes` section in the world. */
  readonly kubernetes?: string;
}

export interface SimProcess {
  readonly child: ChildProcess;
  readonly ready: SimReady;
  /** Its exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  /** What it wrote on stderr so far. */
  stderr(): string;
  /** SIGTERM (or the given signal), then its exit code; at once when it has already exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `node <entry> sim ...args` and resolves once its ready line is read; rejects if it exits first. */
export async function startSimProcess(
  args: readonly string[],
  entry = resolve("dist/multus-ipmgr.mjs"),
): Promise<SimProcess> {
  const child = spawn(process.execPath, [entry, "sim", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  try {
    const ready = await new Promise<SimReady>((done, fail) => {
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", (line) =>
        done(JSON.parse(line) as SimReady),
      );
      void exited.then((code) => fail(new Error(`multus-ipmgr sim exited with ${code}: ${stderr}`)));
    });
    return { child, ready, exited, stderr: () => stderr, stop };
  } catch (error) {
    await stop("SIGKILL");
    throw error;
  }
}
