/**
 * The unix socket the chained CNI plugin calls (IPMGR_BRIDGE_CNI_SOCKET): one request per connection, read
 * until the plugin shuts its write side, one answer (cni-result.ts), then the bridge closes the connection.
 * Connections are served concurrently: ADDs of pods starting together wait for the same wave.
 *
 * The socket's directory is made 0700 when missing, a socket file left by an earlier bridge is removed, the
 * socket is 0600: only root on the node reaches it. While stopping, every request gets code 11 ("the
 * bridge is stopping"), and the socket file is removed once stopped.
 */
import { chmod, lstat, mkdir, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import { ConfigError } from "../../eni/errors/config-error.js";
import type { Logger } from "../../eni/process/logger.js";
import { type CniRequest, headerComplete, parseCniRequest } from "./cni-request.js";
import { asCniError, type CniAnswer, CniCode, encodeAnswer, errorAnswer } from "./cni-result.js";
import { CniError } from "./errors/cni-error.js";

/** A request not complete (its write side shut) this long after the connection opened gets code 6, ms. */
export const CNI_REQUEST_READ_MS = 5_000;
/**
 * At stop, how long the answers in flight may take before their connections are closed under them, ms: the
 * ADDs waiting answer code 11 at once, a CHECK waits for its EC2 read; the plugin turns a closed connection
 * into code 11 itself.
 */
export const CNI_STOP_WAIT_MS = 2_000;
/** A request larger than this gets code 6: a netconf is a few kB. */
export const CNI_REQUEST_MAX_BYTES = 1 << 20;

export interface CniServerOptions {
  readonly path: string;
  readonly answer: (request: CniRequest) => Promise<CniAnswer>;
  /** Called when stop() begins, before the answers in flight are awaited (CniClaims.stop). */
  readonly stopping: () => void;
  readonly logger: Logger;
  /** Default CNI_REQUEST_READ_MS. */
  readonly readMs?: number;
}

export class CniServer {
  readonly #o: CniServerOptions;
  #server: Server | undefined;
  #stopping = false;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #sockets = new Set<Socket>();

  constructor(options: CniServerOptions) {
    this.#o = options;
  }

  /** Makes the directory (0700) when missing, removes a stale socket, listens, makes the socket 0600. */
  async start(): Promise<void> {
    const { path, logger } = this.#o;
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const existing = await lstat(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (existing !== undefined) {
      if (!existing.isSocket()) {
        throw new ConfigError(
          "IPMGR_BRIDGE_CNI_SOCKET",
          path,
          "a file that is no socket is there; remove it, or name another path",
        );
      }
      await rm(path);
      logger.info({ path }, "removed the CNI socket an earlier bridge left");
    }
    const server = createServer({ allowHalfOpen: true }, (socket) => this.#serve(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (error) => logger.error({ err: error }, "the CNI socket failed"));
    this.#server = server;
    await chmod(path, 0o600);
    logger.info({ path }, "the CNI socket listens");
  }

  /**
   * Answers code 11 from now on, wakes the ADDs waiting, waits for the answers in flight (at most
   * CNI_STOP_WAIT_MS), closes what is left and removes the socket.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#o.stopping();
    const server = this.#server;
    const closed =
      server === undefined
        ? Promise.resolve()
        : new Promise<void>((resolve) => server.close(() => resolve()));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.#inFlight]),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CNI_STOP_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    for (const socket of this.#sockets) socket.destroy();
    await closed;
    await rm(this.#o.path, { force: true });
  }

  #serve(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
    socket.on("error", (error) => this.#o.logger.debug({ err: error }, "a CNI connection failed"));
    const chunks: Buffer[] = [];
    let size = 0;
    let answered = false;
    const reply = (answer: CniAnswer): void => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      socket.end(encodeAnswer(answer));
    };
    const fail = (error: CniError): void => reply(errorAnswer(error, undefined));
    const timer = setTimeout(
      () =>
        fail(
          new CniError(
            CniCode.decode,
            `the plugin's request was not complete within ${this.#o.readMs ?? CNI_REQUEST_READ_MS} ms`,
            "the plugin sends its whole stdin, then shuts its write side",
          ),
        ),
      this.#o.readMs ?? CNI_REQUEST_READ_MS,
    );
    if (this.#stopping) {
      reply(errorAnswer(new CniError(CniCode.tryAgainLater, "the bridge is stopping"), undefined));
      return;
    }
    socket.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > CNI_REQUEST_MAX_BYTES) {
        fail(
          new CniError(CniCode.decode, `the plugin's request is larger than ${CNI_REQUEST_MAX_BYTES} bytes`),
        );
        return;
      }
      chunks.push(chunk);
    });
    socket.on("end", () => {
      if (answered) return;
      const bytes = Buffer.concat(chunks);
      if (!headerComplete(bytes)) {
        fail(new CniError(CniCode.decode, "the plugin's request ended before its header did"));
        return;
      }
      clearTimeout(timer);
      let request: CniRequest;
      try {
        request = parseCniRequest(bytes);
      } catch (error) {
        fail(asCniError(error));
        return;
      }
      const work = this.#o.answer(request).then(reply, (error: unknown) => fail(asCniError(error)));
      this.#inFlight.add(work);
      void work.finally(() => this.#inFlight.delete(work));
    });
  }
}
