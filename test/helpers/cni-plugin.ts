/**
 * The chained CNI plugin's host binary (dist/cni/multus-ipmgr, built by scripts/build-cni-plugin.mjs) and a
 * stand-in for the bridge's end of its unix socket that speaks the wire protocol of docs/cni-plugin.md,
 * records every request byte for byte and answers as a test scripts it.
 */
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { resolve } from "node:path";

export const CNI_PLUGIN = resolve("dist/cni/multus-ipmgr");

/** Why the plugin's tests cannot run here (no binary: no gcc at build time), or undefined. */
export function cniPluginUnavailableReason(): string | undefined {
  if (existsSync(CNI_PLUGIN)) return undefined;
  return `${CNI_PLUGIN} is not built (npm run build compiles it when gcc is on the PATH; Debian: apt-get install gcc libc6-dev)`;
}

export interface PluginRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs one program (a path, or a path and its arguments) as a CNI runtime does: the given environment only
 * (no variable of the test process leaks in), stdin written whole then closed.
 */
export function runPlugin(
  command: string | readonly string[],
  env: Record<string, string>,
  stdin: string | Buffer,
  timeoutMs = 30_000,
): Promise<PluginRun> {
  const [file, ...args] = typeof command === "string" ? [command] : command;
  if (file === undefined) throw new Error("runPlugin: an empty command");
  const child = spawn(file, args, { env, stdio: ["pipe", "pipe", "pipe"] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (d: Buffer) => out.push(d));
  child.stderr.on("data", (d: Buffer) => err.push(d));
  // The program may exit before reading all of stdin (an error of its own): EPIPE is its answer, not ours.
  child.stdin.on("error", () => undefined);
  child.stdin.end(stdin);
  return new Promise((resolveRun, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolveRun({
        code,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      });
    });
  });
}

/** One request as the bridge's socket received it. */
export interface CniRequest {
  /** Every byte the plugin sent, until it shut down its write side. */
  readonly raw: Buffer;
  /** The header's lines, the protocol line first, without the blank line that ends them. */
  readonly headerLines: readonly string[];
  /** CNI_COMMAND, CNI_CONTAINERID, ... as the header carries them. */
  readonly env: Readonly<Record<string, string>>;
  /** The plugin's stdin, byte for byte. */
  readonly stdin: Buffer;
}

/** What the stand-in does with a request: answer with a code and a body, close at once, or never answer. */
export type CniAnswer = { readonly code: number; readonly body: string } | "close" | "hang";

export function parseCniRequest(raw: Buffer): CniRequest {
  const end = raw.indexOf("\n\n");
  if (end < 0)
    throw new Error(
      `a request without the blank line that ends its header: ${JSON.stringify(raw.toString())}`,
    );
  const headerLines = raw.subarray(0, end).toString("utf8").split("\n");
  const env: Record<string, string> = {};
  for (const line of headerLines.slice(1)) {
    const eq = line.indexOf("=");
    env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return { raw, headerLines, env, stdin: raw.subarray(end + 2) };
}

/** The bridge's end of the socket, as a test scripts it. close() removes the socket file too. */
export class FakeCniBridge {
  readonly requests: CniRequest[] = [];
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor(
    readonly path: string,
    answer: (request: CniRequest) => CniAnswer | Promise<CniAnswer>,
  ) {
    // allowHalfOpen: the plugin shuts down its write side, then reads the answer on the same connection.
    this.#server = createServer({ allowHalfOpen: true }, (socket) => {
      this.#sockets.add(socket);
      socket.once("close", () => this.#sockets.delete(socket));
      const chunks: Buffer[] = [];
      socket.on("data", (d: Buffer) => chunks.push(d));
      socket.once("end", () => {
        const request = parseCniRequest(Buffer.concat(chunks));
        this.requests.push(request);
        Promise.resolve(answer(request)).then(
          (a) => {
            if (a === "hang") return;
            if (a === "close") socket.destroy();
            else socket.end(`${a.code}\n${a.body}`);
          },
          (error: unknown) => socket.destroy(error instanceof Error ? error : new Error(String(error))),
        );
      });
      socket.on("error", () => undefined);
    });
  }

  static async listen(
    path: string,
    answer: (request: CniRequest) => CniAnswer | Promise<CniAnswer>,
  ): Promise<FakeCniBridge> {
    const bridge = new FakeCniBridge(path, answer);
    await new Promise<void>((resolveListen, reject) => {
      bridge.#server.once("error", reject);
      bridge.#server.listen(path, () => resolveListen());
    });
    return bridge;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolveClose) => this.#server.close(() => resolveClose()));
    rmSync(this.path, { force: true });
  }
}
